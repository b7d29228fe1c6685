"""The executor seam: cells keyed by content hash, executor specs, atomic cells/<key>/ results and resume."""

from __future__ import annotations

import concurrent.futures as cf
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import scale_cells
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.scale import Cell, CellFailed, CellStore, ExecutorKind, ExecutorSpec, run_cells
from routebr_kit.scale.cells import CELL, DONE, RESULT

SQUARE = "scale_cells:square"


def cells(n: int, **extra: object) -> list[Cell]:
    return [Cell.of(SQUARE, {"value": i, **extra}) for i in range(n)]


def log_lines(path: Path) -> list[int]:
    return sorted(int(x) for x in path.read_text(encoding="utf-8").split()) if path.exists() else []


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


# ---------------------------------------------------------------------------------------------- cell keys


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8),
                       st.one_of(st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=5),
                                 st.lists(st.integers(), max_size=3)), max_size=6))
def test_key_ignores_key_order_and_changes_with_any_value(payload: dict) -> None:
    reordered = dict(reversed(list(payload.items())))
    assert Cell.of(SQUARE, payload).key == Cell.of(SQUARE, reordered).key
    changed = {**payload, "__extra__": 1}
    assert Cell.of(SQUARE, changed).key != Cell.of(SQUARE, payload).key
    assert Cell.of("scale_cells:counted", payload).key != Cell.of(SQUARE, payload).key


def test_cell_rejects_bad_function_and_payload() -> None:
    with pytest.raises(DataError) as bad:
        Cell.of("no_colon", {})
    assert bad.value.code is ErrorCode.INVALID_VALUE
    with pytest.raises(DataError) as nan:
        Cell.of(SQUARE, {"x": float("nan")})
    assert nan.value.code is ErrorCode.WRONG_TYPE


# ------------------------------------------------------------------------------------------- executor specs


@pytest.mark.parametrize(("text", "kind", "workers", "address"), [
    ("inline", ExecutorKind.INLINE, None, None),
    ("threads:2", ExecutorKind.THREADS, 2, None),
    ("processes:3", ExecutorKind.PROCESSES, 3, None),
    ("dask:2", ExecutorKind.DASK, 2, None),
    ("dask:127.0.0.1:8786", ExecutorKind.DASK, None, "tcp://127.0.0.1:8786"),
    ("dask:tcp://127.0.0.1:8786", ExecutorKind.DASK, None, "tcp://127.0.0.1:8786"),
])
def test_spec_parses(text: str, kind: ExecutorKind, workers: int | None, address: str | None) -> None:
    spec = ExecutorSpec.parse(text)
    assert (spec.kind, spec.workers, spec.address) == (kind, workers, address)


def test_plain_dask_means_one_worker_per_core() -> None:
    assert ExecutorSpec.parse("dask") == ExecutorSpec(ExecutorKind.DASK, workers=os.cpu_count() or 1)


@pytest.mark.parametrize(("text", "code"), [
    ("ray", ErrorCode.UNKNOWN_ENUM), ("processes", ErrorCode.INVALID_VALUE), ("processes:0", ErrorCode.INVALID_VALUE),
    ("processes:two", ErrorCode.INVALID_INTEGER), ("threads:-1", ErrorCode.INVALID_INTEGER),
    ("inline:2", ErrorCode.INVALID_VALUE), ("dask:", ErrorCode.INVALID_VALUE), ("dask:a b", ErrorCode.INVALID_VALUE),
])
def test_bad_specs_are_typed(text: str, code: ErrorCode) -> None:
    with pytest.raises(DataError) as caught:
        ExecutorSpec.parse(text)
    assert caught.value.code is code and caught.value.field == "executor"


