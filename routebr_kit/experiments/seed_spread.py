"""RouteBR seed spread: the simulated six-profile screen and the RQ1 McNemar comparison over K seeds.

One seed of a simulated backend is one draw of its error model, so one seed's path accuracy — and one seed's
RouteBR-versus-B2 McNemar p-value — is one sample from a distribution.  This study runs K seeds as frozen cells
on the :mod:`routebr_kit.scale` seam (inline, processes, Dask; resumable, byte-identical on any executor):

* a **screen cell** per (profile, seed): :func:`~routebr_kit.experiments.screening.simulated_rows` of that profile
  on the screening cases, scored (path accuracy = contract exact match, false dispatches, false blocks, median
  latency);
* an **RQ1 cell** per seed: RouteBR and B2 on the MAIN split of the CONFIRM cases with one simulated profile,
  run through the runner (:func:`~routebr_kit.experiments.study.load_study`) into a temporary directory, and the
  exact McNemar test on final-path correctness (:func:`~routebr_kit.evaluation.stats.mcnemar`).

    spread = seed_spread(range(20), "outputs/seed_spread", screening_cases=SELECT_160, confirm_cases=CONFIRM_320)
    spread.screening      # one row per (profile, seed)
    spread.rq1            # one row per seed
    spread.summary()      # per profile: mean, sd, min, median, max of path accuracy
    spread.rq1_summary()  # median p, share of seeds with p < alpha, spread of the accuracy difference

Each cell's payload carries the SHA-256 of the cases file and of the assets beside it, so editing either never
reuses a stale cell.  Workers read the cases at the same path (a shared file system for a remote cluster).
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..backends.profiles import PROFILE_LABELS
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..core.records import System
from ..evaluation.metrics import index_cases, score
from ..evaluation.stats import mcnemar
from ..scale import Cell, run_cells
from ..store.assets import assets_beside
from ..store.cases import Split
from .screening import screening_cases, simulated_rows
from .study import StudyConfig, load_study

_SCREEN_CELL = "routebr_kit.experiments.seed_spread:screen_cell"
_RQ1_CELL = "routebr_kit.experiments.seed_spread:rq1_cell"
CELL_VERSION = 1
_RQ1_PROFILE = "deepseek_v4_primary"
ASSET_FILES = ("catalog.csv", "boundary_rules.csv", "registry.csv")


@dataclass(frozen=True)
class SeedSpread:
    """Per-seed results.  ``screening``: profile, backend, seed, n, path_accuracy, contract_exact, false_dispatch,
    false_block, median_latency_ms.  ``rq1``: seed, profile, n_paired, routebr_accuracy, b2_accuracy,
    accuracy_difference, routebr_only, b2_only, p_two_sided, significant (p < alpha)."""

    screening: pd.DataFrame
    rq1: pd.DataFrame
    alpha: float = 0.05

    def summary(self) -> pd.DataFrame:
        """Per profile (screen order): seeds, mean, sd, min, median and max of path accuracy."""
        grouped = self.screening.groupby("backend", sort=False)["path_accuracy"]
        return pd.DataFrame({"seeds": grouped.size(), "mean": grouped.mean(), "sd": grouped.std(ddof=1),
                             "min": grouped.min(), "median": grouped.median(), "max": grouped.max()}).reset_index()

    def rq1_summary(self) -> dict[str, Any]:
        """The distribution of the RQ1 p-value and accuracy difference over seeds."""
        p, diff = self.rq1["p_two_sided"], self.rq1["accuracy_difference"]
        return {"seeds": len(self.rq1), "alpha": self.alpha, "median_p": float(p.median()),
                "min_p": float(p.min()), "max_p": float(p.max()),
                "share_significant": float((p < self.alpha).mean()),
                "mean_difference": float(diff.mean()), "min_difference": float(diff.min()),
                "max_difference": float(diff.max())}


def _assets_hashes(cases_path: Path) -> dict[str, str]:
    hashes = {"cases": sha256_file(cases_path)}
    for name in ASSET_FILES:
        if (cases_path.parent / name).is_file():
            hashes[name] = sha256_file(cases_path.parent / name)
    return hashes


def _seeds(seeds: Sequence[int] | int) -> tuple[int, ...]:
    values = tuple(range(seeds)) if isinstance(seeds, int) and not isinstance(seeds, bool) else tuple(seeds)
    if not values or len(set(values)) != len(values) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in values):
        raise DataError(ErrorCode.INVALID_VALUE, "distinct non-negative integer seeds", field="seeds",
                        got=list(values))
    return values


def spread_cells(seeds: Sequence[int] | int, *, screening_cases: str | Path, confirm_cases: str | Path | None,
                 profiles: Sequence[str] = tuple(PROFILE_LABELS), split: str = "ALL",
                 rq1_profile: str = _RQ1_PROFILE) -> tuple[tuple[Cell, ...], tuple[Cell, ...]]:
    """The screen cells (profile-major, then seed) and the RQ1 cells (one per seed; none without confirm cases)."""
    seeds = _seeds(seeds)
    unknown = [p for p in (*profiles, rq1_profile) if p not in PROFILE_LABELS]
    if unknown:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"simulated profiles among {sorted(PROFILE_LABELS)}",
                        field="profiles", got=unknown)
    screen_path = Path(screening_cases).resolve()
    if not screen_path.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a screening cases file", file=str(screen_path))
    screen_hashes = _assets_hashes(screen_path)
    screen = tuple(Cell.of(_SCREEN_CELL, {"version": CELL_VERSION, "profile": profile, "seed": seed, "split": split,
                                         "cases_path": str(screen_path), "hashes": screen_hashes})
                   for profile in profiles for seed in seeds)
    if confirm_cases is None:
        return screen, ()
    confirm_path = Path(confirm_cases).resolve()
    if not confirm_path.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a CONFIRM cases file", file=str(confirm_path))
    confirm_hashes = _assets_hashes(confirm_path)
    rq1 = tuple(Cell.of(_RQ1_CELL, {"version": CELL_VERSION, "profile": rq1_profile, "seed": seed,
                                   "cases_path": str(confirm_path), "hashes": confirm_hashes}) for seed in seeds)
    return screen, rq1


def _check(payload: dict[str, Any]) -> Path:
    if payload.get("version") != CELL_VERSION:
        raise DataError(ErrorCode.INVALID_VALUE, f"a seed-spread cell of version {CELL_VERSION}", field="version",
                        got=payload.get("version"))
    path = Path(payload["cases_path"])
    if not path.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "the cases file at the same path on every worker", file=str(path))
    if _assets_hashes(path) != payload["hashes"]:
        raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the cases and assets the cell was planned with",
                        file=str(path))
    return path


def screen_cell(payload: dict[str, Any]) -> dict[str, Any]:
    """Score one simulated profile under one seed on the screening cases."""
    path = _check(payload)
    cases = screening_cases(path, payload["split"])
    s = score(simulated_rows(payload["profile"], cases, assets_beside(path), seed=payload["seed"]),
              index_cases(cases))
    return {"n": s.n, "path_accuracy": s.contract_exact.rate, "contract_exact": s.contract_exact.hits,
            "false_dispatch": s.false_dispatch.hits, "false_block": s.false_block.hits,
            "median_latency_ms": s.latency_ms_median}


def rq1_cell(payload: dict[str, Any]) -> dict[str, Any]:
    """RouteBR and B2 on MAIN with one simulated profile and seed, and their exact McNemar test."""
    path = _check(payload)
    with tempfile.TemporaryDirectory(prefix="routebr-seed-spread-") as tmp:
        config = StudyConfig.from_parameters(source="simulated", cases_path=str(path), seed=payload["seed"],
                                             profile=f"sim:{payload['profile']}", runs_dir=tmp)
        study = load_study(config, runs=[(System.ROUTEBR, Split.MAIN), (System.B2_DIRECT_GUARD, Split.MAIN)])
        cases = study.cases_of(Split.MAIN)
        routebr = score(study.rows(System.ROUTEBR, Split.MAIN), cases)
        b2 = score(study.rows(System.B2_DIRECT_GUARD, Split.MAIN), cases)
    test = mcnemar(routebr.correct, b2.correct)
    return {"n_paired": test.paired, "routebr_accuracy": routebr.contract_exact.rate,
            "b2_accuracy": b2.contract_exact.rate, "routebr_only": test.a_only_correct,
            "b2_only": test.b_only_correct, "p_two_sided": test.p_two_sided}


def seed_spread(seeds: Sequence[int] | int, out_dir: str | Path, *, screening_cases: str | Path,
                confirm_cases: str | Path | None = None, profiles: Sequence[str] = tuple(PROFILE_LABELS),
                split: str = "ALL", rq1_profile: str = _RQ1_PROFILE, executor: Any = "inline", alpha: float = 0.05,
                progress: bool = False) -> SeedSpread:
    """Run (or resume) every cell and return the per-seed frames (see :class:`SeedSpread`)."""
    if not 0 < alpha < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "alpha in (0, 1)", field="alpha", got=alpha)
    screen, rq1 = spread_cells(seeds, screening_cases=screening_cases, confirm_cases=confirm_cases,
                               profiles=profiles, split=split, rq1_profile=rq1_profile)
    done = run_cells((*screen, *rq1), out_dir, executor=executor, progress=progress, desc="seed-spread cells")
    screening = pd.DataFrame([{"profile": c.payload["profile"], "backend": PROFILE_LABELS[c.payload["profile"]],
                               "seed": c.payload["seed"], **done.result(c)} for c in screen])
    columns = ["seed", "profile", "n_paired", "routebr_accuracy", "b2_accuracy", "accuracy_difference",
               "routebr_only", "b2_only", "p_two_sided", "significant"]
    records = []
    for c in rq1:
        r = done.result(c)
        records.append({"seed": c.payload["seed"], "profile": c.payload["profile"], **r,
                        "accuracy_difference": r["routebr_accuracy"] - r["b2_accuracy"],
                        "significant": r["p_two_sided"] < alpha})
    return SeedSpread(screening, pd.DataFrame(records, columns=columns), alpha)
