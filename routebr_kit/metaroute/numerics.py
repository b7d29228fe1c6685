"""Float semantics the published results depend on, reproduced deliberately on any Python ≥ 3.11.

* :func:`builtin_sum` — ``sum()`` of floats as CPython 3.12+ computes it (Neumaier-compensated).  On 3.11 the
  builtin is a plain left-to-right sum, which changes the last digit of the adaptive router's confidence.
* :func:`exact_means` — means rounded once from the exact sum, i.e. what ``statistics.mean`` returns for floats,
  vectorized over NumPy axes through integer mantissas (falls back to rational arithmetic for extreme ranges).
* :func:`seed_ci` — the published seed-level interval ``z · stdev / √n`` (``statistics.stdev``, 3.11+ semantics).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence

import numpy as np

_MANTISSA_BITS = 53
_SPLIT = 26  # a 53-bit mantissa is summed as a 27-bit high part and a 26-bit low part, each exactly in int64
_LOW_MASK = (1 << _SPLIT) - 1


def builtin_sum(values: Iterable[float]) -> float:
    """``sum(values)`` for floats with CPython 3.12+ semantics (Neumaier compensation), on any version."""
    total: float = 0
    compensation = 0.0
    iterator = iter(values)
    for first in iterator:
        total = 0 + first
        break
    for value in iterator:
        t = total + value
        if abs(total) >= abs(value):
            compensation += (total - t) + value
        else:
            compensation += (value - t) + total
        total = t
    if compensation and math.isfinite(compensation):
        total += compensation
    return total


def exact_means(values: np.ndarray, axis: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Means over ``axis`` of finite floats, each rounded once from the exact sum (``statistics.mean`` semantics).

    Every float is ``m · 2**e`` with an integer mantissa ``m``; shifting all mantissas to the smallest exponent
    makes the sum an integer sum, done exactly in int64 (split in two halves) and divided once with Python's
    correctly rounded integer division.  Returns a float64 array shaped like ``values`` without ``axis``.
    """
    values = np.asarray(values, dtype=np.float64)
    axes = tuple(range(values.ndim)) if axis is None else ((axis,) if isinstance(axis, int) else tuple(axis))
    shape = tuple(n for a, n in enumerate(values.shape) if a not in axes)
    count = math.prod(values.shape[a] for a in axes)
    if count == 0:
        raise ValueError("mean requires at least one data point")
    if not np.isfinite(values).all():
        raise ValueError("exact means need finite values")
    fraction, exponent = np.frexp(values)
    mantissa = np.ldexp(fraction, _MANTISSA_BITS).astype(np.int64)
    nonzero = mantissa != 0
    if not nonzero.any():
        return np.zeros(shape)
    low = int(exponent[nonzero].min())
    shift = np.where(nonzero, exponent - low, 0).astype(np.int64)
    if int(shift.max()) + (_MANTISSA_BITS - _SPLIT) + count.bit_length() < 63:  # int64 sums cannot overflow
        high = np.sum((mantissa >> _SPLIT) << shift, axis=axes).ravel().tolist()
        low_part = np.sum((mantissa & _LOW_MASK) << shift, axis=axes).ravel().tolist()
        totals = [(h << _SPLIT) + lo for h, lo in zip(high, low_part)]
    else:  # extreme exponent range: the same sum with Python integers
        totals = np.ravel(np.sum(mantissa.astype(object) << shift.astype(object), axis=axes)).tolist()
    scale = low - _MANTISSA_BITS  # every value is an integer multiple of 2**scale
    if scale >= 0:
        means = [(total << scale) / count for total in totals]
    else:
        means = [total / (count << -scale) for total in totals]
    return np.array(means, dtype=np.float64).reshape(shape)


def exact_mean(values: Sequence[float]) -> float:
    """``statistics.mean`` of a sequence of floats (exact sum, one rounding)."""
    return float(exact_means(np.asarray(values, dtype=np.float64)))


def seed_ci(per_seed: Sequence[float], z: float) -> float:
    """``z · stdev / √n`` over per-seed values (sample stdev, n − 1); 0.0 for a single seed."""
    if len(per_seed) < 2:
        return 0.0
    return z * statistics.stdev(per_seed) / math.sqrt(len(per_seed))
