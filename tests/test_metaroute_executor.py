"""Formula tests of the execution model and the exact executor's draws (spec §6)."""

from __future__ import annotations

import random

import pytest

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute import (
    ExactExecutor,
    ExecutionModel,
    ExecutionTrace,
    Executor,
    ExecutorConfig,
    FailureMode,
    MetaRouteConfig,
    RouteAction,
    RoutePlan,
    TaskSpec,
    Workload,
    generate_tasks,
    run_benchmark,
)
from routebr_kit.metaroute.executor import CLEAN, FAILED, RECOVERED

D, T, C, G, V, A = (RouteAction.DECOMPOSE, RouteAction.USE_TOOL, RouteAction.EXECUTE_CODE, RouteAction.DELEGATE,
                    RouteAction.VERIFY, RouteAction.ANSWER)
MODEL = ExecutionModel()


def task(difficulty: int = 1, ambiguity: float = 0.3, needs: tuple[float, ...] = (0.5,) * 5,
         budgets: tuple[float, float] = (8.0, 90.0)) -> TaskSpec:
    return TaskSpec("research-000", Workload.RESEARCH, difficulty, ambiguity, *needs, *budgets)


@pytest.mark.parametrize(("difficulty", "factor"), [(1, 1.0), (2, 1.08), (3, 1.16), (4, 1.24)])
def test_difficulty_factor(difficulty: int, factor: float) -> None:
    assert MODEL.difficulty_factor(difficulty) == pytest.approx(factor, abs=1e-15)


def test_cost_and_latency_charge_every_operation_times_the_factor_plus_a_retry() -> None:
    # published row: adaptive, research-031 (difficulty 4), decompose|use_tool|delegate|answer, retried once
    model = MODEL.plan_model(task(4), RoutePlan((D, T, G, A), adaptive_recovery=True))
    assert (model.outcomes[CLEAN].cost, model.outcomes[CLEAN].latency_s) == (4.898, 35.34)
    assert (model.outcomes[RECOVERED].cost, model.outcomes[RECOVERED].latency_s) == (5.58, 41.54)
    assert model.outcomes[FAILED].cost == 5.58  # the retry is charged even when it does not recover
    assert [o.retries for o in model.outcomes] == [0, 1, 1]
    no_recovery = MODEL.plan_model(task(4), RoutePlan((D, T, G, A)))
    assert no_recovery.outcomes[FAILED].cost == 4.898 and no_recovery.outcomes[FAILED].retries == 0


def test_only_failure_prone_operations_are_checked_in_route_order() -> None:
    model = MODEL.plan_model(task(), RoutePlan((D, G, T, V, A)))
    assert model.checks == ((G, 0.10), (T, 0.08))


def test_start_and_per_operation_terms_are_separate_updates() -> None:
    t = task(3, 0.4, (0.2, 0.9, 0.1, 0.3, 0.7))
    expected = 0.69 - 0.075 * 2 - 0.13 * 0.4
    expected += 0.24 * 0.9
    expected -= 0.045 * (1 - 0.9)
    expected += 0.15 * 0.7
    expected -= 0.045 * (1 - 0.7)
    expected -= 0.0
    assert MODEL.base_probability(t, RoutePlan((T, V, A))) == expected


def test_coordination_overhead_applies_beyond_two_support_operations() -> None:
    free = ExecutionModel(ExecutorConfig(coordination_penalty=0.0))
    t = task(2, 0.2, (0.6, 0.7, 0.8, 0.5, 0.9))
    two, three = RoutePlan((T, C, A)), RoutePlan((T, C, V, A))
    assert MODEL.base_probability(t, two) == free.base_probability(t, two)
    assert MODEL.base_probability(t, three) == free.base_probability(t, three) - 0.035


def test_failure_and_recovery_penalties() -> None:
    t = task(2, 0.3)
    plan = RoutePlan((T, A), adaptive_recovery=True)
    base = MODEL.base_probability(t, plan)
    model = MODEL.plan_model(t, plan)
    assert model.outcomes[CLEAN].success_probability == base
    assert model.outcomes[FAILED].success_probability == base - 0.30
    assert model.outcomes[RECOVERED].success_probability == base - 0.04


def test_probabilities_are_clipped_to_the_configured_range() -> None:
    easy = MODEL.plan_model(task(1, 0.0, (1.0,) * 5), RoutePlan((D, C, V, A)))
    assert easy.outcomes[CLEAN].success_probability == 0.98
    hard = MODEL.plan_model(task(5, 1.0, (0.0,) * 5), RoutePlan((T, A)))
    assert hard.outcomes[FAILED].success_probability == 0.02
    wide = ExecutionModel(ExecutorConfig(max_success=1.0)).plan_model(task(1, 0.0, (1.0,) * 5), RoutePlan((D, C, V, A)))
    assert wide.outcomes[CLEAN].success_probability > 0.98


