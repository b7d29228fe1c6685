"""``routebr-kit verify`` on the published release and on crafted programs: regions, formulas, findings,
properties with replayed counterexamples, the semantic diff (R065, R060 -> ALLOW / HANDOFF), coverage, the
``diff --gate 'widening <= 0'`` criterion, and typed errors for bad input."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import pytest

from routebr_kit.cli.app import main
from routebr_kit.core.controller import ControllerOptions
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.core.records import Terminal
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.store.assets import load_assets
from routebr_kit.verify import parse_properties, semantic_diff, verify_release
from routebr_kit.verify.analysis import RuleStatus
from routebr_kit.verify.semdiff import Relation
from routebr_kit.verify.space import Kind, Source, build_space
from routebr_kit.verify.synthetic import CATALOG

A5 = "A5_PROTECTED_ACTION"


@pytest.fixture(scope="module")
def published(routebr_artifact):
    d = routebr_artifact / "data"
    return load_assets(d / "catalog.csv", d / "boundary_rules.csv", d / "entity_catalog.csv")


def _with(published, *, replace=None, add=()):
    rules = []
    for r in published.policy.rules:
        if replace and r.rule_id in replace:
            rules.append(rule(r.rule_id, r.priority, r.applies_to, dict(r.condition.source), replace[r.rule_id]))
        else:
            rules.append(r)
    return PolicyEngine([*rules, *add], published.catalog.ids)


R065 = rule("R065", 65, [A5], {"policy_version": {"lt": "v2"}}, "HANDOFF", "v2")


def test_published_program_partition_and_formulas(published):
    report = verify_release(published.catalog, published.policy, published.registry)
    assert report.states_total == 256
    assert report.regions_total == 40  # 35 (action, winning rule) regions + one fail-closed region per action
    a5 = next(a for a in report.actions if a.action_id == A5)
    assert a5.dispatch_states == 1 and a5.formula_complete
    assert a5.dispatch_formula == ("safety_escalation_required=false ∧ request_supported=true ∧ service_available=true"
                                   " ∧ request_scope_clear=true ∧ entity_resolved=true ∧ identity_verified=true ∧ "
                                   "action_permission=true ∧ context_fresh=true")
    assert {a.action_id: a.dispatch_states for a in report.actions} == {
        "A1_ADVISORY": 4, "A2_INFO_LOOKUP": 8, "A3_ACCOUNT_ANALYSIS": 2, "A4_SUPPORT_RESPONSE": 16, A5: 1}
    assert a5.terminal_formulas["HANDOFF"] == "safety_escalation_required=true"
    # every region's outcomes come from the real controller: R060 rejects a permitted candidate and UNRESOLVED alike
    r060 = next(r for r in a5.regions if r.rule_id == "R060")
    assert r060.states == 2 and r060.outcomes["UNRESOLVED"].terminal is Terminal.REJECT
    assert r060.outcomes["candidate of another type"].reason.value == "FAIL_CLOSED_INVALID_OUTPUT"


def test_published_findings(published):
    report = verify_release(published.catalog, published.policy, published.registry)
    f = report.findings()
    assert f["dead_rules"] == [] and f["redundant_rules"] == [] and f["never_dispatching_actions"] == []
    assert all(f["default_rule_reachable"].values())
    assert all(r.status is RuleStatus.LIVE for r in report.rules)


def test_findings_on_a_crafted_program():
    rules = [rule("R1", 1, "*", {"x": True}, "REJECT"),
             rule("R2", 2, "*", {"x": True, "y": True}, "HANDOFF"),  # shadowed by R1
             rule("R3", 3, "*", {"n": {"gt": 5, "lt": 3}}, "DEFER"),  # unsatisfiable
             rule("R4", 4, ["A4_SUPPORT_RESPONSE"], {}, "CLARIFY"),
             rule("R5", 5, ["A4_SUPPORT_RESPONSE"], {"y": False}, "DEFER"),  # unreachable: after unconditional R4
             rule("R6", 6, "*", {"y": False}, "ALLOW"),  # redundant: the default decides alike
             rule("R9", 9, "*", {}, "ALLOW")]
    report = verify_release(CATALOG, PolicyEngine(rules, CATALOG.ids))
    status = {r.rule_id: r.status for r in report.rules}
    assert status == {"R1": RuleStatus.LIVE, "R2": RuleStatus.SHADOWED, "R3": RuleStatus.UNSATISFIABLE,
                      "R4": RuleStatus.LIVE, "R5": RuleStatus.UNREACHABLE, "R6": RuleStatus.LIVE,
                      "R9": RuleStatus.LIVE}
    finding = {r.rule_id: r for r in report.rules}
    assert finding["R2"].covered_by == ("R1",)
    assert finding["R6"].redundant and finding["R6"].dead_for == ("A4_SUPPORT_RESPONSE",)
    assert not finding["R1"].redundant
    # A4's chain ends at its own unconditional R4: the program's default R9 is never reached for it
    assert report.findings()["default_rule_reachable"] == {a: a != "A4_SUPPORT_RESPONSE" for a in CATALOG.ids}


def test_an_action_that_never_dispatches_and_an_unreachable_default():
    rules = [rule("R1", 1, ["A1_ADVISORY"], {}, "REJECT"), rule("R9", 9, "*", {}, "ALLOW")]
    report = verify_release(CATALOG, PolicyEngine(rules, CATALOG.ids))
    assert report.findings()["never_dispatching_actions"] == ["A1_ADVISORY"]
    assert report.findings()["default_rule_reachable"]["A1_ADVISORY"] is False


PROPERTIES = [
    {"name": "protected action needs permission", "never": {"terminal": "DISPATCH", "action": A5},
     "when": {"action_permission": False}},
    {"name": "safety hands off", "always": {"terminal": "HANDOFF"}, "when": {"safety_escalation_required": True}},
    {"name": "unsupported rejects", "always": {"terminal": "REJECT"},
     "when": {"safety_escalation_required": False, "request_supported": False}},
    {"name": "unresolved entity never dispatches", "never": {"terminal": "DISPATCH"},
     "when": {"entity_resolved": False}},
]


def test_three_true_properties_and_one_false_with_a_confirmed_counterexample(published):
    props = parse_properties(PROPERTIES, published.catalog, [r.rule_id for r in published.policy.rules])
    report = verify_release(published.catalog, published.policy, published.registry, properties=props)
    holds = {p.prop.name: p.holds for p in report.properties}
    assert holds == {"protected action needs permission": True, "safety hands off": True,
                     "unsupported rejects": True, "unresolved entity never dispatches": False}
    bad = report.properties[3]
    c = bad.counterexample
    assert c.confirmed and c.outcome.terminal is Terminal.DISPATCH and c.state["entity_resolved"] is False
    assert c.proposal["action_id"] == "A4_SUPPORT_RESPONSE"  # object-free: R040 does not apply to it
    assert not report.passed


def test_mistyped_state_property_over_all_states(published):
    props = parse_properties([{"name": "mistyped permission never dispatches", "never": {"terminal": "DISPATCH"},
                               "when": {"action_permission": "false"}, "states": "all", "proposals": "all"},
                              {"name": "vacuous", "never": {"terminal": "DISPATCH"},
                               "when": {"action_permission": "false"}}],
                             published.catalog, [r.rule_id for r in published.policy.rules])
    report = verify_release(published.catalog, published.policy, published.registry, properties=props)
    assert report.properties[0].holds and not report.properties[0].vacuous
    assert report.properties[1].holds and report.properties[1].vacuous


@pytest.mark.parametrize("doc, code", [
    ([{"never": {"terminal": "DISPATCHED"}}], ErrorCode.UNKNOWN_ENUM),
    ([{"never": {"terminal": "DISPATCH"}, "always": {"terminal": "REJECT"}}], ErrorCode.INVALID_VALUE),
    ([{"never": {"action": "A9"}}], ErrorCode.UNKNOWN_ENUM),
    ([{"never": {"terminal": "DISPATCH"}, "when": {"x": {"between": 1}}}], ErrorCode.UNKNOWN_OPERATOR),
    ([{"never": {"terminal": "DISPATCH"}, "when": {"x": {"lt": {"field": "y"}}}}], ErrorCode.INVALID_OPERAND),
    ([{"never": {"terminal": "DISPATCH"}, "colour": 1}], ErrorCode.UNKNOWN_ENUM),
    ([{"name": "a", "never": {"terminal": "DISPATCH"}}, {"name": "a", "never": {"terminal": "REJECT"}}],
     ErrorCode.DUPLICATE_ID),
    ({"props": []}, ErrorCode.WRONG_TYPE),
])
def test_bad_property_files_are_typed_errors(published, doc, code):
    with pytest.raises(DataError) as info:
        parse_properties(doc, published.catalog, ["R001"])
    assert info.value.code is code


def test_r065_tightening_is_narrowing_with_confirmed_witnesses(published):
    diff = semantic_diff(published.catalog, published.policy, published.catalog, _with(published, add=[R065]),
                         published.registry, published.registry)
    assert {a.action_id: a.relation for a in diff.actions} == {a: Relation.NARROWING for a in published.catalog.ids}
    assert diff.states_changed is None  # policy_version is a string: the joint space is unbounded
    a5 = next(a for a in diff.actions if a.action_id == A5)
    assert a5.regions_changed == 8 and all(w.confirmed for w in a5.witnesses)
    handoff = [w for w in a5.witnesses if w.candidate.rule_id == "R065"]
    assert handoff and handoff[0].state["policy_version"] < "v2"
    assert diff.exit_status() == 0 and diff.widening == 0
    assert any("policy_version" in n for n in diff.notes)


def test_r060_allow_widens_a5_and_handoff_is_dispatch_equivalent(published):
    allow = semantic_diff(published.catalog, published.policy, published.catalog,
                          _with(published, replace={"R060": "ALLOW"}), published.registry, published.registry)
    assert allow.relation(A5) is Relation.WIDENING and allow.states_changed == 2 and allow.states_total == 256
    assert [a.action_id for a in allow.actions if a.relation is not Relation.EQUIVALENT] == [A5]
    w = next(a for a in allow.actions if a.action_id == A5).witnesses[0]
    assert w.confirmed and w.candidate.terminal is Terminal.DISPATCH and w.state["action_permission"] is False
    assert allow.exit_status() == 1 and allow.exit_status([A5]) == 0
    handoff = semantic_diff(published.catalog, published.policy, published.catalog,
                            _with(published, replace={"R060": "HANDOFF"}), published.registry, published.registry)
    assert all(a.relation is Relation.EQUIVALENT for a in handoff.actions)
    assert handoff.states_changed == 2 and handoff.exit_status() == 0


def test_an_identical_candidate_changes_nothing(published):
    diff = semantic_diff(published.catalog, published.policy, published.catalog, published.policy)
    assert diff.states_changed == 0 and diff.regions_changed == 0 and diff.outcome_equivalent


def test_a_fallback_change_is_visible_only_on_fail_closed_states(published):
    options = ControllerOptions(fallback=Terminal.REJECT)
    report = verify_release(published.catalog, published.policy, published.registry, options=options)
    fail = next(r for r in report.actions[0].regions if r.rule_id is None)
    assert {o.terminal for o in fail.outcomes.values()} == {Terminal.REJECT}
    with pytest.raises(DataError):
        verify_release(published.catalog, published.policy, options=ControllerOptions(enforce_state=False))


def test_number_string_and_cross_field_classes():
    rules = [rule("R1", 1, "*", {"amount": {"lte": {"field": "limit"}}, "channel": {"in": ["app", "web"]}}, "ALLOW"),
             rule("R2", 2, "*", {"risk": {"gte": 0.8}}, "HANDOFF"),
             rule("R3", 3, "*", {"tag": {"exists": True}, "risk": {"lt": 0.5}}, "DEFER"),
             rule("R9", 9, "*", {}, "REJECT")]
    policy = PolicyEngine(rules, CATALOG.ids)
    space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
    risk = space.variables[space.level["risk"]]
    # points and intervals no predicate tells apart are merged: risk matters only as < 0.5, >= 0.8 or between
    assert [c.describe() for c in risk.values if Kind.NUMBER in c.kinds] == ["< 0.5", "0.5 or in (0.5, 0.8)",
                                                                              "0.8 or > 0.8"]
    channel = space.variables[space.level["channel"]]
    assert any(len(c.pieces) > 1 for c in channel.values)  # "any other string" merged
    assert space.level["amount"] == space.level["limit"]  # one group
    report = verify_release(CATALOG, policy)
    assert report.states_total is None
    a4 = next(a for a in report.actions if a.action_id == "A4_SUPPORT_RESPONSE")
    assert "amount = limit" in a4.dispatch_formula or "amount < limit" in a4.dispatch_formula


def test_the_empty_string_interval_is_dropped():
    rules = [rule("R1", 1, "*", {"s": {"gt": "a"}, "t": {"lt": "a\x00"}}, "DEFER"), rule("R9", 9, "*", {}, "ALLOW")]
    policy = PolicyEngine(rules, CATALOG.ids)
    space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
    t = space.variables[space.level["t"]]
    pieces = [p for c in t.values for p in c.pieces if p.kind is Kind.STRING]
    assert not any(p.lo == "a" and p.hi == "a\x00" for p in pieces)


# --------------------------------------------------------------------------------------------- command line


def _release(tmp_path: Path, routebr_artifact: Path, name: str, edit=None) -> Path:
    out = tmp_path / name
    out.mkdir()
    for f in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        shutil.copy(routebr_artifact / "data" / f, out / f)
    if edit is not None:
        rows = list(csv.reader((out / "boundary_rules.csv").open(encoding="utf-8-sig")))
        rows = edit(rows)
        with (out / "boundary_rules.csv").open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, lineterminator="\r\n").writerows(rows)
    return out


def _r060(decision):
    def edit(rows):
        return [[*r[:4], decision, *r[5:]] if r[0] == "R060" else r for r in rows]
    return edit


def test_cli_verify_with_assertions_exits_1_naming_the_false_property(tmp_path, routebr_artifact, capsys):
    (tmp_path / "props.json").write_text(json.dumps(PROPERTIES), encoding="utf-8")
    out = tmp_path / "verify.json"
    code = main(["verify", "--artifact", str(routebr_artifact), "--assert", str(tmp_path / "props.json"),
                 "--json", str(out)])
    text = capsys.readouterr().out
    assert code == 1
    assert "VIOLATED unresolved entity never dispatches" in text and "confirmed" in text
    assert "3 of 4 properties hold" in text
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["states_total"] == 256 and doc["findings"]["dead_rules"] == []
    assert doc["properties"][3]["counterexample"]["confirmed"] is True


def test_cli_verify_yaml_assertions_and_bad_input(tmp_path, routebr_artifact, capsys):
    (tmp_path / "ok.yaml").write_text("- never: {terminal: DISPATCH, action: A5_PROTECTED_ACTION}\n"
                                      "  when: {action_permission: false}\n", encoding="utf-8")
    assert main(["verify", "--artifact", str(routebr_artifact), "--assert", str(tmp_path / "ok.yaml")]) == 0
    (tmp_path / "bad.json").write_text('[{"never": {"terminal": "DISPATCH"}, "never": {}}]', encoding="utf-8")
    assert main(["verify", "--artifact", str(routebr_artifact), "--assert", str(tmp_path / "bad.json")]) == 2
    assert "DUPLICATE_ID" in capsys.readouterr().err  # a repeated key, refused by the one strict reader


def test_cli_semantic_diff_exit_codes_and_recorded_coverage(tmp_path, routebr_artifact, capsys):
    base = _release(tmp_path, routebr_artifact, "base")
    allow = _release(tmp_path, routebr_artifact, "allow", _r060("ALLOW"))
    handoff = _release(tmp_path, routebr_artifact, "handoff", _r060("HANDOFF"))
    assert main(["verify", "--base", str(base), "--candidate", str(allow), "--artifact", str(routebr_artifact)]) == 1
    text = capsys.readouterr().out
    assert "2 of 256 states change" in text and "A5_PROTECTED_ACTION: WIDENING" in text
    assert "sees 1 of the changed states" in text
    assert main(["verify", "--base", str(base), "--candidate", str(allow), "--allow-widening", A5]) == 0
    capsys.readouterr()
    assert main(["verify", "--base", str(base), "--candidate", str(handoff)]) == 0
    assert "2 of 256 states change" in capsys.readouterr().out
    assert main(["verify", "--base", str(base), "--candidate", str(allow), "--allow-widening", "A9"]) == 2


def test_cli_coverage_of_the_published_benchmark(routebr_artifact, capsys, tmp_path):
    out = tmp_path / "cov.json"
    assert main(["verify", "--coverage", "--artifact", str(routebr_artifact), "--gate", "rule_coverage >= 80%",
                 "--json", str(out)]) == 0
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["rows"] == 1400 and doc["distinct_states"] == 11
    assert doc["uncovered_rules"] == ["R070"] and doc["regions_exercised"] == 30 and doc["regions_total"] == 35
    capsys.readouterr()
    assert main(["verify", "--coverage", "--artifact", str(routebr_artifact), "--gate", "rule_coverage >= 95%"]) == 1
    assert "FAIL rule_coverage >= 95%" in capsys.readouterr().out


def test_diff_gate_accepts_widening(tmp_path, routebr_artifact, capsys):
    allow = _release(tmp_path, routebr_artifact, "allow", _r060("ALLOW"))
    handoff = _release(tmp_path, routebr_artifact, "handoff", _r060("HANDOFF"))
    for name, candidate, expected in (("s_allow", allow, 1), ("s_handoff", handoff, 0)):
        shadow_dir = tmp_path / name
        assert main(["shadow", "--artifact", str(routebr_artifact), "--rules", str(candidate / "boundary_rules.csv"),
                     "--out", str(shadow_dir)]) == 0
        code = main(["diff", str(routebr_artifact), str(shadow_dir), "--gate", "widening <= 0"])
        text = capsys.readouterr().out
        assert code == expected, text
        assert ("FAIL widening <= 0 (measured 1)" if expected else "PASS widening <= 0 (measured 0)") in text


def test_verify_output_is_the_same_whatever_the_string_hash_seed(tmp_path, routebr_artifact):
    """A violated property's counterexample and its ``cells_checked`` come from a walk over the diagram's leaves:
    that walk must not follow the process's string hashing (it did: 35 vs 31 cells between two runs)."""
    import os
    import subprocess
    import sys

    (tmp_path / "props.json").write_text(json.dumps(PROPERTIES), encoding="utf-8")
    outputs = set()
    for seed in ("0", "1", "2", "3", "4", "5"):
        out = tmp_path / f"verify-{seed}.json"
        subprocess.run([sys.executable, "-m", "routebr_kit", "verify", "--artifact", str(routebr_artifact), "--assert",
                        str(tmp_path / "props.json"), "--json", str(out)], capture_output=True, check=False,
                       env={**os.environ, "PYTHONHASHSEED": seed})
        outputs.add(out.read_bytes())
    assert len(outputs) == 1
