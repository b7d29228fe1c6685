"""Notebook 10's gate calibration: A/A false alarm and power of each gate under each re-run model."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pandas as pd

from ..review import Gate
from ..review.calibration import ReRunModel, build_design, calibrate
from ..review.ledgers import LedgerSet


def routebr_runs(ledgers: LedgerSet) -> LedgerSet:
    """The RouteBR tasks of ``ledgers`` (only the CONFIRM-sized ones when there are any, as in the artifact)."""
    confirm_only = any(k.startswith("confirm/") for k in ledgers.tasks)
    chosen = {k: t for k, t in ledgers.tasks.items()
              if t.system.value == "routebr" and (not confirm_only or k.startswith("confirm/"))}
    return LedgerSet(ledgers.root, ledgers.kind, chosen, ledgers.assets, ledgers.manifest)


def calibrate_gates(ledgers: LedgerSet, gates: Mapping[str, str], *, sims: int, seed: int, effect_pp: float
                    ) -> tuple[dict[tuple[str, str], Any], pd.DataFrame]:
    """``({(re-run model, gate name): Calibration}, table)`` over both re-run models (stratum, simulated) and every
    named gate spec, on :func:`routebr_runs` of ``ledgers`` (one design per re-run model, shared by the gates)."""
    runs = routebr_runs(ledgers)
    calibrations, rows = {}, []
    for model in (ReRunModel.STRATUM, ReRunModel.SIMULATED):
        design = build_design(runs, model, seed=seed)
        for name, spec in gates.items():
            c = calibrate(runs, Gate.parse(spec), model=model, sims=sims, seed=seed, effect_pp=effect_pp,
                          design=design, recommend=False)
            calibrations[(model.value, name)] = c
            rows += [{"re-run model": model.value, "gate": name,
                      **{k: v for k, v in r.items() if not k.startswith("n for")}} for r in c.table()]
    return calibrations, pd.DataFrame(rows)


__all__ = ["calibrate_gates", "routebr_runs"]
