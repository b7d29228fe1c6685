"""Hand-edited shadow ledgers, decision records and run manifests are refused by ``diff`` and ``report`` with
one located typed line and exit 2 (issue 31, deliver item 4): the strict row check lives in the store layer
(``routebr_kit.store.ledger``) and both commands read ledgers through it."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pytest

from routebr_kit.cli.app import main

TASK = "confirm/routebr/main"


@pytest.fixture(scope="module")
def shadow(routebr_artifact, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("strict") / "shadow"
    assert main(["shadow", "--artifact", str(routebr_artifact), "--out", str(out)]) == 0
    return out


def _csv_row(**values):
    def edit(task: Path) -> None:
        rows = list(csv.DictReader(open(task / "predictions.csv", encoding="utf-8", newline="")))
        rows[3].update(values)
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        (task / "predictions.csv").write_text(buffer.getvalue(), encoding="utf-8")
    return edit


def _shadow_row(change):
    def edit(task: Path) -> None:
        lines = [json.loads(x) for x in (task / "shadow_rows.jsonl").read_text().splitlines()]
        change(lines[3])
        (task / "shadow_rows.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return edit


def _manifest(change):
    def edit(task: Path) -> None:
        m = json.loads((task / "run_manifest.json").read_text())
        change(m)
        (task / "run_manifest.json").write_text(json.dumps(m))
    return edit


DEFECTS = {
    "shadow row without case_id": (_shadow_row(lambda r: r.pop("case_id")), "[EMPTY_VALUE]",
                                   "shadow_rows.jsonl:4, field 'case_id'"),
    "shadow row rule a string": (_shadow_row(lambda r: r.update(rule="R070")), "[WRONG_TYPE]",
                                 "shadow_rows.jsonl:4, field 'rule'"),
    "unknown terminal": (_csv_row(pred_final_path="T_BOGUS"), "[UNKNOWN_ENUM]",
                         "predictions.csv:5, field 'pred_final_path'"),
    "terminal and boundary disagree": (_csv_row(pred_final_path="T_REJECT", pred_boundary="ALLOW"),
                                       "[INVALID_VALUE]", "predictions.csv:5, field 'pred_boundary'"),
    "action outside the catalog": (_csv_row(pred_final_path="A9_NOPE", pred_action="A9_NOPE", pred_boundary="ALLOW"),
                                   "[UNKNOWN_ACTION]", "predictions.csv:5, field 'pred_final_path'"),
    "manifest options a list": (_manifest(lambda m: m.update(options=[])), "[WRONG_TYPE]",
                                "run_manifest.json, field 'options'"),
    "manifest fallback BOGUS": (_manifest(lambda m: m["options"].update(fallback="BOGUS")), "[UNKNOWN_ENUM]",
                                "run_manifest.json, field 'options.fallback'"),
}


@pytest.mark.parametrize("command", ["diff", "report"])
@pytest.mark.parametrize("defect", sorted(DEFECTS))
def test_a_hand_edited_ledger_is_one_located_line(shadow, routebr_artifact, tmp_path, capsys, defect, command):
    edit, code, where = DEFECTS[defect]
    edited = tmp_path / "edited"
    shutil.copytree(shadow, edited)
    edit(edited / TASK)
    argv = (["diff", str(routebr_artifact), str(edited)] if command == "diff"
            else ["report", str(edited), "--out", str(tmp_path / "page")])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    assert code in err[0] and f"{TASK}/{where}" in err[0], err[0]
