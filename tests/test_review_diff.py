"""Shadow replay, the paired diff and the gate on the published runs, through the command line (exit codes)."""

from __future__ import annotations

import json
import shutil

import pytest

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.review.diff import ChangeClass, ChangeStage
from routebr_kit.review.gate import Gate, parse_criterion

#: A tightening edit with a range predicate: protected actions under a policy version before v2 go to a person.
TIGHTENING = ('R065,65,A5_PROTECTED_ACTION,"{""policy_version"":{""lt"":""v2""}}",HANDOFF,'
              '"Protected actions need policy v2",v2\r\n')


@pytest.fixture(scope="module")
def edited(routebr_artifact, tmp_path_factory):
    root = tmp_path_factory.mktemp("review")
    cand = root / "cand"
    cand.mkdir()
    for name in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        shutil.copy(routebr_artifact / "data" / name, cand / name)
    with open(cand / "boundary_rules.csv", "a", encoding="utf-8", newline="") as handle:
        handle.write(TIGHTENING)
    assert main(["shadow", "--artifact", str(routebr_artifact), "--rules", str(cand / "boundary_rules.csv"),
                 "--receipts", "--out", str(root / "shadow")]) == 0
    return root


def test_identical_candidate_gives_zero_changed_decisions(routebr_artifact, tmp_path, capsys):
    assert main(["shadow", "--artifact", str(routebr_artifact), "--out", str(tmp_path / "s")]) == 0
    top = json.loads((tmp_path / "s" / "shadow_manifest.json").read_text())
    assert top["rows"] == 1960 and top["changed_decisions"] == 0 and top["needs_live_rerun"] == 0
    assert top["base_hashes"] == top["candidate_hashes"]
    assert not (tmp_path / "s" / "confirm" / "routebr" / "main" / "raw").exists()  # receipts only on request
    assert main(["diff", str(routebr_artifact), str(tmp_path / "s"), "--gate", "changed <= 0",
                 "--json", str(tmp_path / "d.json")]) == 0
    assert json.loads((tmp_path / "d.json").read_text())["changed"] == []


def test_shadow_writes_run_layout_loadable_by_the_scorers(edited, routebr_artifact):
    from routebr_kit.evaluation.metrics import score
    from routebr_kit.store.artifact import Artifact
    from routebr_kit.store.ledger import RunLedger

    folder = edited / "shadow" / "confirm" / "routebr" / "main"
    ledger = RunLedger(folder)
    rows = ledger.committed()
    manifest = ledger.manifest()
    assert len(rows) == 200 and manifest["shadow"]["live_calls"] == 0
    assert manifest["shadow"]["base_hashes"]["rules"] != manifest["shadow"]["candidate_hashes"]["rules"]
    assert ledger.receipt(rows[0].case_id)["summary"]["decision"]["hashes"]["rules"] == manifest["hashes"]["rules"]
    s = score(rows, Artifact(routebr_artifact).cases("confirm"))
    assert s.n == 200
    b2 = json.loads((edited / "shadow" / "confirm" / "b2_direct_guard" / "main" / "run_manifest.json").read_text())
    assert len(b2["shadow"]["needs_live_rerun"]) == 200  # B2 sees the rule table: not exact


def test_rule_edit_diff_reports_rule_stage_new_false_blocks_and_fails_the_gate(edited, routebr_artifact, capsys):
    out = edited / "diff.json"
    status = main(["diff", str(routebr_artifact), str(edited / "shadow"), "--gate",
                   "new_false_dispatch <= 0, path_exact_drop <= 1.0pp, new_false_block <= 0",
                   "--json", str(out), "--md", str(edited / "diff.md")])
    assert status == 1  # a regression
    doc = json.loads(out.read_text())
    assert doc["gate"]["passed"] is False
    changed = doc["changed"]
    assert changed and {c["first_changed_stage"] for c in changed} == {ChangeStage.RULE.value}
    for c in changed:
        assert set(c) >= {"task", "case_id", "repeat_id", "base_final_path", "candidate_final_path",
                          "first_changed_stage", "change_class"}
        assert c["candidate_rule"].startswith("R065@v2")
    classes = [c["change_class"] for c in changed]
    assert ChangeClass.NEW_FALSE_BLOCK.value in classes
    order = [list(ChangeClass).index(ChangeClass(c)) for c in classes]
    assert order == sorted(order)  # new false dispatches first, then new false blocks, ...
    assert "FAIL new_false_block <= 0" in capsys.readouterr().out
    assert "## Changed rows" in (edited / "diff.md").read_text()


def test_a_tightening_edit_cannot_add_a_false_dispatch(edited, routebr_artifact):
    assert main(["diff", str(routebr_artifact), str(edited / "shadow"), "--gate", "new_false_dispatch <= 0"]) == 0


def test_not_comparable_ledgers_exit_2(edited, routebr_artifact, tmp_path, capsys):
    partial = tmp_path / "partial"
    shutil.copytree(edited / "shadow" / "confirm", partial / "confirm")
    assert main(["diff", str(routebr_artifact), str(partial)]) == 2
    assert "NOT COMPARABLE" in capsys.readouterr().err
    one = partial / "confirm" / "routebr" / "main" / "predictions.csv"
    lines = one.read_text().splitlines(keepends=True)
    one.write_text("".join(lines[:-1]))
    assert main(["diff", str(edited / "shadow" / "confirm"), str(partial / "confirm")]) == 2
    assert "different case sets" in capsys.readouterr().err


@pytest.mark.parametrize("spec, code", [
    ("path_exact_drop <= 1.0", ErrorCode.INVALID_OPERAND),  # a rate without its unit
    ("new_false_dispatch <= 0pp", ErrorCode.INVALID_OPERAND),
    ("new_false_dispatches <= 0", ErrorCode.UNKNOWN_ENUM),
    ("new_false_dispatch =< 0", ErrorCode.UNKNOWN_OPERATOR),
    ("new_false_dispatch[TEST] <= 0", ErrorCode.UNKNOWN_ENUM),
    ("new_false_dispatch <= zero", ErrorCode.INVALID_VALUE),
    (" , ", ErrorCode.EMPTY_VALUE),
])
def test_bad_gate_specs_are_typed_errors(spec, code):
    with pytest.raises(DataError) as info:
        Gate.parse(spec)
    assert info.value.code is code


def test_gate_files_and_split_selectors(tmp_path):
    (tmp_path / "g.yaml").write_text("gate:\n  - new_false_dispatch <= 0\n  - path_exact_drop[MAIN] <= 0.5pp\n")
    gate = Gate.load(tmp_path / "g.yaml")
    assert [str(c) for c in gate.criteria] == ["new_false_dispatch <= 0", "path_exact_drop[MAIN] <= 0.5pp"]
    (tmp_path / "g.json").write_text(json.dumps({"flip_pairs_drop": "<= 0", "new_false_block": 2}))
    assert [str(c) for c in Gate.load(tmp_path / "g.json").criteria] == ["flip_pairs_drop <= 0",
                                                                        "new_false_block <= 2"]
    assert parse_criterion("path_exact_drop<=1pp").threshold == 1.0


def test_bad_options_are_refused(routebr_artifact, tmp_path, capsys):
    assert main(["shadow", "--artifact", str(routebr_artifact), "--options", "fallback=DISPATCH",
                 "--out", str(tmp_path / "x")]) == 2
    assert "DISPATCH_FALLBACK" in capsys.readouterr().err
