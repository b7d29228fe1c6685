"""Read a published RouteBR artifact directory and replay it through the kit's controller.

The directory is laid out like ``../shared/routebr_artifact``::

    data/{routebr_600,routebr_select_160,routebr_confirm_320,catalog,boundary_rules,entity_catalog}.csv
    experiments/results/select/<profile>/<split>/{predictions.csv,run_manifest.json[,raw/*.json]}
    experiments/results/confirm/<system>/<split>/...
    analysis/results/FINAL_RESULTS.json

Replay rebuilds every RouteBR-controller row's proposal (receipt content where a receipt exists, otherwise
``pred_action``/``pred_object_id``/``topk_json``), runs it through :class:`~routebr_kit.core.Controller` with the
row's system options, and compares final path, boundary, action and object with what was recorded.
Standard library only.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from .backends.replay import ReplayBackend
from .core.aio import run_sync
from .core.assets import Assets, load_assets, load_cases, read_json
from .core.controller import ControllerOptions, Decision
from .core.errors import DataError, ErrorCode
from .core.hashing import sha256_file
from .core.records import Case, Split, System
from .ledger import PredictionRow, prediction_from_decision, read_predictions

SELECT, CONFIRM = "select", "confirm"

#: Display names of the six screened profiles, in the published screening table's vocabulary.
PROFILE_LABELS = {
    "deepseek_v4_primary": "DeepSeek V4 Pro",
    "deepseek_v4_flash_efficiency": "DeepSeek V4 Flash",
    "qwencloud_qwen38max_robustness": "Qwen3.8 Max",
    "ohmygpt_gpt4o_historical": "GPT-4o",
    "qwencloud_qwen37plus_robustness": "Qwen3.7 Plus",
    "ohmygpt_gpt52_frontier": "GPT-5.2",
}
#: The profile that ran every CONFIRM task.
CONFIRM_PROFILE = "deepseek_v4_primary"


@dataclass(frozen=True, slots=True)
class ArtifactTask:
    """One published result folder: a phase, a profile, a system and a split."""

    phase: str
    profile: str
    system: System
    split: Split
    path: Path

    @property
    def key(self) -> str:
        group = self.profile if self.phase == SELECT else self.system.value
        return f"{self.phase}/{group}/{self.split.value.lower()}"

    @property
    def predictions_path(self) -> Path:
        return self.path / "predictions.csv"

    def receipts(self) -> list[Path]:
        raw = self.path / "raw"
        return sorted(raw.glob("*.json")) if raw.is_dir() else []

    def manifest(self) -> dict[str, Any]:
        return read_json(self.path / "run_manifest.json", "a run_manifest.json object")


class Artifact:
    """A published RouteBR artifact directory (read-only)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not (self.root / "data").is_dir() or not (self.root / "experiments" / "results").is_dir():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "an artifact directory with data/ and experiments/results/",
                            file=str(self.root))

    # ---- inputs
    def data(self, name: str) -> Path:
        return self.root / "data" / name

    @cached_property
    def assets(self) -> Assets:
        return load_assets(self.data("catalog.csv"), self.data("boundary_rules.csv"),
                           self.data("entity_catalog.csv"))

    def cases_path(self, phase: str) -> Path:
        return self.data({SELECT: "routebr_select_160.csv", CONFIRM: "routebr_confirm_320.csv"}[phase])

    @cached_property
    def _cases(self) -> dict[str, dict[str, Case]]:
        return {phase: {c.case_id: c for c in load_cases(self.cases_path(phase))} for phase in (SELECT, CONFIRM)}

    def cases(self, phase: str) -> Mapping[str, Case]:
        return self._cases[phase]

    def input_hashes(self) -> dict[str, str]:
        names = ["routebr_600.csv", "routebr_select_160.csv", "routebr_confirm_320.csv", "catalog.csv",
                 "boundary_rules.csv", "entity_catalog.csv"]
        return {name: sha256_file(self.data(name)) for name in names}

    @cached_property
    def published_results(self) -> dict[str, Any]:
        return read_json(self.root / "analysis" / "results" / "FINAL_RESULTS.json", "a FINAL_RESULTS.json object")

    # ---- result folders
    @cached_property
    def _tasks(self) -> tuple[ArtifactTask, ...]:
        tasks = []
        results = self.root / "experiments" / "results"
        for phase in (SELECT, CONFIRM):
            for group in sorted(p for p in (results / phase).iterdir() if p.is_dir()):
                for split_dir in sorted(p for p in group.iterdir() if p.is_dir()):
                    if not (split_dir / "predictions.csv").is_file():
                        continue
                    try:
                        split = Split(split_dir.name.upper())
                    except ValueError:
                        raise DataError(ErrorCode.UNKNOWN_ENUM, "a split folder (main, flip, entity)",
                                        file=str(split_dir)) from None
                    if phase == SELECT:
                        profile, system = group.name, System.ROUTEBR
                    else:
                        profile, system = CONFIRM_PROFILE, _system(group)
                    tasks.append(ArtifactTask(phase, profile, system, split, split_dir))
        return tuple(tasks)

    def tasks(self, *, phase: str | None = None, controller_only: bool = False) -> tuple[ArtifactTask, ...]:
        return tuple(t for t in self._tasks if (phase is None or t.phase == phase)
                     and (not controller_only or t.system.uses_controller))

    def task(self, phase: str, group: str, split: Split | str) -> ArtifactTask:
        split = split if isinstance(split, Split) else Split(str(split).upper())
        key = f"{phase}/{group}/{split.value.lower()}"
        for t in self._tasks:
            if t.key == key:
                return t
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a published result folder", got=key, file=str(self.root))

    def predictions(self, task: ArtifactTask) -> tuple[PredictionRow, ...]:
        rows = read_predictions(task.predictions_path)
        cases = self.cases(task.phase)
        for row in rows:
            if row.case_id not in cases:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"a case of the {task.phase} file",
                                file=str(task.predictions_path), line=row.line, field="case_id", got=row.case_id)
        return rows


