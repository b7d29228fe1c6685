"""Notebook 11's suite runs: each attack suite (one per language) through several systems, resumable on disk."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..adversarial.scorecard import CONTROLLER_SYSTEMS, AdaptiveResult, adaptive_attack
from ..backends.lexical import LexicalBackend
from ..backends.simulated import SimulatedBackend
from ..core.records import System
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


def adaptive_attacks(suites: Mapping[str, Any], *, seed: int, budget: int, cases: int | None,
                     profile: str = "deepseek_v4_primary") -> list[AdaptiveResult]:
    """The adaptive attacker of every suite against two attackers: ``local:lexical`` (it answers the RouteBR proposal
    only, so it attacks the controller systems) and the simulator ``sim:<profile>`` (which also plays B1/B2 — a
    simulation, not model evidence)."""
    attacks = []
    for suite in suites.values():
        attackers = {"local:lexical": (lambda _cases, s=suite: LexicalBackend(s.assets.catalog), CONTROLLER_SYSTEMS),
                     f"sim:{profile}": (lambda c: SimulatedBackend(profile, c, seed=seed),
                                        (*CONTROLLER_SYSTEMS, System.B1_DIRECT, System.B2_DIRECT_GUARD))}
        for name, (factory, systems) in attackers.items():
            attacks.append(adaptive_attack(suite, factory, backend_name=name, budget=budget, seed=seed,
                                           cases=cases, systems=systems))
    return attacks


__all__ = ["adaptive_attacks", "suite_runs"]
