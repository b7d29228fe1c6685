"""Notebook 11's suite runs: each attack suite (one per language) through several systems, resumable on disk."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..runs.runner import run_cases


def suite_runs(suites: Mapping[str, Any], systems: Sequence[str], backend_for: Callable[[Any, str], Any],
               out_dir: str | Path, prefix: str) -> list[tuple[Any, dict[str, Any]]]:
    """``[(suite, {system: rows})]`` for :func:`~routebr_kit.adversarial.scoring.score_attacks`: every suite run
    through every system with ``backend_for(suite, system)``, stored (and resumed) under
    ``out_dir/runs/<prefix>_<language>_<system>``."""
    runs = []
    for lang, suite in suites.items():
        ledgers = {}
        for system in systems:
            folder = Path(out_dir) / "runs" / f"{prefix}_{lang}_{system}"
            ledgers[system] = run_cases(list(suite.cases), backend_for(suite, system), system=system,
                                        assets=suite.assets, out_dir=folder, resume=folder.exists(),
                                        progress=False).rows
        runs.append((suite, ledgers))
    return runs


__all__ = ["suite_runs"]
