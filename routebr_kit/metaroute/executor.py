"""The seeded offline executor: plan → typed trace.

Everything that does not depend on random draws is computed once per (task, plan) by
:meth:`ExecutionModel.plan_model` — the difficulty factor, cost and latency, the success probability of each outcome
(clean, failed, recovered), the budget flags and the clipping.  Two executors then draw outcomes from it:

* :class:`ExactExecutor` — the published draws, bit for bit: a CPython Mersenne Twister per trace seeded with
  the string ``"{seed}:{task_id}:{policy}"``; one uniform per failure-prone operation until the first failure,
  one for the recovery retry if the plan asks for it, one for success.
* :class:`FastExecutor` — the same model vectorized over the whole (seed × policy × task) grid with a
  counter-based Philox4x32-10 generator keyed by (seed, task, policy).  Different draws, same distribution.

Any object with ``execute(task, plan, seed, policy) -> ExecutionTrace`` is an :class:`Executor`; a live executor
plugs into :func:`routebr_kit.metaroute.run.execute_all` without touching policies or evaluation.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, runtime_checkable

import numpy as np

from ..core.hashing import sha256_bytes
from .config import ExecutorConfig
from .numerics import builtin_sum
from .policies import Policy
from .records import (
    FAILURE_CODE,
    SUPPORT_ACTIONS,
    ExecutionTrace,
    FailureMode,
    RouteAction,
    RoutePlan,
    TaskSpec,
    Traces,
)

ANSWER = RouteAction.ANSWER
CLEAN, FAILED, RECOVERED = 0, 1, 2  # outcome indices of PlanModel.outcomes
ROUTE, FAILURE, RECOVERY, SUCCESS = range(4)  # which uniform of a trace decides what


@runtime_checkable
class Executor(Protocol):
    """Runs one plan for one task under one seed.  ``policy`` is the policy's name (part of the RNG key)."""

    def execute(self, task: TaskSpec, plan: RoutePlan, seed: int, policy: str) -> ExecutionTrace: ...


@runtime_checkable
class GridExecutor(Executor, Protocol):
    """An executor that can also run a whole (seed × policy × task) grid at once (sampling each policy's plans)."""

    def execute_grid(self, tasks: Sequence[TaskSpec], policies: Sequence[Policy], seeds: Sequence[int]) -> Traces: ...


class Outcome(NamedTuple):
    """One branch of an execution: its clipped success probability, rounded cost/latency and budget flags."""

    success_probability: float
    cost: float
    latency_s: float
    retries: int
    within_cost_budget: bool
    within_latency_budget: bool


@dataclass(frozen=True, slots=True)
class PlanModel:
    """What executing a plan on a task can lead to, before any draw."""

    checks: tuple[tuple[RouteAction, float], ...]  # operations that can fail, in route order, with probability
    recovery: bool
    outcomes: tuple[Outcome, Outcome, Outcome]  # CLEAN, FAILED (unrecovered), RECOVERED

    def failure_cdf(self) -> tuple[float, ...]:
        """For each check k: the probability that the first failure happens at a check ≤ k."""
        cdf, survive = [], 1.0
        for _, probability in self.checks:
            cdf.append((cdf[-1] if cdf else 0.0) + survive * probability)
            survive *= 1.0 - probability
        return tuple(cdf)

    def branch_probabilities(self, recovery_success: float) -> tuple[float, float, float]:
        """P(clean), P(failed, unrecovered), P(recovered)."""
        cdf = self.failure_cdf()
        failed = cdf[-1] if cdf else 0.0
        if not self.recovery:
            return 1.0 - failed, failed, 0.0
        return 1.0 - failed, failed * (1.0 - recovery_success), failed * recovery_success

    def success_rate(self, recovery_success: float) -> float:
        """The probability that a trace of this plan succeeds (averaged over its failure branches)."""
        return sum(weight * outcome.success_probability for weight, outcome in
                   zip(self.branch_probabilities(recovery_success), self.outcomes))


class _Route(NamedTuple):
    """The task-independent parts of a plan under a configuration."""

    cost: float
    latency_s: float
    checks: tuple[tuple[RouteAction, float], ...]
    support: tuple[tuple[int, float], ...]  # (need index, benefit) per support operation, in route order


