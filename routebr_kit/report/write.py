"""Read a folder, build its report and write the HTML file: the one entry point of ``routebr-kit report`` and of the
notebook pipeline's ``report.html``."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DataError, ErrorCode
from ..review.gate import Gate
from .html import figure_views, write_html, written_time
from .model import build_report
from .sources import SourceKind, load_source

#: The file name a report gets inside the folder it describes.
_REPORT_NAME = "report.html"


@dataclass(frozen=True)
class WrittenReport:
    path: Path
    rows: int
    changed: int | None
    bytes: int
    seconds: float
    kind: SourceKind


def _default_out(run_dir: str | Path, kind: SourceKind) -> Path:
    """``RUN_DIR/report.html``; for a published artifact (read-only data) ``./report.html`` instead."""
    return Path(_REPORT_NAME) if kind is SourceKind.ARTIFACT else Path(run_dir) / _REPORT_NAME


def write_report(run_dir: str | Path, out: str | Path | None = None, *, base: str | Path | None = None,
                 cases: str | Path | None = None, base_cases: str | Path | None = None,
                 gate: Gate | None = None) -> WrittenReport:
    """Write the report of ``run_dir`` (with ``base``: the paired diff base → ``run_dir``) and say what was written."""
    started = time.perf_counter()
    source = load_source(run_dir, cases=cases, details=base is not None)  # details: what the diff pairs on
    base_source = load_source(base, cases=base_cases if base_cases is not None else cases) if base else None
    if base_source is not None:
        for side in (source, base_source):
            sampled = next((t for t in side.tasks.values() if t.sample is not None), None)
            if sampled is not None:
                raise DataError(ErrorCode.LIMIT_EXCEEDED, f"ledgers of at most {sampled.sample.cap:,} rows for the "
                                "report's paired diff (a sample cannot be paired; routebr-kit diff compares them)",
                                file=str(sampled.path), got=f"{sampled.sample.total:,} rows")
    data = build_report(source, base=base_source, gate=gate, written_utc=written_time(),
                        figures=figure_views(source.figures, source.path))
    path = write_html(data, out if out is not None else _default_out(run_dir, source.kind))
    changed = data.diff["changed"] if data.diff is not None else None
    return WrittenReport(path, data.rows, changed, path.stat().st_size, time.perf_counter() - started, source.kind)


__all__ = ["WrittenReport", "write_report"]
