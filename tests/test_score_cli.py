"""``routebr-kit score RUN_DIR --cases FILE``: the paper's metrics for one ledger, and the summary after ``run``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import routebr_kit as rk
from routebr_kit.cli import main
from routebr_kit.evaluation.forbidden import DispatchGate
from routebr_kit.evaluation.metrics import flip_pairs, score
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.ledger import read_predictions

CONFIRM = "data/routebr_confirm_320.csv"


def _published(artifact: Path, system: str, split: str) -> Path:
    return artifact / "experiments" / "results" / "confirm" / system / split


@pytest.mark.parametrize("system, split, line, pairs", [
    # the published Table V values (FINAL_RESULTS.md): RouteBR FLIP 96.2 exact, FD 0/40, FB 0/40, pairs 37/40;
    # ENTITY 100.0 exact, 95.0 object; A-state FLIP 46.2 exact, FD 40/40
    ("routebr", "flip", "exact 77/80 = 96.2% (Wilson 95% 89.5-98.7%) · FD 0/40 · FB 0/40 · object 80/80 = 100.0%",
     "FLIP pairs: 37/40 = 92.5% (both members exact)"),
    ("routebr", "entity", "exact 40/40 = 100.0% (Wilson 95% 91.2-100.0%) · FD 0/18 · FB 0/22 · object 38/40 = 95.0%",
     None),
    ("a_state", "flip", "exact 37/80 = 46.2% (Wilson 95% 35.7-57.1%) · FD 40/40 · FB 0/40 · object 80/80 = 100.0%",
     "FLIP pairs: 0/40 = 0.0% (both members exact)"),
])
def test_score_of_published_ledgers_matches_the_published_values(routebr_artifact, capsys, system, split, line,
                                                                 pairs) -> None:
    assert main(["score", str(_published(routebr_artifact, system, split)),
                 "--cases", str(routebr_artifact / CONFIRM)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert f"score: {line}" in out
    assert (pairs in out) if pairs else not any(o.startswith("FLIP pairs") for o in out)


def test_json_equals_the_metrics_function_and_is_byte_identical(routebr_artifact, tmp_path, capsys) -> None:
    run = _published(routebr_artifact, "routebr", "flip")
    cases = rk.load_cases(routebr_artifact / CONFIRM)
    for name in ("a.json", "b.json"):
        assert main(["score", str(run), "--cases", str(routebr_artifact / CONFIRM),
                     "--json", str(tmp_path / name)]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    record = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    rows = read_predictions(run / "predictions.csv")
    release = DispatchGate(assets_beside(routebr_artifact / CONFIRM).controller())  # the forbidden-dispatch check
    expected = score(rows, cases, release).as_dict()
    assert record["splits"]["FLIP"] == expected
    assert record["flip_pairs"]["correct"] == flip_pairs(rows, cases).pairs.hits == 37
    assert record["flip_pairs"]["pairs"] == 40 and len(record["flip_pairs"]["missed"]) == 3


def test_a_multi_split_ledger_scores_each_split_and_all(tmp_path, capsys) -> None:
    bench = tmp_path / "bench"
    assert main(["generate", "--seed", "1", "--out", str(bench)]) == 0
    cases = bench / "routebr_confirm_320.csv"
    run = tmp_path / "run"
    assert main(["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--cases", str(cases),
                 "--split", "all", "--out", str(run), "--no-progress"]) == 0
    after_run = capsys.readouterr().out.splitlines()
    summary = next(line for line in after_run if line.startswith("score: exact "))
    assert re.fullmatch(r"score: exact \d+/320 = [\d.]+% \(Wilson 95% [\d.]+-[\d.]+%\) · FD \d+/\d+ · FB \d+/\d+ · "
                        r"object \d+/320 = [\d.]+%", summary)
    assert any(line.startswith("FLIP pairs: ") and "/40 = " in line for line in after_run)

    assert main(["score", str(run), "--cases", str(cases), "--json", str(tmp_path / "s.json")]) == 0
    scored = capsys.readouterr().out.splitlines()
    assert summary in scored  # the same line as after the run
    assert [line.split()[0] for line in scored[2:6]] == ["MAIN", "FLIP", "ENTITY", "ALL"]
    record = json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))
    assert record["splits"]["ALL"]["n"] == 320
    assert sum(record["splits"][s]["n"] for s in ("MAIN", "FLIP", "ENTITY")) == 320
    assert record["splits"]["ALL"]["false_dispatch_denominator"] == sum(
        record["splits"][s]["false_dispatch_denominator"] for s in ("MAIN", "FLIP", "ENTITY"))


def _ledger(tmp_path: Path, artifact: Path, transform) -> Path:
    run = tmp_path / "ledger"
    run.mkdir()
    text = (_published(artifact, "routebr", "flip") / "predictions.csv").read_text(encoding="utf-8")
    (run / "predictions.csv").write_text(transform(text), encoding="utf-8", newline="")
    return run


def test_an_incomplete_pair_is_reported_not_silently_scored(routebr_artifact, tmp_path, capsys) -> None:
    def drop_one(text: str) -> str:
        lines = text.splitlines(keepends=True)
        return "".join(line for line in lines if not line.startswith("FLIP-0005,"))
    run = _ledger(tmp_path, routebr_artifact, drop_one)
    assert main(["score", str(run), "--cases", str(routebr_artifact / CONFIRM)]) == 0
    out = capsys.readouterr().out
    assert "FLIP pairs: 36/39" in out and "1 incomplete pairs not scored" in out


def test_several_repeats_report_pass_k_or_one_repeat(routebr_artifact, tmp_path, capsys) -> None:
    def two_repeats(text: str) -> str:
        header, *rows = text.splitlines(keepends=True)
        columns = header.rstrip("\r\n").split(",")
        at = columns.index("repeat_id")

        def with_repeat(row: str, value: str) -> str:
            cells = row.rstrip("\r\n").split(",")
            if len(cells) != len(columns):  # a quoted comma: keep it out of this small ledger
                return ""
            cells[at] = value
            return ",".join(cells) + "\r\n"
        return header + "".join(with_repeat(r, "0") + with_repeat(r, "1") for r in rows)
    run = _ledger(tmp_path, routebr_artifact, two_repeats)
    cases = str(routebr_artifact / CONFIRM)
    assert main(["score", str(run), "--cases", cases]) == 0  # issue 25: each repeat, pass^k, consistency
    out = capsys.readouterr().out
    assert "repeats: 2 per case" in out and "pass^2" in out and "consistency" in out
    assert main(["score", str(run), "--cases", cases, "--repeat-id", "1"]) == 0
    assert main(["score", str(run), "--cases", cases, "--repeat-id", "7"]) == 2
    assert "[UNKNOWN_REFERENCE]" in capsys.readouterr().err


def test_a_row_of_another_benchmark_names_the_ledger(routebr_artifact, tmp_path, capsys) -> None:
    run = _ledger(tmp_path, routebr_artifact, lambda text: text.replace("FLIP-0005,", "FLIP-9999,", 1))
    assert main(["score", str(run), "--cases", str(routebr_artifact / CONFIRM)]) == 2
    err = capsys.readouterr().err
    assert f"[UNKNOWN_REFERENCE] {run / 'predictions.csv'}" in err and "FLIP-9999" in err


@pytest.mark.parametrize("what", ["run_dir", "predictions", "cases"])
def test_missing_inputs_name_the_missing_file(routebr_artifact, tmp_path, capsys, what) -> None:
    run = _published(routebr_artifact, "routebr", "flip")
    cases = routebr_artifact / CONFIRM
    empty = tmp_path / "empty"
    empty.mkdir()
    argv, named = {"run_dir": ([str(tmp_path / "nope"), "--cases", str(cases)], tmp_path / "nope"),
                   "predictions": ([str(empty), "--cases", str(cases)], empty / "predictions.csv"),
                   "cases": ([str(run), "--cases", str(tmp_path / "nope.csv")], tmp_path / "nope.csv")}[what]
    assert main(["score", *argv]) == 2
    err = capsys.readouterr().err
    assert f"[FILE_NOT_FOUND] {named}" in err and err.count("\n") == 1