class ExecutionModel:
    """The execution model of one :class:`ExecutorConfig` (spec §6.2): plan + task → :class:`PlanModel`.

    Holds the operation table as plain lookups and memoises the task-independent part of each plan.
    """

    def __init__(self, config: ExecutorConfig = ExecutorConfig()) -> None:
        self.config = config
        self._operations = {action: config.operations[action] for action in RouteAction}
        self._need_index = {action: i for i, action in enumerate(SUPPORT_ACTIONS)}
        self._routes: dict[int, tuple[RoutePlan, _Route]] = {}  # by plan identity; policies reuse plan objects

    def difficulty_factor(self, difficulty: int) -> float:
        """The multiplier of cost, latency and retry charges: ``1 + step · (difficulty − 1)``."""
        return 1 + self.config.difficulty_cost_step * (difficulty - 1)

    def route(self, plan: RoutePlan) -> _Route:
        """Cost and latency sums, failure checks and support operations of a plan."""
        cached = self._routes.get(id(plan))
        if cached is not None and cached[0] is plan:
            return cached[1]
        ops = [self._operations[a] for a in plan.actions]
        route = _Route(
            cost=builtin_sum(op.cost for op in ops),  # every operation is charged, answer included
            latency_s=builtin_sum(op.latency_s for op in ops),
            checks=tuple((a, op.failure) for a, op in zip(plan.actions, ops) if op.failure > 0),
            support=tuple((self._need_index[a], op.benefit) for a, op in zip(plan.actions, ops) if a is not ANSWER))
        self._routes[id(plan)] = (plan, route)
        return route

    def base_probability(self, task: TaskSpec, plan: RoutePlan) -> float:
        """Success probability before failure, recovery and budget adjustments, in the published float order."""
        cfg = self.config
        needs = task.needs
        support = self.route(plan).support
        p = cfg.base_success - cfg.difficulty_penalty * (task.difficulty - 1) - cfg.ambiguity_penalty * task.ambiguity
        for index, benefit in support:
            need = needs[index]
            p += benefit * need  # two separate updates: a fused expression rounds differently
            p -= cfg.mismatch_penalty * (1 - need)
        p -= cfg.coordination_penalty * max(0, len(support) - cfg.coordination_free_actions)
        return p

    def plan_model(self, task: TaskSpec, plan: RoutePlan) -> PlanModel:
        """Every draw-independent quantity of executing ``plan`` on ``task``."""
        cfg = self.config
        route = self.route(plan)
        factor = self.difficulty_factor(task.difficulty)
        base = self.base_probability(task, plan)
        cost, latency = route.cost * factor, route.latency_s * factor  # all operations, even after a failure
        plain = _Charges.of(task, cost, latency, cfg.round_digits)
        retry = _Charges.of(task, cost + cfg.retry_cost * factor, latency + cfg.retry_latency_s * factor,
                            cfg.round_digits)
        recovery = plan.adaptive_recovery
        return PlanModel(route.checks, recovery, (
            self._outcome(base, plain, 0),
            self._outcome(base - cfg.failure_penalty, retry if recovery else plain, int(recovery)),
            self._outcome(base - cfg.recovered_penalty, retry, 1)))

    def _outcome(self, p: float, charges: _Charges, retries: int) -> Outcome:
        cfg = self.config
        if not charges.within_cost_budget:  # budget flags use unrounded values
            p -= cfg.cost_budget_penalty
        if not charges.within_latency_budget:
            p -= cfg.latency_budget_penalty
        return Outcome(min(cfg.max_success, max(cfg.min_success, p)), charges.cost, charges.latency_s, retries,
                       charges.within_cost_budget, charges.within_latency_budget)


class _Charges(NamedTuple):
    cost: float  # rounded
    latency_s: float  # rounded
    within_cost_budget: bool
    within_latency_budget: bool

    @classmethod
    def of(cls, task: TaskSpec, cost: float, latency: float, digits: int) -> _Charges:
        return cls(round(cost, digits), round(latency, digits), cost <= task.cost_budget,
                   latency <= task.latency_budget_s)


