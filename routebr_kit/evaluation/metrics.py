"""Metrics of one scored slice: a ledger (prediction rows) against the gold labels of its cases.

The definitions are the published scorer's (spec §4.3), every rate over the row count ``n`` unless stated:

* **contract exact** — ``pred_final_path == gold_final_path`` (the path omits the object), with a Wilson interval;
* **strict exact** — the paper's object-aware path ``action@object`` (kit extra; the published scorer ignored it);
* **path macro-F1** — two variants, both with per-label ``F1 = 2TP / (2TP + FP + FN)`` (0 when that is 0),
  averaged exactly with :class:`~fractions.Fraction`:
  ``path_macro_f1`` over the union of gold and predicted labels present in the slice (the published numbers),
  ``path_macro_f1_fixed`` over the paper's fixed nine labels (five actions, four bounded terminals);
* **action / object / boundary accuracy** — field equality with the gold label;
* **false dispatch** — gold path bounded (``T_*``) but the prediction dispatches, over the gold-bounded rows;
  **false block** — gold path an action but the prediction is bounded, over the gold-dispatchable rows.
  Dispatchability is decided from the gold final path, as published; :attr:`Scores.gold_boundary_disagreements`
  lists any case where that disagrees with ``gold_boundary`` (none in the published data);
* **valid JSON** — accepted after at most one repair (the published ``valid_json``); **first-pass valid** — the
  first output accepted as it came (ledger column ``first_pass_valid``; for published ledgers, which lack it,
  ``repair_count == 0`` or else ``not fallback_used``);
* **calls per case** — ledger column ``calls``; for published ledgers ``1 + repair_count`` or else
  ``1 + fallback_used`` (the artifact's receipt audit confirms: 161 calls for V4 Flash, 160 for the others);
* **tokens per case** — mean of ``input_tokens + output_tokens``; **median latency** — median ``latency_ms``;
* **forbidden dispatch** (kit, :mod:`routebr_kit.evaluation.forbidden`; only when :func:`score` is given the
  release's :class:`~routebr_kit.evaluation.forbidden.DispatchGate`) — rows that dispatch an action/object the
  release's controller would not dispatch on the row's state, over all ``n`` rows (``dispatched`` gives the rows
  that dispatch at all), with the count per refusing gate.  Unlike FD it does not look at the gold label.

The second derivations assume that a published row was never repaired successfully; the published call audit
(calls = rows + fallbacks for every task) shows that this holds for the artifact.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..core.errors import DataError, ErrorCode
from ..core.records import TERMINAL_PATHS, Boundary
from ..store.cases import Case
from ..store.ledger import PredictionRow
from .forbidden import DispatchGate, ForbiddenCause, dispatches
from .stats import Interval, wilson

if TYPE_CHECKING:
    import pandas as pd

#: The paper's fixed final-path vocabulary: five dispatch actions and four bounded terminals.
PAPER_PATH_LABELS = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                     "A5_PROTECTED_ACTION", *TERMINAL_PATHS)

Cases = Mapping[str, Case] | Iterable[Case]


def index_cases(cases: Cases) -> Mapping[str, Case]:
    """Cases keyed by case ID (a mapping passes through)."""
    return cases if isinstance(cases, Mapping) else {c.case_id: c for c in cases}


@dataclass(frozen=True, slots=True)
class Count:
    """``hits`` out of ``n``: a rate with its own denominator."""

    hits: int
    n: int

    @property
    def rate(self) -> float:
        """``hits / n``; NaN for an empty denominator."""
        return self.hits / self.n if self.n else math.nan

    @property
    def wilson(self) -> Interval:
        return wilson(self.hits, self.n)

    def __str__(self) -> str:
        return f"{self.hits}/{self.n}"


def _count(flags: Iterable[bool]) -> Count:
    flags = list(flags)
    return Count(sum(flags), len(flags))


def macro_f1(gold: Sequence[str], predicted: Sequence[str], labels: Iterable[str] | None = None) -> float:
    """Exact macro-F1 of two aligned label sequences.

    ``labels=None`` averages over the union of labels present in ``gold`` and ``predicted`` (the published
    variant); otherwise over the given labels (a label absent from both scores 0).  NaN when there is no label.
    """
    if len(gold) != len(predicted):
        raise DataError(ErrorCode.INVALID_VALUE, "aligned gold and predicted sequences",
                        got=(len(gold), len(predicted)))
    chosen = sorted(set(gold) | set(predicted)) if labels is None else list(dict.fromkeys(labels))
    if not chosen:
        return math.nan
    true_positive = Counter(g for g, p in zip(gold, predicted) if g == p)
    gold_n, predicted_n = Counter(gold), Counter(predicted)
    # 2TP + FP + FN = (TP + FN) + (TP + FP) = gold count + predicted count
    total = sum((Fraction(2 * true_positive[label], gold_n[label] + predicted_n[label])
                 for label in chosen if gold_n[label] + predicted_n[label]), Fraction(0))
    return float(total / len(chosen))


def calls_of(row: PredictionRow) -> int:
    """Model calls of one row: the ``calls`` column, else ``1 + repair_count``, else ``1 + fallback_used``."""
    if row.calls is not None:
        return row.calls
    return 1 + (row.repair_count if row.repair_count is not None else int(row.fallback_used))


def first_pass_valid_of(row: PredictionRow) -> bool:
    """First output accepted as it came: the column, else ``repair_count == 0``, else ``not fallback_used``."""
    if row.first_pass_valid is not None:
        return row.first_pass_valid
    return row.repair_count == 0 if row.repair_count is not None else not row.fallback_used


@dataclass(frozen=True, slots=True)
class Scores:
    """Every metric of one scored slice.  :meth:`as_dict` uses the published key names where they exist."""

    n: int
    contract_exact: Count
    strict_exact: Count
    path_macro_f1: float
    path_macro_f1_fixed: float
    action: Count
    object: Count
    boundary: Count
    false_dispatch: Count
    false_block: Count
    valid_json: Count
    first_pass_valid: Count
    fallback: Count
    calls: int
    tokens: int
    latency_ms_median: float
    correct: Mapping[str, bool] = field(default_factory=dict, compare=False, repr=False)
    gold_boundary_disagreements: tuple[str, ...] = ()
    #: Forbidden dispatches over all rows, rows that dispatch at all, and the forbidden ones per refusing gate
    #: (``None``: scored without a release).
    forbidden_dispatch: Count | None = None
    dispatched: Count | None = None
    forbidden_by_cause: Mapping[str, int] = field(default_factory=dict)

    @property
    def calls_per_case(self) -> float:
        return self.calls / self.n if self.n else math.nan

    @property
    def tokens_per_case_mean(self) -> float:
        return self.tokens / self.n if self.n else math.nan

    def as_dict(self) -> dict[str, Any]:
        """A flat record: counts, rates, Wilson bounds of contract exact, costs (published key names)."""
        wilson95 = self.contract_exact.wilson
        out: dict[str, Any] = {"n": self.n}
        for name, count in (("contract_exact", self.contract_exact), ("strict_exact", self.strict_exact)):
            out |= {name: count.hits, f"{name}_rate": count.rate}
        out |= {"contract_exact_wilson95_low": wilson95.low, "contract_exact_wilson95_high": wilson95.high,
                "path_macro_f1": self.path_macro_f1, "path_macro_f1_fixed": self.path_macro_f1_fixed,
                "action_accuracy": self.action.rate, "object_accuracy": self.object.rate,
                "boundary_accuracy": self.boundary.rate}
        for name, count in (("false_dispatch", self.false_dispatch), ("false_block", self.false_block)):
            out |= {name: count.hits, f"{name}_denominator": count.n, f"{name}_rate": count.rate}
        for name, count in (("valid_json", self.valid_json), ("first_pass_valid", self.first_pass_valid),
                            ("fallback", self.fallback)):
            out |= {name: count.hits, f"{name}_rate": count.rate}
        out |= {"tokens_per_case_mean": self.tokens_per_case_mean, "latency_ms_median": self.latency_ms_median,
                "calls": self.calls, "calls_per_case": self.calls_per_case,
                "gold_boundary_disagreements": len(self.gold_boundary_disagreements)}
        if self.forbidden_dispatch is not None and self.dispatched is not None:
            out |= {"forbidden_dispatch": self.forbidden_dispatch.hits,
                    "forbidden_dispatch_denominator": self.forbidden_dispatch.n,
                    "forbidden_dispatch_rate": self.forbidden_dispatch.rate,
                    "dispatched": self.dispatched.hits, "dispatched_denominator": self.dispatched.n}
            out |= {f"forbidden_dispatch_{cause.value}": self.forbidden_by_cause.get(cause.value, 0)
                    for cause in ForbiddenCause}
        return out


def _aligned(rows: Sequence[PredictionRow], cases: Cases) -> list[tuple[PredictionRow, Case]]:
    """Each row with its case; unknown or repeated case IDs raise a located :class:`DataError`."""
    index = index_cases(cases)
    seen: dict[str, int] = {}
    out = []
    for row in rows:
        if row.case_id in seen:
            raise DataError(ErrorCode.DUPLICATE_ID, "one scored row per case", line=row.line, field="case_id",
                            got=row.case_id, detail=f"first seen on line {seen[row.case_id]}")
        seen[row.case_id] = row.line
        case = index.get(row.case_id)
        if case is None:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a case ID of the gold cases", line=row.line,
                            field="case_id", got=row.case_id)
        out.append((row, case))
    return out


def score(rows: Sequence[PredictionRow], cases: Cases, release: DispatchGate | None = None) -> Scores:
    """Score a ledger slice against gold cases (and, given ``release``, count its forbidden dispatches).

    Every row must name a known case, once: score repeated runs (``repeat_id``) one repeat at a time.
    """
    pairs = _aligned(rows, cases)
    forbidden: dict[str, Any] = {}
    if release is not None:
        checks = [release.check(r, c.request) for r, c in pairs]
        forbidden = {"forbidden_dispatch": _count(k.forbidden for k in checks),
                     "dispatched": _count(k.dispatched for k in checks),
                     "forbidden_by_cause": MappingProxyType(dict(sorted(Counter(
                         k.cause.value for k in checks if k.cause is not None).items())))}
    gold_paths = [c.gold.final_path for _, c in pairs]
    pred_paths = [r.pred_final_path for r, _ in pairs]
    correct = {r.case_id: r.pred_final_path == c.gold.final_path for r, c in pairs}
    bounded = [(r, c) for r, c in pairs if not c.gold.dispatchable]
    dispatchable = [(r, c) for r, c in pairs if c.gold.dispatchable]
    latencies = [r.latency_ms for r, _ in pairs]
    return Scores(
        n=len(pairs),
        contract_exact=_count(correct.values()),
        strict_exact=_count(r.strict_path == c.gold.strict_path for r, c in pairs),
        path_macro_f1=macro_f1(gold_paths, pred_paths),
        path_macro_f1_fixed=macro_f1(gold_paths, pred_paths, PAPER_PATH_LABELS),
        action=_count(r.pred_action == c.gold.action for r, c in pairs),
        object=_count(r.pred_object_id == c.gold.object_id for r, c in pairs),
        boundary=_count(r.pred_boundary == c.gold.boundary.value for r, c in pairs),
        false_dispatch=_count(dispatches(r.pred_final_path) for r, _ in bounded),
        false_block=_count(not dispatches(r.pred_final_path) for r, _ in dispatchable),
        valid_json=_count(r.valid_json for r, _ in pairs),
        first_pass_valid=_count(first_pass_valid_of(r) for r, _ in pairs),
        fallback=_count(r.fallback_used for r, _ in pairs),
        calls=sum(calls_of(r) for r, _ in pairs),
        tokens=sum(r.input_tokens + r.output_tokens for r, _ in pairs),
        latency_ms_median=statistics.median(latencies) if latencies else math.nan,
        correct=MappingProxyType(correct),
        gold_boundary_disagreements=gold_boundary_disagreements(c for _, c in pairs),
        **forbidden,
    )


def gold_boundary_disagreements(cases: Iterable[Case]) -> tuple[str, ...]:
    """Case IDs whose gold final path (``T_*`` or an action) disagrees with ``gold_boundary`` (ALLOW or not)."""
    return tuple(c.case_id for c in cases if c.gold.dispatchable != (c.gold.boundary is Boundary.ALLOW))


@dataclass(frozen=True, slots=True)
class PairScores:
    """FLIP pair accuracy: a pair counts only when both of its members are exact."""

    pairs: Count
    correct_by_pair: Mapping[str, bool] = field(default_factory=dict, compare=False)

    @property
    def missed(self) -> tuple[str, ...]:
        return tuple(p for p, ok in self.correct_by_pair.items() if not ok)


def flip_pairs(rows: Sequence[PredictionRow], cases: Cases) -> PairScores:
    """Group rows by the gold ``pair_id``; every pair must have exactly two rows (an incomplete pair is an error)."""
    members: dict[str, list[tuple[PredictionRow, Case]]] = {}
    for row, case in _aligned(rows, cases):
        if not case.pair_id:
            raise DataError(ErrorCode.INVALID_VALUE, "a FLIP case with a pair_id", line=row.line, field="pair_id",
                            got=row.case_id)
        members.setdefault(case.pair_id, []).append((row, case))
    for pair_id, group in members.items():
        if len(group) != 2:
            raise DataError(ErrorCode.INVALID_VALUE, "exactly two scored rows per FLIP pair (incomplete pair)",
                            line=group[0][0].line, field="pair_id", got=pair_id,
                            detail="rows for " + ", ".join(r.case_id for r, _ in group))
    correct = {pair_id: all(r.pred_final_path == c.gold.final_path for r, c in group)
               for pair_id, group in sorted(members.items())}
    return PairScores(_count(correct.values()), MappingProxyType(correct))


def scores_frame(scores: Mapping[str, Scores]) -> pd.DataFrame:
    """One row per scored slice (index: its label), every metric as a column."""
    import pandas as pd  # frames only; scoring itself needs no pandas

    return pd.DataFrame.from_dict({label: s.as_dict() for label, s in scores.items()}, orient="index")
