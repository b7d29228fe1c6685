"""Notebook 01's second, stricter audit: the published 600 cases when the artifact is found, else the kit's own
benchmark generated in the other language (same seed) — one report, with the label that says which it is."""

from __future__ import annotations

from pathlib import Path

from .audit import AuditReport, audit_files
from .generate import BenchmarkConfig, write_benchmark


def second_audit(artifact_root: str | Path | None, *, seed: int, language: str, decouple_entity_state: bool,
                 data_dir: str | Path, out_dir: str | Path) -> tuple[str, AuditReport]:
    """``(label, report)`` of the audit of the published ``routebr_600.csv`` under ``artifact_root``, or (no
    artifact) of the kit's benchmark in the language other than ``language``, written under
    ``out_dir/benchmark-<other>``."""
    if artifact_root is not None:
        data = Path(artifact_root) / "data"
        report = audit_files([data / "routebr_600.csv"], data / "catalog.csv", data / "boundary_rules.csv",
                             data / "entity_catalog.csv").reports[0]
        return "The published `routebr_600.csv`", report
    other = "zh" if language == "en" else "en"
    label = f"The kit's own benchmark ({other}, seed {seed}; fallback without the artifact)"
    manifest = write_benchmark(BenchmarkConfig(seed, other, decouple_entity_state, Path(data_dir)).generate(),
                               Path(out_dir) / f"benchmark-{other}")
    report = audit_files([manifest.path("routebr_600.csv")], manifest.path("catalog.csv"),
                         manifest.path("boundary_rules.csv"), manifest.path("registry.csv")).reports[0]
    return label, report


__all__ = ["second_audit"]