def expected_success_rates(tasks: Sequence[TaskSpec], policies: Sequence[Policy],
                           config: ExecutorConfig = ExecutorConfig()) -> dict[str, float]:
    """Each policy's success rate in expectation — the value every unbiased executor converges to."""
    model = ExecutionModel(config)
    return {policy.name: sum(choice.probability * model.plan_model(task, choice.plan).success_rate(
        config.recovery_success) for task in tasks for choice in policy.support(task)) / len(tasks)
        for policy in policies}


def _trace(task: TaskSpec, plan: RoutePlan, seed: int, policy: str, model: PlanModel, failed: RouteAction | None,
           draw: Callable[[int], float], recovery_success: float) -> ExecutionTrace:
    """The trace once the first failing check (``failed``) is known: ``draw(RECOVERY)`` (only after a failure of a
    plan that asks for recovery) and then ``draw(SUCCESS)`` are the trace's remaining uniforms, drawn in that order."""
    if failed is None:
        outcome = model.outcomes[CLEAN]
    elif model.recovery and draw(RECOVERY) < recovery_success:
        outcome, failed = model.outcomes[RECOVERED], None
    else:
        outcome = model.outcomes[FAILED]
    success = bool(draw(SUCCESS) < outcome.success_probability)
    mode = FailureMode.of(failed) if failed is not None else (None if success else FailureMode.TASK_FAILURE)
    return ExecutionTrace(policy, task, plan, seed, success, outcome.success_probability, outcome.cost,
                          outcome.latency_s, outcome.retries, outcome.within_cost_budget,
                          outcome.within_latency_budget, mode)


class ExactExecutor:
    """The published executor's draws on CPython's Mersenne Twister, one stream per trace."""

    def __init__(self, config: ExecutorConfig = ExecutorConfig()) -> None:
        self.config = config
        self.execution_model = ExecutionModel(config)
        self._rng = random.Random()
        self._models: dict[tuple[int, int], tuple[TaskSpec, RoutePlan, PlanModel]] = {}

    def model(self, task: TaskSpec, plan: RoutePlan) -> PlanModel:
        """The plan model, memoised per (task, plan) object pair."""
        cached = self._models.get((id(task), id(plan)))
        if cached is not None and cached[0] is task and cached[1] is plan:
            return cached[2]
        model = self.execution_model.plan_model(task, plan)
        self._models[id(task), id(plan)] = (task, plan, model)
        return model

    def execute(self, task: TaskSpec, plan: RoutePlan, seed: int, policy: str) -> ExecutionTrace:
        model = self.model(task, plan)
        rng = self._rng
        rng.seed(f"{seed}:{task.task_id}:{policy}")
        # the scan stops at the first failure; one stream, so every uniform is simply the next draw
        failed = next((action for action, probability in model.checks if rng.random() < probability), None)
        return _trace(task, plan, seed, policy, model, failed, lambda _: rng.random(), self.config.recovery_success)


_MASK32 = np.uint64(0xFFFFFFFF)
_PHILOX_M = (np.uint64(0xD2511F53), np.uint64(0xCD9E8D57))
_PHILOX_W = (np.uint64(0x9E3779B9), np.uint64(0xBB67AE85))


def philox4x32(counter: Sequence[np.ndarray], key: Sequence[np.ndarray], rounds: int = 10) -> tuple[np.ndarray, ...]:
    """Philox4x32-R (Salmon et al., SC'11): four 32-bit counter words and two key words → four random words.

    Works elementwise on broadcastable arrays (32-bit values held in uint64, so the 32×32-bit products fit).
    """
    c0, c1, c2, c3 = (np.asarray(c, dtype=np.uint64) for c in counter)
    k0, k1 = (np.asarray(k, dtype=np.uint64) for k in key)
    shape = np.broadcast_shapes(c0.shape, c1.shape, c2.shape, c3.shape, k0.shape, k1.shape)
    c0, c1, c2, c3 = (np.broadcast_to(c, shape).copy() for c in (c0, c1, c2, c3))  # updated in place below
    high0, high1 = np.empty(shape, dtype=np.uint64), np.empty(shape, dtype=np.uint64)
    for round_index in range(rounds):
        if round_index:
            k0, k1 = (k0 + _PHILOX_W[0]) & _MASK32, (k1 + _PHILOX_W[1]) & _MASK32
        np.multiply(c0, _PHILOX_M[0], out=c0)  # c0 ← lo0 · 2**32 + hi0 as a 64-bit product
        np.multiply(c2, _PHILOX_M[1], out=c2)
        np.right_shift(c0, np.uint64(32), out=high0)
        np.right_shift(c2, np.uint64(32), out=high1)
        np.bitwise_and(c0, _MASK32, out=c0)
        np.bitwise_and(c2, _MASK32, out=c2)
        # (c0, c1, c2, c3) ← (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0)
        np.bitwise_xor(high1, c1, out=high1)
        np.bitwise_xor(high1, k0, out=high1)
        np.bitwise_xor(high0, c3, out=high0)
        np.bitwise_xor(high0, k1, out=high0)
        c0, c1, c2, c3, high0, high1 = high1, c2, high0, c0, c1, c3
    return c0, c1, c2, c3


