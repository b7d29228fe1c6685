"""Wilson interval and exact McNemar: scipy versus the published closed formulas, edge cases, properties."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.core import DataError, ErrorCode
from routebr_kit.evaluation import Z95, mcnemar, mcnemar_p_published, wilson, wilson_published


@st.composite
def counts(draw, max_n: int = 2000) -> tuple[int, int]:
    n = draw(st.integers(1, max_n))
    return draw(st.integers(0, n)), n


@settings(max_examples=300, deadline=None)
@given(counts())
def test_kit_wilson_agrees_with_published_closed_form(kn: tuple[int, int]) -> None:
    k, n = kn
    ours, theirs = wilson(k, n), wilson_published(k, n)
    assert abs(ours.low - max(0.0, theirs.low)) <= 1e-12
    assert abs(ours.high - min(1.0, theirs.high)) <= 1e-12


@settings(max_examples=300, deadline=None)
@given(counts())
def test_wilson_contains_the_rate_and_stays_in_unit_interval(kn: tuple[int, int]) -> None:
    k, n = kn
    interval = wilson(k, n)
    assert 0.0 <= interval.low <= k / n <= interval.high <= 1.0
    assert k / n in interval


@pytest.mark.parametrize("confidence", [0.8, 0.95, 0.999])
def test_stdlib_wilson_equals_scipy_wilson_everywhere(confidence: float) -> None:
    from scipy.stats import binomtest

    for n in [*range(1, 41), 57, 100, 160, 200, 600, 1960]:
        for k in range(n + 1):
            ci = binomtest(k, n).proportion_ci(confidence_level=confidence, method="wilson")
            ours = wilson(k, n, confidence=confidence)
            assert abs(ours.low - max(0.0, float(ci.low))) <= 1e-12, (k, n)
            assert abs(ours.high - min(1.0, float(ci.high))) <= 1e-12, (k, n)


def test_wilson_does_not_import_scipy() -> None:
    import subprocess
    import sys

    code = ("import sys; from routebr_kit.evaluation.stats import wilson; wilson(3, 7); "
            "print('scipy.stats' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


@pytest.mark.parametrize("confidence", [0, 1, -0.5, 1.5, True, "0.95", float("nan")])
def test_wilson_rejects_a_confidence_outside_the_open_unit_interval(confidence) -> None:
    with pytest.raises(DataError):
        wilson(3, 7, confidence=confidence)


def test_wilson_is_clamped_where_the_published_bound_was_not() -> None:
    assert wilson_published(40, 40).high == 1.0000000000000002  # the published upper bound for 40/40
    assert wilson(40, 40).high == 1.0
    assert wilson(0, 40).low == 0.0


def test_wilson_reproduces_published_bounds_exactly() -> None:
    # contract_exact_wilson95 of DeepSeek V4 Pro on SELECT-160 (156/160) and of B1 on CONFIRM MAIN (82/200)
    assert wilson_published(156, 160).as_tuple() == (0.9374901071333326, 0.9902360074537375)
    assert wilson_published(82, 200).as_tuple() == (0.34415674908482885, 0.4792354096630791)
    assert Z95 == 1.959963984540054


def test_wilson_with_no_observations() -> None:
    assert wilson(0, 0).as_tuple() == (0.0, 1.0)  # the kit: no information
    assert wilson_published(0, 0).as_tuple() == (0.0, 0.0)  # the published convention


@pytest.mark.parametrize("k, n", [(3, 2), (-1, 5), (1.5, 3), (True, 3)])
def test_wilson_rejects_impossible_counts(k, n) -> None:
    with pytest.raises(DataError) as caught:
        wilson(k, n)
    assert caught.value.code is ErrorCode.INVALID_VALUE


PUBLISHED_MCNEMAR = [
    (115, 2, 8.310387710030923e-32),
    (7, 3, 0.34375),
    (40, 0, 1.8189894035458565e-12),
    (22, 0, 4.76837158203125e-07),
]


@pytest.mark.parametrize("a_only, b_only, p", PUBLISHED_MCNEMAR)
def test_mcnemar_reproduces_published_p_values(a_only: int, b_only: int, p: float) -> None:
    a = {f"c{i}": i < a_only for i in range(a_only + b_only)} | {"both": True, "neither": False}
    b = {f"c{i}": i >= a_only for i in range(a_only + b_only)} | {"both": True, "neither": False}
    result = mcnemar(a, b)
    assert (result.a_only_correct, result.b_only_correct, result.discordant) == (a_only, b_only, a_only + b_only)
    assert result.split == f"{a_only}:{b_only}"
    assert result.paired == a_only + b_only + 2
    assert result.p_two_sided == p
    assert mcnemar_p_published(a_only, b_only) == p


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_scipy_mcnemar_agrees_with_published_arithmetic(a_only: int, b_only: int) -> None:
    a = {i: i < a_only for i in range(a_only + b_only)}
    b = {i: i >= a_only for i in range(a_only + b_only)}
    ours, theirs = mcnemar(a, b).p_two_sided, mcnemar_p_published(a_only, b_only)
    assert math.isclose(ours, theirs, rel_tol=1e-12, abs_tol=0.0)
    assert 0.0 < ours <= 1.0


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.integers(0, 50), st.tuples(st.booleans(), st.booleans()), max_size=50))
def test_mcnemar_is_symmetric(paired: dict[int, tuple[bool, bool]]) -> None:
    a = {k: v[0] for k, v in paired.items()}
    b = {k: v[1] for k, v in paired.items()}
    forward, backward = mcnemar(a, b), mcnemar(b, a)
    assert (forward.a_only_correct, forward.b_only_correct) == (backward.b_only_correct, backward.a_only_correct)
    assert forward.p_two_sided == backward.p_two_sided


def test_mcnemar_pairs_only_shared_cases_and_accepts_series() -> None:
    a = pd.Series({"x": True, "y": True, "only_a": True})
    b = pd.Series({"x": False, "y": True, "only_b": False})
    result = mcnemar(a, b)
    assert (result.a_only_correct, result.b_only_correct, result.paired) == (1, 0, 2)
    assert result.p_two_sided == 1.0


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar({}, {}).p_two_sided == 1.0
    assert mcnemar({"x": True}, {"x": True}).p_two_sided == 1.0
    assert mcnemar_p_published(0, 0) == 1.0


def test_mcnemar_published_rejects_negative_counts() -> None:
    with pytest.raises(DataError) as caught:
        mcnemar_p_published(-1, 3)
    assert caught.value.code is ErrorCode.INVALID_VALUE
