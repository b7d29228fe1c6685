"""The one release-review entry point: ``review.release_review`` (impact → shadow → diff → gate) and the
``routebr-kit review`` command, the rule editor and the step commands built on it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from routebr_kit.backends.registry import make_backend
from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.core.rules import rule
from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.notebook.widgets import RuleEditor
from routebr_kit.review import (
    DEFAULT_GATE,
    AssetFiles,
    ChangeClass,
    Gate,
    LedgerSet,
    Review,
    artifact_asset_files,
    compare_assets,
    diff_ledgers,
    diff_sentence,
    impact,
    load_ledgers,
    release_review,
    shadow_ledgers,
    shadow_replay,
    write_release,
)
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.cases import Split, load_cases

#: The notebook-10 tightening rule: priority 65 runs *before* the permission rule R060 (priority 70).
R065 = rule("R065", 65, ("A5_PROTECTED_ACTION",), {"policy_version": {"lt": "v2"}}, "HANDOFF", "v2", "test")


@pytest.fixture(scope="module")
def published(routebr_artifact):
    return load_ledgers(routebr_artifact), artifact_asset_files(routebr_artifact)


@pytest.fixture(scope="module")
def r065(published, tmp_path_factory):
    ledgers, base = published
    return write_release(tmp_path_factory.mktemp("r065"), base, rules=[*base.load().policy.rules, R065])


def _dir(files: AssetFiles) -> str:
    return str(files.catalog.parent)


def _status(argv: list[str]) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's own usage errors
        return int(exc.code)


@pytest.fixture(scope="module")
def r065_review(published, r065):
    ledgers, base = published
    return release_review(base, r065, ledgers, label="R065")


def test_release_review_is_the_chain_of_the_four_steps(published, r065, r065_review):
    ledgers, base = published
    edit = compare_assets(base, r065)
    shadow = shadow_replay(ledgers, edit)
    report = diff_ledgers(ledgers, shadow_ledgers(shadow))
    verdict = Gate.parse(DEFAULT_GATE + ", widening <= 0").evaluate(report, (edit.base_assets, edit.candidate_assets))
    review = r065_review
    assert isinstance(review, Review) and dataclasses.is_dataclass(review)
    with pytest.raises(dataclasses.FrozenInstanceError):
        review.label = "x"  # type: ignore[misc]
    assert review.diff.metrics() == report.metrics()
    assert [c.as_dict() for c in review.diff.changed] == [c.as_dict() for c in report.changed]
    assert review.impact.selected() == impact(edit, ledgers).selected()
    assert review.shadow.changed == shadow.changed and review.shadow.rows == ledgers.rows
    assert [r.as_dict() for r in review.gate.results] == [r.as_dict() for r in verdict.results]
    assert review.passed is verdict.passed is False


def test_r065_runs_before_r060_and_the_summary_counts_add_up(r065_review):
    s = r065_review.summary()
    classes = ("new false dispatch", "new false block", "fixed", "other path change", "trace only")
    assert sum(s[c] for c in classes) == s["changed"] == len(r065_review.diff.changed) > 0
    assert s["new false dispatch"] == 0 and s["edit"] == "R065" and s["gate"] == "FAIL"
    header, _, values = s.to_string(index=False).splitlines()  # prints as a one-row table, like the editor did
    assert header.split()[:2] == ["edit", "classes"] and values.split()[0] == "R065"
    # priority 65 < 70: R065 wins over the permission rule, so correct REJECTs become HANDOFFs
    moved = {c.case_id for c in r065_review.diff.changed
             if c.base_final_path == "T_REJECT" and c.candidate_final_path == "T_HANDOFF"}
    assert moved and all(c.candidate_detail.rule_id == "R065" for c in r065_review.diff.changed
                         if c.case_id in moved)
    assert r065_review.impact.selected() >= {(c.task, c.case_id, c.repeat_id) for c in r065_review.diff.changed}


def test_lines_hold_every_part_and_the_verdict_last(r065_review):
    lines = r065_review.lines(show=3)
    text = "\n".join(lines)
    assert "rules changed: R065" in text and "shadow replay: 1960 rows" in text
    assert diff_sentence(r065_review.diff) in lines
    assert "... and" in text and lines[-1] == "gate FAILED (default gate + widening)"
    doc = json.loads(json.dumps(r065_review.as_dict()))
    assert doc["summary"]["changed"] == len(doc["diff"]["changed"]) and doc["gate"]["passed"] is False


def test_with_gate_rejudges_without_replaying(r065_review):
    lenient = r065_review.with_gate("new_false_dispatch <= 0")
    assert lenient.passed and lenient.shadow is r065_review.shadow and lenient.diff is r065_review.diff
    assert not r065_review.passed  # the original is unchanged (frozen)


def test_a_review_replays_each_side_once(published, r065, monkeypatch):
    """Issue 29: impact, shadow and diff are views of one replay of each side — every controller row is decided
    once under the base and once under the candidate (not a third time for the shadow), and notebook 10's trace
    helper reads the review's base side instead of replaying it."""
    from routebr_kit.core.controller import Controller, StoredReplies
    from routebr_kit.review.shadow import trace_pair

    ledgers, base = published
    runs: list[Controller] = []  # replays of recorded replies (through the replay backend)
    asked: list[tuple[str, str]] = []  # the diff's forbidden-dispatch questions (stored proposals, no backend)
    original = Controller.run

    async def counted(self, request, replies):
        if isinstance(replies, StoredReplies):
            asked.append((request.request_id, replies.first["action_id"]))
        else:
            runs.append(self)
        return await original(self, request, replies)

    monkeypatch.setattr(Controller, "run", counted)
    review = release_review(base, r065, ledgers)
    rows = sum(len(t.rows) for t in ledgers.tasks.values() if t.system.uses_controller)
    assert rows > 0 and len(runs) == 2 * rows
    assert len({id(c) for c in runs}) == 2 * sum(t.system.uses_controller for t in ledgers.tasks.values())
    all_rows = sum(len(t.rows) for t in ledgers.tasks.values())
    assert 0 < len(asked) <= 2 * all_rows  # each side's row asked the rules at most once
    first = next(c for c in review.diff.changed if c.base_final_path != c.candidate_final_path)
    pair = trace_pair(ledgers, review.shadow, first.task, first.case_id, first.repeat_id)
    assert len(runs) == 2 * rows and (pair["base"] != pair["candidate"]).any()
    assert review.shadow.replay is not None and review.shadow.replay.edit is review.edit


