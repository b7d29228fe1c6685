"""Evaluation of a trace grid: per-policy summaries, paired seed-level comparisons, slices and counts.

Arithmetic follows the published evaluator exactly: means are exact-sum means (``statistics.mean``), intervals
are ``z · stdev / √seeds`` over per-seed rates (``statistics.stdev``), and the summary is ordered by utility
``U = S − w_K · K − w_L · L`` (a stable sort).  Pairing is at the seed level only: per seed, the mean over the
treatment's tasks minus the mean over the baseline's.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from .config import EvaluationConfig
from .numerics import exact_mean, exact_means, seed_ci
from .records import FAILURE_CODES, Traces, Workload

_NOTE = "Results are from the seeded offline execution model, not production deployment."


@dataclass(frozen=True, slots=True)
class PolicySummary:
    """One row of ``summary.csv``."""

    policy: str
    n: int
    success_rate: float
    success_ci95: float
    expected_success: float
    mean_cost: float
    cost_per_success: float
    mean_latency_s: float
    retry_rate: float
    budget_compliance: float
    utility: float


@dataclass(frozen=True, slots=True)
class Comparison:
    """One row of ``comparisons.csv``: treatment minus baseline, paired by seed."""

    treatment: str
    baseline: str
    success_difference: float
    success_difference_ci95: float
    cost_difference: float
    latency_difference_s: float

    @property
    def significant(self) -> bool:
        """Whether the seed-level interval excludes zero."""
        return abs(self.success_difference) > self.success_difference_ci95


@dataclass(frozen=True)
class Evaluation:
    """Everything the published evaluator reports for one trace grid."""

    summaries: tuple[PolicySummary, ...]  # by utility, descending
    comparisons: tuple[Comparison, ...]  # by baseline name; empty without the treatment policy
    workload_success: dict[str, dict[str, float]]
    action_counts: dict[str, dict[str, int]]
    failure_modes: dict[str, dict[str, int]]
    configuration: dict[str, Any]

    def details(self) -> dict[str, Any]:
        """The ``details.json`` document."""
        return {"configuration": self.configuration, "action_counts": self.action_counts,
                "failure_modes": self.failure_modes, "workload_success": self.workload_success}

    def summary(self, policy: str) -> PolicySummary:
        return next(s for s in self.summaries if s.policy == policy)


def evaluate(traces: Traces, config: EvaluationConfig = EvaluationConfig()) -> Evaluation:
    """Summaries, comparisons and the ``details.json`` content of a trace grid."""
    per_seed = PerSeed.of(traces)
    return Evaluation(
        summaries=summarize(traces, config, per_seed),
        # the treatment against every other policy, by baseline name; none if the treatment is absent
        comparisons=tuple(compare(traces, config.treatment, baseline, config, per_seed)
                          for baseline in sorted(set(traces.policies) - {config.treatment})
                          if config.treatment in traces.policies),
        workload_success=workload_success(traces),
        action_counts=action_counts(traces),
        failure_modes=failure_modes(traces),
        configuration={"tasks": len({t.task_id for t in traces.tasks}), "seeds": len(set(traces.seeds)),
                       "policies": sorted(set(traces.policies)), "note": _NOTE},
    )


@dataclass(frozen=True)
class PerSeed:
    """Per (seed, policy) means over tasks — the unit of the seed-level intervals and of the pairing."""

    success: np.ndarray
    cost: np.ndarray
    latency_s: np.ndarray

    @classmethod
    def of(cls, traces: Traces, tasks: np.ndarray | None = None) -> PerSeed:
        """``tasks``: a boolean mask of the tasks to average over (a workload or difficulty slice; default all)."""
        success, cost, latency = traces.success, traces.cost, traces.latency_s
        if tasks is not None:
            success, cost, latency = success[:, :, tasks], cost[:, :, tasks], latency[:, :, tasks]
        return cls(success=success.sum(axis=2) / success.shape[2], cost=exact_means(cost, axis=2),
                   latency_s=exact_means(latency, axis=2))


def summarize(traces: Traces, config: EvaluationConfig = EvaluationConfig(),
              per_seed: PerSeed | None = None) -> tuple[PolicySummary, ...]:
    """One summary per policy, ordered by utility (descending, stable)."""
    per_seed = per_seed or PerSeed.of(traces)
    seeds, _, tasks = traces.success.shape
    n = seeds * tasks
    success = (traces.success.sum(axis=(0, 2)) / n).tolist()
    expected = exact_means(traces.expected_success, axis=(0, 2)).tolist()
    cost = exact_means(traces.cost, axis=(0, 2)).tolist()
    latency = exact_means(traces.latency_s, axis=(0, 2)).tolist()
    retry = ((traces.retries > 0).sum(axis=(0, 2)) / n).tolist()
    compliance = ((traces.within_cost_budget & traces.within_latency_budget).sum(axis=(0, 2)) / n).tolist()
    rows = []
    for p, policy in enumerate(traces.policies):
        s, k, lat = success[p], cost[p], latency[p]
        rows.append(PolicySummary(
            policy=policy, n=n, success_rate=s, success_ci95=seed_ci(per_seed.success[:, p].tolist(), config.z),
            expected_success=expected[p], mean_cost=k, cost_per_success=k / s if s else math.inf,
            mean_latency_s=lat, retry_rate=retry[p], budget_compliance=compliance[p],
            utility=s - config.utility_cost_weight * k - config.utility_latency_weight * lat))
    return tuple(sorted(rows, key=lambda r: r.utility, reverse=True))


def compare(traces: Traces, treatment: str, baseline: str, config: EvaluationConfig = EvaluationConfig(),
            per_seed: PerSeed | None = None) -> Comparison:
    """Treatment minus baseline: mean and interval of the per-seed differences (cost and latency: mean only)."""
    per_seed = per_seed or PerSeed.of(traces)
    t, b = traces.policies.index(treatment), traces.policies.index(baseline)
    success = (per_seed.success[:, t] - per_seed.success[:, b]).tolist()
    return Comparison(
        treatment=treatment, baseline=baseline, success_difference=exact_mean(success),
        success_difference_ci95=seed_ci(success, config.z),
        cost_difference=exact_mean((per_seed.cost[:, t] - per_seed.cost[:, b]).tolist()),
        latency_difference_s=exact_mean((per_seed.latency_s[:, t] - per_seed.latency_s[:, b]).tolist()))


def workload_success(traces: Traces) -> dict[str, dict[str, float]]:
    """Success rate per policy and workload."""
    out: dict[str, dict[str, float]] = {}
    workloads = np.array([t.workload.value for t in traces.tasks])
    for p, policy in enumerate(traces.policies):
        grid = traces.success[:, p, :]
        out[policy] = {w.value: int(grid[:, workloads == w.value].sum()) / grid[:, workloads == w.value].size
                       for w in Workload if (workloads == w.value).any()}
    return out


def action_counts(traces: Traces) -> dict[str, dict[str, int]]:
    """Occurrences of every operation (``answer`` included) in each policy's routes."""
    out = {}
    for p, policy in enumerate(traces.policies):
        uses = np.bincount(traces.plan[:, p, :].ravel(), minlength=len(traces.plans))
        counts: Counter[str] = Counter()
        for index in np.flatnonzero(uses):
            for action in traces.plans[index].actions:
                counts[action.value] += int(uses[index])
        out[policy] = dict(sorted(counts.items()))
    return out


def failure_modes(traces: Traces) -> dict[str, dict[str, int]]:
    """Failure-label counts per policy; traces without a label count as ``"none"``."""
    out = {}
    for p, policy in enumerate(traces.policies):
        counts = np.bincount(traces.failure[:, p, :].ravel(), minlength=len(FAILURE_CODES))
        out[policy] = dict(sorted((mode.value if mode else "none", int(counts[code]))
                                  for code, mode in enumerate(FAILURE_CODES) if counts[code]))
    return out
