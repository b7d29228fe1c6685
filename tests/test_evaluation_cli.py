"""``routebr-kit tables``: writes and prints every table, ends with the scorecard line, exits 1 on a mismatch."""

from __future__ import annotations

import json
from pathlib import Path

from routebr_kit.cli import main


def test_tables_reproduces_every_published_value(routebr_artifact: Path, tmp_path: Path, capsys) -> None:
    status = main(["tables", "--artifact", str(routebr_artifact), "--out", str(tmp_path)])
    lines = capsys.readouterr().out.strip().splitlines()
    assert status == 0
    assert lines[-1] == "reproduced 90/90 published values"
    assert "tables from replayed predictions vs tables from published predictions: identical" in lines
    assert "replay: 1400/1400 controller rows agree with the recorded predictions" in lines
    assert not any(line.startswith("MISMATCH") for line in lines)
    written = sorted(p.name for p in (tmp_path / "tables").iterdir())
    for name in ("table_iv_screening", "table_v_rq1_rq2", "table_vi_rq3", "mcnemar", "integrity", "scorecard"):
        assert f"{name}.csv" in written and f"{name}.md" in written
    scorecard = (tmp_path / "tables" / "scorecard.csv").read_text(encoding="utf-8").splitlines()
    assert len(scorecard) == 1 + 90
    captions = json.loads((tmp_path / "captions.json").read_text(encoding="utf-8"))
    assert {c["name"] for c in captions} >= {"table_iv_screening", "scorecard"}


def _artifact_with_results(original: Path, root: Path, markdown: str) -> Path:
    """The published artifact by symlink, with a different FINAL_RESULTS.md."""
    root.mkdir()
    for name in ("data", "experiments"):
        (root / name).symlink_to(original / name, target_is_directory=True)
    results = root / "analysis" / "results"
    results.mkdir(parents=True)
    for name in ("FINAL_RESULTS.json", "RESULT_FREEZE_MANIFEST.json"):
        (results / name).symlink_to(original / "analysis" / "results" / name)
    (results / "FINAL_RESULTS.md").write_text(markdown, encoding="utf-8")
    return root


def test_tables_fails_when_a_published_value_is_not_reproduced(routebr_artifact: Path, tmp_path: Path,
                                                               capsys) -> None:
    published = (routebr_artifact / "analysis" / "results" / "FINAL_RESULTS.md").read_text(encoding="utf-8")
    altered = published.replace("| GPT-5.2 | 95.6 |", "| GPT-5.2 | 95.7 |")
    assert altered != published
    artifact = _artifact_with_results(routebr_artifact, tmp_path / "artifact", altered)
    status = main(["tables", "--artifact", str(artifact), "--out", str(tmp_path / "out")])
    lines = capsys.readouterr().out.strip().splitlines()
    assert status == 1
    assert lines[-1] == "reproduced 89/90 published values"
    assert "MISMATCH table_iv_screening / GPT-5.2 / Contract: published '95.7', reproduced '95.6'" in lines


def test_tables_on_a_missing_artifact_is_one_line(tmp_path: Path, capsys) -> None:
    status = main(["tables", "--artifact", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")])
    captured = capsys.readouterr()
    assert status == 2
    assert captured.err.count("\n") == 1 and "[FILE_NOT_FOUND]" in captured.err
