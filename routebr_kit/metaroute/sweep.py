"""MetaRoute robustness sweep: does the adaptive policy's advantage survive other simulator constants?

A :class:`SweepSpace` names executor/generator constants (dotted :class:`MetaRouteConfig` keys) with a range.
:func:`design` samples configurations from it — a Latin hypercube (``scipy.stats.qmc``) with an explicit seed, or
a full grid — and :func:`run_sweep` runs every configuration × the same seeds as one frozen
:class:`~routebr_kit.scale.Cell` each, on any executor of :mod:`routebr_kit.scale`, resumably.  Files:

* ``configurations.csv`` — one row per configuration: its id, cell key, config hash and the sampled constants;
* ``summary.csv`` — one row per configuration × policy: success (± seed-level CI), cost, latency, utility;
* ``contrasts.csv`` — adaptive − static_workload and adaptive − one_shot per configuration, paired by seed
  (:func:`routebr_kit.metaroute.evaluation.compare`: mean of per-seed differences ± ``z · stdev / √seeds``);
* ``manifest.json`` — the design, seeds, mode, every cell key and the SHA-256 of every file.

No file depends on the executor, worker count or completion order.

The default space (:func:`default_space`) varies fifteen executor and generator constants uniformly within
±30 % of their published values (clipped to each constant's valid range).
"""

from __future__ import annotations

import dataclasses
import enum
import itertools
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..scale import Cell, run_cells
from ..store.files import read_json, read_yaml
from .config import MetaRouteConfig
from .evaluation import compare
from .export import write_csv
from .run import Mode, Suite, run_benchmark

_CELL_FUNCTION = "routebr_kit.metaroute.sweep:sweep_cell"
#: Bump when a cell's result would change for the same payload (a new executor semantics); old cells go stale.
CELL_VERSION = 1
_TREATMENT = "adaptive"
_BASELINES = ("static_workload", "one_shot")
_DEFAULT_SPREAD = 0.30
DEFAULT_CONSTANTS = (
    "executor.base_success", "executor.difficulty_penalty", "executor.ambiguity_penalty",
    "executor.mismatch_penalty", "executor.coordination_penalty", "executor.failure_penalty",
    "executor.recovery_success", "executor.recovered_penalty", "executor.operations.use_tool.failure",
    "executor.operations.execute_code.failure", "executor.operations.delegate.failure",
    "executor.operations.verify.benefit", "generator.need_jitter", "generator.ambiguity_base",
    "generator.difficulty_shift",
)
CONFIGURATIONS, SUMMARY, CONTRASTS, MANIFEST = "configurations.csv", "summary.csv", "contrasts.csv", "manifest.json"
SUMMARY_COLUMNS = ("config_id", "policy", "n", "success_rate", "success_ci95", "mean_cost", "mean_latency_s",
                   "utility")
_CONTRAST_COLUMNS = ("config_id", "treatment", "baseline", "success_difference", "success_difference_ci95",
                    "ci_low", "ci_high", "excludes_zero", "cost_difference", "latency_difference_s")
_DIGITS = 6  # sampled constants are rounded to this many decimals (readable files, exact round trip)


class Sampling(str, enum.Enum):
    LHS = "lhs"
    GRID = "grid"


@dataclass(frozen=True, slots=True)
class Dimension:
    """One constant and its range.  ``levels`` is used by grid sampling (evenly spaced, ends included)."""

    key: str
    low: float
    high: float
    levels: int = 3
    integer: bool = False

    def value(self, unit: float) -> float | int:
        """The constant at position ``unit`` ∈ [0, 1] of the range."""
        raw = self.low + unit * (self.high - self.low)
        return int(round(raw)) if self.integer else round(raw, _DIGITS)


@dataclass(frozen=True, slots=True)
class SweepSpace:
    dimensions: tuple[Dimension, ...]

    def __post_init__(self) -> None:
        if not self.dimensions:
            raise DataError(ErrorCode.EMPTY_VALUE, "at least one constant to vary", field="constants")
        keys = [d.key for d in self.dimensions]
        if len(set(keys)) != len(keys):
            raise DataError(ErrorCode.DUPLICATE_ID, "distinct constants", field="constants", got=keys)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(d.key for d in self.dimensions)

    def to_mapping(self) -> dict[str, Any]:
        return {"constants": {d.key: {"low": d.low, "high": d.high, "levels": d.levels}
                              for d in self.dimensions}}

    @classmethod
    def from_mapping(cls, data: Any, *, file: str | None = None) -> SweepSpace:
        """``{"constants": {KEY: [low, high] | {low:, high:, levels:}}}``; every key must be a numeric constant."""
        if not isinstance(data, Mapping) or set(data) != {"constants"} or not isinstance(data["constants"], Mapping):
            raise DataError(ErrorCode.WRONG_TYPE, "a mapping with one key 'constants' (KEY: [low, high])", file=file,
                            got=data)
        return cls(tuple(_dimension(str(k), v, file) for k, v in data["constants"].items()))

    @classmethod
    def load(cls, path: str | Path) -> SweepSpace:
        return cls.from_mapping(read_yaml(path, "a sweep space file"), file=str(path))


