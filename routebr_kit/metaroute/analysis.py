"""Tables and studies on top of an evaluation, for notebooks: pandas views, slices and the seed-count power study.

Kept apart from :mod:`.evaluation` (NumPy only) so that the command line does not import pandas and SciPy.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np
import pandas as pd
from scipy import stats

from .config import EvaluationConfig
from .evaluation import Evaluation, PerSeed, compare
from .records import FAILURE_CODES, NEED_FIELDS, SUPPORT_ACTIONS, TaskSpec, Traces, Workload


def summary_frame(evaluation: Evaluation) -> pd.DataFrame:
    """The summary rows (utility order) as a DataFrame."""
    return pd.DataFrame([asdict(s) for s in evaluation.summaries])


def comparison_frame(evaluation: Evaluation) -> pd.DataFrame:
    """The paired comparisons, with whether each interval excludes zero."""
    return pd.DataFrame([{**asdict(c), "significant": c.significant} for c in evaluation.comparisons])


def per_seed_success(traces: Traces, policies: Sequence[str] | None = None) -> pd.DataFrame:
    """Each seed's success rate per policy (rows: seeds; columns: ``policies``, default all) — the unit from which
    a paired comparison's mean difference and seed-level interval are computed (:func:`.evaluation.compare`)."""
    success = PerSeed.of(traces).success
    names = list(policies or traces.policies)
    return pd.DataFrame({p: success[:, traces.policies.index(p)] for p in names},
                        index=pd.Index(list(traces.seeds), name="seed"))


def workload_frame(evaluation: Evaluation) -> pd.DataFrame:
    """Success rate per policy (rows, summary order) and workload (columns)."""
    order = [s.policy for s in evaluation.summaries]
    return pd.DataFrame(evaluation.workload_success).T.loc[order, [w.value for w in Workload]]


def task_profile_frame(tasks: Sequence[TaskSpec]) -> pd.DataFrame:
    """Mean ambiguity and needs per workload (the paper's Table 1), plus the task count."""
    frame = pd.DataFrame([{"workload": t.workload.value, "ambiguity": t.ambiguity,
                           **{field: getattr(t, field) for field in NEED_FIELDS.values()}} for t in tasks])
    table = frame.groupby("workload", sort=False).mean()
    table.insert(0, "tasks", frame.groupby("workload", sort=False).size())
    return table


def difficulty_success(traces: Traces) -> pd.DataFrame:
    """Success rate per policy (rows) and difficulty level (columns)."""
    levels = np.array([t.difficulty for t in traces.tasks])
    return pd.DataFrame({level: traces.success[:, :, levels == level].mean(axis=(0, 2))
                         for level in sorted(set(levels.tolist()))}, index=list(traces.policies)).rename_axis(
        columns="difficulty")


#: The test every slice comparison names (the published evaluator's pairing: per seed, one policy's mean over the
#: slice's tasks minus the other's; the interval is z · sd / √seeds over those per-seed differences).
SLICE_TEST = "paired by seed: mean of per-seed differences, 95% seed-level interval"


def slice_comparisons(traces: Traces, treatment: str = "adaptive", baseline: str = "static_workload",
                      config: EvaluationConfig = EvaluationConfig()) -> pd.DataFrame:
    """Treatment minus baseline on every workload and every difficulty level, **paired by seed** exactly as the
    headline comparison (:func:`~routebr_kit.metaroute.evaluation.compare` on the slice's per-seed means), with the
    test named in a column; ``significant``: the seed-level interval excludes zero."""
    workloads = np.array([t.workload.value for t in traces.tasks])
    levels = np.array([t.difficulty for t in traces.tasks])
    slices = [("workload", w.value, workloads == w.value) for w in Workload if (workloads == w.value).any()]
    slices += [("difficulty", str(lv), levels == lv) for lv in sorted(set(levels.tolist()))]
    t, b = traces.policies.index(treatment), traces.policies.index(baseline)
    rows = []
    for kind, name, mask in slices:
        per_seed = PerSeed.of(traces, mask)
        c = compare(traces, treatment, baseline, config, per_seed)
        rows.append({"slice": kind, "value": name, "tasks": int(mask.sum()), "seeds": len(traces.seeds),
                     f"{treatment}_success": float(per_seed.success[:, t].mean()),
                     f"{baseline}_success": float(per_seed.success[:, b].mean()),
                     "difference_points": 100 * c.success_difference,
                     "ci95_points": 100 * c.success_difference_ci95, "significant": c.significant,
                     "test": SLICE_TEST})
    return pd.DataFrame(rows)


