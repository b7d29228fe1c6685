"""Run a set of cells through one executor seam, resumably.

    run = run_cells(cells, "outputs/sweep", executor="processes:2")
    run.results[cell.key]          # the JSON result of every cell, whichever executor computed it

Cells are deduplicated by key (equal cells are computed once); finished cells found under ``<out>/cells/`` are
loaded, not recomputed; the rest are submitted, at most ``max_in_flight`` at a time, and each one is written
atomically by this process as soon as it finishes — so a killed worker or run costs only unfinished cells.
Workers need no shared file system: they receive a :class:`~.cells.Cell` and return its result text.

``max_in_flight`` is the study-wide bound on cells running at once, across every worker: a live cell whose
backend allows C concurrent provider calls puts at most ``max_in_flight × C`` calls in flight in total.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode, KitError
from ..store.files import parse_json
from .cells import Cell, CellStore, compute
from .executors import ExecutorSpec, open_executor

_CELLS_DIR = "cells"


@dataclass(frozen=True)
class CellRun:
    """What :func:`run_cells` did: the unique cells in first-seen order, their results, and what was computed."""

    cells: tuple[Cell, ...]
    results: dict[str, Any]  # by cell key
    computed: tuple[str, ...]  # keys computed in this call (sorted)
    reused: tuple[str, ...]  # keys loaded from finished cell directories (sorted)

    def result(self, cell: Cell) -> Any:
        return self.results[cell.key]

    def ordered(self) -> list[Any]:
        """Results in cell order (independent of completion order)."""
        return [self.results[c.key] for c in self.cells]


class CellFailed(KitError):
    """A cell raised something untyped, or its worker died.  Finished cells are kept on disk: re-run to resume."""

    def __init__(self, cell: Cell, cause: BaseException) -> None:
        self.cell_key = cell.key
        self.function = cell.function
        self.cause = f"{type(cause).__name__}: {cause}"
        super().__init__(f"cell {cell.key[:12]} ({cell.function}) failed: {self.cause}; finished cells are kept, "
                         "re-run to compute the rest")


def unique_cells(cells: Iterable[Cell]) -> tuple[Cell, ...]:
    seen: dict[str, Cell] = {}
    for cell in cells:
        if not isinstance(cell, Cell):
            raise DataError(ErrorCode.WRONG_TYPE, "a routebr_kit.scale.Cell", field="cells", got=type(cell).__name__)
        seen.setdefault(cell.key, cell)
    return tuple(seen.values())


def run_cells(cells: Sequence[Cell] | Iterable[Cell], out_dir: str | Path, *,
              executor: str | ExecutorSpec | cf.Executor | Any = "inline", max_in_flight: int | None = None,
              progress: bool = False, desc: str = "cells") -> CellRun:
    """Compute every unfinished cell on ``executor`` and store it under ``<out_dir>/cells/<key>/``."""
    if isinstance(executor, str):  # a bad spec fails before anything runs, even when every cell is finished
        executor = ExecutorSpec.parse(executor)
    unique = unique_cells(cells)
    store = CellStore(Path(out_dir) / _CELLS_DIR)
    store.clean_partial()
    results = {cell.key: stored for cell in unique if (stored := store.load(cell)) is not None}
    reused = tuple(sorted(results))
    todo = [c for c in unique if c.key not in results]
    if max_in_flight is not None and (isinstance(max_in_flight, bool) or not isinstance(max_in_flight, int)
                                      or max_in_flight < 1):
        raise DataError(ErrorCode.INVALID_VALUE, "max_in_flight ≥ 1 (or None)", field="max_in_flight",
                        got=max_in_flight)
    bar = None
    if progress:
        from .progress import progress_bar

        bar = progress_bar(total=len(unique), initial=len(reused), desc=desc, unit="cell")
    try:
        if todo:
            with open_executor(executor) as pool:
                _drain(pool, todo, store, results, max_in_flight or 2 * _width(pool), bar)
    finally:
        if bar is not None:
            bar.close()
    return CellRun(unique, results, tuple(sorted(c.key for c in todo)), reused)


def _width(pool: cf.Executor) -> int:
    """How many cells ``pool`` runs at once (threads of every Dask worker; pool size otherwise)."""
    client = getattr(pool, "_client", None)
    if client is not None:
        workers = client.scheduler_info().get("workers", {})
        return max(1, sum(int(w.get("nthreads", 1)) for w in workers.values()))
    return max(1, int(getattr(pool, "_max_workers", 1) or 1))


def _drain(pool: cf.Executor, todo: list[Cell], store: CellStore, results: dict[str, Any], limit: int,
           bar: Any) -> None:
    pending: dict[cf.Future, Cell] = {}
    queue = iter(todo)

    def fill() -> None:
        for cell in queue:
            try:
                pending[pool.submit(compute, cell)] = cell
            except Exception as exc:  # the pool broke (a worker died) before this cell could be queued
                _cancel(pending)
                raise CellFailed(cell, exc) from exc
            if len(pending) >= limit:
                return

    fill()
    while pending:
        done, _ = cf.wait(pending, return_when=cf.FIRST_COMPLETED)
        for future in sorted(done, key=lambda f: pending[f].key):
            cell = pending.pop(future)
            try:
                text = future.result()
            except DataError:
                _cancel(pending)
                raise
            except Exception as exc:  # a worker died, or the cell raised something untyped
                _cancel(pending)
                raise CellFailed(cell, exc) from exc
            store.save(cell, text)
            results[cell.key] = parse_json(text, "a cell result", field=cell.function)
            if bar is not None:
                bar.update(1)
        fill()


def _cancel(pending: dict[cf.Future, Cell]) -> None:
    for future in pending:
        future.cancel()
