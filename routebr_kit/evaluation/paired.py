"""Paired statistics of two systems (or two releases) scored on the same rows: the one-sided exact McNemar test of
a regression and the exact paired-bootstrap distribution of an accuracy drop.

Both read only the discordant counts of a paired comparison over ``n`` rows: ``regressions`` (right before, wrong
after) and ``fixes`` (wrong before, right after).

* :func:`regression_p` — ``P(X >= regressions)`` for ``X ~ Binomial(regressions + fixes, 1/2)``: the exact
  one-sided McNemar p-value of "the candidate is worse" (``1.0`` with no discordant pair).  Under no change
  (each discordant pair equally likely either way) a criterion ``regression_p >= alpha`` fails with probability at
  most ``alpha`` — the binomial test is exact, hence conservative.
* :func:`bootstrap_drop_distribution` — the distribution of the drop ``(R* - F*) / n`` when the ``n`` paired rows
  are resampled with replacement, computed **exactly** (the limit of infinitely many bootstrap replicates, so no
  seed): ``R* - F*`` is the sum of ``n`` independent rows each ``+1`` (a regression) with probability ``r / n``,
  ``-1`` (a fix) with probability ``f / n`` and ``0`` otherwise, and its law is the n-fold convolution of that
  three-point law, computed by FFT (exact up to floating point, ~1e-12).  :func:`bootstrap_drop_quantile` reads a
  quantile off it (percentile bootstrap).

The domain of both: integer counts with ``0 <= regressions + fixes <= n``; anything else is a typed
:class:`~routebr_kit.core.errors.DataError`.
"""

from __future__ import annotations

from functools import lru_cache

from ..core.errors import DataError, ErrorCode


def _check(regressions: int, fixes: int, n: int) -> None:
    values = (regressions, fixes, n)
    if any(isinstance(v, bool) or not isinstance(v, int) for v in values) or min(values) < 0 \
            or regressions + fixes > n:
        raise DataError(ErrorCode.INVALID_VALUE, "integer counts with 0 <= regressions + fixes <= n",
                        got=values, field="discordant")


def regression_p(regressions: int, fixes: int) -> float:
    """One-sided exact McNemar p-value that the candidate is worse: ``P(Bin(r + f, 1/2) >= r)``."""
    _check(regressions, fixes, regressions + fixes)
    discordant = regressions + fixes
    if not discordant:
        return 1.0
    from scipy.stats import binom  # heavy: imported when a test is computed

    return float(min(1.0, binom.sf(regressions - 1, discordant, 0.5)))


@lru_cache(maxsize=512)
def _drop_cdf(regressions: int, fixes: int, n: int):
    """``P(R* - F* <= d)`` for ``d = -n..n`` (a numpy array of ``2n + 1`` values)."""
    import numpy as np

    size = 1 << (2 * n + 1).bit_length()  # a power of two > 2n: no wrap-around of the support
    angle = -2j * np.pi * np.arange(size) / size
    # the characteristic function of one resampled row (+1 regression, -1 fix, 0 otherwise), to the n-th power
    phi = (1 - (regressions + fixes) / n) + (regressions / n) * np.exp(angle) + (fixes / n) * np.exp(-angle)
    pmf = np.fft.ifft(phi ** n).real
    pmf = np.concatenate([pmf[size - n:], pmf[:n + 1]])  # d = -n..-1 wrap to the top of the array
    pmf = np.clip(pmf, 0.0, None)
    pmf /= pmf.sum()
    return np.cumsum(pmf)


def bootstrap_drop_distribution(regressions: int, fixes: int, n: int) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """``(support, probabilities)`` of ``R* - F*`` (the resampled net number of regressions), exactly up to
    floating point (the n-fold convolution of one row's three-point law, computed by FFT); probabilities below
    ``1e-12`` are left out of the support."""
    _check(regressions, fixes, n)
    if regressions + fixes == 0 or n == 0:
        return (0,), (1.0,)
    import numpy as np

    cdf = _drop_cdf(regressions, fixes, n)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    keep = np.nonzero(pmf > 1e-12)[0]
    return tuple(int(k - n) for k in keep), tuple(float(pmf[k]) for k in keep)


def bootstrap_drop_quantile(regressions: int, fixes: int, n: int, q: float) -> float:
    """The ``q`` quantile (percentile bootstrap) of the drop in percentage points, ``100 (R* - F*) / n``."""
    if isinstance(q, bool) or not isinstance(q, (float, int)) or not 0.0 < q < 1.0:
        raise DataError(ErrorCode.INVALID_VALUE, "a quantile strictly between 0 and 1", got=q, field="q")
    _check(regressions, fixes, n)
    if regressions + fixes == 0 or n == 0:
        return 0.0
    import numpy as np

    cdf = _drop_cdf(regressions, fixes, n)
    index = int(np.searchsorted(cdf, q - 1e-12))
    return 100.0 * (min(index, 2 * n) - n) / n


#: The one-sided level of the lower confidence bound a gate reads (``path_exact_drop_lcb``).
_LCB_LEVEL = 0.95


def drop_lcb(regressions: int, fixes: int, n: int) -> float:
    """One-sided 95% lower confidence bound of the drop (pp): the 5th percentile of the exact paired bootstrap."""
    if n == 0:
        return 0.0
    return bootstrap_drop_quantile(regressions, fixes, n, 1.0 - _LCB_LEVEL)


__all__ = ["bootstrap_drop_distribution", "bootstrap_drop_quantile", "drop_lcb", "regression_p"]
