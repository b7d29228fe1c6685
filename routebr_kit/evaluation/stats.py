"""Statistics of the RouteBR evaluation: the Wilson score interval and the exact two-sided McNemar test.

The McNemar test is :func:`scipy.stats.binomtest`. The Wilson interval is a closed formula, so :func:`wilson`
evaluates it directly with the standard library (the normal quantile from :class:`statistics.NormalDist`): importing
``scipy.stats`` costs two to three seconds of CPU, which dominated every short command that prints an interval (a
report, a score). ``tests/test_evaluation_stats.py`` checks it against
``scipy.stats.binomtest(...).proportion_ci(method="wilson")`` to 1e-12 for every ``k <= n`` with ``n <= 40`` and the
benchmark's sample sizes (57 to 1,960), at three confidence levels. The published scorer's own arithmetic is kept
(:func:`wilson_published`, :func:`mcnemar_p_published`) so the published interval bounds can be reproduced bit for
bit, including the one unclamped upper bound of ``1.0000000000000002``. The kit's :func:`wilson` clamps to [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from statistics import NormalDist

from ..core.errors import DataError, ErrorCode

#: The normal quantile of the published Wilson arithmetic (``norm.ppf(0.975)``).
Z95 = 1.959963984540054


@dataclass(frozen=True, slots=True)
class Interval:
    """A closed interval ``[low, high]``."""

    low: float
    high: float

    def __contains__(self, value: object) -> bool:
        return isinstance(value, (int, float)) and self.low <= value <= self.high

    def __iter__(self):
        """``low, high = interval``."""
        yield self.low
        yield self.high

    def as_tuple(self) -> tuple[float, float]:
        return (self.low, self.high)


def _check_counts(successes: int, n: int) -> None:
    if isinstance(successes, bool) or isinstance(n, bool) or not isinstance(successes, int) \
            or not isinstance(n, int) or not 0 <= successes <= n:
        raise DataError(ErrorCode.INVALID_VALUE, "integer counts with 0 <= successes <= n",
                        got=(successes, n), field="successes")


def _wilson_bounds(successes: int, n: int, z: float) -> Interval:
    """The Wilson score formula, unclamped: ``(p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)``."""
    p = successes / n
    denominator = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denominator
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denominator
    return Interval(centre - margin, centre + margin)


def wilson(successes: int, n: int, *, confidence: float = 0.95) -> Interval:
    """Wilson score interval of ``successes / n``, clamped to [0, 1] (equals scipy's ``method="wilson"``).

    ``n == 0`` carries no information and gives ``[0, 1]`` (the published scorer returned ``[0, 0]``).
    """
    _check_counts(successes, n)
    if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 < confidence < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "a confidence level strictly between 0 and 1", got=confidence,
                        field="confidence")
    if n == 0:
        return Interval(0.0, 1.0)
    low, high = _wilson_bounds(successes, n, NormalDist().inv_cdf(0.5 + confidence / 2))
    # At k = 0 (k = n) the lower (upper) bound is exactly 0 (1); rounding alone can land a hair inside or outside.
    return Interval(0.0 if successes == 0 else max(0.0, low), 1.0 if successes == n else min(1.0, high))


def wilson_published(successes: int, n: int, *, z: float = Z95) -> Interval:
    """The published closed-form Wilson interval: no clamping, ``[0, 0]`` for ``n == 0``."""
    _check_counts(successes, n)
    if n == 0:
        return Interval(0.0, 0.0)
    return _wilson_bounds(successes, n, z)


@dataclass(frozen=True, slots=True)
class McNemar:
    """Exact two-sided McNemar test on paired correctness (A versus B, over the cases both have)."""

    a_only_correct: int
    b_only_correct: int
    paired: int
    p_two_sided: float

    @property
    def discordant(self) -> int:
        return self.a_only_correct + self.b_only_correct

    @property
    def split(self) -> str:
        """``"a:b"``, the way the paper quotes a comparison (e.g. ``115:2``)."""
        return f"{self.a_only_correct}:{self.b_only_correct}"

    def as_dict(self) -> dict[str, float | int]:
        return {"a_only_correct": self.a_only_correct, "b_only_correct": self.b_only_correct,
                "discordant": self.discordant, "paired": self.paired, "p_two_sided": self.p_two_sided}


def mcnemar(a_correct: Mapping[str, bool], b_correct: Mapping[str, bool]) -> McNemar:
    """Exact McNemar test over the intersection of case IDs (``binomtest(min(b, c), b + c, 0.5)``).

    Accepts any mapping from case ID to correctness, e.g. :attr:`Scores.correct` or a boolean ``pd.Series``.
    No discordant pair gives ``p = 1``.
    """
    a, b = dict(a_correct.items()), dict(b_correct.items())
    shared = a.keys() & b.keys()
    a_only = sum(1 for case in shared if a[case] and not b[case])
    b_only = sum(1 for case in shared if b[case] and not a[case])
    discordant = a_only + b_only
    from scipy.stats import binomtest  # heavy: imported when a test is computed

    p = float(binomtest(min(a_only, b_only), discordant, 0.5).pvalue) if discordant else 1.0
    return McNemar(a_only, b_only, len(shared), p)


def mcnemar_p_published(a_only: int, b_only: int) -> float:
    """The published arithmetic: ``min(1, 2 * sum_{i <= min(b, c)} C(n, i) / 2**n)``, exact until the last step."""
    _check_counts(a_only, a_only + b_only)  # both counts are non-negative integers
    n = a_only + b_only
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, i) for i in range(min(a_only, b_only) + 1))
    return float(min(Fraction(1), Fraction(2 * tail, 2 ** n)))
