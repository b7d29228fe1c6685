"""Metric definitions on small hand-built ledgers: denominators, derivations, edge cases, typed errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.core import Boundary, DataError, ErrorCode, RouteRequest, RuntimeState
from routebr_kit.evaluation import PAPER_PATH_LABELS, flip_pairs, macro_f1, score, scores_frame
from routebr_kit.store.cases import Case, Gold, ObjectDifficulty, Split
from routebr_kit.store.ledger import PredictionRow

A1, A3, A4 = "A1_ADVISORY", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE"
ETF, OTHER = "SSE:510300", "SSE:510050"


def case(case_id: str, path: str, obj: str = ETF, *, boundary: Boundary | None = None, pair: str = "",
         action: str = A1) -> Case:
    boundary = boundary or (Boundary.ALLOW if not path.startswith("T_") else Boundary(path[2:]))
    gold = Gold(action, ObjectDifficulty.EXPLICIT_NAME, obj, boundary, path, ())
    split = Split.FLIP if pair else Split.MAIN
    return Case(RouteRequest(case_id, "u", (), RuntimeState({}), ()), split, gold, pair_id=pair)


def row(case_id: str, path: str, obj: str = ETF, *, action: str = A1, line: int = 0, **extra) -> PredictionRow:
    boundary = "ALLOW" if not path.startswith("T_") else path[2:]
    return PredictionRow(case_id, "routebr", action, obj, boundary, path, (action,), True, False, line=line,
                         **extra)


CASES = [case("c1", A1), case("c2", A1), case("c3", "T_CLARIFY", "UNRESOLVED"), case("c4", "T_REJECT"),
         case("c5", A3, action=A3)]


def test_denominators_and_counts() -> None:
    rows = [
        row("c1", A1),  # exact
        row("c2", A1, OTHER),  # path exact, object wrong: strict miss
        row("c3", A1, OTHER),  # false dispatch
        row("c4", "T_REJECT"),  # exact bounded
        row("c5", "T_CLARIFY", action=A3),  # false block
    ]
    s = score(rows, CASES)
    assert s.n == 5
    assert (s.contract_exact.hits, s.contract_exact.n) == (3, 5)
    assert str(s.strict_exact) == "2/5"
    assert str(s.false_dispatch) == "1/2"  # denominator: gold T_* rows
    assert str(s.false_block) == "1/3"  # denominator: gold dispatchable rows
    assert str(s.object) == "3/5"
    assert str(s.action) == "5/5"
    assert str(s.boundary) == "3/5"
    assert dict(s.correct) == {"c1": True, "c2": True, "c3": False, "c4": True, "c5": False}
    assert s.gold_boundary_disagreements == ()


def test_costs_and_calls_derivations() -> None:
    rows = [
        row("c1", A1, input_tokens=700, output_tokens=50, latency_ms=1000.0),  # published row: 1 call
        PredictionRow("c2", "routebr", "NONE", "NONE", "CLARIFY", "T_CLARIFY", (), False, True,
                      input_tokens=1400, output_tokens=100, latency_ms=3000.0),  # published fallback: 2 calls
        row("c3", "T_CLARIFY", "UNRESOLVED", repair_count=1, latency_ms=2000.0),  # repaired: 2 calls
        row("c4", "T_REJECT", calls=3, first_pass_valid=False, latency_ms=10.0),  # kit column wins
    ]
    s = score(rows, CASES)
    assert s.calls == 1 + 2 + 2 + 3 and s.calls_per_case == 2.0
    assert s.tokens == 2250 and s.tokens_per_case_mean == 562.5
    assert s.latency_ms_median == 1500.0
    assert str(s.valid_json) == "3/4" and str(s.fallback) == "1/4"
    assert str(s.first_pass_valid) == "1/4"  # c1 only: c2 fell back, c3 was repaired, c4 says so


def test_macro_f1_by_hand() -> None:
    gold, predicted = ["A", "A", "B"], ["A", "B", "B"]
    assert macro_f1(gold, predicted) == pytest.approx(2 / 3)  # A: 2/3, B: 2/3
    assert macro_f1(gold, predicted, ["A", "B", "C", "D"]) == pytest.approx(1 / 3)  # C, D absent: 0 each
    assert macro_f1(["A", "B"], ["C", "C"]) == 0.0
    assert math.isnan(macro_f1([], []))


def test_macro_f1_fixed_set_counts_absent_labels_as_zero() -> None:
    rows = [row("c1", A1), row("c4", "T_REJECT")]
    s = score(rows, CASES)
    assert s.path_macro_f1 == 1.0
    assert s.path_macro_f1_fixed == pytest.approx(2 / 9)
    assert len(PAPER_PATH_LABELS) == 9


def test_macro_f1_rejects_misaligned_sequences() -> None:
    with pytest.raises(DataError) as caught:
        macro_f1(["A"], ["A", "B"])
    assert caught.value.code is ErrorCode.INVALID_VALUE


labels = st.sampled_from(PAPER_PATH_LABELS)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(labels, labels), min_size=1, max_size=60))
def test_macro_f1_is_a_proportion_and_one_only_when_perfect(pairs: list[tuple[str, str]]) -> None:
    gold, predicted = [g for g, _ in pairs], [p for _, p in pairs]
    union, fixed = macro_f1(gold, predicted), macro_f1(gold, predicted, PAPER_PATH_LABELS)
    assert 0.0 <= fixed <= union <= 1.0
    assert (union == 1.0) == (gold == predicted)


def test_empty_slice() -> None:
    s = score([], CASES)
    assert s.n == 0
    assert math.isnan(s.contract_exact.rate) and math.isnan(s.path_macro_f1) and math.isnan(s.calls_per_case)
    assert math.isnan(s.latency_ms_median)
    assert s.contract_exact.wilson.as_tuple() == (0.0, 1.0)


def test_unknown_case_is_a_located_error() -> None:
    with pytest.raises(DataError) as caught:
        score([row("c1", A1, line=2), row("nope", A1, line=3)], CASES)
    assert caught.value.code is ErrorCode.UNKNOWN_REFERENCE
    assert (caught.value.line, caught.value.field, caught.value.got) == (3, "case_id", "nope")


def test_repeated_case_is_an_error() -> None:
    with pytest.raises(DataError) as caught:
        score([row("c1", A1, line=2), row("c1", A1, line=5)], CASES)
    assert caught.value.code is ErrorCode.DUPLICATE_ID
    assert caught.value.line == 5


def test_gold_boundary_consistency_is_reported() -> None:
    inconsistent = case("c9", "T_CLARIFY", "UNRESOLVED", boundary=Boundary.ALLOW)  # ALLOW, then unresolved
    s = score([row("c9", "T_CLARIFY", "UNRESOLVED")], [inconsistent])
    assert s.gold_boundary_disagreements == ("c9",)
    assert str(s.false_dispatch) == "0/1"  # dispatchability still follows the final path, as published


FLIP = [case("f1", A1, pair="P1"), case("f2", "T_REJECT", pair="P1"),
        case("f3", A1, pair="P2"), case("f4", "T_DEFER", pair="P2")]


def test_flip_pair_counts_only_when_both_members_are_exact() -> None:
    rows = [row("f1", A1), row("f2", "T_REJECT"), row("f3", A1), row("f4", A1)]
    pairs = flip_pairs(rows, FLIP)
    assert str(pairs.pairs) == "1/2"
    assert dict(pairs.correct_by_pair) == {"P1": True, "P2": False}
    assert pairs.missed == ("P2",)
    assert pairs.pairs.wilson.low < 0.5 < pairs.pairs.wilson.high


def test_incomplete_flip_pair_is_an_error() -> None:
    with pytest.raises(DataError) as caught:
        flip_pairs([row("f1", A1, line=2), row("f2", "T_REJECT", line=3), row("f3", A1, line=4)], FLIP)
    assert caught.value.code is ErrorCode.INVALID_VALUE
    assert (caught.value.field, caught.value.got, caught.value.line) == ("pair_id", "P2", 4)


def test_flip_pairs_need_pair_ids() -> None:
    with pytest.raises(DataError) as caught:
        flip_pairs([row("c1", A1)], CASES)
    assert caught.value.field == "pair_id"


def test_scores_frame_is_one_row_per_slice() -> None:
    frame = scores_frame({"all": score([row("c1", A1), row("c4", "T_REJECT")], CASES),
                          "one": score([row("c1", A4, action=A4)], CASES)})
    assert list(frame.index) == ["all", "one"]
    assert frame.loc["all", "contract_exact_rate"] == 1.0 and frame.loc["one", "contract_exact"] == 0
    assert {"false_dispatch_denominator", "strict_exact_rate", "path_macro_f1_fixed",
            "first_pass_valid_rate", "contract_exact_wilson95_low"} <= set(frame.columns)
    assert frame["n"].dtype.kind == "i"
