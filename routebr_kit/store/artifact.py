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

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..core.records import System
from .assets import Assets, load_assets, read_json
from .cases import Case, Split, load_cases
from .kitfiles import source_checkout
from .ledger import PredictionRow, check_rows_match_manifest, read_predictions

SELECT, CONFIRM = "select", "confirm"

#: The published repository the artifact comes from (MIT), at the commit the kit is verified against.
PUBLISHED_REPOSITORY = "YgcCoder/RouteBR"
PUBLISHED_COMMIT = "2b78d8857ed48f39c05d914630af3d535c3f0eba"
#: The environment variable that names an artifact directory.
ARTIFACT_ENV = "ROUTEBR_ARTIFACT"
#: The repository root of a source checkout (for a non-editable install this is ``site-packages`` and the folders
#: below are never searched: :func:`artifact_candidates` looks in the current directory instead).
REPO = Path(__file__).resolve().parents[2]
#: Where ``routebr-kit fetch-artifact`` unpacks the published repository (ignored by git).
CONVENTIONAL_DIR = REPO / "artifacts" / "routebr"
#: The layout of the kit's development checkouts: the artifact beside the repository.
SIBLING_DIR = REPO.parent / "shared" / "routebr_artifact"

#: The profile that ran every CONFIRM task.
_CONFIRM_PROFILE = "deepseek_v4_primary"


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
        return read_json(self.path / "run_manifest.json", "a run_manifest.json object", record=True)


class Artifact:
    """A published RouteBR artifact directory (read-only)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root)
        if not is_artifact_dir(self.root):
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
                    ledger = split_dir / "predictions.csv"
                    if not ledger.exists() and not ledger.is_symlink():  # a folder without a ledger is no task;
                        continue  # anything else at its name is read (and a directory or a link loop is an error)
                    try:
                        split = Split(split_dir.name.upper())
                    except ValueError:
                        raise DataError(ErrorCode.UNKNOWN_ENUM, "a split folder (main, flip, entity)",
                                        file=str(split_dir)) from None
                    if phase == SELECT:
                        profile, system = group.name, System.ROUTEBR
                    else:
                        profile, system = _CONFIRM_PROFILE, _system(group)
                    tasks.append(ArtifactTask(phase, profile, system, split, split_dir))
        return tuple(tasks)

    def tasks(self, *, phase: str | None = None, controller_only: bool = False) -> tuple[ArtifactTask, ...]:
        return tuple(t for t in self._tasks if (phase is None or t.phase == phase)
                     and (not controller_only or t.system.uses_controller))

    def task(self, phase: str, group: str, split: Split | str) -> ArtifactTask:
        split = split if isinstance(split, Split) else Split(str(split).upper())
        key = f"{phase}/{group}/{split.value.lower()}"
        found = [t for t in self._tasks if t.key == key]
        if found:
            return found[0]
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a published result folder", got=key, file=str(self.root))

    def predictions(self, task: ArtifactTask) -> tuple[PredictionRow, ...]:
        rows = read_predictions(task.predictions_path)
        if (task.path / "run_manifest.json").exists():
            check_rows_match_manifest(rows, task.manifest(), str(task.predictions_path))
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


def is_artifact_dir(path: str | Path) -> bool:
    """True when ``path`` looks like a published artifact (``data/`` and ``experiments/results/``)."""
    root = Path(path)
    return (root / "data").is_dir() and (root / "experiments" / "results").is_dir()


def artifact_candidates(explicit: str | Path | None = None) -> tuple[tuple[str, Path], ...]:
    """Where an artifact is looked for, in order: ``(how it was named, path)``."""
    found: list[tuple[str, Path]] = []
    if explicit:
        found.append(("explicit path", Path(explicit)))
    if os.environ.get(ARTIFACT_ENV):
        found.append((f"${ARTIFACT_ENV}", Path(os.environ[ARTIFACT_ENV])))
    here = Path.cwd() / "artifacts" / "routebr"
    if source_checkout() is None:  # an installed wheel: only the current directory, never a path inside the venv
        found.append(("conventional folder", here))
    else:
        found += [("conventional folder", CONVENTIONAL_DIR), *([("conventional folder", here)]
                                                               if here.resolve() != CONVENTIONAL_DIR.resolve() else []),
                  ("sibling checkout", SIBLING_DIR)]
    return tuple(found)


def find_artifact(explicit: str | Path | None = None) -> Path | None:
    """The first artifact directory among :func:`artifact_candidates`, or ``None`` when there is none.

    An explicit path that is not an artifact is an error (a typo must not silently fall back to a simulation).
    """
    if explicit and not is_artifact_dir(explicit):
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an artifact directory with data/ and experiments/results/",
                        file=str(explicit))
    for _, path in artifact_candidates(explicit):
        if is_artifact_dir(path):
            return path.resolve()
    return None