def _published(key: str) -> Any:
    node: Any = MetaRouteConfig().to_mapping()
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a dotted MetaRouteConfig constant", field=key)
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise DataError(ErrorCode.WRONG_TYPE, "a numeric constant", field=key, got=node)
    return node


def _dimension(key: str, spec: Any, file: str | None) -> Dimension:
    try:
        published = _published(key)
        levels = 3
        if isinstance(spec, Mapping):
            extra = set(spec) - {"low", "high", "levels"}
            if extra or not {"low", "high"} <= set(spec):
                raise DataError(ErrorCode.INVALID_VALUE, "low, high and optionally levels", field=key, got=spec)
            low, high, levels = spec["low"], spec["high"], spec.get("levels", 3)
        elif isinstance(spec, list) and len(spec) == 2:
            low, high = spec
        else:
            raise DataError(ErrorCode.WRONG_TYPE, "[low, high] or {low:, high:, levels:}", field=key, got=spec)
        for name, value in (("low", low), ("high", high)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise DataError(ErrorCode.WRONG_TYPE, "a finite number", field=f"{key}.{name}", got=value)
        if not low < high:
            raise DataError(ErrorCode.INVALID_VALUE, "low < high", field=key, got=[low, high])
        if isinstance(levels, bool) or not isinstance(levels, int) or levels < 2:
            raise DataError(ErrorCode.INVALID_INTEGER, "an integer number of grid levels ≥ 2", field=f"{key}.levels",
                            got=levels)
        integer = isinstance(published, int)
        if integer and not (float(low).is_integer() and float(high).is_integer()):
            raise DataError(ErrorCode.INVALID_INTEGER, "integer bounds for an integer constant", field=key,
                            got=[low, high])
        for value in (low, high):  # both ends must make a valid configuration (ranges, min ≤ max, …)
            MetaRouteConfig().with_overrides({key: int(value) if integer else float(value)})
        return Dimension(key, float(low), float(high), levels, integer)
    except DataError as exc:
        raise exc.at(file=file) from None


def default_space(spread: float = _DEFAULT_SPREAD, keys: Sequence[str] = DEFAULT_CONSTANTS) -> SweepSpace:
    """Each constant of ``keys`` within ``published × (1 ± spread)``, clipped to its valid range."""
    if not 0 < spread < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "a spread in (0, 1)", field="spread", got=spread)
    dims = []
    for key in keys:
        value = float(_published(key))
        low, high = round(value * (1 - spread), _DIGITS), round(value * (1 + spread), _DIGITS)
        low, high = _clip(key, low, high)
        dims.append(_dimension(key, [low, high], None))
    return SweepSpace(tuple(dims))


def _clip(key: str, low: float, high: float) -> tuple[float, float]:
    section, _, leaf = key.rpartition(".")
    node: Any = MetaRouteConfig()
    for part in section.split("."):
        node = getattr(node, part)
    bounds = {f.name: f.metadata.get("range") for f in dataclasses.fields(node)}.get(leaf)
    if bounds:
        lo, hi = bounds
        low = max(low, lo) if lo is not None else low
        high = min(high, hi) if hi is not None else high
    return low, high


@dataclass(frozen=True, slots=True)
class SweepDesign:
    """The sampled configurations (dotted overrides onto the published config) and how they were drawn."""

    space: SweepSpace
    sampling: Sampling
    seed: int | None
    configurations: tuple[tuple[tuple[str, float | int], ...], ...]

    def overrides(self, index: int) -> dict[str, float | int]:
        return dict(self.configurations[index])

    def to_mapping(self) -> dict[str, Any]:
        return {"sampling": self.sampling.value, "seed": self.seed, "configurations": len(self.configurations),
                **self.space.to_mapping()}


#: The most configurations one design may hold unless the caller raises it (``max_configurations``,
#: ``metaroute-sweep --max-configurations``): a grid of 3 constants × 1,000 levels is 10⁹ cells.
MAX_CONFIGURATIONS = 10_000