def action_shares(traces: Traces, policy: str) -> pd.DataFrame:
    """Share of a policy's routes that contain each support operation, per workload and overall."""
    p = traces.policies.index(policy)
    contains = np.array([[action in plan.actions for action in SUPPORT_ACTIONS] for plan in traces.plans])
    per_trace = contains[traces.plan[:, p, :]]  # (seeds, tasks, actions)
    workloads = np.array([t.workload.value for t in traces.tasks])
    rows = {w.value: per_trace[:, workloads == w.value].mean(axis=(0, 1)) for w in Workload
            if (workloads == w.value).any()}
    rows["all"] = per_trace.mean(axis=(0, 1))
    return pd.DataFrame(rows, index=[a.value for a in SUPPORT_ACTIONS]).T


def failure_breakdown(traces: Traces) -> pd.DataFrame:
    """Traces per failure label and policy, and how many of them still succeeded (labels are kept on success)."""
    rows = []
    for p, policy in enumerate(traces.policies):
        codes, success = traces.failure[:, p, :].ravel(), traces.success[:, p, :].ravel()
        for code, mode in enumerate(FAILURE_CODES):
            if mode is not None and (codes == code).any():
                rows.append({"policy": policy, "label": mode.value, "traces": int((codes == code).sum()),
                             "successful": int((success & (codes == code)).sum())})
    return pd.DataFrame(rows)


def ablation_frame(evaluation: Evaluation) -> pd.DataFrame:
    """Table 3: each policy's summary with its paired difference to the treatment (in points)."""
    frame = summary_frame(evaluation)[["policy", "success_rate", "success_ci95", "mean_cost", "mean_latency_s",
                                        "retry_rate", "utility"]]
    differences = {c.baseline: (100 * c.success_difference, 100 * c.success_difference_ci95)
                   for c in evaluation.comparisons}
    frame["difference_pts"] = frame["policy"].map(lambda p: differences.get(p, (np.nan, np.nan))[0])
    frame["difference_ci95_pts"] = frame["policy"].map(lambda p: differences.get(p, (np.nan, np.nan))[1])
    return frame


def power_curve(traces: Traces, treatment: str, baseline: str, seed_counts: Sequence[int],
                config: EvaluationConfig = EvaluationConfig()) -> pd.DataFrame:
    """The paired comparison on the first n seeds, for each n: the difference, its interval and a z-test p-value."""
    rows = []
    for n in seed_counts:
        head = traces.select(policies=[treatment, baseline], seeds=traces.seeds[:n])
        c = compare(head, treatment, baseline, config)
        se = c.success_difference_ci95 / config.z
        rows.append({"seeds": n, "difference_pts": 100 * c.success_difference,
                     "ci95_pts": 100 * c.success_difference_ci95,
                     "p_value": float(2 * stats.norm.sf(abs(c.success_difference) / se)) if se else np.nan,
                     "significant": c.significant})
    return pd.DataFrame(rows)


def detection_power(difference: float, per_seed_sd: float, seeds: int, *, alpha: float = 0.05) -> float:
    """Probability that a two-sided seed-level normal test at level ``alpha`` detects a true ``difference``."""
    shift = abs(difference) / (per_seed_sd / math.sqrt(seeds))
    critical = stats.norm.ppf(1 - alpha / 2)
    return float(stats.norm.sf(critical - shift) + stats.norm.cdf(-critical - shift))


def seeds_for_power(difference: float, per_seed_sd: float, *, power: float = 0.8, alpha: float = 0.05) -> int:
    """Seeds that test needs to detect ``difference`` with the given power (normal approximation)."""
    z = stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)
    return math.ceil((z * per_seed_sd / difference) ** 2)


def ranking_agreement(other: Evaluation, headline: Evaluation) -> dict[str, object]:
    """Two evaluations of the same policies side by side (the explorer's run and the headline run): each one's top
    policy by utility and its success, whether they agree, and the policy whose success differs most between the two,
    with that difference and the headline's seed-level interval for the policy (rates, not points)."""
    mine, theirs = other.summaries, {s.policy: s for s in headline.summaries}
    gaps = {s.policy: abs(s.success_rate - theirs[s.policy].success_rate) for s in mine if s.policy in theirs}
    worst = max(gaps, key=gaps.get)
    return {"top": mine[0].policy, "top_success": mine[0].success_rate,
            "headline_top": headline.summaries[0].policy, "headline_top_success": headline.summaries[0].success_rate,
            "same_top": mine[0].policy == headline.summaries[0].policy, "largest_gap_policy": worst,
            "largest_gap": gaps[worst], "largest_gap_ci95": theirs[worst].success_ci95,
            "gap_within": gaps[worst] <= theirs[worst].success_ci95}