def test_importing_scale_does_not_import_dask() -> None:
    code = ("import sys, routebr_kit.scale, routebr_kit.metaroute.sweep; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------------------------------------- the store


def test_results_are_written_atomically_and_loaded_back(tmp_path: Path) -> None:
    batch = cells(3)
    run = run_cells(batch, tmp_path)
    assert run.ordered() == [{"value": i, "square": i * i, "half": i / 2} for i in range(3)]
    for cell in batch:
        where = tmp_path / "cells" / cell.key
        assert sorted(p.name for p in where.iterdir()) == sorted([CELL, RESULT, DONE])
        assert (where / CELL).read_text(encoding="utf-8") == cell.spec_json
    assert not [p for p in (tmp_path / "cells").iterdir() if p.name.startswith(".tmp-")]


def test_duplicate_cells_are_computed_once(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    batch = cells(3, log=str(log))
    run = run_cells([*batch, batch[1], batch[0]], tmp_path / "out")
    assert len(run.cells) == 3 and log_lines(log) == [0, 1, 2]


def test_rerun_skips_finished_cells(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    run_cells(cells(2, log=str(log)), tmp_path / "out")
    again = run_cells(cells(4, log=str(log)), tmp_path / "out")
    assert log_lines(log) == [0, 1, 2, 3]  # 0 and 1 only once
    assert len(again.reused) == 2 and len(again.computed) == 2


def test_changed_cell_never_reuses_a_stale_result(tmp_path: Path) -> None:
    log = tmp_path / "log.txt"
    first = run_cells([Cell.of(SQUARE, {"value": 3, "log": str(log), "asset_sha256": "a"})], tmp_path / "out")
    second = run_cells([Cell.of(SQUARE, {"value": 3, "log": str(log), "asset_sha256": "b"})], tmp_path / "out")
    assert log_lines(log) == [3, 3] and first.computed != second.computed


def test_a_directory_holding_another_cell_is_refused(tmp_path: Path) -> None:
    a, b = cells(2)
    run_cells([b], tmp_path)
    (tmp_path / "cells" / b.key).rename(tmp_path / "cells" / a.key)  # a's key, b's spec and result
    with pytest.raises(DataError) as caught:
        run_cells([a], tmp_path)
    assert caught.value.code is ErrorCode.INCONSISTENT_ASSETS


def test_a_tampered_result_is_refused(tmp_path: Path) -> None:
    (cell,) = cells(1)
    run_cells([cell], tmp_path)
    (tmp_path / "cells" / cell.key / RESULT).write_text('{"square":99}', encoding="utf-8")
    with pytest.raises(DataError) as caught:
        CellStore(tmp_path / "cells").load(cell)
    assert caught.value.code is ErrorCode.CHECKSUM_MISMATCH


def test_leftover_temporary_directories_are_removed(tmp_path: Path) -> None:
    junk = tmp_path / "cells" / ".tmp-deadbeef-0"
    junk.mkdir(parents=True)
    (junk / RESULT).write_text("{}", encoding="utf-8")
    run_cells(cells(1), tmp_path)
    assert not junk.exists()


def test_typed_cell_errors_propagate_and_untyped_ones_are_wrapped(tmp_path: Path) -> None:
    with pytest.raises(DataError) as typed:
        run_cells([Cell.of("scale_cells:typed_failure", {"value": 1})], tmp_path)
    assert typed.value.code is ErrorCode.INVALID_VALUE
    with pytest.raises(CellFailed, match="RuntimeError: boom"):
        run_cells([Cell.of("scale_cells:untyped_failure", {"value": 1})], tmp_path)
    with pytest.raises(DataError) as nan:
        run_cells([Cell.of("scale_cells:not_json", {"value": 1})], tmp_path)
    assert nan.value.code is ErrorCode.WRONG_TYPE
    with pytest.raises(DataError) as missing:
        run_cells([Cell.of("scale_cells:nowhere", {"value": 1})], tmp_path)
    assert missing.value.code is ErrorCode.UNKNOWN_REFERENCE
    assert not (tmp_path / "cells").exists() or not any((tmp_path / "cells").iterdir())


def test_max_in_flight_bounds_concurrency_across_the_pool(tmp_path: Path) -> None:
    scale_cells.peak = 0
    batch = [Cell.of("scale_cells:counted", {"value": i, "sleep": 0.05}) for i in range(8)]
    run_cells(batch, tmp_path, executor="threads:4", max_in_flight=2)
    assert scale_cells.peak == 2
    with pytest.raises(DataError):
        run_cells(batch, tmp_path / "x", max_in_flight=0)


def test_any_concurrent_futures_executor_is_accepted(tmp_path: Path) -> None:
    with cf.ThreadPoolExecutor(2) as pool:
        threaded = run_cells(cells(5), tmp_path / "pool", executor=pool)
    inline = run_cells(cells(5), tmp_path / "inline")
    assert threaded.ordered() == inline.ordered()
    assert tree_bytes(tmp_path / "pool") == tree_bytes(tmp_path / "inline")


def test_killed_worker_costs_only_its_unfinished_cells(tmp_path: Path) -> None:
    log, marker, out = tmp_path / "log.txt", tmp_path / "died", tmp_path / "out"
    batch = cells(12, log=str(log), sleep=0.05, die_marker=str(marker), die_at=7)
    with pytest.raises(CellFailed):
        run_cells(batch, out, executor="processes:2", max_in_flight=2)
    assert marker.exists()
    finished = {p.name for p in (out / "cells").iterdir() if not p.name.startswith(".")}
    assert 0 < len(finished) < 12
    first_log = log_lines(log)
    rerun = run_cells(batch, out, executor="processes:2")
    second_log = log_lines(log)
    for value in first_log:
        second_log.remove(value)
    recomputed = sorted(second_log)
    expected = sorted(i for i, c in enumerate(batch) if c.key not in finished)
    assert recomputed == expected
    assert set(rerun.reused) == finished and set(rerun.computed) == {batch[i].key for i in expected}
    clean = run_cells(cells(12, log=str(tmp_path / "clean.txt"), sleep=0.05, die_marker=str(marker), die_at=7),
                      tmp_path / "clean")
    assert rerun.ordered() == clean.ordered()
    assert [(out / "cells" / c.key / RESULT).read_bytes() for c in batch] == [
        (tmp_path / "clean" / "cells" / c.key / RESULT).read_bytes() for c in clean.cells]
    assert json.loads((out / "cells" / batch[7].key / RESULT).read_text(encoding="utf-8"))["square"] == 49
