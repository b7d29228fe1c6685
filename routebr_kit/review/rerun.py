"""The re-run model of a release gate's calibration: which outcomes a re-run of each paired row of a ledger set
may draw (:func:`build_design`), and the ledger-set selections ``gate-check`` applies first.

**The re-run model** (:class:`ReRunModel`) gives each row a *pool* of outcomes (path exact, strict exact, object
correct, dispatched) its re-run draws from, uniformly with replacement:

* ``stratum`` — the observed rows of the same task with the same gold final path (what one run without repeats
  supports).  Every row of a stratum is then equally likely to be right, which maximises the per-row variance
  (``p(1 - p)`` is concave), so its false-alarm rates are an upper-side estimate for sticky per-case errors.
* ``repeats`` — the case's own repeats (``repeat_id``, at least two per case): its observed re-run variability.
* ``simulated`` — ``reruns`` seeded runs (seeds ``seed, seed + 1, …``) of the task backend's ``sim:<profile>``
  error model through the controller (a kit run on ``sim:...``, or a published SELECT/CONFIRM RouteBR task).  A
  simulation, not model evidence; a task without a profile falls back to ``stratum`` and the result says so.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..core.errors import DataError, ErrorCode
from ..core.records import System
from ..store.cases import Split
from ..store.ledger import PredictionRow
from .ledgers import LedgerSet, LedgerTask

SPLITS = tuple(s.value for s in Split)


class ReRunModel(str, enum.Enum):
    STRATUM = "stratum"
    REPEATS = "repeats"
    SIMULATED = "simulated"


def parse_models(value: str) -> tuple[ReRunModel, ...]:
    """``"stratum,simulated"`` → the models, in order, each once."""
    out: list[ReRunModel] = []
    for part in (p.strip() for p in value.split(",")):
        try:
            model = ReRunModel(part)
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "re-run models among " + ", ".join(m.value for m in ReRunModel),
                            got=part, field="model") from None
        if model in out:
            raise DataError(ErrorCode.DUPLICATE_ID, "each re-run model once", got=value, field="model")
        out.append(model)
    return tuple(out)


@dataclass(frozen=True)
class Design:
    """The paired rows of a ledger set, grouped in clusters of at most two rows (a FLIP pair, or one row), and for
    every row the pool its re-run draws from (``start``, ``size`` into the ``pool_*`` arrays)."""

    clusters: np.ndarray  # (C, 2) row indices, -1 padding
    is_pair: np.ndarray  # (C,) the cluster is a complete FLIP pair (scored as a pair)
    split: np.ndarray  # (N,) index into SPLITS
    gold_bounded: np.ndarray  # (N,)
    start: np.ndarray  # (N,)
    size: np.ndarray  # (N,)
    pool_exact: np.ndarray
    pool_strict: np.ndarray
    pool_object: np.ndarray
    pool_dispatched: np.ndarray
    models: Mapping[str, str] = field(default_factory=dict)  # task -> the model its pools came from

    @property
    def rows(self) -> int:
        return int(self.split.shape[0])

    @property
    def expected_exact(self) -> float:
        """``p̄``: the expected path-exact rate of one re-run of every row."""
        sums = np.add.reduceat(self.pool_exact.astype(float), self.start) if self.rows else np.zeros(0)
        return float(np.mean(sums / self.size)) if self.rows else float("nan")


def _outcome(row: PredictionRow, task: LedgerTask) -> tuple[bool, bool, bool, bool]:
    gold = task.cases[row.case_id].gold
    return (row.pred_final_path == gold.final_path, row.strict_path == gold.strict_path,
            row.pred_object_id == gold.object_id, not row.pred_final_path.startswith("T_"))


def simulator_profile(task: LedgerTask, ledgers: LedgerSet) -> str | None:
    """The ``sim:<profile>`` error model of a RouteBR task's backend, or ``None``."""
    from ..backends.profiles import PROFILE_LABELS

    if task.system is not System.ROUTEBR:
        return None
    backend = task.manifest.get("backend")
    name = backend.get("name") if isinstance(backend, Mapping) else backend
    if isinstance(name, str) and name.startswith("sim:") and name[4:] in PROFILE_LABELS:
        return name[4:]
    if ledgers.kind == "artifact":
        parts = task.key.split("/")
        if parts[0] == "select" and len(parts) > 1 and parts[1] in PROFILE_LABELS:
            return parts[1]
        if parts[0] == "confirm":
            return "deepseek_v4_primary"  # CONFIRM ran on the primary backend (DeepSeek V4 Pro)
    return None


