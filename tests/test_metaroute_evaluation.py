"""Evaluation and analysis helpers behind notebooks 08/09, checked against facts the reference notes state
(spec §4–§11)."""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute import BenchmarkRun, Suite, Traces, run_benchmark
from routebr_kit.metaroute.analysis import (
    ablation_frame,
    action_shares,
    detection_power,
    difficulty_success,
    failure_breakdown,
    per_seed_success,
    power_curve,
    seeds_for_power,
    slice_comparisons,
    task_profile_frame,
    workload_frame,
)
from routebr_kit.metaroute.export import published_match
from routebr_kit.metaroute.plots import differences_figure, power_figure, tradeoff_figure

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def main() -> BenchmarkRun:
    return run_benchmark(30)


def test_task_profiles_match_table_1(main: BenchmarkRun) -> None:
    table = task_profile_frame(main.tasks).round(2)
    assert table.loc["research", ["ambiguity", "decomposition_need", "tool_need", "code_need", "delegation_need",
                                  "verification_need"]].tolist() == [0.39, 0.67, 0.78, 0.19, 0.56, 0.67]
    assert table["tasks"].tolist() == [60, 60, 60]


def test_adaptive_action_shares(main: BenchmarkRun) -> None:
    shares = action_shares(main.traces, "adaptive").loc["all"].round(3)
    assert shares.to_dict() == {"decompose": 0.283, "use_tool": 0.506, "execute_code": 0.333, "delegate": 0.133,
                                "verify": 0.683}


def test_failure_labels_on_successful_traces(main: BenchmarkRun) -> None:
    rows = failure_breakdown(main.traces)
    adaptive = rows[(rows.policy == "adaptive") & (rows.label != "task_failure")]
    static = rows[(rows.policy == "static_workload") & (rows.label != "task_failure")]
    assert (adaptive.traces.sum(), adaptive.successful.sum()) == (109, 59)
    assert (static.traces.sum(), static.successful.sum()) == (408, 200)


def test_success_by_difficulty(main: BenchmarkRun) -> None:
    levels = difficulty_success(main.traces).round(3)
    assert levels.loc["adaptive"].tolist() == [0.854, 0.770, 0.808, 0.745]
    assert levels.loc["static_workload"].tolist() == [0.867, 0.811, 0.711, 0.679]


def test_summary_order_and_frames(main: BenchmarkRun) -> None:
    evaluation = main.evaluation
    utilities = [s.utility for s in evaluation.summaries]
    assert utilities == sorted(utilities, reverse=True)
    assert evaluation.summary("adaptive").cost_per_success == evaluation.summary("adaptive").mean_cost / (
        evaluation.summary("adaptive").success_rate)
    assert list(workload_frame(evaluation).index) == [s.policy for s in evaluation.summaries]
    assert sum(evaluation.failure_modes["adaptive"].values()) == 5400
    assert [c.baseline for c in evaluation.comparisons] == sorted(c.baseline for c in evaluation.comparisons)


def test_per_seed_success_is_what_a_paired_comparison_is_computed_from(main: BenchmarkRun) -> None:
    from routebr_kit.metaroute.evaluation import compare
    from routebr_kit.metaroute.numerics import seed_ci

    frame = per_seed_success(main.traces, ["adaptive", "static_workload"])
    assert list(frame.columns) == ["adaptive", "static_workload"] and list(frame.index) == list(main.traces.seeds)
    difference = (frame["adaptive"] - frame["static_workload"]).tolist()
    paired = compare(main.traces, "adaptive", "static_workload")
    assert sum(difference) / len(difference) == pytest.approx(paired.success_difference, abs=1e-12)
    assert seed_ci(difference, 1.96) == pytest.approx(paired.success_difference_ci95, abs=1e-12)
    assert list(per_seed_success(main.traces).columns) == list(main.traces.policies)


