"""Replication of the published RouteBR runs: replay every recorded controller row, and rebuild the paper's tables.

* :func:`replay_artifact` — every RouteBR-controller row of a published artifact (six SELECT profiles; CONFIRM
  routebr, a_state, a_ground) through the kit's controller, by the one replay function
  (:func:`routebr_kit.runs.replay.replay_rows`).  The comparison has two kinds of field, reported apart:

  - **independent** — ``final_path`` and ``boundary``: recomputed by the kit's gates (state rules, object gate,
    fail-closed terminal) from the recorded proposal, so agreement checks the published gates;
  - **rebuilt** — ``action`` and ``object``: taken from the recorded proposal itself (the receipt's reply where one
    exists, else ``pred_action``/``pred_object_id``/``topk_json``), so they agree by construction on accepted
    proposals; they can only disagree where the kit's contract rejects a proposal the published one accepted.

* :func:`paper_tables` — Tables IV–VI and the McNemar comparisons from the artifact's predictions
  (:attr:`LedgerOrigin.PUBLISHED`) or from the replayed rows (:attr:`LedgerOrigin.REPLAYED`; B1/B2 have no
  controller and are scored from their recorded outputs).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..backends.profiles import PROFILE_LABELS
from ..core.controller import ControllerOptions, Decision
from ..core.errors import DataError, ErrorCode
from ..core.records import System
from ..evaluation.metrics import Cases
from ..evaluation.stats import McNemar
from ..evaluation.tables import SYSTEM_LABELS, mcnemar_frame, mcnemar_results, rq3_table, rq12_table, screening_table
from ..runs.replay import replay_rows
from ..store.artifact import CONFIRM, SELECT, Artifact, ArtifactTask
from ..store.cases import Split
from ..store.ledger import PredictionRow

Rows = Sequence[PredictionRow]


#: Fields recomputed by the kit's gates from the recorded proposal: agreement is an independent check.
INDEPENDENT = ("final_path", "boundary")
#: Fields taken from the recorded proposal itself: they agree by construction wherever the proposal is accepted.
REBUILT = ("action", "object")
_COMPARED = INDEPENDENT + REBUILT


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

    def summary_lines(self) -> list[str]:
        """What the replay establishes, each kind of field on its own line."""
        independent = min(self.agree_total(k) for k in INDEPENDENT)
        rebuilt = min(self.agree_total(k) for k in REBUILT)
        return [
            f"{independent}/{self.rows} rows agree on final path and boundary "
            "(independent: recomputed by the kit's gates from the recorded proposals)",
            f"{rebuilt}/{self.rows} rows agree on action and object "
            "(rebuilt: taken from the recorded proposals, so equal by construction where accepted)",
        ]

    def table(self) -> list[dict[str, Any]]:
        """One row per task plus a total, for printing or a DataFrame."""
        out = [{"task": t.task.key, "rows": t.rows, **{k: t.agree[k] for k in _COMPARED},
                "agreeing_rows": t.rows_agreeing} for t in self.tasks]
        out.append({"task": "TOTAL", "rows": self.rows, **{k: self.agree_total(k) for k in _COMPARED},
                    "agreeing_rows": self.rows_agreeing})
        return out



def replay_task(artifact: Artifact, task: ArtifactTask) -> TaskReplay:
    """Replay one controller task (RouteBR, A-state or A-ground) through the kit's controller."""
    if not task.system.uses_controller:
        raise DataError(ErrorCode.INVALID_VALUE, "a controller system (routebr, a_state, a_ground)",
                        got=task.system.value, file=str(task.path))
    recorded = artifact.predictions(task)
    controller = artifact.assets.controller(ControllerOptions.for_system(task.system))
    result = replay_rows(controller, recorded, artifact.cases(task.phase), receipts=task.receipts(),
                         name=f"replay:{task.key}")
    return compare_task(task, recorded, result.rows, result.decisions)


def compare_task(task: ArtifactTask, recorded: tuple[PredictionRow, ...], replayed: tuple[PredictionRow, ...],
                 decisions: tuple[Decision, ...]) -> TaskReplay:
    """Field-by-field agreement of recorded and replayed rows (the fields of :data:`COMPARED`)."""
    agree = dict.fromkeys(_COMPARED, 0)
    problems = []
    for old, new in zip(recorded, replayed, strict=True):
        a, b = _compared(old), _compared(new)
        for name in _COMPARED:
            if a[name] == b[name]:
                agree[name] += 1
            else:
                problems.append(Disagreement(task.key, old.case_id, name, a[name], b[name]))
    return TaskReplay(task, recorded, replayed, decisions, agree, tuple(problems))


