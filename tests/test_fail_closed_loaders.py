"""Issue 12 (items 3, 4, 6) in the loaders: strict JSON and strict CSV in data files, each failure a located
DataError; the runtime-state schema loaded and validated at start-up; the audit's state-schema findings; and the
published rules and states satisfying the derived schema."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

import routebr_kit as rk
from routebr_kit.core.state import StateErrorCode
from routebr_kit.dataset.audit import AuditCode, audit_cases
from routebr_kit.store.assets import load_assets, load_catalog, load_rules, load_state_schema, read_csv, read_json
from routebr_kit.store.cases import CASE_COLUMNS, load_cases

E = rk.ErrorCode
CATALOG_HEADER = "action_id,service_name,description,required_object_types\n"
CATALOG_ROWS = "A1_ADVISORY,Advisory,explain,ETF\nA5_PROTECTED_ACTION,Protected,order,ETF|ACCOUNT\n"
RULES_HEADER = "rule_id,priority,applies_to,condition_json,decision\n"
DEFAULT_RULE = 'R999,999,*,"{}",ALLOW\n'


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def catalog(tmp_path: Path) -> rk.Catalog:
    return load_catalog(write(tmp_path / "catalog.csv", CATALOG_HEADER + CATALOG_ROWS))


def rules_error(tmp_path: Path, catalog: rk.Catalog, body: str) -> rk.DataError:
    path = write(tmp_path / "rules.csv", RULES_HEADER + body + DEFAULT_RULE)
    with pytest.raises(rk.DataError) as err:
        load_rules(path, catalog)
    assert err.value.file == str(path)
    return err.value


# ---------------------------------------------------------------------------------------- 3. strict JSON in files


@pytest.mark.parametrize("condition", ['{""action_permission"": NaN}', '{""x"": {""gte"": Infinity}}',
                                       '{""x"": {""lt"": -Infinity}}', '{""x"": 1e999}'])
def test_non_finite_numbers_in_a_rule_condition_are_located_errors(tmp_path, catalog, condition):
    err = rules_error(tmp_path, catalog, f'R060,70,A5_PROTECTED_ACTION,"{condition}",REJECT\n')
    assert (err.code, err.line, err.field) == (E.INVALID_JSON, 2, "condition_json")


def test_a_repeated_key_in_a_rule_condition_is_a_located_error(tmp_path, catalog):
    err = rules_error(tmp_path, catalog,
                      'R060,70,A5_PROTECTED_ACTION,"{""action_permission"":false,""action_permission"":true}",REJECT\n')
    assert (err.code, err.line, err.field, err.got) == (E.DUPLICATE_ID, 2, "condition_json", "action_permission")


def test_a_json_file_with_a_repeated_key_or_nan_is_a_located_error(tmp_path):
    for text, code in (('{"a": 1, "a": 2}', E.DUPLICATE_ID), ('{"a": NaN}', E.INVALID_JSON),
                       ('{"a": ' + "[" * 5000 + "]" * 5000 + "}", E.LIMIT_EXCEEDED)):
        with pytest.raises(rk.DataError) as err:
            read_json(write(tmp_path / "x.json", text))
        assert err.value.code is code and err.value.file == str(tmp_path / "x.json")


def _case_row(**changes: str) -> dict[str, str]:
    state = {"safety_escalation_required": False, "request_supported": True, "action_permission": True}
    candidates = [{"object_id": "SSE:510050", "object_type": "ETF", "display_name": "50 ETF", "aliases": []}]
    row = {"case_id": "MAIN-0001", "split": "MAIN", "pair_id": "", "scenario_cell": "c", "utterance": "u",
           "history_json": "[]", "runtime_context_json": json.dumps(state),
           "candidate_entities_json": json.dumps(candidates), "gold_cues_json": "[]", "gold_action": "A1_ADVISORY",
           "gold_object_difficulty": "EXPLICIT_NAME", "gold_object_id": "SSE:510050", "gold_boundary": "ALLOW",
           "gold_final_path": "A1_ADVISORY", "gold_rule_ids_json": '["R999"]'}
    return {**row, **changes}


def write_cases(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, CASE_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
    return path


def cases_error(tmp_path: Path, *rows: dict[str, str]) -> rk.DataError:
    path = write_cases(tmp_path / "cases.csv", list(rows))
    with pytest.raises(rk.DataError) as err:
        load_cases(path)
    assert err.value.file == str(path)
    return err.value


@pytest.mark.parametrize("state, code", [
    ('{"action_permission": NaN}', E.INVALID_JSON),
    ('{"action_permission": Infinity}', E.INVALID_JSON),
    ('{"action_permission": false, "action_permission": true}', E.DUPLICATE_ID),
])
def test_non_strict_json_in_a_state_is_a_located_error(tmp_path, state, code):
    err = cases_error(tmp_path, _case_row(), _case_row(case_id="MAIN-0002", runtime_context_json=state))
    assert (err.code, err.line, err.field) == (code, 3, "runtime_context_json")


# ---------------------------------------------------------------------------------------- 4. strict CSV


def test_a_repeated_header_column_is_an_error_not_last_wins(tmp_path):
    path = write(tmp_path / "catalog.csv", "action_id,service_name,description,required_object_types,"
                 "required_object_types\nA5_PROTECTED_ACTION,Protected,order,ETF,NONE\n")
    with pytest.raises(rk.DataError) as err:
        load_catalog(path)
    assert (err.value.code, err.value.line, err.value.field) == (E.DUPLICATE_ID, 1, "required_object_types")


def test_an_unterminated_quote_that_swallows_rows_is_an_error(tmp_path, catalog):
    # the quote opened in R010's condition closes in R020's line: same field count, two rules become one
    body = 'R010,20,*,"{""request_supported"":false},REJECT\nR020,30,*,x",DEFER\n'
    err = rules_error(tmp_path, catalog, body)
    assert (err.code, err.line, err.field) == (E.ROW_SHAPE, 2, "condition_json")


def test_an_unterminated_quote_to_the_end_of_the_file_is_an_error(tmp_path):
    path = write(tmp_path / "c.csv", CATALOG_HEADER + 'A1_ADVISORY,Advisory,"explain,ETF\nA5,P,o,ETF\n')
    with pytest.raises(rk.DataError) as err:
        load_catalog(path)
    assert (err.value.code, err.value.line) == (E.ROW_SHAPE, 2)


def test_a_stray_quote_is_an_error(tmp_path):
    path = write(tmp_path / "c.csv", CATALOG_HEADER + 'A1_ADVISORY,"Advisory"x,explain,ETF\n')
    with pytest.raises(rk.DataError) as err:
        load_catalog(path)
    assert (err.value.code, err.value.line) == (E.ROW_SHAPE, 2)


def test_multiline_fields_are_allowed_only_where_declared(tmp_path):
    path = write(tmp_path / "t.csv", 'a,b\n"one\ntwo",x\n')
    with pytest.raises(rk.DataError):
        read_csv(path, ("a", "b"))
    assert read_csv(path, ("a", "b"), multiline=("a",)).rows[0][1]["a"] == "one\ntwo"


def test_repeated_candidate_object_ids_are_an_error_not_last_wins(tmp_path):
    twice = [{"object_id": "SSE:510050", "object_type": "ETF", "display_name": "50 ETF"},
             {"object_id": "SSE:510050", "object_type": "ACCOUNT", "display_name": "other"}]
    err = cases_error(tmp_path, _case_row(candidate_entities_json=json.dumps(twice)))
    assert (err.code, err.line, err.field, err.got) == (E.DUPLICATE_ID, 2, "candidate_entities_json", "SSE:510050")


@pytest.mark.parametrize("case_id", ["../../escape", "a/b", "a\\b", ".hidden", "MAIN 1", "x" * 129, "C:", "MAIN-1."])
def test_case_ids_that_cannot_be_file_names_are_located_errors(tmp_path, case_id):
    err = cases_error(tmp_path, _case_row(), _case_row(case_id=case_id))
    assert (err.code, err.line, err.field) == (E.INVALID_VALUE, 3, "case_id")


def test_case_ids_that_collide_on_a_case_insensitive_disk_are_duplicates(tmp_path):
    err = cases_error(tmp_path, _case_row(case_id="MAIN-0001"), _case_row(case_id="main-0001"))
    assert (err.code, err.line, err.field) == (E.DUPLICATE_ID, 3, "case_id")


def test_an_oversized_field_names_its_field(tmp_path):
    big = "x" * (131_072 + 1)
    path = write(tmp_path / "c.csv", CATALOG_HEADER + CATALOG_ROWS + f'A2_INFO,Info,"{big}",ETF\n')
    with pytest.raises(rk.DataError) as err:
        load_catalog(path)
    assert (err.value.code, err.value.file, err.value.line, err.value.field) == (
        E.FIELD_TOO_LARGE, str(path), 4, "description")


@pytest.mark.parametrize("priority", ["７０", "7_0", "+70", "70.0", "0x46", "٧٠", "7 0"])
def test_priorities_must_be_ascii_integers(tmp_path, catalog, priority):
    err = rules_error(tmp_path, catalog, f'R060,{priority},A5_PROTECTED_ACTION,"{{}}",REJECT\n')
    assert (err.code, err.line, err.field) == (E.INVALID_INTEGER, 2, "priority")


def test_plain_and_negative_priorities_still_load(tmp_path, catalog):
    path = write(tmp_path / "rules.csv", RULES_HEADER + 'R1,-5,*,"{""x"":true}",REJECT\n' + DEFAULT_RULE)
    assert [r.priority for r in load_rules(path, catalog).rules] == [-5, 999]


# ---------------------------------------------------------------------------------------- 6. state schema files


def test_a_state_schema_file_overrides_the_derived_schema(tmp_path, catalog):
    rules = write(tmp_path / "rules.csv", RULES_HEADER +
                  'R060,70,A5_PROTECTED_ACTION,"{""action_permission"":false}",REJECT\n' + DEFAULT_RULE)
    schema = write(tmp_path / "schema.json", json.dumps({
        "schema": "routebr-state-schema/v1", "additional_fields": True,
        "fields": {"risk": {"type": ["number", "null"], "required": False}}}))
    assets = load_assets(tmp_path / "catalog.csv", rules, state_schema=schema)
    fields = assets.policy.state_schema.index
    assert set(fields) == {"action_permission", "risk"} and fields["action_permission"].required
    c = assets.controller()
    req = rk.RouteRequest("T", "u", (), rk.RuntimeState({"action_permission": True, "risk": "high"}), ())
    d = c.decide(req, {"action_id": "A1_ADVISORY", "object_id": "UNRESOLVED", "topk": ["A1_ADVISORY"]})
    assert [(v.code, v.field) for v in d.state_errors] == [(StateErrorCode.WRONG_TYPE, "risk")]
    assert c.hashes.state_schema == assets.policy.state_schema.sha256 != ""


def test_rules_that_test_a_literal_the_schema_file_forbids_are_rejected_at_load(tmp_path, catalog):
    rules = write(tmp_path / "rules.csv", RULES_HEADER +
                  'R010,20,*,"{""request_supported"":false}",REJECT\n'
                  'R060,70,A5_PROTECTED_ACTION,"{""action_permission"":""false""}",REJECT\n' + DEFAULT_RULE)
    schema = write(tmp_path / "schema.json", '{"fields": {"action_permission": {"type": "boolean"}}}')
    with pytest.raises(rk.DataError) as err:
        load_rules(rules, catalog, load_state_schema(schema))
    assert (err.value.code, err.value.file, err.value.line, err.value.field) == (
        E.INVALID_OPERAND, str(rules), 3, "condition_json")


def test_rules_that_compare_one_field_with_two_types_are_rejected_at_load(tmp_path, catalog):
    err = rules_error(tmp_path, catalog, 'R010,20,*,"{""flag"":false}",REJECT\nR020,30,*,"{""flag"":""no""}",DEFER\n')
    assert (err.code, err.line, err.field) == (E.INVALID_OPERAND, 3, "condition_json")


@pytest.mark.parametrize("document, field", [
    ('{"fields": {"x": {"type": "bool"}}}', "fields.x.type"),
    ('{"fields": {"x": {"type": "boolean", "required": "yes"}}}', "fields.x.required"),
    ('{"fields": {"x": {"type": "boolean", "allowed": ["true"]}}}', "fields.x.allowed"),
    ('{"fields": {"x": {"type": "boolean", "default": true}}}', "fields.x.default"),
    ('{"fields": [], "schema": "routebr-state-schema/v1"}', "fields"),
    ('{"schema": "v2", "fields": {}}', "schema"),
    ('{"fields": {}, "additional_fields": 1}', "additional_fields"),
])
def test_malformed_state_schema_files_name_the_field(tmp_path, document, field):
    path = write(tmp_path / "schema.json", document)
    with pytest.raises(rk.DataError) as err:
        load_state_schema(path)
    assert (err.value.file, err.value.field) == (str(path), field)


def test_a_state_schema_file_with_a_repeated_field_is_rejected(tmp_path):
    path = write(tmp_path / "schema.json", '{"fields": {"x": {"type": "boolean"}, "x": {"type": "string"}}}')
    with pytest.raises(rk.DataError) as err:
        load_state_schema(path)
    assert err.value.code is E.DUPLICATE_ID


# ---------------------------------------------------------------------------------------- published data


def test_the_published_rules_and_every_published_state_satisfy_the_derived_schema(routebr_artifact):
    data = routebr_artifact / "data"
    assets = load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    schema = assets.policy.state_schema
    assert {f.name for f in schema.fields} == {
        "safety_escalation_required", "request_supported", "service_available", "request_scope_clear",
        "entity_resolved", "identity_verified", "action_permission", "context_fresh"}
    assert all(f.required and [t.value for t in f.types] == ["boolean"] for f in schema.fields)
    for name in ("routebr_600.csv", "routebr_select_160.csv", "routebr_confirm_320.csv"):
        cases = load_cases(data / name)
        assert cases and all(schema.check(c.request.state.values) == () for c in cases)


def test_the_audit_reports_states_that_break_the_schema(routebr_artifact, tmp_path):
    data = routebr_artifact / "data"
    with open(data / "routebr_confirm_320.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))[:6]
    state = json.loads(rows[1]["runtime_context_json"])
    state["action_permission"] = "false"
    rows[1]["runtime_context_json"] = json.dumps(state)
    state = json.loads(rows[3]["runtime_context_json"])
    del state["context_fresh"]
    rows[3]["runtime_context_json"] = json.dumps(state)
    path = write_cases(tmp_path / "subset.csv", rows)
    report = audit_cases(path, data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    found = [f for f in report.findings if f.code is AuditCode.STATE_SCHEMA]
    assert [(f.subject, f.line) for f in found] == [(rows[1]["case_id"], 3), (rows[3]["case_id"], 5)]
    assert "action_permission: WRONG_TYPE" in found[0].detail and "context_fresh: MISSING_FIELD" in found[1].detail
    clean = audit_cases(write_cases(tmp_path / "clean.csv", rows[:1]), data / "catalog.csv",
                        data / "boundary_rules.csv", data / "entity_catalog.csv")
    assert not [f for f in clean.findings if f.code is AuditCode.STATE_SCHEMA]


def test_the_audit_cli_takes_a_state_schema(routebr_artifact, tmp_path, capsys):
    from routebr_kit.cli.app import main

    data = routebr_artifact / "data"
    schema = write(tmp_path / "schema.json", '{"fields": {"policy_version": {"type": "string", "allowed": ["v2"]}}}')
    with open(data / "routebr_confirm_320.csv", encoding="utf-8-sig", newline="") as handle:
        rows = list(csv.DictReader(handle))[:2]
    cases = write_cases(tmp_path / "two.csv", rows)
    code = main(["audit", str(cases), "--catalog", str(data / "catalog.csv"), "--rules",
                 str(data / "boundary_rules.csv"), "--state-schema", str(schema)])
    out = capsys.readouterr().out
    assert code == 1 and out.count("STATE_SCHEMA") == 2 and "policy_version: VALUE_NOT_ALLOWED" in out