def test_an_identical_candidate_changes_nothing_and_passes(published, tmp_path):
    ledgers, base = published
    review = release_review(base, write_release(tmp_path / "same", base), ledgers)
    assert review.diff.metrics()["changed"] == 0 and review.passed and review.edit.identical


def test_a_bad_gate_is_typed_and_raised_before_any_replay(published, r065, monkeypatch):
    ledgers, base = published
    import routebr_kit.review.release as release

    monkeypatch.setattr(release, "shadow_replay", lambda *a, **k: pytest.fail("replayed before the gate was read"))
    with pytest.raises(DataError) as info:
        release_review(base, r065, ledgers, "path_exact_drop <= 1")  # a rate needs 'pp'
    assert info.value.code is ErrorCode.INVALID_OPERAND


def test_ledgers_without_details_are_refused(routebr_artifact, r065):
    bare = load_ledgers(routebr_artifact, details=False)
    with pytest.raises(DataError) as info:
        release_review(artifact_asset_files(routebr_artifact), r065, bare)
    assert info.value.code is ErrorCode.EMPTY_VALUE and info.value.field == "details"


def test_the_rule_editor_reviews_through_release_review(published, tmp_path, monkeypatch, capsys):
    ledgers, base = published
    confirm = LedgerSet(ledgers.root, "artifact", {k: t for k, t in ledgers.tasks.items()
                                                   if k.startswith("confirm/routebr/")}, ledgers.assets)
    import routebr_kit.notebook.widgets as widget

    calls = []
    real = widget.release_review
    monkeypatch.setattr(widget, "release_review", lambda *a, **k: calls.append(a) or real(*a, **k))
    editor = RuleEditor(confirm, base, workdir=tmp_path)
    first = editor.show()
    assert isinstance(first, Review) and calls and editor.last is first
    assert "gate FAILED" in editor.result.value  # the summary and the verdict, as HTML under the controls
    # a bad edit afterwards: only the error is shown, and the previous review is no longer the editor's result
    editor.condition.value = '{"policy_version": {"before": "v2"}}'
    assert editor.show() is None and editor.last is None and "UNKNOWN_OPERATOR" in editor.error
    shown = capsys.readouterr().out  # (no kernel here: the Output area's prints reach stdout)
    assert "not reviewed" in shown and "gate" not in shown and editor.result.value == ""


