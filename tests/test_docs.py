"""The README is a map (at most 250 lines) and the documentation site builds offline with --strict (issue 30)."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_is_a_map():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 250
    for needed in ("make reproduce", "make test", "make artifact", "papermill", "report.html",
                   "tests skipped: no published artifact (make artifact)", "benchmarks/RESULTS.md"):
        assert needed in text, needed
    assert "Measured on this" not in text  # figures live in benchmarks/RESULTS.md, written by make bench


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="extra [docs] not installed (make docs)")
def test_the_site_builds_strictly_without_incoming_notes(tmp_path):
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=REPO, capture_output=True, text=True, timeout=300,
                         env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "WARNING" not in run.stderr, run.stderr[-3000:]
    site = tmp_path / "site"
    assert (site / "notebooks" / "10_release_review" / "index.html").is_file()
    assert not (site / "_incoming").exists()
