"""``routebr-kit metaroute`` end to end through ``routebr_kit.cli.app``."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from routebr_kit.cli import main


def test_metaroute_writes_the_published_files_and_prints_the_summary(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["metaroute", "--seeds", "3", "--out", str(tmp_path)]) == 0
    assert {p.name for p in tmp_path.iterdir()} == {
        "tasks.csv", "traces.csv", "summary.csv", "comparisons.csv", "details.json", "manifest.json"}
    out = capsys.readouterr().out
    assert out.startswith(f"Exported 4320 traces to {tmp_path}")
    summary = list(csv.DictReader(open(tmp_path / "summary.csv", encoding="utf-8")))
    printed = [line.split()[0] for line in out.splitlines()[3:]]
    assert printed == [row["policy"] for row in summary]  # utility order, as published
    assert [float(r["utility"]) for r in summary] == sorted((float(r["utility"]) for r in summary), reverse=True)
    manifest = json.loads((tmp_path / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["mode"] == "exact" and len(manifest["files"]["traces.csv"]) == 64


def test_metaroute_fast_ablations_with_config_and_overrides(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text("evaluation:\n  treatment: adaptive_no_recovery\n", encoding="utf-8")
    out = tmp_path / "out"
    assert main(["metaroute", "--seeds", "4", "--ablations", "--mode", "fast", "--config", str(config),
                 "--set", "executor.recovery_success=0.5", "--no-traces", "--out", str(out)]) == 0
    assert not (out / "traces.csv").exists()
    rows = list(csv.DictReader(open(out / "comparisons.csv", encoding="utf-8")))
    assert {r["treatment"] for r in rows} == {"adaptive_no_recovery"} and len(rows) == 4
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["config"]["executor"]["recovery_success"] == 0.5 and manifest["mode"] == "fast"


@pytest.mark.parametrize("argv", [["--set", "executor.bogus=1"], ["--seeds", "0"], ["--config", "missing.yaml"]])
def test_metaroute_bad_input_exits_2_with_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str]) -> None:
    try:
        status = main(["metaroute", *argv, "--out", str(tmp_path / "o")])
    except SystemExit as stop:  # a range the parser checks ends there
        status = stop.code
    assert status == 2
    err = capsys.readouterr().err
    # a typed error, or the parser's own range check (``--seeds 0``): one line either way
    assert err.startswith(("routebr-kit metaroute: [", "routebr-kit metaroute: error: argument --seeds")), err
    assert err.count("\n") == 1
