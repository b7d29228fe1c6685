"""``make bench`` (``benchmarks/run_all.py``) runs every benchmark the documentation cites, records a script whose
optional extra is missing as skipped, and ``--only`` runs one script end to end into RESULTS-shaped Markdown."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BENCH = REPO / "benchmarks"
#: A benchmark script named anywhere in the prose: ``bench_x.py`` or ``benchmarks/x.py``.
CITED = re.compile(r"\b(bench_[a-z0-9_]+\.py)|benchmarks/([a-z0-9_]+\.py)")
#: Scripts in benchmarks/ that are helpers or the driver itself, not benchmarks.
NOT_BENCHMARKS = {"run_all.py", "peers_encode.py"}


def _run_all():
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["run_all"] = module
    spec.loader.exec_module(module)
    return module


def _cited() -> set[str]:
    texts = [p.read_text(encoding="utf-8") for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]]
    return {a or b for text in texts for a, b in CITED.findall(text)} - NOT_BENCHMARKS


def test_every_cited_benchmark_exists_and_is_run_by_make_bench():
    run_all = _run_all()
    cited = _cited()
    assert {"bench_controller.py", "bench_verify.py", "bench_peers.py"} <= cited  # the pattern finds them
    assert sorted(s for s in cited if not (BENCH / s).is_file()) == []
    assert sorted(cited - set(run_all.SCRIPTS)) == []
    assert sorted(s for s in run_all.SCRIPTS if not (BENCH / s).is_file()) == []
    assert set(run_all.EXTRAS) <= set(run_all.SCRIPTS)


def test_a_missing_extra_is_recorded_as_skipped(tmp_path, monkeypatch):
    run_all = _run_all()
    monkeypatch.setitem(run_all.EXTRAS, "bench_peers.py", ("peers", ("no_such_module_for_routebr_kit",)))
    out = tmp_path / "RESULTS.md"
    assert run_all.main(["--only", "bench_peers", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert "## bench_peers.py" in text
    assert "skipped: extra [peers] not installed (no_such_module_for_routebr_kit)." in text
    assert "Wall time" not in text


@pytest.mark.artifact
def test_only_runs_one_script_end_to_end(tmp_path, monkeypatch, routebr_artifact):
    run_all = _run_all()
    args = ["--artifact", str(routebr_artifact), "--seeds", "--repeat", "1", "--horizon", "1",
            "--horizon-repeat", "1"]
    monkeypatch.setitem(run_all.SCRIPTS, "bench_verify.py", args)
    out = tmp_path / "RESULTS.md"
    assert run_all.main(["--only", "bench_verify.py", "--out", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Benchmark results")
    assert "| load (1-min average) |" in text
    assert [line for line in text.splitlines() if line.startswith("## ")] == ["## bench_verify.py"]
    assert "published release: verify" in text
    assert re.search(r"^ 1 +[0-9.]+s +10 ", text, re.M)  # K = 1 of the session sweep: 10 abstract sessions
    assert "FAILED" not in text
