"""Invariants over arbitrary task profiles, plans and policies (hypothesis)."""

from __future__ import annotations

import random

from hypothesis import given
from hypothesis import strategies as st

from routebr_kit.metaroute import (
    SUPPORT_ACTIONS,
    AdaptiveRouter,
    ExecutionModel,
    MetaRouteConfig,
    RouteAction,
    RoutePlan,
    TaskSpec,
    Workload,
    ablation_policies,
    default_policies,
)

ANSWER = RouteAction.ANSWER
unit = st.floats(min_value=0.0, max_value=1.0)
tasks = st.builds(
    lambda workload, difficulty, ambiguity, needs: TaskSpec(f"{workload.value}-000", workload, difficulty, ambiguity,
                                                            *needs, 8.0, 90.0),
    st.sampled_from(list(Workload)), st.integers(1, 5), unit, st.tuples(unit, unit, unit, unit, unit))
plans = st.builds(
    lambda support, recovery: RoutePlan((*support, ANSWER), adaptive_recovery=recovery),
    st.permutations(SUPPORT_ACTIONS).flatmap(lambda order: st.integers(0, 5).map(lambda k: tuple(order[:k]))),
    st.booleans())
POLICIES = default_policies() + ablation_policies()[1:]


@given(tasks, plans)
def test_every_outcome_probability_is_clipped(task: TaskSpec, plan: RoutePlan) -> None:
    model = ExecutionModel().plan_model(task, plan)
    for outcome in model.outcomes:
        assert 0.02 <= outcome.success_probability <= 0.98
        assert outcome.cost > 0 and outcome.latency_s > 0
    clean, failed, recovered = model.outcomes
    assert failed.success_probability <= recovered.success_probability <= clean.success_probability
    assert recovered.cost >= clean.cost and recovered.retries == 1 and clean.retries == 0
    assert abs(sum(model.branch_probabilities(0.72)) - 1.0) < 1e-12


@given(tasks, st.integers(0, 2**32))
def test_every_policy_routes_end_in_answer_with_unique_operations(task: TaskSpec, seed: int) -> None:
    for policy in POLICIES:
        plan = policy.route(task, random.Random(seed))
        assert plan.actions[-1] is ANSWER and ANSWER not in plan.support
        assert len(set(plan.actions)) == len(plan.actions)
        support = policy.support(task)
        assert abs(sum(c.probability for c in support) - 1.0) < 1e-12
        assert plan in [c.plan for c in support]


@given(tasks)
def test_adaptive_routes_respect_cap_order_and_disabled_operations(task: TaskSpec) -> None:
    config = MetaRouteConfig().policies
    for router in [p for p in POLICIES if isinstance(p, AdaptiveRouter)]:
        plan = router.plan(task)
        cap = config.adaptive_max_actions if router.max_actions is None else router.max_actions
        assert 1 <= len(plan.support) <= cap
        assert not set(plan.support) & router.disabled
        if RouteAction.DECOMPOSE in plan.support:
            assert plan.support[0] is RouteAction.DECOMPOSE
        if RouteAction.VERIFY in plan.support:
            assert plan.support[-1] is RouteAction.VERIFY
        assert 0.0 <= plan.confidence <= 1.0
        assert plan.adaptive_recovery is router.recovery


@given(tasks, st.sampled_from(SUPPORT_ACTIONS), unit)
def test_raising_a_need_never_drops_the_operation(task: TaskSpec, action: RouteAction, share: float) -> None:
    """Threshold monotonicity: a higher need keeps an operation on the adaptive route; a strict maximum is kept."""
    fields = dict(zip(SUPPORT_ACTIONS, task.needs))
    fields[action] += share * (1.0 - fields[action])
    boosted = TaskSpec(task.task_id, task.workload, task.difficulty, task.ambiguity, *fields.values(),
                       task.cost_budget, task.latency_budget_s)
    router = AdaptiveRouter()
    if action in router.plan(task).support:
        assert action in router.plan(boosted).support
    if all(fields[action] > need for a, need in fields.items() if a is not action):
        assert action in router.plan(boosted).support
