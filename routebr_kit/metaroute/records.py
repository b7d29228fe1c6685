"""Typed records of MetaRoute-Bench: task profiles, route plans, execution traces and the trace grid.

The published vocabulary is kept as enum values (``data_analysis``, ``use_tool``, ``use_tool_failure`` …), so the
exported files read exactly like the artifact's while code and tests work with members.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import DataError, ErrorCode


class Workload(str, enum.Enum):
    """The three workload families, in generation order."""

    DATA_ANALYSIS = "data_analysis"
    RESEARCH = "research"
    DOCUMENT_PROCESSING = "document_processing"


class RouteAction(str, enum.Enum):
    """A meta-decision operation.  ``ANSWER`` ends every route; the other five are support operations."""

    DECOMPOSE = "decompose"
    USE_TOOL = "use_tool"
    EXECUTE_CODE = "execute_code"
    DELEGATE = "delegate"
    VERIFY = "verify"
    ANSWER = "answer"


#: Support operations in canonical (scoring and tie-breaking) order: D, T, C, G, V.
SUPPORT_ACTIONS: tuple[RouteAction, ...] = tuple(a for a in RouteAction if a is not RouteAction.ANSWER)
#: The task-profile field holding each support operation's need.
NEED_FIELDS = {
    RouteAction.DECOMPOSE: "decomposition_need",
    RouteAction.USE_TOOL: "tool_need",
    RouteAction.EXECUTE_CODE: "code_need",
    RouteAction.DELEGATE: "delegation_need",
    RouteAction.VERIFY: "verification_need",
}


class FailureMode(str, enum.Enum):
    """Why a trace is labelled a failure (``None`` on a trace means no label)."""

    TASK_FAILURE = "task_failure"
    DECOMPOSE_FAILURE = "decompose_failure"
    USE_TOOL_FAILURE = "use_tool_failure"
    EXECUTE_CODE_FAILURE = "execute_code_failure"
    DELEGATE_FAILURE = "delegate_failure"
    VERIFY_FAILURE = "verify_failure"
    ANSWER_FAILURE = "answer_failure"

    @classmethod
    def of(cls, action: RouteAction) -> FailureMode:
        """The label of an unrecovered failure of ``action`` (``use_tool`` → ``use_tool_failure``)."""
        return cls(f"{action.value}_failure")


#: Failure labels by integer code, as stored in :class:`Traces` (code 0 is "no label").
FAILURE_CODES: tuple[FailureMode | None, ...] = (None, *FailureMode)
FAILURE_CODE = {mode: code for code, mode in enumerate(FAILURE_CODES)}


def _unit(value: float, field: str) -> None:
    if not 0.0 <= value <= 1.0:
        raise DataError(ErrorCode.INVALID_VALUE, "a value in [0, 1]", field=field, got=value)


@dataclass(frozen=True, slots=True)
class TaskSpec:
    """One task profile: workload, difficulty level, ambiguity, five operation needs in [0, 1] and two budgets."""

    task_id: str
    workload: Workload
    difficulty: int
    ambiguity: float
    decomposition_need: float
    tool_need: float
    code_need: float
    delegation_need: float
    verification_need: float
    cost_budget: float
    latency_budget_s: float

    def __post_init__(self) -> None:
        if isinstance(self.difficulty, bool) or not isinstance(self.difficulty, int) or self.difficulty < 1:
            raise DataError(ErrorCode.INVALID_INTEGER, "an integer difficulty ≥ 1", field="difficulty",
                            got=self.difficulty)
        for name in ("ambiguity", *NEED_FIELDS.values()):
            _unit(getattr(self, name), name)
        for name in ("cost_budget", "latency_budget_s"):
            if not getattr(self, name) > 0:
                raise DataError(ErrorCode.INVALID_VALUE, "a positive budget", field=name, got=getattr(self, name))

    @property
    def needs(self) -> tuple[float, ...]:
        """The five needs in canonical order (D, T, C, G, V)."""
        return (self.decomposition_need, self.tool_need, self.code_need, self.delegation_need,
                self.verification_need)


@dataclass(frozen=True, slots=True)
class RoutePlan:
    """What a policy decided: distinct operations ending in ``answer``, whether to retry once, and why."""

    actions: tuple[RouteAction, ...]
    adaptive_recovery: bool = False
    confidence: float = 0.5
    rationale: str = ""

    def __post_init__(self) -> None:
        if not self.actions or self.actions[-1] is not RouteAction.ANSWER:
            raise DataError(ErrorCode.INVALID_VALUE, "a route ending in 'answer'", field="actions",
                            got=[a.value for a in self.actions])
        if len(set(self.actions)) != len(self.actions):
            raise DataError(ErrorCode.DUPLICATE_ID, "distinct operations", field="actions",
                            got=[a.value for a in self.actions])
        _unit(self.confidence, "confidence")

    @property
    def support(self) -> tuple[RouteAction, ...]:
        """The operations before ``answer``."""
        return self.actions[:-1]

    @property
    def label(self) -> str:
        """The published ``actions`` cell: values joined with ``|``."""
        return "|".join(a.value for a in self.actions)


@dataclass(frozen=True, slots=True)
class PlanChoice:
    """One route a policy may take for a task, with its probability."""

    plan: RoutePlan
    probability: float


@dataclass(frozen=True, slots=True)
class ExecutionTrace:
    """The outcome of executing one plan for one task under one seed.

    Cost and latency are rounded to the configured digits (as published); the budget flags and the clipped
    success probability ``expected_success`` come from unrounded values.  A plan is a valid route by
    construction, so there is no invalid-route outcome.
    """

    policy: str
    task: TaskSpec
    plan: RoutePlan
    seed: int
    success: bool
    expected_success: float
    cost: float
    latency_s: float
    retries: int
    within_cost_budget: bool
    within_latency_budget: bool
    failure_mode: FailureMode | None


@dataclass(frozen=True, eq=False)
class Traces:
    """Every trace of a run as a (seed × policy × task) grid of NumPy columns.

    ``plan[s, p, t]`` indexes :attr:`plans`; ``failure[s, p, t]`` indexes :data:`FAILURE_CODES`.  Flattened in C
    order the grid is the published row order: seed, then policy (list order), then task (generation order).
    """

    tasks: tuple[TaskSpec, ...]
    policies: tuple[str, ...]
    seeds: tuple[int, ...]
    plans: tuple[RoutePlan, ...]
    plan: np.ndarray
    success: np.ndarray
    expected_success: np.ndarray
    cost: np.ndarray
    latency_s: np.ndarray
    retries: np.ndarray
    within_cost_budget: np.ndarray
    within_latency_budget: np.ndarray
    failure: np.ndarray

    def __post_init__(self) -> None:
        shape = (len(self.seeds), len(self.policies), len(self.tasks))
        for name in ("plan", "success", "expected_success", "cost", "latency_s", "retries", "within_cost_budget",
                     "within_latency_budget", "failure"):
            if getattr(self, name).shape != shape:
                raise DataError(ErrorCode.ROW_SHAPE, f"a {shape} grid", field=name, got=getattr(self, name).shape)

    def __len__(self) -> int:
        return self.success.size

    @classmethod
    def from_records(cls, records: Sequence[ExecutionTrace], tasks: Sequence[TaskSpec], policies: Sequence[str],
                     seeds: Sequence[int]) -> Traces:
        """Collect per-trace records given in published order (seed, policy, task) into a grid."""
        shape = (len(seeds), len(policies), len(tasks))
        if len(records) != shape[0] * shape[1] * shape[2]:
            raise DataError(ErrorCode.ROW_SHAPE, f"{shape[0] * shape[1] * shape[2]} traces", got=len(records))
        plans: list[RoutePlan] = []
        plan_index: dict[int, int] = {}  # by identity: policies hand out the same plan object repeatedly
        index = []
        for r in records:
            key = id(r.plan)
            if key not in plan_index:
                plan_index[key] = len(plans)
                plans.append(r.plan)
            index.append(plan_index[key])

        def column(values: list, dtype: type) -> np.ndarray:
            return np.array(values, dtype=dtype).reshape(shape)

        return cls(
            tasks=tuple(tasks), policies=tuple(policies), seeds=tuple(seeds), plans=tuple(plans),
            plan=column(index, np.int32),
            success=column([r.success for r in records], np.bool_),
            expected_success=column([r.expected_success for r in records], np.float64),
            cost=column([r.cost for r in records], np.float64),
            latency_s=column([r.latency_s for r in records], np.float64),
            retries=column([r.retries for r in records], np.int8),
            within_cost_budget=column([r.within_cost_budget for r in records], np.bool_),
            within_latency_budget=column([r.within_latency_budget for r in records], np.bool_),
            failure=column([FAILURE_CODE[r.failure_mode] for r in records], np.int8),
        )

    def records(self) -> Iterator[ExecutionTrace]:
        """The traces as typed records, in published row order."""
        for s, p, t in np.ndindex(self.success.shape):
            yield self.record(s, p, t)

    def record(self, s: int, p: int, t: int) -> ExecutionTrace:
        """The trace of seed index ``s``, policy index ``p`` and task index ``t``."""
        at = (s, p, t)
        return ExecutionTrace(
            policy=self.policies[p], task=self.tasks[t], plan=self.plans[self.plan[at]], seed=self.seeds[s],
            success=bool(self.success[at]), expected_success=float(self.expected_success[at]),
            cost=float(self.cost[at]), latency_s=float(self.latency_s[at]), retries=int(self.retries[at]),
            within_cost_budget=bool(self.within_cost_budget[at]),
            within_latency_budget=bool(self.within_latency_budget[at]),
            failure_mode=FAILURE_CODES[self.failure[at]])

    def select(self, *, policies: Sequence[str] | None = None, seeds: Sequence[int] | None = None) -> Traces:
        """A sub-grid: some policies and/or some seeds (in the order given)."""
        p = [self.policies.index(name) for name in policies] if policies is not None else list(
            range(len(self.policies)))
        s = [self.seeds.index(seed) for seed in seeds] if seeds is not None else list(range(len(self.seeds)))
        grid = np.ix_(s, p, range(len(self.tasks)))
        return Traces(
            tasks=self.tasks, policies=tuple(self.policies[i] for i in p), seeds=tuple(self.seeds[i] for i in s),
            plans=self.plans, plan=self.plan[grid], success=self.success[grid],
            expected_success=self.expected_success[grid], cost=self.cost[grid], latency_s=self.latency_s[grid],
            retries=self.retries[grid], within_cost_budget=self.within_cost_budget[grid],
            within_latency_budget=self.within_latency_budget[grid], failure=self.failure[grid])
