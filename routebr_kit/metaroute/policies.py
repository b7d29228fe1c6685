"""Meta-decision policies: each turns a task profile into a :class:`RoutePlan` and never executes anything.

A policy offers two views of the same decision:

* ``route(task, rng)`` — one plan, drawing from ``rng`` if the policy is stochastic (the exact mode passes the
  published per-(seed, policy) stream; deterministic policies ignore it);
* ``support(task)`` — every plan it may return with its probability (the fast executor samples from it).

``stochastic`` tells a runner whether plans may be cached per task.
"""

from __future__ import annotations

import abc
import itertools
import math
import random
from dataclasses import dataclass, field
from typing import Protocol

from .config import MetaRouteConfig, PolicyConfig
from .numerics import builtin_sum
from .records import SUPPORT_ACTIONS, PlanChoice, RouteAction, RoutePlan, TaskSpec

ANSWER = RouteAction.ANSWER


class Policy(Protocol):
    """What the runner needs from a policy."""

    name: str
    stochastic: bool

    def route(self, task: TaskSpec, rng: random.Random) -> RoutePlan: ...

    def support(self, task: TaskSpec) -> tuple[PlanChoice, ...]: ...


class _Deterministic(abc.ABC):
    """A policy whose plan depends on the task only."""

    stochastic = False

    @abc.abstractmethod
    def plan(self, task: TaskSpec) -> RoutePlan: ...

    def route(self, task: TaskSpec, rng: random.Random) -> RoutePlan:
        return self.plan(task)

    def support(self, task: TaskSpec) -> tuple[PlanChoice, ...]:
        return (PlanChoice(self.plan(task), 1.0),)


@dataclass(frozen=True)
class FixedPolicy(_Deterministic):
    """The same support operations for every task (``direct`` has none)."""

    name: str
    actions: tuple[RouteAction, ...]
    confidence: float = 0.5
    _plan: RoutePlan = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_plan", RoutePlan((*self.actions, ANSWER), confidence=self.confidence,
                                                    rationale="fixed route"))

    def plan(self, task: TaskSpec) -> RoutePlan:
        return self._plan