def _words(text: str) -> tuple[int, int]:
    """Two 32-bit words of a stable 64-bit hash of ``text``."""
    value = int(sha256_bytes(text.encode("utf-8"))[:16], 16)
    return value & 0xFFFFFFFF, value >> 32


def trace_uniforms(seeds: Sequence[int], task_ids: Sequence[str], policies: Sequence[str]) -> np.ndarray:
    """Four independent uniforms in [0, 1) per (seed, policy, task), shape (4, S, P, T).

    Counter = (seed low, seed high, task hash low, task hash high); key = policy-name hash.  Uniform ``i`` of a
    trace depends on nothing but its own (seed, task, policy) — not on the grid or the order.
    """
    seed = np.asarray(seeds, dtype=np.uint64).reshape(-1, 1, 1)
    task = np.array([_words(t) for t in task_ids], dtype=np.uint64).reshape(1, 1, -1, 2)
    key = np.array([_words(p) for p in policies], dtype=np.uint64).reshape(1, -1, 1, 2)
    words = philox4x32((seed & _MASK32, seed >> np.uint64(32), task[..., 0], task[..., 1]),
                       (key[..., 0], key[..., 1]))
    uniforms = np.empty((4, len(seeds), len(policies), len(task_ids)))
    for out, word in zip(uniforms, words):
        np.multiply(word.view(np.int64), 2.0**-32, out=out)  # words < 2**32: the int64 view converts faster
    return uniforms


_FAILURE_OF = {action: FAILURE_CODE[FailureMode.of(action)] for action in RouteAction}


