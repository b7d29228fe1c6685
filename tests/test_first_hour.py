"""The first hour of a new user (issue 30): a fresh clone without ``../shared``, papermill from anywhere, re-runs
into the same folder, and the messages an installed wheel prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NEEDS = '''
def test_needs_the_artifact(routebr_artifact):
    assert (routebr_artifact / "data").is_dir()


def test_needs_nothing():
    assert True
'''


def _clone(tmp_path: Path) -> Path:
    """A checkout's tests/ folder (the real conftest.py) with no artifact anywhere near it."""
    tests = tmp_path / "clone" / "tests"
    tests.mkdir(parents=True)
    shutil.copy(REPO / "tests" / "conftest.py", tests / "conftest.py")
    (tests / "test_needs.py").write_text(NEEDS, encoding="utf-8")
    return tests.parent


def _pytest(clone: Path, **env: str) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if k not in {"ROUTEBR_ARTIFACT", "METAROUTE_ARTIFACT", "CI"}}
    clean["PYTHONPATH"] = str(REPO)
    return subprocess.run([sys.executable, "-m", "pytest", "tests", "-p", "no:cacheprovider", "-ra", "-q"],
                          cwd=clone, env={**clean, **env}, capture_output=True, text=True, timeout=120)


def test_a_fresh_clone_without_artifact_skips_with_one_summary_line(tmp_path):
    run = _pytest(_clone(tmp_path))
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line for line in run.stdout.splitlines() if "artifact" in line]
    assert lines == ["1 tests skipped: no published artifact (make artifact)"], run.stdout


def test_on_ci_a_missing_artifact_fails(tmp_path):
    run = _pytest(_clone(tmp_path), CI="true")
    assert run.returncode == 1, run.stdout
    assert "published RouteBR artifact not found" in run.stdout
    assert "skipped: no published artifact" not in run.stdout


def test_the_artifact_named_by_the_environment_is_used(tmp_path, routebr_artifact):
    run = _pytest(_clone(tmp_path), ROUTEBR_ARTIFACT=str(routebr_artifact))
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout
    assert "skipped: no published artifact" not in run.stdout


def test_the_conventional_folder_is_used(tmp_path, routebr_artifact):
    clone = _clone(tmp_path)
    (clone / "artifacts").mkdir()
    (clone / "artifacts" / "routebr").symlink_to(routebr_artifact)
    run = _pytest(clone)
    assert run.returncode == 0 and "2 passed" in run.stdout, run.stdout