def _compared(row: PredictionRow) -> dict[str, str]:
    return {"final_path": row.pred_final_path, "boundary": row.pred_boundary, "action": row.pred_action,
            "object": row.pred_object_id}


def replay_artifact(artifact: Artifact | str | Path, tasks: Iterable[ArtifactTask] | None = None) -> ReplayReport:
    """Replay every RouteBR-controller task (six SELECT profiles; CONFIRM routebr, a_state, a_ground)."""
    artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
    chosen = tuple(tasks) if tasks is not None else artifact.tasks(controller_only=True)
    return ReplayReport(tuple(replay_task(artifact, t) for t in chosen))


class LedgerOrigin(str, enum.Enum):
    """Where the tables' prediction rows come from."""

    PUBLISHED = "published"  # the artifact's predictions.csv files
    REPLAYED = "replayed"  # recorded proposals replayed through the kit's controller (B1/B2 as recorded)


#: The published comparison keys (the A-state comparison is the paper's RQ2 but the published key says rq3).
COMPARISONS = {
    "rq1_routebr_vs_b1": (System.ROUTEBR, System.B1_DIRECT, Split.MAIN),
    "rq1_routebr_vs_b2": (System.ROUTEBR, System.B2_DIRECT_GUARD, Split.MAIN),
    "rq3_routebr_vs_no_state": (System.ROUTEBR, System.A_STATE, Split.FLIP),
    "rq3_routebr_vs_no_ground": (System.ROUTEBR, System.A_GROUND, Split.ENTITY),
}
_RQ12_SYSTEMS = (System.ROUTEBR, System.B1_DIRECT, System.B2_DIRECT_GUARD)
_RQ3_RUNS = ((System.ROUTEBR, Split.FLIP), (System.A_STATE, Split.FLIP), (System.ROUTEBR, Split.ENTITY),
            (System.A_GROUND, Split.ENTITY))
SCREENING_SPLITS = (Split.MAIN, Split.FLIP, Split.ENTITY)


def artifact_ledgers(artifact: Artifact, source: LedgerOrigin = LedgerOrigin.PUBLISHED,
                     report: ReplayReport | None = None) -> dict[str, tuple[PredictionRow, ...]]:
    """Every result folder's rows keyed by task key (``select/<profile>/<split>``, ``confirm/<system>/<split>``).

    ``LedgerOrigin.REPLAYED`` takes controller rows from ``report`` (replaying the artifact when not given).
    """
    source = LedgerOrigin(source)
    if source is LedgerOrigin.PUBLISHED:
        return {t.key: artifact.predictions(t) for t in artifact.tasks()}
    report = report if report is not None else replay_artifact(artifact)
    replayed = {t.task.key: t.replayed for t in report.tasks}
    ledgers = {}
    for task in artifact.tasks():
        if task.system.uses_controller:
            if task.key not in replayed:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a replay of every controller task", got=task.key,
                                file=str(task.path))
            ledgers[task.key] = replayed[task.key]
        else:
            ledgers[task.key] = artifact.predictions(task)
    return ledgers


@dataclass(frozen=True)
class PaperRuns:
    """The ledgers behind the published tables, labelled as the tables label them."""

    screening: Mapping[str, Rows]  # backend → SELECT-160 rows (MAIN + FLIP + ENTITY)
    main: Mapping[str, Rows]  # system → CONFIRM MAIN rows (RouteBR, B1, B2)
    flip: Mapping[str, Rows]  # system → CONFIRM FLIP rows (RouteBR, B1, B2)
    safeguards: Mapping[tuple[str, str], Rows]  # (variant, split) → CONFIRM rows
    comparisons: Mapping[str, tuple[Rows, Rows]]  # published comparison key → (A rows, B rows)


def paper_runs(ledgers: Mapping[str, Rows]) -> PaperRuns:
    """Group an artifact's ledgers (:func:`artifact_ledgers`) into the tables' runs."""
    def rows(key: str) -> Rows:
        if key not in ledgers:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a published result folder", got=key)
        return ledgers[key]

    def confirm(system: System, split: Split) -> Rows:
        return rows(f"{CONFIRM}/{system.value}/{split.value.lower()}")

    return PaperRuns(
        screening={label: [r for split in SCREENING_SPLITS for r in rows(f"{SELECT}/{profile}/{split.value.lower()}")]
                   for profile, label in PROFILE_LABELS.items()},
        main={SYSTEM_LABELS[s]: confirm(s, Split.MAIN) for s in _RQ12_SYSTEMS},
        flip={SYSTEM_LABELS[s]: confirm(s, Split.FLIP) for s in _RQ12_SYSTEMS},
        safeguards={(SYSTEM_LABELS[s], split.value): confirm(s, split) for s, split in _RQ3_RUNS},
        comparisons={key: (confirm(a, split), confirm(b, split)) for key, (a, b, split) in COMPARISONS.items()},
    )