def _system(group: Path) -> System:
    try:
        return System(group.name)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "a system folder (" + ", ".join(s.value for s in System) + ")",
                        file=str(group)) from None


# --------------------------------------------------------------------------------------------- replay

COMPARED = ("final_path", "boundary", "action", "object")


@dataclass(frozen=True, slots=True)
class Disagreement:
    task: str
    case_id: str
    field: str
    recorded: str
    replayed: str


@dataclass(frozen=True, slots=True)
class TaskReplay:
    """Replay of one result folder: the recomputed rows and how they compare with the recorded ones."""

    task: ArtifactTask
    recorded: tuple[PredictionRow, ...]
    replayed: tuple[PredictionRow, ...]
    decisions: tuple[Decision, ...]
    agree: Mapping[str, int] = field(default_factory=dict)
    disagreements: tuple[Disagreement, ...] = ()

    @property
    def rows(self) -> int:
        return len(self.recorded)

    @property
    def rows_agreeing(self) -> int:
        bad = {d.case_id for d in self.disagreements}
        return self.rows - len(bad)


@dataclass(frozen=True, slots=True)
class ReplayReport:
    tasks: tuple[TaskReplay, ...]

    @property
    def rows(self) -> int:
        return sum(t.rows for t in self.tasks)

    @property
    def rows_agreeing(self) -> int:
        return sum(t.rows_agreeing for t in self.tasks)

    @property
    def disagreements(self) -> tuple[Disagreement, ...]:
        return tuple(d for t in self.tasks for d in t.disagreements)

    @property
    def ok(self) -> bool:
        return not self.disagreements and self.rows > 0

    def agree_total(self, name: str) -> int:
        return sum(t.agree[name] for t in self.tasks)

    def table(self) -> list[dict[str, Any]]:
        """One row per task plus a total, for printing or a DataFrame."""
        out = [{"task": t.task.key, "rows": t.rows, **{k: t.agree[k] for k in COMPARED},
                "agreeing_rows": t.rows_agreeing} for t in self.tasks]
        out.append({"task": "TOTAL", "rows": self.rows, **{k: self.agree_total(k) for k in COMPARED},
                    "agreeing_rows": self.rows_agreeing})
        return out

    def replayed_rows(self, key: str) -> tuple[PredictionRow, ...]:
        for t in self.tasks:
            if t.task.key == key:
                return t.replayed
        raise KeyError(key)


def replay_task(artifact: Artifact, task: ArtifactTask) -> TaskReplay:
    """Replay one controller task (RouteBR, A-state or A-ground) through the kit's controller."""
    if not task.system.uses_controller:
        raise DataError(ErrorCode.INVALID_VALUE, "a controller system (routebr, a_state, a_ground)",
                        got=task.system.value, file=str(task.path))
    recorded = artifact.predictions(task)
    cases = artifact.cases(task.phase)
    backend = ReplayBackend.from_sources(recorded, task.receipts(), name=f"replay:{task.key}")
    controller = artifact.assets.controller(ControllerOptions.for_system(task.system))

    async def run_all() -> list[Decision]:
        return [await controller.aroute(cases[row.case_id].request, backend) for row in recorded]

    decisions = tuple(run_sync(run_all()))
    replayed = tuple(
        replace(prediction_from_decision(d, row.system_id, repeat_id=row.repeat_id, retry_count=row.retry_count,
                                         input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                                         latency_ms=row.latency_ms), line=row.line)
        for d, row in zip(decisions, recorded)
    )
    agree = {name: 0 for name in COMPARED}
    problems = []
    for old, new in zip(recorded, replayed):
        pairs = {
            "final_path": (old.pred_final_path, new.pred_final_path),
            "boundary": (old.pred_boundary, new.pred_boundary),
            "action": (old.pred_action, new.pred_action),
            "object": (old.pred_object_id, new.pred_object_id),
        }
        for name, (a, b) in pairs.items():
            if a == b:
                agree[name] += 1
            else:
                problems.append(Disagreement(task.key, old.case_id, name, a, b))
    return TaskReplay(task, recorded, replayed, decisions, agree, tuple(problems))


def replay_artifact(artifact: Artifact | str | Path, tasks: Iterable[ArtifactTask] | None = None) -> ReplayReport:
    """Replay every RouteBR-controller task (six SELECT profiles; CONFIRM routebr, a_state, a_ground)."""
    artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
    chosen = tuple(tasks) if tasks is not None else artifact.tasks(controller_only=True)
    return ReplayReport(tuple(replay_task(artifact, t) for t in chosen))
