"""The MetaRoute robustness sweep: space files, sampling, cells, files, resume and the CLI."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute import MetaRouteConfig, Mode, run_benchmark
from routebr_kit.metaroute.evaluation import compare
from routebr_kit.metaroute.sweep import (
    CONTRASTS,
    DEFAULT_CONSTANTS,
    MANIFEST,
    SUMMARY,
    Sampling,
    SweepSpace,
    default_space,
    design,
    heatmap_table,
    load_sweep,
    robustness,
    run_sweep,
    sensitivity,
    sweep_cell,
    sweep_cells,
)

SMALL = SweepSpace.from_mapping({"constants": {"executor.recovery_success": [0.5, 0.9],
                                               "executor.base_success": {"low": 0.6, "high": 0.75, "levels": 2}}})


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "space.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------------- space


def test_default_space_brackets_every_published_constant() -> None:
    space = default_space()
    assert space.keys == DEFAULT_CONSTANTS
    published = MetaRouteConfig()
    for dim in space.dimensions:
        node = published
        for part in dim.key.split("."):
            node = getattr(node, part)
        assert dim.low < node < dim.high


@pytest.mark.parametrize(("text", "code", "field"), [
    ("constants:\n  executor.nope: [0, 1]\n", ErrorCode.UNKNOWN_REFERENCE, "executor.nope"),
    ("constants:\n  executor.operations: [0, 1]\n", ErrorCode.WRONG_TYPE, "executor.operations"),
    ("constants:\n  executor.recovery_success: [0.9, 0.5]\n", ErrorCode.INVALID_VALUE, "executor.recovery_success"),
    ("constants:\n  executor.recovery_success: [0.5, 1.5]\n", ErrorCode.INVALID_VALUE, "executor.recovery_success"),
    ("constants:\n  executor.recovery_success: [0.5]\n", ErrorCode.WRONG_TYPE, "executor.recovery_success"),
    ("constants:\n  executor.recovery_success: [a, 1]\n", ErrorCode.WRONG_TYPE, "executor.recovery_success.low"),
    ("constants:\n  executor.recovery_success: {low: 0.1, high: 0.2, levels: 1}\n", ErrorCode.INVALID_INTEGER,
     "executor.recovery_success.levels"),
    ("constants:\n  executor.coordination_free_actions: [0.5, 3]\n", ErrorCode.INVALID_INTEGER,
     "executor.coordination_free_actions"),
    ("other: 1\n", ErrorCode.WRONG_TYPE, None),
])
def test_bad_space_files_are_located_typed_errors(tmp_path: Path, text: str, code: ErrorCode, field: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DataError) as caught:
        SweepSpace.load(path)
    assert caught.value.code is code and caught.value.field == field and caught.value.file == str(path)


def test_a_repeated_constant_is_refused_not_last_wins(tmp_path: Path) -> None:
    path = write(tmp_path, "constants:\n  executor.recovery_success: [0.5, 0.9]\n"
                           "  executor.recovery_success: [0.6, 0.7]\n")
    with pytest.raises(DataError) as caught:
        SweepSpace.load(path)
    assert caught.value.code is ErrorCode.DUPLICATE_ID and caught.value.line == 3


def test_missing_space_file(tmp_path: Path) -> None:
    with pytest.raises(DataError) as caught:
        SweepSpace.load(tmp_path / "none.yaml")
    assert caught.value.code is ErrorCode.FILE_NOT_FOUND


# ------------------------------------------------------------------------------------------------ design


@settings(max_examples=25, deadline=None)
@given(samples=st.integers(1, 40), seed=st.integers(0, 2**32 - 1))
def test_latin_hypercube_is_seeded_in_range_and_stratified(samples: int, seed: int) -> None:
    first, again = design(SMALL, samples=samples, seed=seed), design(SMALL, samples=samples, seed=seed)
    assert first == again and first.sampling is Sampling.LHS and len(first.configurations) == samples
    for d, dim in enumerate(SMALL.dimensions):
        values = sorted(c[d][1] for c in first.configurations)
        assert all(dim.low <= v <= dim.high for v in values)
        width = (dim.high - dim.low) / samples  # one sample per stratum (up to the rounding of values)
        strata = sorted(min(samples - 1, int((v - dim.low) / width + 1e-9)) for v in values)
        assert len(set(strata)) >= samples - 1


def test_different_sampling_seeds_give_different_designs() -> None:
    assert design(SMALL, samples=8, seed=1).configurations != design(SMALL, samples=8, seed=2).configurations


def test_grid_covers_every_level_combination() -> None:
    plan = design(SMALL, grid=True)
    assert plan.sampling is Sampling.GRID and len(plan.configurations) == 3 * 2
    assert {c[0][1] for c in plan.configurations} == {0.5, 0.7, 0.9}
    assert {c[1][1] for c in plan.configurations} == {0.6, 0.75}
    with pytest.raises(DataError):
        design(SMALL, grid=True, samples=3)
    with pytest.raises(DataError):
        design(SMALL, samples=0)


# ------------------------------------------------------------------------------------------------- cells


def test_cell_equals_a_direct_benchmark_run() -> None:
    plan = design(SMALL, samples=2, seed=5)
    cell = sweep_cells(plan, 4)[0]
    result = sweep_cell(cell.payload)
    config = MetaRouteConfig().with_overrides(plan.overrides(0))
    run = run_benchmark(4, mode=Mode.FAST, config=config)
    direct = compare(run.traces, "adaptive", "static_workload", config.evaluation)
    assert result["contrasts"][0] == ["adaptive", "static_workload", direct.success_difference,
                                      direct.success_difference_ci95, direct.cost_difference,
                                      direct.latency_difference_s]
    assert [row[0] for row in result["summaries"]] == list(run.traces.policies)


def test_cell_keys_change_with_seeds_mode_and_constants() -> None:
    plan = design(SMALL, samples=2, seed=5)
    keys = {c.key for c in sweep_cells(plan, 4)}
    assert keys.isdisjoint(c.key for c in sweep_cells(plan, 5))
    assert keys.isdisjoint(c.key for c in sweep_cells(plan, 4, Mode.EXACT))
    assert keys.isdisjoint(c.key for c in sweep_cells(design(SMALL, samples=2, seed=6), 4))


def test_a_worker_with_other_defaults_refuses_the_cell() -> None:
    payload = sweep_cells(design(SMALL, samples=1, seed=0), 3)[0].payload
    with pytest.raises(DataError) as caught:
        sweep_cell({**payload, "config_sha256": "0" * 64})
    assert caught.value.code is ErrorCode.INCONSISTENT_ASSETS


def test_seeds_are_validated() -> None:
    for bad in (1, [0], [0, 0], [0, -1]):
        with pytest.raises(DataError):
            sweep_cells(design(SMALL, samples=1, seed=0), bad)


# ------------------------------------------------------------------------------------------- run and files


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("sweep")
    return out, run_sweep(design(SMALL, samples=6, seed=3), 4, out)


def test_files_have_one_row_per_configuration_and_policy(swept) -> None:
    out, result = swept
    with open(out / SUMMARY, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == 6 * 8 and len({(r["config_id"], r["policy"]) for r in rows}) == 48
    assert len(result.contrasts) == 6 * 2
    assert set(result.contrasts["baseline"]) == {"static_workload", "one_shot"}
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    assert manifest["seeds"] == [0, 1, 2, 3] and len(manifest["cells"]) == 6
    assert manifest["design"]["sampling"] == "lhs" and manifest["design"]["seed"] == 3
    row = result.contrasts.iloc[0]
    assert row["ci_low"] == pytest.approx(row["success_difference"] - row["success_difference_ci95"])
    assert bool(row["excludes_zero"]) == (row["ci_low"] > 0 or row["ci_high"] < 0)


def test_rerun_reuses_every_cell_and_rewrites_identical_files(swept, tmp_path: Path) -> None:
    out, _ = swept
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    again = run_sweep(design(SMALL, samples=6, seed=3), 4, out)
    assert (again.computed, again.reused) == (0, 6)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    grown = run_sweep(design(SMALL, samples=6, seed=3), 5, out)  # other seeds: nothing stale is reused
    assert (grown.computed, grown.reused) == (6, 0)


def test_an_edited_table_is_refused(swept, tmp_path: Path) -> None:
    out, _ = swept
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in (SUMMARY, CONTRASTS, "configurations.csv", MANIFEST):
        (copy / name).write_bytes((out / name).read_bytes())
    (copy / CONTRASTS).write_text((out / CONTRASTS).read_text(encoding="utf-8") + "x\r\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        load_sweep(copy)
    assert caught.value.code is ErrorCode.CHECKSUM_MISMATCH


def test_analysis_ranks_every_constant_and_counts_the_space(swept) -> None:
    _, result = swept
    ranking = sensitivity(result)
    assert list(ranking["rank"]) == [1, 2] and set(ranking["constant"]) == set(SMALL.keys)
    assert ranking["abs_rho"].is_monotonic_decreasing
    robust = robustness(result)
    table = result.contrasts[result.contrasts["baseline"] == "static_workload"]
    assert robust.configurations == 6
    assert robust.ahead == int(((table["success_difference"] > 0) & table["excludes_zero"]).sum())
    assert robust.fraction_low <= robust.fraction_ahead <= robust.fraction_high
    grid = heatmap_table(result, "executor.recovery_success", "executor.base_success", bins=2)
    assert grid.shape == (2, 2)


def test_sweep_one_shot_gap_is_large_at_published_constants(tmp_path: Path) -> None:
    plan = design(SweepSpace.from_mapping({"constants": {"executor.recovery_success": [0.71, 0.73]}}), samples=2)
    result = run_sweep(plan, 10, tmp_path)
    assert (robustness(result, "one_shot").ahead, robustness(result, "one_shot").configurations) == (2, 2)


# --------------------------------------------------------------------------------------------------- CLI


def test_cli_summary_is_byte_identical_across_inline_processes_and_dask(tmp_path: Path, capsys) -> None:
    pytest.importorskip("distributed")
    space = write(tmp_path, "constants:\n  executor.recovery_success: [0.5, 0.9]\n"
                            "  generator.need_jitter: [0.2, 0.3]\n")
    outputs = {}
    for spec in ("inline", "processes:2", "dask:2"):
        out = tmp_path / spec.replace(":", "_")
        assert main(["metaroute-sweep", "--space", str(space), "--samples", "3", "--seeds", "3",
                     "--executor", spec, "--out", str(out)]) == 0
        outputs[spec] = [(out / name).read_bytes() for name in (SUMMARY, CONTRASTS, MANIFEST)]
    assert outputs["inline"] == outputs["processes:2"] == outputs["dask:2"]
    assert "3 configurations × 3 seeds: 3 computed, 0 reused" in capsys.readouterr().out


def test_cli_bad_executor_is_one_line_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["metaroute-sweep", "--samples", "2", "--seeds", "2", "--executor", "ray", "--out",
                 str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "UNKNOWN_ENUM" in err and "Traceback" not in err