@dataclass(frozen=True)
class PaperTables:
    """Tables IV, V, VI and the McNemar comparisons, from one source."""

    source: LedgerOrigin
    screening: pd.DataFrame
    rq12: pd.DataFrame
    rq3: pd.DataFrame
    comparisons: Mapping[str, McNemar] = field(repr=False)

    @property
    def mcnemar(self) -> pd.DataFrame:
        return mcnemar_frame(self.comparisons)

    def frames(self) -> dict[str, tuple[pd.DataFrame, str]]:
        """``name -> (table, caption)`` in the paper's order."""
        return {
            "table_iv_screening": (self.screening, "Table IV: backend screening on SELECT-160"),
            "table_v_rq1_rq2": (self.rq12, "Table V: RQ1-RQ2 on CONFIRM (FD/FB pooled over MAIN+FLIP)"),
            "table_vi_rq3": (self.rq3, "Table VI: RQ3 safeguards on CONFIRM"),
            "mcnemar": (self.mcnemar, "Exact two-sided McNemar tests on paired final-path correctness"),
        }

    def differences(self, other: PaperTables) -> list[str]:
        """Names of the tables that differ from ``other``'s (empty when every table is identical)."""
        mine, theirs = self.frames(), other.frames()
        differ = [name for name in ("table_iv_screening", "table_v_rq1_rq2", "table_vi_rq3")
                  if not mine[name][0].equals(theirs[name][0])]
        return differ + (["mcnemar"] if dict(self.comparisons) != dict(other.comparisons) else [])


def build_tables(runs: PaperRuns, select_cases: Cases, confirm_cases: Cases,
                 source: LedgerOrigin = LedgerOrigin.PUBLISHED) -> PaperTables:
    """Build every table from grouped runs."""
    return PaperTables(
        source=LedgerOrigin(source),
        screening=screening_table(runs.screening, select_cases),
        rq12=rq12_table(runs.main, runs.flip, confirm_cases),
        rq3=rq3_table(runs.safeguards, confirm_cases),
        comparisons=mcnemar_results(runs.comparisons, confirm_cases),
    )


def paper_tables(artifact: Artifact | str, source: LedgerOrigin = LedgerOrigin.PUBLISHED,
                 report: ReplayReport | None = None) -> PaperTables:
    """All tables of a published artifact, from its predictions or from a replay of them."""
    artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
    runs = paper_runs(artifact_ledgers(artifact, source, report))
    return build_tables(runs, artifact.cases(SELECT), artifact.cases(CONFIRM), source)


def _shown(output: Any) -> str:
    """A recorded model output as one line of code (receipts hold JSON text, ledgers parsed objects)."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, sort_keys=False)
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def _errors(errors: Sequence[Any]) -> str:
    return "; ".join(f"`{e.code.value}` on `{e.field}`" + (f" (got `{e.got}`)" if e.got else "") for e in errors)


def replay_story(decision: Decision | None, *, gold_path: str | None = None) -> dict[str, Any]:
    """What the replay of one case did, as the facts of a notebook's story: its final path and reason, and for a
    fail-closed decision the backend failure, the first reply and the contract's errors, whether the one
    format-only repair was attempted, what it returned and whether it was rejected again, and the terminal.

    ``found`` is False without a decision (every other fact is then empty).  Replies and errors are ready-made
    Markdown code spans; the words are the notebook's template."""
    log = decision.log if decision is not None else None
    first = decision.first_output if decision is not None else None
    return {
        "found": decision is not None,
        "case": decision.request_id if decision is not None else "",
        "final_path": decision.final_path if decision is not None else "",
        "reason": decision.reason.value if decision is not None else "",
        "fail_closed": decision is not None and decision.reason.fail_closed,
        "terminal": decision.terminal.value if decision is not None else "",
        "has_gold": bool(gold_path), "gold_path": gold_path or "",
        "backend_failed": log is not None and log.failure is not None,
        "backend_failure": str(log.failure) if log is not None and log.failure is not None else "",
        "has_first": first is not None, "first_output": _shown(first) if first is not None else "",
        "first_rejected": log is not None and bool(log.first_errors),
        "first_errors": _errors(log.first_errors) if log is not None else "",
        "has_log": log is not None, "repair_attempted": log is not None and log.repair_attempted,
        "repair_output": _shown(log.repair_output) if log is not None and log.repair_attempted else "",
        "repair_same": log is not None and log.repair_attempted and log.repair_output == first,
        "repair_rejected": log is not None and bool(log.repair_errors),
        "repair_errors": _errors(log.repair_errors) if log is not None else "",
    }