def design(space: SweepSpace, *, samples: int | None = None, grid: bool = False, seed: int = 0,
           max_configurations: int = MAX_CONFIGURATIONS) -> SweepDesign:
    """A Latin hypercube of ``samples`` configurations drawn with ``seed``, or (``grid=True``) the full grid.

    A design of more than ``max_configurations`` configurations is refused before anything is built
    (``LIMIT_EXCEEDED``, naming the cap and how to raise it)."""
    if isinstance(max_configurations, bool) or not isinstance(max_configurations, int) or max_configurations < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "a positive maximum number of configurations",
                        field="max_configurations", got=max_configurations)
    if grid:
        if samples is not None:
            raise DataError(ErrorCode.INVALID_VALUE, "either samples or grid, not both", field="samples", got=samples)
        size = math.prod(d.levels for d in space.dimensions)
        if size > max_configurations:
            levels = " × ".join(str(d.levels) for d in space.dimensions)
            raise _too_many(f"a grid of {levels} = {size:,} configurations", max_configurations, "levels")
        axes = [[d.value(i / (d.levels - 1)) for i in range(d.levels)] for d in space.dimensions]
        points = list(itertools.product(*axes))
        configs = tuple(tuple(zip(space.keys, p)) for p in points)
        return SweepDesign(space, Sampling.GRID, None, _distinct(configs))
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "a positive number of samples", field="samples", got=samples)
    if samples > max_configurations:
        raise _too_many(f"{samples:,} sampled configurations", max_configurations, "samples")
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise DataError(ErrorCode.INVALID_INTEGER, "an integer sampling seed", field="seed", got=seed)
    from scipy.stats import qmc

    units = qmc.LatinHypercube(d=len(space.dimensions), rng=np.random.default_rng(seed)).random(samples)
    configs = tuple(tuple((d.key, d.value(float(u))) for d, u in zip(space.dimensions, row)) for row in units)
    return SweepDesign(space, Sampling.LHS, seed, _distinct(configs))


def _too_many(what: str, cap: int, field: str) -> DataError:
    return DataError(ErrorCode.LIMIT_EXCEEDED, f"at most {cap:,} configurations (raise the cap with "
                     f"--max-configurations N, or max_configurations= in design())", field=field, got=what)


def _distinct(configs: tuple[tuple[tuple[str, Any], ...], ...]) -> tuple[tuple[tuple[str, Any], ...], ...]:
    if len(set(configs)) != len(configs):  # rounding collapsed two samples: the study would count one twice
        raise DataError(ErrorCode.DUPLICATE_ID, "distinct sampled configurations (widen the ranges)",
                        field="configurations", got=len(configs) - len(set(configs)))
    return configs


def sweep_cells(plan: SweepDesign, seeds: Sequence[int], mode: Mode = Mode.FAST) -> tuple[Cell, ...]:
    """One cell per configuration: its overrides, the seeds, the mode and the full configuration's hash."""
    seeds = _seeds(seeds)
    cells = []
    for index in range(len(plan.configurations)):
        overrides = plan.overrides(index)
        config = MetaRouteConfig().with_overrides(overrides)
        cells.append(Cell.of(_CELL_FUNCTION, {
            "version": CELL_VERSION, "overrides": overrides, "config_sha256": config.sha256, "seeds": list(seeds),
            "mode": Mode(mode).value, "suite": Suite.MAIN.value, "treatment": _TREATMENT,
            "baselines": list(_BASELINES)}))
    return tuple(cells)


def _seeds(seeds: Sequence[int] | int) -> tuple[int, ...]:
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 2:
            raise DataError(ErrorCode.INVALID_VALUE, "at least two seeds (paired intervals)", field="seeds",
                            got=seeds)
        return tuple(range(seeds))
    values = tuple(seeds)
    if len(values) < 2 or len(set(values)) != len(values) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 0 for s in values):
        raise DataError(ErrorCode.INVALID_VALUE, "at least two distinct non-negative integer seeds", field="seeds",
                        got=list(values))
    return values


