"""The fast mode: a correct counter-based generator, the same model, the same statistics."""

from __future__ import annotations

import random

import numpy as np
import pytest

from routebr_kit.metaroute import (
    BenchmarkRun,
    FastExecutor,
    Mode,
    Suite,
    Traces,
    ablation_policies,
    default_policies,
    expected_success_rates,
    generate_tasks,
    philox4x32,
    run_benchmark,
    trace_uniforms,
)
from routebr_kit.metaroute.executor import ROUTE

# Random123 known-answer vectors for Philox4x32-10: (counter, key) → output
PHILOX_KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF, 0xFFFFFFFF), (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]


@pytest.mark.parametrize(("counter", "key", "expected"), PHILOX_KAT)
def test_philox_known_answers(counter: tuple, key: tuple, expected: tuple) -> None:
    assert tuple(int(np.asarray(w).ravel()[0]) for w in philox4x32(counter, key)) == expected


def test_uniforms_are_keyed_by_seed_task_and_policy_only() -> None:
    grid = trace_uniforms([0, 7, 3], ["a", "b", "c"], ["p", "q"])
    alone = trace_uniforms([7], ["c"], ["q"])
    assert np.array_equal(grid[:, 1, 1, 2], alone[:, 0, 0, 0])
    assert ((grid >= 0) & (grid < 1)).all() and len(np.unique(grid)) == grid.size


@pytest.fixture(scope="module")
def fast_main() -> BenchmarkRun:
    return run_benchmark(200, mode=Mode.FAST)


def test_single_trace_execution_equals_the_grid(fast_main: BenchmarkRun) -> None:
    executor, rng = FastExecutor(), random.Random(7)
    traces = fast_main.traces
    for _ in range(300):
        s, p, t = (rng.randrange(n) for n in traces.success.shape)
        record = traces.record(s, p, t)
        assert executor.execute(record.task, record.plan, record.seed, record.policy) == record


def test_random_policy_route_frequencies_follow_its_support(fast_main: BenchmarkRun) -> None:
    traces = fast_main.traces
    p = traces.policies.index("random")
    lengths = np.array([len(traces.plans[i].support) for i in traces.plan[:, p, :].ravel()])
    assert abs((lengths == 1).mean() - 0.5) < 0.01  # 36,000 routes: sd 0.0026


def test_fast_mode_converges_to_the_model_expectation(fast_main: BenchmarkRun) -> None:
    """Each policy's success rate within 4 seed-level standard errors of its exact expectation."""
    expected = expected_success_rates(fast_main.tasks, default_policies())
    for s in fast_main.evaluation.summaries:
        assert abs(s.success_rate - expected[s.policy]) < 4 * s.success_ci95 / 1.96, s.policy
    ablations = run_benchmark(200, suite=Suite.ABLATIONS, mode=Mode.FAST)
    expected = expected_success_rates(ablations.tasks, ablation_policies())
    for s in ablations.evaluation.summaries:
        assert abs(s.success_rate - expected[s.policy]) < 4 * s.success_ci95 / 1.96, s.policy


def test_fast_and_exact_modes_agree_statistically(fast_main: BenchmarkRun) -> None:
    exact = run_benchmark(30)
    for s in exact.evaluation.summaries:
        fast = fast_main.evaluation.summary(s.policy)
        se = np.hypot(s.success_ci95, fast.success_ci95) / 1.96
        assert abs(s.success_rate - fast.success_rate) < 4 * se, s.policy
        assert fast.mean_cost == pytest.approx(s.mean_cost, rel=0.02) and fast.retry_rate == pytest.approx(
            s.retry_rate, abs=0.02)
        assert abs(fast.success_ci95 - s.success_ci95 * np.sqrt(30 / 200)) < 0.5 * s.success_ci95 * np.sqrt(30 / 200)
    expected = expected_success_rates(exact.tasks, default_policies())
    for s in exact.evaluation.summaries:  # the published 30-seed numbers are consistent with the model too
        assert abs(s.success_rate - expected[s.policy]) < 4 * s.success_ci95 / 1.96, s.policy


def test_deterministic_policies_use_one_plan_per_task_and_routes_use_the_route_uniform(fast_main: BenchmarkRun) -> None:
    traces = fast_main.traces
    for p, name in enumerate(traces.policies):
        distinct = {len(np.unique(traces.plan[:, p, t])) for t in range(len(traces.tasks))}
        assert distinct == {1} if name != "random" else min(distinct) > 10  # random: 25 routes over 200 seeds
    u = trace_uniforms(traces.seeds, [t.task_id for t in traces.tasks], traces.policies)[ROUTE]
    p = traces.policies.index("random")
    single = np.array([[len(traces.plans[i].support) == 1 for i in row] for row in traces.plan[:, p, :]])
    assert (single == (u[:, p, :] < 0.5)).all()  # the first half of the support: the ten single-operation routes


def test_grid_records_round_trip(fast_main: BenchmarkRun) -> None:
    small = fast_main.traces.select(policies=["adaptive", "direct"], seeds=[3, 1])
    rebuilt = Traces.from_records(list(small.records()), small.tasks, small.policies, small.seeds)
    for name in ("success", "expected_success", "cost", "latency_s", "retries", "failure"):
        assert np.array_equal(getattr(rebuilt, name), getattr(small, name))
    assert [rebuilt.plans[i] for i in rebuilt.plan.ravel()] == [small.plans[i] for i in small.plan.ravel()]
    assert len(generate_tasks()) == len(small.tasks)


@pytest.mark.parametrize("suite, folder", [(Suite.MAIN, "main"), (Suite.ABLATIONS, "ablations")])
def test_fast_mode_at_300_seeds_is_within_the_published_ci_of_exact_mode(metaroute_artifact, suite, folder) -> None:
    """Issue criterion, read as a tolerance: at 300 seeds each policy's fast success rate lies within the published
    30-seed CI half-width of the exact mode's rate.  (Read as the published *interval*, the criterion tests noise:
    the exact mode itself lands outside it at 300 seeds for adaptive_no_recovery.)"""
    import csv

    with open(metaroute_artifact / folder / "summary.csv", newline="", encoding="utf-8") as handle:
        half_width = {row["policy"]: float(row["success_ci95"]) for row in csv.DictReader(handle)}
    exact = run_benchmark(300, suite=suite, mode=Mode.EXACT).evaluation
    fast = run_benchmark(300, suite=suite, mode=Mode.FAST).evaluation
    for policy, tolerance in half_width.items():
        gap = abs(fast.summary(policy).success_rate - exact.summary(policy).success_rate)
        assert gap <= tolerance, (policy, gap, tolerance)
