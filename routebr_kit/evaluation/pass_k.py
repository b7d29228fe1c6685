"""Reliability over repeated runs: pass^k and per-case consistency next to mean accuracy.

A ledger with repeats holds ``n`` rows per case (``repeat_id``), each an independent run of the same system on the
same case.  With ``c`` of a case's ``n`` repeats exact (``pred_final_path == gold_final_path``):

* **mean accuracy** — the mean over repeats of the exact-match rate (= pass^1);
* **pass^k** (τ-bench: Yao et al., "τ-bench: A Benchmark for Tool-Agent-User Interaction in Real-World Domains",
  arXiv 2406.12045, §4) — the chance that ``k`` independent runs of a case are *all* right, averaged over cases,
  estimated without bias from ``n >= k`` repeats as ``mean over cases of C(c, k) / C(n, k)``.  pass^n is the share of
  cases right in every repeat; pass^k falls with ``k`` unless every case is all-right or all-wrong;
* **consistency** — the share of cases whose repeats all emit the same final path (right or wrong): a case that
  is sometimes right and sometimes wrong, or wrong in two different ways, is inconsistent.

Exact: pass^k is computed as a :class:`~fractions.Fraction` (binomial coefficients of integers) and converted once.
Every case must have the same number of repeats (otherwise the estimator mixes different ``n``); a case with fewer
is a typed :class:`~routebr_kit.core.errors.DataError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.cases import Case
from ..store.ledger import PredictionRow
from .metrics import Cases, Count, index_cases


def pass_hat_k(correct: Sequence[int], n: int, k: int) -> Fraction:
    """τ-bench's pass^k: ``mean over cases of C(c, k) / C(n, k)`` for per-case correct counts ``c`` out of ``n``."""
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= n:
        raise DataError(ErrorCode.INVALID_VALUE, f"1 <= k <= {n} (the number of repeats)", got=k, field="k")
    if not correct:
        raise DataError(ErrorCode.EMPTY_VALUE, "at least one case", field="cases")
    if any(isinstance(c, bool) or not isinstance(c, int) or not 0 <= c <= n for c in correct):
        raise DataError(ErrorCode.INVALID_VALUE, f"correct counts in [0, {n}]", got=list(correct)[:5], field="c")
    total = sum(Fraction(math.comb(c, k), math.comb(n, k)) for c in correct)
    return total / len(correct)


@dataclass(frozen=True, slots=True)
class Reliability:
    """pass^k for k = 1..repeats, mean accuracy and consistency of one ledger with repeats."""

    repeats: int
    cases: int
    per_repeat: Mapping[str, Count]  # repeat_id -> exact count of that repeat
    pass_k: tuple[float, ...]  # pass^1 .. pass^repeats
    all_right: Count  # cases right in every repeat
    consistent: Count  # cases whose repeats all emit one final path

    @property
    def mean_accuracy(self) -> float:
        return self.pass_k[0]

    def as_dict(self) -> dict[str, Any]:
        return {"repeats": self.repeats, "cases": self.cases, "mean_accuracy": self.mean_accuracy,
                "per_repeat": {r: {"exact": c.hits, "n": c.n, "rate": c.rate} for r, c in self.per_repeat.items()},
                "pass_k": {str(k): v for k, v in enumerate(self.pass_k, start=1)},
                "all_right": self.all_right.hits, "consistent": self.consistent.hits,
                "consistency": self.consistent.rate,
                "definition": "pass^k = mean over cases of C(c,k)/C(n,k) (tau-bench, arXiv 2406.12045); "
                              "consistency = share of cases whose repeats all emit one final path"}

    def line(self) -> str:
        shown = ", ".join(f"pass^{k} {100 * v:.1f}%" for k, v in enumerate(self.pass_k, start=1))
        return (f"repeats: {self.repeats} per case over {self.cases} cases; mean accuracy "
                f"{100 * self.mean_accuracy:.1f}%; {shown}; consistency {self.consistent} = "
                f"{100 * self.consistent.rate:.1f}% (one final path in every repeat)")


def reliability(rows: Sequence[PredictionRow], cases: Cases) -> Reliability:
    """pass^k and consistency of ``rows`` (several repeats of the same cases) against the gold of ``cases``."""
    index: Mapping[str, Case] = index_cases(cases)
    by_case: dict[str, dict[str, PredictionRow]] = {}
    for r in rows:
        if r.case_id not in index:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a case ID of the cases file", line=r.line, field="case_id",
                            got=r.case_id)
        seen = by_case.setdefault(r.case_id, {})
        if r.repeat_id in seen:
            raise DataError(ErrorCode.DUPLICATE_ID, "one row per (case_id, repeat_id)", line=r.line, field="case_id",
                            got=f"{r.case_id} repeat {r.repeat_id}")
        seen[r.repeat_id] = r
    if not by_case:
        raise DataError(ErrorCode.EMPTY_VALUE, "at least one prediction row", field="rows")
    repeat_ids = sorted({r.repeat_id for r in rows})
    short = next((cid for cid, reps in by_case.items() if len(reps) != len(repeat_ids)), None)
    if short is not None:
        raise DataError(ErrorCode.INVALID_VALUE, f"every case in each of the {len(repeat_ids)} repeats",
                        field="repeat_id", got=f"{short}: repeats {sorted(by_case[short])}")
    n = len(repeat_ids)
    correct = [sum(r.pred_final_path == index[cid].gold.final_path for r in reps.values())
               for cid, reps in by_case.items()]
    per_repeat = {rid: Count(sum(by_case[cid][rid].pred_final_path == index[cid].gold.final_path for cid in by_case),
                             len(by_case)) for rid in repeat_ids}
    consistent = sum(len({r.pred_final_path for r in reps.values()}) == 1 for reps in by_case.values())
    return Reliability(n, len(by_case), per_repeat, tuple(float(pass_hat_k(correct, n, k)) for k in range(1, n + 1)),
                       Count(sum(c == n for c in correct), len(correct)), Count(consistent, len(by_case)))


__all__ = ["Reliability", "pass_hat_k", "reliability"]