@dataclass(frozen=True)
class RandomPolicy:
    """k uniform over ``lengths``, then k distinct support operations in sampled order."""

    name: str = "random"
    lengths: tuple[int, ...] = (1, 2)
    confidence: float = 0.5
    stochastic = True
    _plans: dict[tuple[int, ...], RoutePlan] = field(init=False, repr=False, compare=False)
    _choices: tuple[PlanChoice, ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        n = len(SUPPORT_ACTIONS)
        plans = {indices: RoutePlan((*(SUPPORT_ACTIONS[i] for i in indices), ANSWER), confidence=self.confidence,
                                    rationale="random route")
                 for k in self.lengths for indices in itertools.permutations(range(n), k)}
        object.__setattr__(self, "_plans", plans)
        object.__setattr__(self, "_choices", tuple(
            PlanChoice(plan, 1 / len(self.lengths) / math.perm(n, len(indices))) for indices, plan in plans.items()))

    def route(self, task: TaskSpec, rng: random.Random) -> RoutePlan:
        k = rng.choice(self.lengths)
        # sample() draws depend only on the population size, so sampling indices reproduces the published stream
        return self._plans[tuple(rng.sample(range(len(SUPPORT_ACTIONS)), k))]

    def support(self, task: TaskSpec) -> tuple[PlanChoice, ...]:
        return self._choices


@dataclass(frozen=True)
class StaticWorkloadPolicy(_Deterministic):
    """A fixed route per workload (a rule table)."""

    name: str = "static_workload"
    config: PolicyConfig = PolicyConfig()

    def plan(self, task: TaskSpec) -> RoutePlan:
        return RoutePlan((*self.config.static_routes[task.workload], ANSWER),
                         confidence=self.config.static_confidence, rationale="workload-level rule table")


@dataclass(frozen=True)
class OneShotPolicy(_Deterministic):
    """The single operation with the largest need (ties: canonical order); confidence = that need."""

    name: str = "one_shot"

    def plan(self, task: TaskSpec) -> RoutePlan:
        need, action = max(zip(task.needs, SUPPORT_ACTIONS), key=lambda pair: pair[0])
        return RoutePlan((action, ANSWER), confidence=need, rationale=f"highest task-level need: {action.value}")


@dataclass(frozen=True)
class AdaptiveRouter(_Deterministic):
    """Threshold routing on task-level needs, capped at ``max_actions``, with one optional recovery retry.

    Operations whose need clears the difficulty-dependent threshold are kept in descending need order (stable,
    so ties keep canonical order), at most ``max_actions``; if none clears it the single largest need is used.
    ``decompose`` moves to the front and ``verify`` to the end.  Confidence is the sum of the kept
    above-threshold needs over the route length, capped at 1 — hence 0.0 on a fallback route, as published.
    """

    name: str = "adaptive"
    config: PolicyConfig = PolicyConfig()
    max_actions: int | None = None  # None: config.adaptive_max_actions
    recovery: bool = True
    disabled: frozenset[RouteAction] = frozenset()

    def plan(self, task: TaskSpec) -> RoutePlan:
        cfg = self.config
        cap = cfg.adaptive_max_actions if self.max_actions is None else self.max_actions
        scores = [(action, need) for action, need in zip(SUPPORT_ACTIONS, task.needs) if action not in self.disabled]
        threshold = (cfg.adaptive_easy_threshold if task.difficulty <= cfg.adaptive_easy_max_difficulty
                     else cfg.adaptive_hard_threshold)
        selected = sorted((s for s in scores if s[1] >= threshold), key=lambda s: s[1], reverse=True)[:cap]
        chosen = [action for action, _ in selected] or [max(scores, key=lambda s: s[1])[0]]
        if RouteAction.DECOMPOSE in chosen:
            chosen.remove(RouteAction.DECOMPOSE)
            chosen.insert(0, RouteAction.DECOMPOSE)
        if RouteAction.VERIFY in chosen:
            chosen.remove(RouteAction.VERIFY)
            chosen.append(RouteAction.VERIFY)
        confidence = min(1.0, builtin_sum(need for _, need in selected) / max(1, len(chosen)))
        return RoutePlan((*chosen, ANSWER), adaptive_recovery=self.recovery, confidence=confidence,
                         rationale="task-level needs with budgeted composition and recovery")


def default_policies(config: MetaRouteConfig = MetaRouteConfig()) -> tuple[Policy, ...]:
    """The eight policies of the main experiment, in published (trace row) order."""
    cfg = config.policies
    return (
        FixedPolicy("direct", (), cfg.fixed_confidence),
        FixedPolicy("always_decompose", (RouteAction.DECOMPOSE,), cfg.fixed_confidence),
        FixedPolicy("always_tool", (RouteAction.USE_TOOL,), cfg.fixed_confidence),
        FixedPolicy("always_code", (RouteAction.EXECUTE_CODE,), cfg.fixed_confidence),
        RandomPolicy("random", cfg.random_route_lengths, cfg.fixed_confidence),
        StaticWorkloadPolicy("static_workload", cfg),
        OneShotPolicy("one_shot"),
        AdaptiveRouter("adaptive", cfg),
    )


def ablation_policies(config: MetaRouteConfig = MetaRouteConfig()) -> tuple[Policy, ...]:
    """The adaptive router and its four ablations, in published order."""
    cfg = config.policies
    return (
        AdaptiveRouter("adaptive", cfg),
        AdaptiveRouter("adaptive_no_recovery", cfg, recovery=False),
        AdaptiveRouter("adaptive_single_action", cfg, max_actions=1),
        AdaptiveRouter("adaptive_no_decompose", cfg, disabled=frozenset({RouteAction.DECOMPOSE})),
        AdaptiveRouter("adaptive_no_verify", cfg, disabled=frozenset({RouteAction.VERIFY})),
    )
