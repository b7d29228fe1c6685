"""RouteBR seed spread on the scale seam: per-seed screen and RQ1 cells, executor-invariant and never stale."""

from __future__ import annotations

from pathlib import Path

import pytest
from dataset_fixtures import written

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.evaluation.metrics import index_cases, score
from routebr_kit.experiments.screening import screening_cases, simulated_rows
from routebr_kit.experiments.seed_spread import rq1_cell, seed_spread, spread_cells
from routebr_kit.store.assets import assets_beside

PROFILES = ("deepseek_v4_primary", "ohmygpt_gpt4o_historical")


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("bench")
    written(root)
    return root / "en-0-0"


@pytest.fixture(scope="module")
def spread(bench: Path, tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("spread")
    return out, seed_spread(3, out, screening_cases=bench / "routebr_select_160.csv",
                            confirm_cases=bench / "routebr_confirm_320.csv", profiles=PROFILES)


def files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_one_row_per_profile_and_seed_and_one_rq1_row_per_seed(spread) -> None:
    _, result = spread
    assert list(zip(result.screening["profile"], result.screening["seed"])) == [
        (p, s) for p in PROFILES for s in range(3)]
    assert list(result.rq1["seed"]) == [0, 1, 2]
    assert set(result.summary()["seeds"]) == {3}
    summary = result.rq1_summary()
    assert summary["min_p"] <= summary["median_p"] <= summary["max_p"] <= 1.0
    assert summary["share_significant"] == float((result.rq1["p_two_sided"] < 0.05).mean())


def test_screen_cells_equal_scoring_the_simulated_rows_directly(spread, bench: Path) -> None:
    _, result = spread
    path = bench / "routebr_select_160.csv"
    cases = screening_cases(path, "ALL")
    direct = score(simulated_rows(PROFILES[1], cases, assets_beside(path), seed=2), index_cases(cases))
    row = result.screening[(result.screening["profile"] == PROFILES[1]) & (result.screening["seed"] == 2)].iloc[0]
    assert (row["contract_exact"], row["false_dispatch"], row["false_block"]) == (
        direct.contract_exact.hits, direct.false_dispatch.hits, direct.false_block.hits)


def test_seeds_are_different_draws(spread) -> None:
    _, result = spread
    assert result.rq1["p_two_sided"].nunique() > 1 or result.screening["contract_exact"].nunique() > 1


def test_thread_pool_is_byte_identical_and_rerun_reuses_every_cell(spread, bench: Path, tmp_path: Path) -> None:
    out, result = spread
    again = seed_spread(3, tmp_path, screening_cases=bench / "routebr_select_160.csv",
                        confirm_cases=bench / "routebr_confirm_320.csv", profiles=PROFILES, executor="threads:2")
    assert files(tmp_path) == files(out)
    assert again.screening.equals(result.screening) and again.rq1.equals(result.rq1)


def test_an_edited_cases_file_never_reuses_a_stale_cell(bench: Path, tmp_path: Path) -> None:
    copy = tmp_path / "bench"
    copy.mkdir()
    for p in bench.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    before, _ = spread_cells([0], screening_cases=copy / "routebr_select_160.csv", confirm_cases=None,
                             profiles=PROFILES[:1])
    (copy / "routebr_select_160.csv").write_bytes((copy / "routebr_select_160.csv").read_bytes() + b"\n")
    after, _ = spread_cells([0], screening_cases=copy / "routebr_select_160.csv", confirm_cases=None,
                            profiles=PROFILES[:1])
    assert before[0].key != after[0].key
    (copy / "catalog.csv").write_bytes((copy / "catalog.csv").read_bytes() + b"\n")  # an asset beside it
    edited, _ = spread_cells([0], screening_cases=copy / "routebr_select_160.csv", confirm_cases=None,
                             profiles=PROFILES[:1])
    assert edited[0].key not in (before[0].key, after[0].key)


def test_planned_cell_refuses_changed_assets(bench: Path, tmp_path: Path) -> None:
    copy = tmp_path / "bench"
    copy.mkdir()
    for p in bench.iterdir():
        (copy / p.name).write_bytes(p.read_bytes())
    _, rq1 = spread_cells([0], screening_cases=copy / "routebr_select_160.csv",
                          confirm_cases=copy / "routebr_confirm_320.csv", profiles=PROFILES[:1])
    (copy / "routebr_confirm_320.csv").write_bytes((copy / "routebr_confirm_320.csv").read_bytes() + b"\n")
    with pytest.raises(DataError) as caught:
        rq1_cell(rq1[0].payload)
    assert caught.value.code is ErrorCode.INCONSISTENT_ASSETS


@pytest.mark.parametrize("kwargs", [{"profiles": ("nope",)}, {"seeds": [0, 0]}, {"seeds": []}])
def test_bad_arguments_are_typed(bench: Path, kwargs: dict) -> None:
    seeds = kwargs.pop("seeds", [0])
    with pytest.raises(DataError):
        spread_cells(seeds, screening_cases=bench / "routebr_select_160.csv", confirm_cases=None, **kwargs)