def sweep_cell(payload: dict[str, Any]) -> dict[str, Any]:
    """Run one configuration over its seeds (on any worker): per-policy summaries and the paired contrasts."""
    if payload.get("version") != CELL_VERSION:
        raise DataError(ErrorCode.INVALID_VALUE, f"a sweep cell of version {CELL_VERSION}", field="version",
                        got=payload.get("version"))
    config = MetaRouteConfig().with_overrides(payload["overrides"])
    if config.sha256 != payload["config_sha256"]:  # the worker's defaults differ from the driver's
        raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the configuration hash the cell was planned with",
                        field="config_sha256", got=config.sha256)
    run = run_benchmark(payload["seeds"], suite=Suite(payload["suite"]), mode=Mode(payload["mode"]), config=config)
    summaries = sorted(run.evaluation.summaries, key=lambda s: run.traces.policies.index(s.policy))
    contrasts = [compare(run.traces, payload["treatment"], b, config.evaluation) for b in payload["baselines"]]
    return {
        "summaries": [[s.policy, s.n, s.success_rate, s.success_ci95, s.mean_cost, s.mean_latency_s, s.utility]
                      for s in summaries],
        "contrasts": [[c.treatment, c.baseline, c.success_difference, c.success_difference_ci95, c.cost_difference,
                       c.latency_difference_s] for c in contrasts],
    }


@dataclass(frozen=True)
class SweepResult:
    """The three tables of a sweep (as written), plus what was computed and reused in this call."""

    configurations: pd.DataFrame
    summary: pd.DataFrame
    contrasts: pd.DataFrame
    files: dict[str, Path]
    computed: int = 0
    reused: int = 0

    @property
    def constants(self) -> tuple[str, ...]:
        return tuple(c for c in self.configurations.columns if c not in ("config_id", "cell_key", "config_sha256"))


def run_sweep(plan: SweepDesign, seeds: Sequence[int] | int, out_dir: str | Path, *, mode: Mode = Mode.FAST,
              executor: Any = "inline", progress: bool = False, max_in_flight: int | None = None) -> SweepResult:
    """Run (or resume) a sweep and write its files into ``out_dir``."""
    seeds = _seeds(seeds)
    out = Path(out_dir)
    cells = sweep_cells(plan, seeds, mode)
    ids = [f"c{i:04d}" for i in range(len(cells))]
    head = {"design": plan.to_mapping(), "seeds": list(seeds), "mode": Mode(mode).value,
            "cell_function": _CELL_FUNCTION, "cell_version": CELL_VERSION,
            "published_config_sha256": MetaRouteConfig().sha256, "cells": dict(zip(ids, (c.key for c in cells)))}
    try:
        done = run_cells(cells, out, executor=executor, progress=progress, max_in_flight=max_in_flight,
                         desc="configurations")
    except KeyboardInterrupt:  # finished cells are kept under cells/; the same command resumes from them
        out.mkdir(parents=True, exist_ok=True)
        _write_manifest(out, {**head, "status": "interrupted", "files": {}})
        raise
    config_rows, summary_rows, contrast_rows = [], [], []
    for cid, cell, overrides in zip(ids, cells, plan.configurations):
        config_rows.append((cid, cell.key, cell.payload["config_sha256"], *(v for _, v in overrides)))
        result = done.result(cell)
        summary_rows.extend((cid, *row) for row in result["summaries"])
        for treatment, baseline, diff, ci, cost, latency in result["contrasts"]:
            contrast_rows.append((cid, treatment, baseline, diff, ci, diff - ci, diff + ci, abs(diff) > ci, cost,
                                  latency))
    out.mkdir(parents=True, exist_ok=True)
    files = {
        CONFIGURATIONS: write_csv(out / CONFIGURATIONS, ("config_id", "cell_key", "config_sha256", *plan.space.keys),
                                   config_rows),
        SUMMARY: write_csv(out / SUMMARY, SUMMARY_COLUMNS, summary_rows),
        CONTRASTS: write_csv(out / CONTRASTS, _CONTRAST_COLUMNS, contrast_rows),
    }
    _write_manifest(out, {**head, "status": "complete",
                          "files": {name: sha256_file(path) for name, path in sorted(files.items())}})
    files[MANIFEST] = out / MANIFEST
    result = load_sweep(out)
    return dataclasses.replace(result, computed=len(done.computed), reused=len(done.reused))


def _write_manifest(out: Path, manifest: Mapping[str, Any]) -> None:
    tmp = out / f".{MANIFEST}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp.replace(out / MANIFEST)