class FastExecutor:
    """The execution model vectorized with NumPy over a whole grid, drawing from :func:`trace_uniforms`.

    For each trace: uniform ``ROUTE`` picks the plan from the policy's :meth:`support`; uniform ``FAILURE`` picks
    the first failing operation by inverse CDF (the same distribution as the sequential scan); ``RECOVERY`` and
    ``SUCCESS`` decide the retry and the outcome.
    """

    def __init__(self, config: ExecutorConfig = ExecutorConfig()) -> None:
        self.config = config
        self.execution_model = ExecutionModel(config)

    def execute(self, task: TaskSpec, plan: RoutePlan, seed: int, policy: str) -> ExecutionTrace:
        model = self.execution_model.plan_model(task, plan)
        u = trace_uniforms([seed], [task.task_id], [policy])[:, 0, 0, 0]
        failed = next((action for (action, _), threshold in zip(model.checks, model.failure_cdf())
                       if u[FAILURE] < threshold), None)
        return _trace(task, plan, seed, policy, model, failed, u.__getitem__, self.config.recovery_success)

    def execute_grid(self, tasks: Sequence[TaskSpec], policies: Sequence[Policy], seeds: Sequence[int]) -> Traces:
        """Route and execute every (seed, policy, task) at once."""
        tasks, seeds = tuple(tasks), tuple(seeds)
        plans: list[RoutePlan] = []
        models: list[PlanModel] = []
        known: dict[tuple[int, int], int] = {}

        def index(task_index: int, plan: RoutePlan) -> int:
            key = (task_index, id(plan))
            if key not in known:
                known[key] = len(models)
                plans.append(plan)
                models.append(self.execution_model.plan_model(tasks[task_index], plan))
            return known[key]

        u = trace_uniforms(seeds, [t.task_id for t in tasks], [p.name for p in policies])
        chosen = np.empty(u.shape[1:], dtype=np.int64)  # model index per trace
        positions = np.arange(len(tasks))
        for p, policy in enumerate(policies):
            supports = [policy.support(task) for task in tasks]
            if not policy.stochastic:
                chosen[:, p, :] = [index(t, support[0].plan) for t, support in enumerate(supports)]
                continue
            # inverse CDF over every task's choices at once: task t owns the interval (t, t + 1]
            edges, targets = [], []
            for t, support in enumerate(supports):
                cumulative = np.cumsum([c.probability for c in support])
                cumulative[-1] = 1.0
                edges.extend(t + cumulative)
                targets.extend(index(t, c.plan) for c in support)
            at = np.searchsorted(np.asarray(edges), positions + u[ROUTE, :, p, :], side="right")
            chosen[:, p, :] = np.asarray(targets)[at]

        tables = _ModelTables.build(models)
        checks = tables.failure_cdf.shape[1]
        first = sum((u[FAILURE] >= np.take(tables.failure_cdf[:, k], chosen)).astype(np.int64)
                    for k in range(checks))  # position of the first failing check; `checks` if none failed
        failed = first < checks
        recovered = failed & np.take(tables.recovery, chosen) & (u[RECOVERY] < self.config.recovery_success)
        branch = np.where(recovered, RECOVERED, np.where(failed, FAILED, CLEAN))
        cell = chosen * 3 + branch
        probability = np.take(tables.probability, cell)
        success = u[SUCCESS] < probability
        task_failure = FAILURE_CODE[FailureMode.TASK_FAILURE]
        failure = np.where(branch == FAILED, np.take(tables.failure_code, chosen * (checks + 1) + first),
                           np.where(success, 0, task_failure)).astype(np.int8)
        return Traces(
            tasks=tasks, policies=tuple(p.name for p in policies), seeds=seeds, plans=tuple(plans),
            plan=chosen.astype(np.int32), success=success, expected_success=probability,
            cost=np.take(tables.cost, cell), latency_s=np.take(tables.latency, cell),
            retries=np.take(tables.retries, cell), within_cost_budget=np.take(tables.within_cost, cell),
            within_latency_budget=np.take(tables.within_latency, cell), failure=failure)


@dataclass(frozen=True)
class _ModelTables:
    """Plan models as arrays: per model and branch (M, 3), per model and failure check (M, K)."""

    probability: np.ndarray
    cost: np.ndarray
    latency: np.ndarray
    retries: np.ndarray
    within_cost: np.ndarray
    within_latency: np.ndarray
    recovery: np.ndarray  # (M,)
    failure_cdf: np.ndarray  # P(first failure at a check ≤ k), padded with the last value (0 without checks)
    failure_code: np.ndarray  # (M, K + 1): label of a first failure at check k; column K (no failure) is unused

    @classmethod
    def build(cls, models: Sequence[PlanModel]) -> _ModelTables:
        width = max(1, max(len(m.checks) for m in models))
        cdf = np.zeros((len(models), width))
        codes = np.zeros((len(models), width + 1), dtype=np.int8)
        for i, model in enumerate(models):
            for k, ((action, _), threshold) in enumerate(zip(model.checks, model.failure_cdf())):
                cdf[i, k:] = threshold
                codes[i, k] = _FAILURE_OF[action]
        outcomes = np.array([m.outcomes for m in models], dtype=np.float64)  # (M, 3, fields of Outcome)

        def column(name: str, dtype: type) -> np.ndarray:
            return outcomes[:, :, Outcome._fields.index(name)].astype(dtype)

        return cls(probability=column("success_probability", np.float64), cost=column("cost", np.float64),
                   latency=column("latency_s", np.float64), retries=column("retries", np.int8),
                   within_cost=column("within_cost_budget", np.bool_),
                   within_latency=column("within_latency_budget", np.bool_),
                   recovery=np.array([m.recovery for m in models], dtype=np.bool_), failure_cdf=cdf,
                   failure_code=codes)
