"""The ledger's predictions.csv: published files read as-is; the kit's extras round-trip; bad rows are located."""

from __future__ import annotations

import csv

import pytest

import routebr_kit as rk
from routebr_kit.store.ledger import (
    PREDICTION_FIELDS,
    PUBLISHED_FIELDS,
    PredictionRow,
    read_predictions,
    write_predictions,
)

FLASH_MAIN = "experiments/results/select/deepseek_v4_flash_efficiency/main/predictions.csv"


def test_published_predictions_read_as_is(routebr_artifact):
    rows = read_predictions(routebr_artifact / FLASH_MAIN)
    fallback = next(r for r in rows if r.case_id == "MAIN-0158")
    assert (fallback.pred_action, fallback.topk, fallback.fallback_used, fallback.valid_json) == ("NONE", (), True,
                                                                                                  False)
    assert fallback.error_code == "FAIL_CLOSED_ROUTEBR" and fallback.calls is None and fallback.line > 1
    assert rows[0].proposal_output == {"action_id": "A1_ADVISORY", "object_id": "SSE:510050",
                                       "topk": ["A1_ADVISORY", "A2_INFO_LOOKUP", "A4_SUPPORT_RESPONSE"]}


def test_round_trip_with_extras(tmp_path, routebr_artifact):
    rows = read_predictions(routebr_artifact / FLASH_MAIN)
    rows = [PredictionRow(**{**{f: getattr(r, f) for f in r.__dataclass_fields__}, "calls": 1, "repair_count": 0,
                             "first_pass_valid": True, "line": 0}) for r in rows]
    path = tmp_path / "predictions.csv"
    write_predictions(path, rows)
    with open(path, newline="", encoding="utf-8") as handle:
        assert tuple(next(csv.reader(handle))) == PREDICTION_FIELDS
    back = read_predictions(path)
    assert [(r.case_id, r.topk, r.calls, r.first_pass_valid, r.latency_ms) for r in back] == [
        (r.case_id, r.topk, 1, True, r.latency_ms) for r in rows]
    assert PREDICTION_FIELDS[: len(PUBLISHED_FIELDS)] == PUBLISHED_FIELDS


@pytest.mark.parametrize("column, value, code", [
    ("valid_json", "yes", rk.ErrorCode.WRONG_TYPE),
    ("topk_json", "[A1", rk.ErrorCode.INVALID_JSON),
    ("topk_json", '{"a": 1}', rk.ErrorCode.WRONG_TYPE),
    ("input_tokens", "many", rk.ErrorCode.INVALID_INTEGER),
    ("latency_ms", "fast", rk.ErrorCode.WRONG_TYPE),
    ("case_id", "", rk.ErrorCode.EMPTY_VALUE),
])
def test_malformed_rows_are_located(tmp_path, routebr_artifact, column, value, code):
    source = routebr_artifact / FLASH_MAIN
    with open(source, newline="", encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    rows[4][header.index(column)] = value
    path = tmp_path / "predictions.csv"
    with open(path, "w", newline="", encoding="utf-8") as handle:
        csv.writer(handle).writerows([header, *rows])
    with pytest.raises(rk.DataError) as err:
        read_predictions(path)
    assert (err.value.code, err.value.line, err.value.field) == (code, 6, column)


def test_prediction_from_decision_matches_published_conventions():
    from core_fixtures import controller, proposal, request

    decision = controller().decide(request(), "not json")
    row = rk.store.ledger.prediction_from_decision(decision, "routebr")
    assert (row.pred_action, row.pred_boundary, row.pred_final_path, row.error_code, row.valid_json) == (
        "NONE", "CLARIFY", "T_CLARIFY", "FAIL_CLOSED_ROUTEBR", False)
    ok = rk.store.ledger.prediction_from_decision(controller().decide(request(), proposal()), "routebr")
    assert ok.as_csv_row()["topk_json"] == '["A1_ADVISORY","A4_SUPPORT_RESPONSE"]' and ok.error_code == ""

