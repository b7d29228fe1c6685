"""The notebook-10 rule editor, driven by setting widget values in Python."""

from __future__ import annotations

import html

import pytest

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.notebook.widgets import RuleEditor
from routebr_kit.review.change_impact import artifact_asset_files
from routebr_kit.review.ledgers import LedgerSet, load_ledgers


@pytest.fixture(scope="module")
def confirm(routebr_artifact):
    ledgers = load_ledgers(routebr_artifact)
    return LedgerSet(ledgers.root, "artifact", {k: t for k, t in ledgers.tasks.items() if k.startswith("confirm/")},
                     ledgers.assets), artifact_asset_files(routebr_artifact)


def test_the_default_tightening_edit_blocks_dispatches_and_fails_the_gate(confirm, tmp_path):
    ledgers, base = confirm
    editor = RuleEditor(ledgers, base, workdir=tmp_path)
    editor.gate.value = "new_false_dispatch <= 0, new_false_block <= 0"
    outcome = editor.review()
    m = outcome.diff.metrics()
    assert m["new_false_block"] > 0 and m["new_false_dispatch"] == 0
    assert not outcome.gate.passed
    assert outcome.impact.selected() >= {(c.task, c.case_id, c.repeat_id) for c in outcome.diff.changed}


def test_changing_widget_values_changes_the_review(confirm, tmp_path):
    ledgers, base = confirm
    editor = RuleEditor(ledgers, base, workdir=tmp_path)
    editor.rule_id.value = "R060"  # the existing permission rule, loosened: protected actions go to a person
    editor.priority.value = 70
    editor.applies_to.value = ("A5_PROTECTED_ACTION",)
    editor.condition.value = '{"action_permission": false}'
    editor.decision.value = "HANDOFF"
    editor.gate.value = "new_false_dispatch <= 0"
    outcome = editor.show()
    assert outcome is not None and outcome.gate.passed and editor.error is None
    moved = [c for c in outcome.diff.changed if c.base_final_path != c.candidate_final_path]
    assert moved and all(c.base_final_path == "T_REJECT" and c.candidate_final_path == "T_HANDOFF" for c in moved)
    assert {c.first_changed_stage.value for c in outcome.diff.changed} == {"rule"}


def test_a_bad_condition_is_a_typed_error_shown_not_raised(confirm, tmp_path):
    ledgers, base = confirm
    editor = RuleEditor(ledgers, base, workdir=tmp_path)
    editor.condition.value = '{"policy_version": {"before": "v2"}}'
    assert editor.show() is None and "UNKNOWN_OPERATOR" in editor.error
    editor.condition.value = "{not json"
    with pytest.raises(DataError) as info:
        editor.review()
    assert info.value.code is ErrorCode.INVALID_JSON


def test_the_summary_wraps_between_words_never_inside_one(confirm, tmp_path):
    """Issue 30: in JupyterLab a printed summary (a ``pre``, which the output CSS breaks at any character) wrapped
    mid-word; the editor shows an HTML table whose cells never break and gate lines that wrap at spaces."""
    from routebr_kit.notebook.widgets import review_html

    ledgers, base = confirm
    editor = RuleEditor(ledgers, base, workdir=tmp_path)
    outcome = editor.show()
    shown = editor.result.value
    assert shown == review_html(outcome) and editor.result in editor.widget.children
    assert "<pre" not in shown and "break-all" not in shown
    assert "white-space: nowrap; word-break: normal" in shown and "overflow-x: auto" in shown
    assert "white-space: pre-wrap; word-break: normal; overflow-wrap: break-word" in shown
    for key, value in outcome.summary().items():
        assert f"<th>{html.escape(key)}</th>" in shown and f"<td>{html.escape(str(value))}</td>" in shown
    assert all(html.escape(line) in shown for line in outcome.gate.lines())
    assert editor.condition.layout.width == editor.gate.layout.width == "90%"
