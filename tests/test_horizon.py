"""Bounded verification over sessions (issue 32): the shipped example's assertions at K = 3 (four hold, the
deliberately false one is refuted by a trace the real controller confirms), the session diff's witness, and the
exact integer-amount solver against brute force."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.store.assets import load_catalog, load_rules
from routebr_kit.verify import horizon

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog(ROOT / "routebr_kit/resources/catalog.csv")
POLICY = load_rules(ROOT / "data/sessions/rules.csv", CATALOG)
ASSERTIONS = horizon.load_assertions(ROOT / "data/sessions/assertions.json", CATALOG)


def test_example_at_k3_four_hold_and_the_false_one_is_refuted_by_a_confirmed_trace():
    report = horizon.verify_horizon(CATALOG, POLICY, ASSERTIONS, 3)
    verdicts = {r.assertion.name: r.holds for r in report.results}
    assert [n for n, ok in verdicts.items() if not ok] == ["DELIBERATELY_FALSE_at_most_two_protected_per_two_hours"]
    (refuted,) = [r for r in report.results if not r.holds]
    cx = refuted.counterexample
    assert cx is not None and cx.confirmed and len(cx.requests) == 3
    assert all(d["final_path"] == "A5_PROTECTED_ACTION" for d in cx.decisions[0])
    times = [r["now"] for r in cx.requests]
    assert times == sorted(times) and times[-1] - times[0] <= 7200 and times[-1] - times[0] > 3600


def test_short_horizons_cannot_refute_it():
    assert horizon.verify_horizon(CATALOG, POLICY, ASSERTIONS, 2).ok


def test_session_diff_names_the_narrowing_with_a_confirmed_witness():
    candidate = load_rules(ROOT / "data/sessions/rules_candidate.csv", CATALOG)
    diff = horizon.session_diff(CATALOG, POLICY, candidate, 3)
    assert set(diff.narrowing) == {"A5_PROTECTED_ACTION"} and not diff.widening
    assert diff.narrowing["A5_PROTECTED_ACTION"].confirmed
    assert not horizon.session_diff(CATALOG, POLICY, POLICY, 2).narrowing


def test_bad_assertions_are_typed_errors():
    with pytest.raises(Exception) as err:
        horizon.parse_assertions({"assertions": [{"never": {"dispatch": "A9"}}]}, CATALOG)
    assert err.value.code.value == "UNKNOWN_ACTION"


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sets(st.integers(0, 2), min_size=1), st.sampled_from(["ge", "le"]),
                          st.integers(0, 5)), max_size=5))
def test_amount_solver_is_exact_against_brute_force(cons):
    cons = frozenset((frozenset(s), k, c) for s, k, c in cons)
    found = horizon._amounts_feasible(3, cons)
    brute = any(horizon._satisfies(x, cons) for x in itertools.product(range(8), repeat=3))
    assert (found is not None) == brute
    if found is not None:
        assert horizon._satisfies(found, cons)