def test_the_grouped_changed_rows_name_a_bounded_number_of_cases(published, r065):
    """Issue 30: notebook 10's grouped table names the first few cases of a group and counts the rest, so a group of
    hundreds of rows stays one short cell (it was every case ID, rows ~250 px tall)."""
    from routebr_kit.review.release import CASES_SHOWN, case_summary, transitions

    ledgers, base = published
    review = release_review(base, r065, ledgers)
    moves = transitions(review.diff)
    assert int(moves["rows"].sum()) == review.diff.metrics()["changed"]
    assert moves["rows"].max() > CASES_SHOWN  # the artifact has groups larger than the bound
    for cell, rows in zip(moves["cases"], moves["rows"], strict=True):
        named, _, more = cell.partition(" +")
        assert 1 <= len(named.split()) <= CASES_SHOWN
        assert not more or CASES_SHOWN + int(more.removesuffix(" more")) <= rows
    assert moves["cases"].str.len().max() <= 16 * CASES_SHOWN + 12
    assert case_summary(["MAIN-2", "MAIN-1", "MAIN-1", "MAIN-3", "MAIN-5", "MAIN-4"]) == "MAIN-1 MAIN-2 MAIN-3 +2 more"
    assert case_summary(["B", "A"]) == "A B"


# --------------------------------------------------------------------------------------------- the command


def test_review_command_on_the_artifact_exit_1_and_prints_the_report_command(routebr_artifact, r065, tmp_path,
                                                                             capsys):
    out = tmp_path / "shadow"
    status = main(["review", "--artifact", str(routebr_artifact), "--candidate-assets", _dir(r065),
                   "--out", str(out), "--json", str(tmp_path / "review.json")])
    text = capsys.readouterr().out
    assert status == 1 and "gate FAILED" in text
    assert f"report: routebr-kit report {out} --base {routebr_artifact} --gate" in text
    assert (out / "shadow_manifest.json").is_file()
    doc = json.loads((tmp_path / "review.json").read_text())
    assert doc["gate"]["passed"] is False and doc["summary"]["new false dispatch"] == 0
    # the written shadow is what `routebr-kit diff` pairs with the base: the same counts
    assert main(["diff", str(routebr_artifact), str(out)]) == 0
    assert diff_sentence_of(doc) in capsys.readouterr().out


def diff_sentence_of(doc: dict) -> str:
    m = doc["diff"]["metrics"]
    return (f"{doc['diff']['rows']} paired rows; {m['changed']} changed: " + ", ".join(
        f"{m[c.value]} {c.value.replace('_', ' ')}" for c in ChangeClass))


def test_review_command_passes_with_a_lenient_gate(routebr_artifact, r065, capsys):
    assert main(["review", "--artifact", str(routebr_artifact), "--candidate-assets", _dir(r065),
                 "--gate", "new_false_dispatch <= 0"]) == 0
    assert "gate PASSED" in capsys.readouterr().out


