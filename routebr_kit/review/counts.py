"""The few counts and tests the diff needs, in plain Python so ``routebr-kit diff`` starts without pandas or scipy.

Each function here has the definition of its counterpart in :mod:`routebr_kit.evaluation` and is property-tested
equal to it (``tests/test_review_counts.py``): :func:`wilson` to :func:`routebr_kit.evaluation.stats.wilson`
(scipy's Wilson interval, clamped to [0, 1]) within 1e-9; :func:`mcnemar_exact` to
:func:`routebr_kit.evaluation.stats.mcnemar` (scipy's exact binomial test) within 1e-9; :func:`tally` to the
exact, strict, FD, FB and object counts of :func:`routebr_kit.evaluation.metrics.score`; :func:`flip_pair_count`
to :func:`routebr_kit.evaluation.metrics.flip_pairs`.  Importing scipy's stats package alone costs more than a
second of CPU on this machine, which is more than a whole shadow + diff of the published runs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..core.errors import DataError, ErrorCode
from ..store.cases import Case
from ..store.ledger import PredictionRow

Z95 = 1.959963984540054  # norm.ppf(0.975), as in routebr_kit.evaluation.stats


@dataclass(frozen=True, slots=True)
class Count:
    hits: int
    n: int

    @property
    def rate(self) -> float:
        return self.hits / self.n if self.n else math.nan

    @property
    def wilson(self) -> tuple[float, float]:
        return wilson(self.hits, self.n)

    def __str__(self) -> str:
        return f"{self.hits}/{self.n}"


def wilson(successes: int, n: int) -> tuple[float, float]:
    """Wilson score 95% interval, clamped to [0, 1]; ``(0, 1)`` for ``n == 0`` (as the kit's scipy version)."""
    if type(successes) is not int or type(n) is not int or not 0 <= successes <= n:
        raise DataError(ErrorCode.INVALID_VALUE, "integer counts with 0 <= successes <= n", got=(successes, n),
                        field="successes")
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    z2 = Z95 * Z95
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    margin = Z95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    return max(0.0, centre - margin), min(1.0, centre + margin)


@dataclass(frozen=True, slots=True)
class McNemarResult:
    a_only_correct: int
    b_only_correct: int
    paired: int
    p_two_sided: float

    @property
    def discordant(self) -> int:
        return self.a_only_correct + self.b_only_correct

    @property
    def split(self) -> str:
        return f"{self.a_only_correct}:{self.b_only_correct}"

    def as_dict(self) -> dict[str, float | int]:
        return {"a_only_correct": self.a_only_correct, "b_only_correct": self.b_only_correct,
                "discordant": self.discordant, "paired": self.paired, "p_two_sided": self.p_two_sided}


def mcnemar_exact(a_correct: Mapping[str, bool], b_correct: Mapping[str, bool]) -> McNemarResult:
    """Exact two-sided McNemar test over shared keys: ``min(1, 2 * P[X <= min(b, c)])``, X ~ Bin(b + c, 1/2)."""
    shared = a_correct.keys() & b_correct.keys()
    a_only = sum(1 for k in shared if a_correct[k] and not b_correct[k])
    b_only = sum(1 for k in shared if b_correct[k] and not a_correct[k])
    n = a_only + b_only
    if n == 0:
        return McNemarResult(a_only, b_only, len(shared), 1.0)
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return McNemarResult(a_only, b_only, len(shared), float(min(Fraction(1), Fraction(2 * tail, 2 ** n))))


@dataclass(frozen=True, slots=True)
class Tally:
    exact: Count
    strict: Count
    false_dispatch: Count
    false_block: Count
    object: Count


def _strict_gold(case: Case) -> str:
    g = case.gold
    return f"{g.final_path}@{g.object_id}" if not g.final_path.startswith("T_") else g.final_path


def tally(rows: Sequence[PredictionRow], cases: Mapping[str, Case]) -> Tally:
    """Contract exact, strict exact, FD (over gold-bounded), FB (over gold-dispatchable) and object accuracy."""
    exact = strict = fd = fd_n = fb = fb_n = obj = 0
    for r in rows:
        g = cases[r.case_id].gold
        exact += r.pred_final_path == g.final_path
        strict += r.strict_path == _strict_gold(cases[r.case_id])
        obj += r.pred_object_id == g.object_id
        dispatched = not r.pred_final_path.startswith("T_")
        if g.final_path.startswith("T_"):
            fd_n += 1
            fd += dispatched
        else:
            fb_n += 1
            fb += not dispatched
    n = len(rows)
    return Tally(Count(exact, n), Count(strict, n), Count(fd, fd_n), Count(fb, fb_n), Count(obj, n))


def flip_pair_count(rows: Sequence[PredictionRow], cases: Mapping[str, Case]) -> Count:
    """FLIP pairs whose two members are both exact (an incomplete pair is an error, as in the scorer)."""
    members: dict[str, list[bool]] = {}
    for r in rows:
        case = cases[r.case_id]
        if not case.pair_id:
            raise DataError(ErrorCode.INVALID_VALUE, "a FLIP case with a pair_id", line=r.line, field="pair_id",
                            got=r.case_id)
        members.setdefault(case.pair_id, []).append(r.pred_final_path == case.gold.final_path)
    for pair_id, flags in members.items():
        if len(flags) != 2:
            raise DataError(ErrorCode.INVALID_VALUE, "exactly two scored rows per FLIP pair (incomplete pair)",
                            field="pair_id", got=pair_id)
    return Count(sum(all(f) for f in members.values()), len(members))


def calls_of(row: PredictionRow) -> int:
    """Model calls of one row (as :func:`routebr_kit.evaluation.metrics.calls_of`)."""
    if row.calls is not None:
        return row.calls
    return 1 + (row.repair_count if row.repair_count is not None else int(row.fallback_used))


def first_pass_valid_of(row: PredictionRow) -> bool:
    """As :func:`routebr_kit.evaluation.metrics.first_pass_valid_of`."""
    if row.first_pass_valid is not None:
        return row.first_pass_valid
    return row.repair_count == 0 if row.repair_count is not None else not row.fallback_used


__all__ = ["Count", "McNemarResult", "Tally", "calls_of", "first_pass_valid_of", "flip_pair_count",
           "mcnemar_exact", "tally", "wilson"]