def build_design(ledgers: LedgerSet, model: ReRunModel | None, *, reruns: int = 20, seed: int = 0) -> Design:
    """Rows, clusters and re-run pools of every task of ``ledgers`` under ``model`` (``None``: each row's pool is
    the row itself, so a draw reproduces the ledger — :func:`observed_draws`).  Rows are taken in
    ``(task, case_id, repeat_id)`` order."""
    if model is ReRunModel.SIMULATED and reruns < 2:
        raise DataError(ErrorCode.INVALID_VALUE, "at least 2 simulated re-runs", got=reruns, field="reruns")
    split_codes, bounded, starts, sizes = [], [], [], []
    pool: list[tuple[bool, bool, bool, bool]] = []
    clusters: list[list[int]] = []
    is_pair: list[bool] = []
    models: dict[str, str] = {}
    for key in sorted(ledgers.tasks):
        task = ledgers.tasks[key]
        rows = sorted(task.rows, key=lambda r: (r.case_id, r.repeat_id))
        pools, models[key] = _task_pools(task, ledgers, rows, model, reruns, seed)
        base = len(split_codes)
        pair_members: dict[tuple[str, str], list[int]] = {}
        for i, (r, p) in enumerate(zip(rows, pools)):
            case = task.cases[r.case_id]
            split_codes.append(SPLITS.index(case.split.value))
            bounded.append(case.gold.final_path.startswith("T_"))
            starts.append(len(pool))
            sizes.append(len(p))
            pool.extend(p)
            if case.split is Split.FLIP and case.pair_id:
                pair_members.setdefault((r.repeat_id, case.pair_id), []).append(base + i)
            else:
                clusters.append([base + i, -1])
        is_pair.extend([False] * (len(clusters) - len(is_pair)))
        for members in pair_members.values():  # an incomplete pair is scored row by row, never as a pair
            whole = len(members) == 2
            clusters.extend([members] if whole else [[m, -1] for m in members])
            is_pair.extend([whole] if whole else [False] * len(members))
    if not split_codes:
        raise DataError(ErrorCode.EMPTY_VALUE, "at least one paired row", file=str(ledgers.root))
    flags = np.array(pool, dtype=bool).reshape(-1, 4)
    return Design(np.array(clusters, dtype=np.int64), np.array(is_pair, dtype=bool), np.array(split_codes),
                  np.array(bounded, dtype=bool), np.array(starts, dtype=np.int64), np.array(sizes, dtype=np.int64),
                  flags[:, 0].copy(), flags[:, 1].copy(), flags[:, 2].copy(), flags[:, 3].copy(), models)


def _task_pools(task: LedgerTask, ledgers: LedgerSet, rows: Sequence[PredictionRow], model: ReRunModel | None,
                reruns: int, seed: int) -> tuple[list[list[tuple[bool, bool, bool, bool]]], str]:
    """Every row's re-run pool under ``model``, and what the pools came from."""
    outcomes = [_outcome(r, task) for r in rows]
    if model is None:
        return [[o] for o in outcomes], "observed"
    profile = simulator_profile(task, ledgers) if model is ReRunModel.SIMULATED else None
    if profile is not None:
        from ..experiments.screening import simulated_rows
        from ..store.assets import assets_beside

        assets = ledgers.assets if ledgers.assets is not None else assets_beside(task.cases_path)
        by_case: dict[str, list[tuple[bool, bool, bool, bool]]] = {r.case_id: [] for r in rows}
        cases = [task.cases[i] for i in by_case]
        for j in range(reruns):
            for sim_row in simulated_rows(profile, cases, assets, seed=seed + j):
                by_case[sim_row.case_id].append(_outcome(sim_row, task))
        return [by_case[r.case_id] for r in rows], \
            f"simulated (sim:{profile}, {reruns} re-runs, seeds {seed}..{seed + reruns - 1})"
    grouped: dict[str, list[tuple[bool, bool, bool, bool]]] = {}
    by_gold = model is not ReRunModel.REPEATS
    keys = [task.cases[r.case_id].gold.final_path if by_gold else r.case_id for r in rows]
    for k, o in zip(keys, outcomes):
        grouped.setdefault(k, []).append(o)
    if model is ReRunModel.SIMULATED:
        return [grouped[k] for k in keys], f"stratum (no simulator profile for {task.system.value} here)"
    if by_gold:
        return [grouped[k] for k in keys], "stratum"
    fewest = min(len(v) for v in grouped.values())
    if fewest < 2:
        raise DataError(ErrorCode.INVALID_VALUE, "at least two repeats (repeat_id) of every case for the "
                        "'repeats' re-run model", file=str(task.path), field="repeat_id",
                        got=f"{fewest} repeat(s) of some case")
    return [grouped[k] for k in keys], f"repeats ({fewest}+ per case)"


def select_tasks(ledgers: LedgerSet, prefixes: Sequence[str]) -> LedgerSet:
    """The tasks of ``ledgers`` whose key starts with one of ``prefixes`` (every task when there is none)."""
    if not prefixes:
        return ledgers
    chosen = {k: t for k, t in ledgers.tasks.items() if any(k == p or k.startswith(p.rstrip("/") + "/")
                                                            or k.startswith(p) for p in prefixes)}
    if not chosen:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a task prefix of the ledgers (" + ", ".join(sorted(ledgers.tasks))
                        + ")", got=list(prefixes), field="task")
    return LedgerSet(ledgers.root, ledgers.kind, chosen, ledgers.assets, ledgers.manifest)


def merge_repeats(ledgers: LedgerSet) -> LedgerSet:
    """Tasks ``…/repeat-<i>`` (the folders of ``run --repeats N``) of one system merged into one task per parent
    folder, so the ``repeats`` re-run model sees every repeat of a case together."""
    groups: dict[str, list[LedgerTask]] = {}
    for key in sorted(ledgers.tasks):
        parent = re.sub(r"(^|/)repeat-\d+$", "", key) or "."
        groups.setdefault(parent, []).append(ledgers.tasks[key])
    if all(len(g) == 1 for g in groups.values()):
        return ledgers
    tasks = {}
    for parent, members in groups.items():
        first = members[0]
        if len(members) == 1:
            tasks[first.key] = first
            continue
        if len({t.system for t in members}) != 1:
            raise DataError(ErrorCode.INVALID_VALUE, "repeat folders of one system", field="system",
                            got=sorted(t.system.value for t in members), file=str(first.path.parent))
        rows = tuple(r for t in members for r in t.rows)
        tasks[parent] = LedgerTask(parent, first.system, rows, first.cases, first.path.parent, (), first.manifest, {},
                                   first.cases_path)
    return LedgerSet(ledgers.root, ledgers.kind, tasks, ledgers.assets, ledgers.manifest)


__all__ = ["SPLITS", "Design", "ReRunModel", "build_design", "merge_repeats", "parse_models", "select_tasks",
           "simulator_profile"]
