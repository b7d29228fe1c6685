"""Notebook 13's machinery on its fallback path (no extra needed): the banner, the seeded sample, the run grid's
scores table — the live path is exercised by the notebook itself
where the extra [local] is installed (tests/test_local_model.py covers the server)."""

from __future__ import annotations

import pytest

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.experiments import local_grid as lab
from routebr_kit.store.cases import Split


@pytest.fixture(scope="module")
def fallback(tmp_path_factory):
    work = tmp_path_factory.mktemp("nb13")
    proposer = lab.open_proposer(work, live=False)
    sample = lab.sample_cases(work, n_cases=6, seed=3)
    grid = lab.run_grid(proposer, sample, work, systems=["routebr", "b1"], seed=3)
    return work, proposer, sample, grid


def test_a_missing_extra_falls_back_to_the_simulation_with_a_banner(tmp_path, monkeypatch):
    def missing(**_):
        raise DataError(ErrorCode.MISSING_EXTRA, "the optional extra [local] (install it with: make local-model)")

    monkeypatch.setattr(lab, "require_extra", missing)
    proposer = lab.open_proposer(tmp_path, constrains=("none", "json-schema"))
    assert not proposer.live and proposer.server is None
    assert "make local-model" in proposer.banner and "simulated" in proposer.banner.lower()
    assert "SIMULATED" in proposer.label
    assert proposer.constrains == ("none",) and proposer.skipped == ("json-schema",)


def test_a_server_that_does_not_start_falls_back_too(tmp_path, monkeypatch):
    def broken(self):
        raise DataError(ErrorCode.SERVER_FAILED, "a server that stays up", field="server", got="exit 1")

    monkeypatch.setattr(lab, "require_extra", lambda **_: None)
    monkeypatch.setattr(lab, "resolve_model", lambda name: None)
    monkeypatch.setattr(lab.LocalServer, "start", broken)
    proposer = lab.open_proposer(tmp_path)
    assert not proposer.live and "did not start" in proposer.banner and "SERVER_FAILED" in proposer.banner
    assert "switched off" in lab.open_proposer(tmp_path, live=False).banner


def test_the_sample_is_seeded_with_whole_flip_pairs(tmp_path):
    one = lab.sample_cases(tmp_path, n_cases=9, seed=1)
    two = lab.sample_cases(tmp_path, n_cases=9, seed=1)
    assert [c.case_id for c in one.cases] == [c.case_id for c in two.cases] and len(one.cases) == 9
    flips = [c for c in one.cases if c.split is Split.FLIP]
    assert len(flips) == 4 and all(sum(f.pair_id == c.pair_id for f in flips) == 2 for c in flips)
    assert {c.split for c in one.cases} == {Split.MAIN, Split.FLIP}


def test_the_scores_table_on_the_fallback(fallback):
    work, proposer, sample, grid = fallback
    scores = lab.scores_table(grid, sample)
    assert list(scores["system"]) == ["routebr", "b1"] and set(scores["n"]) == {6}
    assert all(" [" in v for v in scores["false_dispatch"])  # k/n with its Wilson interval


def test_a_re_executed_notebook_runs_again_in_the_same_work_folder(tmp_path):
    proposer = lab.open_proposer(tmp_path, live=False)
    first = lab.run_grid(proposer, lab.sample_cases(tmp_path, n_cases=4, seed=1), tmp_path, systems=["routebr"], seed=1)
    again = lab.sample_cases(tmp_path, n_cases=6, seed=2)  # other parameters, the same folder: no resume refusal
    second = lab.run_grid(proposer, again, tmp_path, systems=["routebr"], seed=1)
    (rows_first,), (rows_second,) = ([r.rows for r in g.runs.values()] for g in (first, second))
    assert len(rows_first) == 4 and sorted(r.case_id for r in rows_second) == sorted(c.case_id for c in again.cases)
