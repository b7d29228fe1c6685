"""Progress bars where a person waits (issue 30): a bar on a terminal, plain output in a pipe or a log file, none
with ``--no-progress`` or ``TQDM_DISABLE``; ``reproduce`` without a bar prints one line per notebook."""

from __future__ import annotations

import io
import re
import sys

import pytest

from routebr_kit.cli.app import main
from routebr_kit.scale.progress import progress_bar, terminal_progress

RUN = ["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "ENTITY"]
BAR = re.compile(r"\d+/\d+ \[")  # tqdm's "40/40 [00:00<...]"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "en-0"
    assert main(["generate", "--seed", "0", "--out", str(out)]) == 0
    return out / "routebr_select_160.csv"


@pytest.fixture
def bars_allowed(monkeypatch):
    monkeypatch.delenv("TQDM_DISABLE", raising=False)


def test_a_bar_only_on_a_terminal_and_never_when_switched_off(bars_allowed, monkeypatch):
    assert terminal_progress(stream=Terminal()) is True
    assert terminal_progress(stream=io.StringIO()) is False
    assert terminal_progress(True, stream=Terminal()) is False
    monkeypatch.setenv("TQDM_DISABLE", "1")
    assert terminal_progress(stream=Terminal()) is False
    assert progress_bar(range(3), show=True, file=Terminal()).disable  # the library's bars obey it too


def test_run_in_a_pipe_prints_no_bar(bars_allowed, bench, tmp_path, capsys):
    assert main([*RUN, "--cases", str(bench), "--out", str(tmp_path / "r")]) == 0
    captured = capsys.readouterr()
    assert not BAR.search(captured.err) and "\r" not in captured.err, captured.err
    assert "score: exact " in captured.out


def test_run_on_a_terminal_shows_a_bar(bars_allowed, bench, tmp_path, monkeypatch):
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*RUN, "--cases", str(bench), "--out", str(tmp_path / "r")]) == 0
    assert BAR.search(terminal.getvalue()) and "case" in terminal.getvalue(), terminal.getvalue()
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main([*RUN, "--cases", str(bench), "--out", str(tmp_path / "r2"), "--no-progress"]) == 0
    assert not BAR.search(terminal.getvalue())


def test_tqdm_disable_silences_a_library_bar_asked_for(monkeypatch, bench, tmp_path, capsys):
    """A notebook (or a script) asks ``run_cases(progress=True)``; ``TQDM_DISABLE=1`` still wins."""
    from routebr_kit.backends.registry import make_backend
    from routebr_kit.runs.runner import run_cases
    from routebr_kit.store.assets import assets_beside
    from routebr_kit.store.cases import load_cases

    monkeypatch.setenv("TQDM_DISABLE", "1")
    cases = [c for c in load_cases(bench) if c.split.value == "ENTITY"]
    assets = assets_beside(bench)
    backend = make_backend("sim:deepseek_v4_primary", cases=cases, catalog=assets.catalog, seed=0)
    run_cases(cases, backend, system="routebr", assets=assets, out_dir=tmp_path / "r", progress=True, cases_path=bench)
    assert not BAR.search(capsys.readouterr().err)


def test_reproduce_in_a_pipe_prints_one_line_per_notebook_without_being_asked(bars_allowed, tmp_path, capsys):
    params = tmp_path / "one.yaml"
    params.write_text("name: one\ncell_timeout: 60\nnotebooks:\n  - {name: 07_paper_replay, requires_artifact: true}\n",
                      encoding="utf-8")
    assert main(["reproduce", "--params", str(params), "--no-artifact", "--out", str(tmp_path / "run")]) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert [line for line in lines if line.startswith("[")] == [
        next(line for line in lines if line.startswith("[1/1] 07_paper_replay: skipped: needs the RouteBR artifact"))]
    assert not BAR.search(captured.err)


def test_notebook_13s_grid_shows_where_it_is(bars_allowed, tmp_path, capsys):
    """The live grid (seconds per call with a real model) draws a bar over its runs, naming the one in progress."""
    from routebr_kit.experiments import local_grid as lab

    proposer = lab.open_proposer(tmp_path, live=False)  # the simulation: constrain "none" only
    sample = lab.sample_cases(tmp_path, n_cases=2, seed=1)
    lab.run_grid(proposer, sample, tmp_path, systems=["routebr", "b1"], seed=1)
    err = capsys.readouterr().err
    assert "live grid" in err and "2/2 [" in err and "b1, constrain none" in err, err
    lab.run_grid(proposer, sample, tmp_path, systems=["routebr"], seed=1, progress=False)
    assert not BAR.search(capsys.readouterr().err)