def test_budget_penalties_use_unrounded_values() -> None:
    tight = task(budgets=(1.9, 13.0))
    model = MODEL.plan_model(tight, RoutePlan((T, A), adaptive_recovery=True))
    clean, recovered = model.outcomes[CLEAN], model.outcomes[RECOVERED]
    assert clean.within_cost_budget and clean.within_latency_budget  # 1.75, 12.0
    assert not recovered.within_cost_budget and not recovered.within_latency_budget  # 2.30, 17.0
    base = MODEL.base_probability(tight, RoutePlan((T, A)))
    assert recovered.success_probability == base - 0.04 - 0.08 - 0.08


def _draws(key: str, count: int) -> list[float]:
    rng = random.Random(key)
    return [rng.random() for _ in range(count)]


def test_draw_order_failure_scan_recovery_then_success() -> None:
    """Fail on the first check → one recovery draw → success on the third draw; later checks never drawn."""
    t = generate_tasks()[1]
    plan = RoutePlan((T, C, G, A), adaptive_recovery=True)
    executor = ExactExecutor()
    seen = set()
    for seed in range(400):
        key = f"{seed}:{t.task_id}:probe"
        u = _draws(key, 5)
        trace = executor.execute(t, plan, seed, "probe")
        model = executor.model(t, plan)
        if u[0] < 0.08:  # use_tool fails: draws are [check T, recovery, success]
            recovered = u[1] < 0.72
            outcome = model.outcomes[RECOVERED if recovered else FAILED]
            assert trace.retries == 1
            assert trace.success == (u[2] < outcome.success_probability)
            if recovered:
                assert trace.failure_mode is (None if trace.success else FailureMode.TASK_FAILURE)
            else:
                assert trace.failure_mode is FailureMode.USE_TOOL_FAILURE
            seen.add("recovered" if recovered else "unrecovered")
        elif u[1] >= 0.07 and u[2] >= 0.10:  # no failure: draws are [T, C, G, success]
            assert trace.retries == 0
            assert trace.success == (u[3] < model.outcomes[CLEAN].success_probability)
            seen.add("clean")
    assert seen == {"recovered", "unrecovered", "clean"}


def test_failure_label_stays_on_successful_traces() -> None:
    """An unrecovered operation failure is labelled even if the task then succeeds (as published)."""
    executor, first, plan = ExactExecutor(), generate_tasks()[0], RoutePlan((T, A))
    traces = [executor.execute(first, plan, seed, "always_tool") for seed in range(2000)]
    labelled = [t for t in traces if t.failure_mode is FailureMode.USE_TOOL_FAILURE]
    assert any(t.success for t in labelled) and any(not t.success for t in labelled)
    others = [t for t in traces if t.failure_mode is not FailureMode.USE_TOOL_FAILURE]
    assert all(t.failure_mode is (None if t.success else FailureMode.TASK_FAILURE) for t in others)


def test_route_plan_rejects_invalid_routes() -> None:
    with pytest.raises(DataError) as err:
        RoutePlan((T, V))
    assert err.value.code is ErrorCode.INVALID_VALUE
    with pytest.raises(DataError) as err:
        RoutePlan((T, T, A))
    assert err.value.code is ErrorCode.DUPLICATE_ID


def test_task_spec_validates_ranges() -> None:
    with pytest.raises(DataError) as err:
        task(needs=(0.5, 1.5, 0.5, 0.5, 0.5))
    assert err.value.code is ErrorCode.INVALID_VALUE and err.value.field == "tool_need"
    with pytest.raises(DataError):
        task(difficulty=0)


def test_a_changed_constant_changes_the_model() -> None:
    config = MetaRouteConfig().with_overrides({"executor.operations.use_tool.failure": 0.5})
    assert ExecutionModel(config.executor).plan_model(task(), RoutePlan((T, A))).checks == ((T, 0.5),)


class AlwaysSucceeds:
    """A stand-in for a live executor: it runs nothing and reports a fixed outcome."""

    def execute(self, task: TaskSpec, plan: RoutePlan, seed: int, policy: str) -> ExecutionTrace:
        return ExecutionTrace(policy, task, plan, seed, success=True, expected_success=1.0, cost=float(len(
            plan.actions)), latency_s=1.0, retries=0, within_cost_budget=True, within_latency_budget=True,
            failure_mode=None)


def test_a_custom_executor_replaces_the_simulator() -> None:
    run = run_benchmark(2, executor=AlwaysSucceeds())
    assert isinstance(AlwaysSucceeds(), Executor)
    adaptive = run.evaluation.summary("adaptive")
    assert adaptive.success_rate == 1.0 and adaptive.success_ci95 == 0.0
    assert adaptive.mean_cost == pytest.approx(1 + sum(c * n for c, n in ((1, 72), (2, 47), (3, 61))) / 180)
    assert run.evaluation.action_counts == run_benchmark(2).evaluation.action_counts  # the same plans
