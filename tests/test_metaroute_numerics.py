"""The float semantics the published results need: 3.12 ``sum()``, exact means, seed-level intervals."""

from __future__ import annotations

import statistics
import sys

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.metaroute.numerics import builtin_sum, exact_mean, exact_means, seed_ci

finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300)


def test_builtin_sum_is_compensated_like_python_312() -> None:
    assert builtin_sum([0.1] * 10) == 1.0  # a plain left-to-right sum gives 0.9999999999999999
    assert builtin_sum([1e100, 1.0, -1e100]) == 1.0  # plain: 0.0
    assert builtin_sum([]) == 0 and isinstance(builtin_sum([]), int)
    assert builtin_sum([2.5]) == 2.5


@given(st.lists(finite, max_size=30))
def test_builtin_sum_equals_the_builtin_where_it_is_compensated(values: list[float]) -> None:
    if sys.version_info >= (3, 12):
        assert builtin_sum(values) == sum(values)
    else:  # 3.11: Neumaier's error bound against the exact (fsum) result: |err| <= 2u|S| + n²u²·Σ|x|
        # (not "never worse than the naive sum": on [1e-274, -5.47e16, -5.92e16, -5.17e16, -5.86e16] the naive
        # sum happens to round to the exact result and the compensated one is 1 ulp off — hypothesis found it)
        import math

        exact = math.fsum(values)
        u, n = 2.0 ** -53, len(values)
        magnitude = math.fsum(abs(v) for v in values)
        assert abs(builtin_sum(values) - exact) <= 2 * u * abs(exact) + n * n * u * u * magnitude + 1e-300


@settings(max_examples=300)
@given(st.lists(finite, min_size=1, max_size=40))
def test_exact_mean_is_statistics_mean(values: list[float]) -> None:
    assert exact_mean(values) == statistics.mean(values)


@given(st.lists(st.floats(min_value=0.02, max_value=0.98), min_size=6, max_size=6), st.integers(1, 4))
def test_exact_means_over_axes(values: list[float], reps: int) -> None:
    grid = np.array(values * reps).reshape(reps, 2, 3)
    by_middle = exact_means(grid, axis=(0, 2))
    assert by_middle.tolist() == [statistics.mean(grid[:, i, :].ravel().tolist()) for i in range(2)]
    assert exact_means(grid, axis=2).tolist() == [[statistics.mean(r) for r in row] for row in grid.tolist()]


def test_seed_ci_is_normal_interval_of_per_seed_values() -> None:
    rates = [0.5, 0.6, 0.7, 0.55]
    assert seed_ci(rates, 1.96) == 1.96 * statistics.stdev(rates) / 2.0
    assert seed_ci([0.5], 1.96) == 0.0
