"""``make lint`` is part of the tests: ruff over the package, tests, benchmarks, tools and the notebooks' code cells
(line length 120, sorted imports), with the pinned ruff of the dev extra."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_ruff_finds_nothing_where_make_lint_looks():
    target = next(line for line in (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
                  if "ruff check" in line)
    paths = re.search(r"ruff check (.+)$", target).group(1).split()
    assert "notebooks" in paths and "routebr_kit" in paths
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", *paths], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