def test_ablation_table_and_power_study() -> None:
    run = run_benchmark(300, suite=Suite.ABLATIONS)
    table = ablation_frame(run.evaluation).set_index("policy").round(2)
    assert math.isnan(table.loc["adaptive", "difference_pts"])
    # the reference notes' 300-seed figures (spec §2)
    assert table["difference_pts"].dropna().to_dict() == {
        "adaptive_no_recovery": 1.70, "adaptive_no_decompose": 2.29, "adaptive_no_verify": 3.72,
        "adaptive_single_action": 10.47}
    curve = power_curve(run.traces, "adaptive", "adaptive_no_recovery", [30, 300]).set_index("seeds")
    assert not curve.loc[30, "significant"] and curve.loc[30, "p_value"] > 0.05
    assert curve.loc[300, "significant"] and curve.loc[300, "p_value"] < 1e-6
    assert round(curve.loc[30, "difference_pts"], 2) == 1.13 and round(curve.loc[30, "ci95_pts"], 2) == 1.70
    figure = power_figure(curve.reset_index(), "recovery")
    assert len(figure.axes[0].lines) >= 2
    assert len(differences_figure(run.evaluation).axes[0].get_yticklabels()) == 4


def test_power_formulas() -> None:
    assert detection_power(0.0, 1.0, 10) == pytest.approx(0.05)
    assert detection_power(0.02, 0.04, seeds_for_power(0.02, 0.04)) >= 0.8
    assert detection_power(0.02, 0.04, seeds_for_power(0.02, 0.04) - 1) < 0.8
    assert seeds_for_power(0.02, 0.04) == math.ceil(((1.959964 + 0.841621) * 2) ** 2)


def test_tradeoff_figure_has_both_panels_with_every_policy(main: BenchmarkRun) -> None:
    figure = tradeoff_figure(main.evaluation)
    left, right = figure.axes
    assert left.get_xlabel() == "mean cost" and right.get_xlabel() == "mean latency (s)"
    assert len(left.texts) == len(right.texts) == 8  # one label per policy


def test_published_match_needs_the_artifact(tmp_path: Path) -> None:
    with pytest.raises(DataError) as err:
        published_match(tmp_path, tmp_path / "nowhere", "main")
    assert err.value.code is ErrorCode.FILE_NOT_FOUND


def test_trace_grid_shapes_are_checked(main: BenchmarkRun) -> None:
    traces = main.traces
    with pytest.raises(DataError) as err:
        Traces(traces.tasks, traces.policies, traces.seeds, traces.plans, traces.plan, traces.success[:1],
               traces.expected_success, traces.cost, traces.latency_s, traces.retries, traces.within_cost_budget,
               traces.within_latency_budget, traces.failure)
    assert err.value.code is ErrorCode.ROW_SHAPE and err.value.field == "success"
    assert np.array_equal(traces.select(policies=["direct"]).cost[:, 0], traces.cost[:, 0])


def test_slice_comparisons_are_the_headline_pairing_on_each_slice(main: BenchmarkRun) -> None:
    """Each slice's gap is paired by seed: its mean is the gap of the two slice rates the notebook's tables show,
    its interval the seed-level one of the per-seed slice differences (not of two independent rates)."""
    from routebr_kit.metaroute.evaluation import PerSeed, compare
    from routebr_kit.metaroute.numerics import seed_ci

    table = slice_comparisons(main.traces).set_index(["slice", "value"])
    workloads, levels = workload_frame(main.evaluation), difficulty_success(main.traces)
    for w in workloads.columns:
        row = table.loc[("workload", w)]
        want = workloads.loc["adaptive", w] - workloads.loc["static_workload", w]
        assert row["difference_points"] == pytest.approx(100 * want, abs=1e-9)
    t, b = main.traces.policies.index("adaptive"), main.traces.policies.index("static_workload")
    for lv in levels.columns:
        row = table.loc[("difficulty", str(lv))]
        assert row["difference_points"] == pytest.approx(100 * (levels.loc["adaptive", lv]
                                                                 - levels.loc["static_workload", lv]), abs=1e-9)
        mask = np.array([task.difficulty == lv for task in main.traces.tasks])
        per_seed = main.traces.success[:, :, mask].mean(axis=2)
        assert row["ci95_points"] == pytest.approx(100 * seed_ci((per_seed[:, t] - per_seed[:, b]).tolist(), 1.96))
        assert row["significant"] == (abs(row["difference_points"]) > row["ci95_points"])
    everything = compare(main.traces, "adaptive", "static_workload",
                         per_seed=PerSeed.of(main.traces, np.ones(len(main.traces.tasks), dtype=bool)))
    assert everything == compare(main.traces, "adaptive", "static_workload")  # the mask is the headline's pairing
    assert set(table["test"]) == {"paired by seed: mean of per-seed differences, 95% seed-level interval"}