def load_sweep(out_dir: str | Path) -> SweepResult:
    """Read a finished sweep's tables (checked against the manifest's hashes)."""
    out = Path(out_dir)
    manifest = read_json(out / MANIFEST, "a sweep manifest (run the sweep first)")
    if manifest.get("status", "complete") != "complete" or not isinstance(manifest.get("files"), dict):
        raise DataError(ErrorCode.INVALID_VALUE, "a finished sweep (re-run the sweep's command to complete it)",
                        file=str(out / MANIFEST), field="status", got=manifest.get("status"))
    files = {}
    for name in (CONFIGURATIONS, SUMMARY, CONTRASTS):
        path = out / name
        if not path.is_file():
            raise DataError(ErrorCode.FILE_NOT_FOUND, f"the sweep's {name}", file=str(path))
        if sha256_file(path) != manifest["files"].get(name):
            raise DataError(ErrorCode.CHECKSUM_MISMATCH, "the hash recorded in manifest.json", file=str(path))
        files[name] = path
    files[MANIFEST] = out / MANIFEST
    return SweepResult(configurations=pd.read_csv(files[CONFIGURATIONS]), summary=pd.read_csv(files[SUMMARY]),
                       contrasts=pd.read_csv(files[CONTRASTS]), files=files)


def contrast_table(result: SweepResult, baseline: str = "static_workload") -> pd.DataFrame:
    """One row per configuration: its constants and the adaptive − ``baseline`` contrast."""
    rows = result.contrasts[result.contrasts["baseline"] == baseline]
    if rows.empty:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"one of {sorted(set(result.contrasts['baseline']))}",
                        field="baseline", got=baseline)
    return result.configurations.merge(rows, on="config_id", validate="one_to_one")


def sensitivity(result: SweepResult, baseline: str = "static_workload") -> pd.DataFrame:
    """Constants ranked by how strongly they move the contrast: Spearman ρ between constant and contrast."""
    from scipy.stats import spearmanr

    table = contrast_table(result, baseline)
    rows = []
    for key in result.constants:
        if table[key].nunique() < 2 or table["success_difference"].nunique() < 2:
            rho, p = 0.0, 1.0
        else:
            test = spearmanr(table[key], table["success_difference"])
            rho, p = float(test.statistic), float(test.pvalue)
        rows.append({"constant": key, "spearman_rho": rho, "abs_rho": abs(rho), "p_value": p})
    ranked = pd.DataFrame(rows).sort_values(["abs_rho", "constant"], ascending=[False, True], kind="stable")
    return ranked.reset_index(drop=True).assign(rank=lambda d: np.arange(1, len(d) + 1))


@dataclass(frozen=True, slots=True)
class Robustness:
    """How much of the sampled space keeps the treatment ahead with a paired CI excluding zero."""

    baseline: str
    configurations: int
    ahead: int  # difference > 0 and CI excludes zero
    behind: int  # difference < 0 and CI excludes zero
    fraction_ahead: float
    fraction_low: float  # Wilson 95 % interval of fraction_ahead (over sampled configurations)
    fraction_high: float
    median_difference: float
    min_difference: float
    max_difference: float


def robustness(result: SweepResult, baseline: str = "static_workload") -> Robustness:
    from ..evaluation.stats import wilson

    table = contrast_table(result, baseline)
    diff, significant = table["success_difference"], table["excludes_zero"].astype(bool)
    n, ahead = len(table), int(((diff > 0) & significant).sum())
    interval = wilson(ahead, n)
    return Robustness(baseline, n, ahead, int(((diff < 0) & significant).sum()), ahead / n, interval.low,
                      interval.high, float(diff.median()), float(diff.min()), float(diff.max()))


def heatmap_table(result: SweepResult, x: str, y: str, *, bins: int = 4,
                  baseline: str = "static_workload") -> pd.DataFrame:
    """Mean contrast (points) over equal-width bins of two constants (rows: ``y``, columns: ``x``)."""
    table = contrast_table(result, baseline)
    frame = pd.DataFrame({
        x: pd.cut(table[x], bins=bins, precision=4), y: pd.cut(table[y], bins=bins, precision=4),
        "points": 100 * table["success_difference"]})
    return frame.pivot_table(index=y, columns=x, values="points", aggfunc="mean", observed=False).sort_index(
        ascending=False)


def heatmap_figure(result: SweepResult, x: str, y: str, *, bins: int = 4, baseline: str = "static_workload") -> Any:
    """A diverging heatmap (colour-blind-safe ``vlag``, centred on zero) of :func:`heatmap_table`."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    grid = heatmap_table(result, x, y, bins=bins, baseline=baseline)
    fig, ax = plt.subplots(figsize=(7, 5))
    sns.heatmap(grid, cmap="vlag_r", center=0.0, annot=True, fmt=".1f", ax=ax,
                cbar_kws={"label": f"{_TREATMENT} − {baseline} (success points)"})
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.set_title("Mean paired contrast per bin (blank: no sampled configuration)")
    fig.tight_layout()
    return fig