def test_review_command_bad_inputs_are_one_line_exit_2(routebr_artifact, r065, tmp_path, capsys):
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x.txt").write_text("x")
    cases = [
        ["review", "--artifact", str(routebr_artifact), "--candidate-assets", _dir(r065), "--out", str(busy)],
        ["review", "--artifact", str(routebr_artifact), "--candidate-assets", str(tmp_path / "missing")],
        ["review", "--artifact", str(routebr_artifact), "--candidate-assets", _dir(r065), "--gate", "bogus <= 1"],
        ["review", "--candidate-assets", _dir(r065)],  # no ledgers
        ["review", "--ledger", str(tmp_path), "--candidate-assets", _dir(r065)],  # --ledger without --cases
    ]
    for argv in cases:
        assert _status(argv) == 2, argv
        err = capsys.readouterr().err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, (argv, err)


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("kit")
    bench = root / "bench"
    write_benchmark(generate_benchmark(0, "en"), bench)
    cases_path = bench / "routebr_confirm_320.csv"
    assets = assets_beside(cases_path)
    cases = [c for c in load_cases(cases_path) if c.split is Split.FLIP]
    backend = make_backend("sim:deepseek_v4_primary", cases=cases, catalog=assets.catalog, seed=0)
    run_cases(cases, backend, system="routebr", assets=assets, out_dir=root / "run", progress=False,
              cases_path=cases_path)
    return root, bench, cases_path


def test_review_command_on_run_directories_matches_the_function(kit_run, tmp_path, capsys):
    root, bench, cases_path = kit_run
    base = AssetFiles.from_dir(bench)
    candidate = tmp_path / "cand"
    candidate.mkdir()
    (candidate / "boundary_rules.csv").write_text(
        write_release(tmp_path / "full", base, rules=[*base.load().policy.rules, R065]).rules.read_text())
    status = main(["review", "--ledger", str(root / "run"), "--cases", str(cases_path), "--candidate-assets",
                   str(candidate), "--json", str(tmp_path / "r.json")])
    doc = json.loads((tmp_path / "r.json").read_text())
    expected = release_review(base, candidate, load_ledgers(root / "run", cases=cases_path))
    assert doc["summary"] == expected.summary() and status == (0 if expected.passed else 1)
    assert diff_sentence(expected.diff) in capsys.readouterr().out


def test_a_loosening_no_recorded_row_sees_fails_the_default_gate_with_its_witness_and_coverage(tmp_path, capsys):
    """Issue 31: R070 no longer applying to A1_ADVISORY changes no recorded row (shadow replay: 0 changed), yet the
    candidate dispatches A1_ADVISORY on stale context: the default gate's widening criterion fails, exit 1."""
    from routebr_kit.cli.app import main

    artifact = Path("/work/shared/routebr_artifact")
    cand = tmp_path / "cand"
    cand.mkdir()
    text = (artifact / "data" / "boundary_rules.csv").read_text(encoding="utf-8")
    assert "R070,80,A1_ADVISORY|" in text
    (cand / "boundary_rules.csv").write_text(text.replace("R070,80,A1_ADVISORY|", "R070,80,"), encoding="utf-8")
    assert main(["review", "--candidate-assets", str(cand), "--artifact", str(artifact)]) == 1
    out = capsys.readouterr().out
    assert "0 changed" in out and "A1_ADVISORY: WIDENING" in out
    assert "CLARIFY (BOUNDARY_TERMINAL, R070) -> DISPATCH (DISPATCH_OK, R999) [confirmed by replay]" in out
    assert "changed states seen by the recorded traffic: 0 of 4" in out
    assert "FAIL widening <= 0 (measured 1)" in out and "gate FAILED (default gate + widening)" in out
    assert main(["review", "--candidate-assets", str(cand), "--artifact", str(artifact),
                 "--allow-widening", "A1_ADVISORY"]) == 0
