"""Loaders: the published schemas load; every malformed variant raises one located DataError with its code."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

import routebr_kit as rk

E = rk.ErrorCode


def _rows(path: Path) -> tuple[list[str], list[list[str]]]:
    reader = csv.reader(io.StringIO(path.read_text(encoding="utf-8-sig"), newline=""))
    header, *rows = list(reader)
    return header, rows


def _write(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


@pytest.fixture()
def published(routebr_artifact: Path) -> dict[str, Path]:
    data = routebr_artifact / "data"
    return {name: data / f"{name}.csv" for name in ("catalog", "boundary_rules", "entity_catalog", "routebr_600")}


def test_published_assets_and_cases_load(published):
    assets = rk.load_assets(published["catalog"], published["boundary_rules"], published["entity_catalog"])
    assert assets.catalog.ids == ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                                  "A5_PROTECTED_ACTION")
    assert not assets.catalog["A4_SUPPORT_RESPONSE"].requires_object and assets.catalog["A1_ADVISORY"].requires_object
    assert len(assets.registry) == 40 and assets.registry["SSE:510300"].aliases == ("510300",)
    cases = rk.load_cases(published["routebr_600"])
    assert len(cases) == 600 and cases[0].case_id == "DEV-0001" and cases[0].line == 2
    assert {c.split for c in cases} == set(rk.Split)
    flip = [c for c in cases if c.split is rk.Split.FLIP]
    assert all(c.pair_id for c in flip)
    assert cases[0].gold.rule_ids == ("R999",) and cases[0].request.state.get("policy_version") == "v1"


def test_kit_data_loads(kit_data):
    assets = rk.load_assets(kit_data / "catalog.csv", kit_data / "boundary_rules.csv")
    assert len(assets.catalog) == 5 and [r.rule_id for r in assets.policy.rules][-1] == "R999"


def test_kit_registry_format(tmp_path):
    path = _write(tmp_path / "registry.csv", ["object_id", "object_type", "display_name", "aliases", "exchange"],
                  [["NYSEARCA:SPY", "ETF", "SPDR S&P 500 ETF Trust", "SPY|S&P 500 ETF", "NYSE Arca"]])
    registry = rk.load_registry(path)
    spy = registry["NYSEARCA:SPY"]
    assert spy.aliases == ("SPY", "S&P 500 ETF") and spy.attributes == {"exchange": "NYSE Arca"}


def _mutate(src: Path, dst: Path, row: int | None = None, column: str | None = None, value: str | None = None,
            *, drop_column: str | None = None, extra_rows: list[list[str]] | None = None) -> Path:
    header, rows = _rows(src)
    if row is not None:
        rows[row][header.index(column)] = value
    if drop_column is not None:
        i = header.index(drop_column)
        header = header[:i] + header[i + 1:]
        rows = [r[:i] + r[i + 1:] for r in rows]
    rows += extra_rows or []
    return _write(dst, header, rows)


# Each variant: (file, mutation, expected code, expected 1-based line, expected field).
VARIANTS = [
    ("catalog", dict(drop_column="required_object_types"), E.MISSING_COLUMN, 1, "required_object_types"),
    ("catalog", dict(row=1, column="action_id", value=""), E.EMPTY_VALUE, 3, "action_id"),
    ("catalog", dict(row=2, column="action_id", value="A1_ADVISORY"), E.DUPLICATE_ID, 4, "action_id"),
    ("catalog", dict(row=0, column="required_object_types", value="ETF||TOPIC"), E.INVALID_VALUE, 2,
     "required_object_types"),
    ("catalog", dict(row=4, column="allowed_boundary_states", value="ALLOW|MAYBE"), E.UNKNOWN_ENUM, 6,
     "allowed_boundary_states"),
    ("boundary_rules", dict(row=0, column="priority", value="ten"), E.INVALID_INTEGER, 2, "priority"),
    ("boundary_rules", dict(row=1, column="condition_json", value="{request_supported: false}"), E.INVALID_JSON,
     3, "condition_json"),
    ("boundary_rules", dict(row=1, column="condition_json", value="[1]"), E.WRONG_TYPE, 3, "condition_json"),
    ("boundary_rules", dict(row=2, column="condition_json", value='{"x": {"between": [1, 2]}}'),
     E.UNKNOWN_OPERATOR, 4, "condition_json"),
    ("boundary_rules", dict(row=2, column="condition_json", value='{"x": {"in": []}}'), E.INVALID_OPERAND, 4,
     "condition_json"),
    ("boundary_rules", dict(row=3, column="decision", value="DENY"), E.UNKNOWN_ENUM, 5, "decision"),
    ("boundary_rules", dict(row=4, column="applies_to", value="A1_ADVISORY|A6_TRADE"), E.UNKNOWN_ACTION, 6,
     "applies_to"),
    ("boundary_rules", dict(row=5, column="rule_id", value="R001"), E.DUPLICATE_ID, 7, "rule_id"),
    ("boundary_rules", dict(row=8, column="condition_json", value='{"always": true}'), E.NO_DEFAULT_RULE, None,
     "condition_json"),
    ("boundary_rules", dict(drop_column="decision"), E.MISSING_COLUMN, 1, "decision"),
    ("entity_catalog", dict(row=3, column="object_id", value="SSE:510050"), E.DUPLICATE_ID, 5, "object_id"),
    ("entity_catalog", dict(row=0, column="official_short_name", value=""), E.EMPTY_VALUE, 2,
     "official_short_name"),
    ("entity_catalog", dict(row=6, column="object_id", value="UNRESOLVED"), E.INVALID_VALUE, 8, "object_id"),
    ("routebr_600", dict(row=0, column="history_json", value="[1, 2]"), E.WRONG_TYPE, 2, "history_json"),
    ("routebr_600", dict(row=1, column="runtime_context_json", value="{broken"), E.INVALID_JSON, 3,
     "runtime_context_json"),
    ("routebr_600", dict(row=2, column="runtime_context_json", value="[]"), E.WRONG_TYPE, 4,
     "runtime_context_json"),
    ("routebr_600", dict(row=3, column="candidate_entities_json", value='[{"object_id": "X"}]'), E.WRONG_TYPE, 5,
     "candidate_entities_json"),
    ("routebr_600", dict(row=3, column="candidate_entities_json",
                         value='[{"object_id": "NONE", "object_type": "ETF", "display_name": "n"}]'),
     E.INVALID_VALUE, 5, "candidate_entities_json"),
    ("routebr_600", dict(row=4, column="gold_boundary", value="PERMIT"), E.UNKNOWN_ENUM, 6, "gold_boundary"),
    ("routebr_600", dict(row=5, column="gold_object_difficulty", value="HARD"), E.UNKNOWN_ENUM, 7,
     "gold_object_difficulty"),
    ("routebr_600", dict(row=6, column="split", value="TEST"), E.UNKNOWN_ENUM, 8, "split"),
    ("routebr_600", dict(row=7, column="gold_rule_ids_json", value='["R999", 7]'), E.WRONG_TYPE, 9,
     "gold_rule_ids_json"),
    ("routebr_600", dict(row=8, column="utterance", value="  "), E.EMPTY_VALUE, 10, "utterance"),
    ("routebr_600", dict(row=9, column="case_id", value="DEV-0001"), E.DUPLICATE_ID, 11, "case_id"),
    ("routebr_600", dict(row=10, column="gold_cues_json", value='["ADVISORY"]'), E.WRONG_TYPE, 12,
     "gold_cues_json"),
    ("routebr_600", dict(drop_column="gold_final_path"), E.MISSING_COLUMN, 1, "gold_final_path"),
]


def _load(kind: str, path: Path, published: dict[str, Path]):
    if kind == "catalog":
        return rk.load_catalog(path)
    if kind == "boundary_rules":
        return rk.load_rules(path, rk.load_catalog(published["catalog"]))
    if kind == "entity_catalog":
        return rk.load_registry(path)
    return rk.load_cases(path)


@pytest.mark.parametrize("kind, mutation, code, line, field", VARIANTS,
                         ids=[f"{v[0]}-{v[2].value}-{v[4]}" for v in VARIANTS])
def test_malformed_variants_raise_one_located_error(tmp_path, published, kind, mutation, code, line, field):
    path = _mutate(published[kind], tmp_path / f"{kind}.csv", **mutation)
    with pytest.raises(rk.DataError) as err:
        _load(kind, path, published)
    error = err.value
    assert (error.code, error.line, error.field) == (code, line, field)
    assert error.file == str(path)
    assert str(path) in str(error) and code.value in str(error)


def test_row_with_wrong_number_of_fields(tmp_path, published):
    path = _mutate(published["catalog"], tmp_path / "catalog.csv", extra_rows=[["A9_EXTRA", "only two"]])
    with pytest.raises(rk.DataError) as err:
        rk.load_catalog(path)
    assert (err.value.code, err.value.line) == (E.ROW_SHAPE, 7)


@pytest.mark.parametrize("content, code", [
    (None, E.FILE_NOT_FOUND),
    (b"", E.EMPTY_FILE),
    (b"\xff\xfe\x00bad", E.FILE_UNREADABLE),
    (b"action_id,service_name,description,required_object_types\n", E.EMPTY_CATALOG),
])
def test_file_level_errors(tmp_path, content, code):
    path = tmp_path / "catalog.csv"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(rk.DataError) as err:
        rk.load_catalog(path)
    assert err.value.code is code and err.value.file == str(path)


def test_blank_lines_are_skipped_and_lines_stay_physical(tmp_path, published):
    header, rows = _rows(published["catalog"])
    text = ",".join(header) + "\n\n" + "\n".join(",".join(f'"{c}"' for c in r) for r in rows[:2]) + "\n"
    path = tmp_path / "catalog.csv"
    path.write_text(text.replace('"A2_INFO_LOOKUP"', '""'), encoding="utf-8")
    with pytest.raises(rk.DataError) as err:
        rk.load_catalog(path)
    assert err.value.line == 4


def test_errors_are_kit_errors_and_value_errors():
    error = rk.DataError(E.EMPTY_VALUE, "a value", file="f.csv", line=3, field="x", got="")
    assert isinstance(error, rk.KitError) and isinstance(error, ValueError)
    assert str(error) == "[EMPTY_VALUE] f.csv:3, field 'x': expected a value, got ''"


def test_cases_json_roundtrip_keeps_candidate_metadata(published):
    case = rk.load_cases(published["routebr_600"])[0]
    first = json.loads(_rows(published["routebr_600"])[1][0][7])[0]
    assert case.request.candidates[0].attributes["exchange"] == first["exchange"]
