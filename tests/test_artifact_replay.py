"""Exact replay of the 1,400 published RouteBR-controller executions through the kit's controller."""

from __future__ import annotations

import shutil

import pytest

import routebr_kit as rk
from routebr_kit.cli import main
from routebr_kit.experiments.replication import replay_artifact
from routebr_kit.store.artifact import Artifact
from routebr_kit.store.ledger import read_predictions, write_predictions


@pytest.fixture(scope="module")
def report(routebr_artifact):
    return replay_artifact(routebr_artifact)


def test_every_controller_row_replays_exactly(report):
    assert report.ok and report.rows == report.rows_agreeing == 1400
    assert {name: report.agree_total(name) for name in ("final_path", "boundary", "action", "object")} == {
        "final_path": 1400, "boundary": 1400, "action": 1400, "object": 1400}
    keys = [t.task.key for t in report.tasks]
    assert len(keys) == 23 and sum(k.startswith("select/") for k in keys) == 18
    assert {"confirm/routebr/main", "confirm/a_state/flip", "confirm/a_ground/entity"} <= set(keys)


def test_the_one_published_fallback_replays_fail_closed_from_its_invalid_proposal(report):
    task = next(t for t in report.tasks if t.task.key == "select/deepseek_v4_flash_efficiency/main")
    decision = next(d for d in task.decisions if d.request_id == "MAIN-0158")
    assert decision.reason is rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT
    assert decision.repair_attempted and decision.calls == 2 and decision.final_path == "T_CLARIFY"
    assert rk.ContractErrorCode.ACTION_OUTSIDE_CATALOG in [e.code for e in decision.first_errors]
    fallbacks = [(t.task.key, d.request_id) for t in report.tasks for d in t.decisions if d.fallback]
    assert fallbacks == [("select/deepseek_v4_flash_efficiency/main", "MAIN-0158")]


def test_receipts_are_used_where_present(report):
    task = next(t for t in report.tasks if t.task.key == "select/deepseek_v4_primary/main")
    decision = next(d for d in task.decisions if d.request_id == "MAIN-0001")
    assert isinstance(decision.first_output, str) and decision.first_output.startswith("{\n")  # raw receipt text
    assert decision.legacy_reason_codes == ["PRIMARY_BOUNDARY_TERMINAL", "R001"]


def test_interventions_are_offline_replays(report):
    a_state = next(t for t in report.tasks if t.task.key == "confirm/a_state/flip")
    bypassed = [d for d in a_state.decisions if d.reason is rk.ReasonCode.DISPATCH_STATE_NOT_ENFORCED]
    assert len(bypassed) == 40 and all(d.rule.decision is not rk.Boundary.ALLOW for d in bypassed)
    a_ground = next(t for t in report.tasks if t.task.key == "confirm/a_ground/entity")
    assert sum(d.reason is rk.ReasonCode.OBJECT_GROUNDING_DISABLED for d in a_ground.decisions) == 22


def test_replayed_rows_carry_the_kit_extras(report):
    rows = next(t.replayed for t in report.tasks if t.task.key == "confirm/routebr/main")
    assert len(rows) == 200 and all(r.calls == 1 and r.first_pass_valid and r.repair_count == 0 for r in rows)


def test_cli_replay_succeeds(routebr_artifact, capsys):
    assert main(["replay", "--artifact", str(routebr_artifact)]) == 0
    out = capsys.readouterr().out
    assert "1400/1400 rows agree on final path and boundary (independent:" in out
    assert "1400/1400 rows agree on action and object (rebuilt:" in out


def test_cli_replay_reports_a_tampered_row(tmp_path, routebr_artifact, capsys):
    copy = tmp_path / "artifact"
    shutil.copytree(routebr_artifact / "data", copy / "data")
    shutil.copytree(routebr_artifact / "experiments" / "results", copy / "experiments" / "results")
    target = copy / "experiments/results/confirm/routebr/flip/predictions.csv"
    rows = list(read_predictions(target))
    first = rows[0]
    flipped = "T_REJECT" if first.pred_final_path != "T_REJECT" else "T_DEFER"
    rows[0] = rk.store.ledger.PredictionRow(**{**{f: getattr(first, f) for f in first.__dataclass_fields__},
                                         "pred_final_path": flipped, "pred_boundary": flipped[2:]})
    # (a consistent tamper: a path that disagrees with its own boundary is refused by the reader, not replayed)
    write_predictions(target, rows)
    assert main(["replay", "--artifact", str(copy)]) == 1
    out = capsys.readouterr().out
    assert f"DISAGREE confirm/routebr/flip {first.case_id} final_path" in out and "1399/1400" in out


def test_missing_artifact_is_a_one_line_error(tmp_path, capsys):
    assert main(["replay", "--artifact", str(tmp_path)]) == 2
    assert "[FILE_NOT_FOUND]" in capsys.readouterr().err


def test_artifact_index(routebr_artifact):
    artifact = Artifact(routebr_artifact)
    assert len(artifact.tasks()) == 27 and len(artifact.tasks(controller_only=True)) == 23
    assert artifact.input_hashes()["routebr_confirm_320.csv"].startswith("f3e04548")
    assert artifact.task("confirm", "b1_direct", "main").system is rk.System.B1_DIRECT
    with pytest.raises(rk.DataError):
        artifact.task("confirm", "b3", "main")
