"""Ledger sets for the release review: a published artifact, a tree of run directories, or a shadow output.

A :class:`LedgerSet` is every result folder under one root, keyed by its path relative to the results root
(``select/deepseek_v4_primary/main`` for the published artifact and for a shadow of it; ``.`` for a single run
directory).  Each :class:`LedgerTask` carries its rows, its gold cases, its receipts and the decision details the
diff compares stage by stage (:class:`RowDetail`: winning rule and version, object gate, reason).

Where details come from, by fidelity: the receipts' recorded decision (``summary.decision``, written by
``routebr-kit run`` and by ``routebr-kit shadow``); otherwise, for a controller task whose assets are known (the
published artifact), a replay of the rows through those assets by the one replay function
(:func:`routebr_kit.runs.replay.replay_rows`), which reproduces every published row.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from ..core.controller import Controller, ControllerOptions, Decision
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_json
from ..core.records import System, Terminal
from ..runs.replay import replay_rows
from ..store import ledger as _ledger
from ..store.artifact import CONFIRM, SELECT, Artifact, is_artifact_dir
from ..store.assets import Assets, assets_beside, load_catalog
from ..store.cases import Case, load_cases
from ..store.files import read_json, read_json_lines
from ..store.ledger import MANIFEST, PREDICTIONS, RAW, LedgerSample, PredictionRow, read_predictions

#: The manifest section a shadow output adds to each run directory it writes.
SHADOW_KEY = "shadow"
#: The top-level file of a shadow output.
SHADOW_MANIFEST = "shadow_manifest.json"
#: A shadow task's per-row records (flags, rule, object gate, reason), one JSON line per row.
SHADOW_ROWS = "shadow_rows.jsonl"

RowKey = tuple[str, str]  # (case_id, repeat_id)


@dataclass(frozen=True, slots=True)
class RowDetail:
    """What a decision went through, beyond its ledger row (``None`` fields: the stage was not reached)."""

    reason: str
    rule_id: str | None = None
    rule_version: str | None = None
    rule_decision: str | None = None
    object_resolution: str | None = None
    repair_attempted: bool = False
    #: how the runtime state broke its schema, ``CODE:field`` per violation (``()``: it passed, or was not checked)
    state_errors: tuple[str, ...] = ()

    @classmethod
    def of_decision(cls, decision: Decision) -> RowDetail:
        rule = decision.rule
        return cls(decision.reason.value, rule.rule_id if rule else None, rule.version if rule else None,
                   rule.decision.value if rule else None, decision.object_resolution.value,
                   decision.repair_attempted, tuple(f"{v.code.value}:{v.field}" for v in decision.state_errors))

    @classmethod
    def of_dict(cls, d: Mapping[str, Any]) -> RowDetail:
        rule = d.get("rule") or {}
        errors = d.get("state_errors") or ()
        return cls(str(d.get("reason", "")), rule.get("rule_id"), rule.get("version"), rule.get("decision"),
                   d.get("object_resolution"), bool(d.get("repair_attempted")),
                   tuple(f"{e.get('code')}:{e.get('field')}" if isinstance(e, Mapping) else str(e) for e in errors))


def gold_sha256(rows: Sequence[PredictionRow], cases: Mapping[str, Case]) -> str:
    """SHA-256 of the gold labels of the cases a ledger scores (sorted by case ID)."""
    chosen = [cases[i] for i in sorted({r.case_id for r in rows}) if i in cases]
    return sha256_json([{"case_id": c.case_id, "split": c.split.value, "pair_id": c.pair_id, "action": c.gold.action,
                         "object_id": c.gold.object_id, "boundary": c.gold.boundary.value,
                         "final_path": c.gold.final_path, "rule_ids": list(c.gold.rule_ids)} for c in chosen])


@dataclass(frozen=True)
class LedgerTask:
    """One result folder: rows of one system on one split, with the gold cases they are scored against."""

    key: str
    system: System
    rows: tuple[PredictionRow, ...]
    cases: Mapping[str, Case]
    path: Path
    receipts: tuple[Path, ...] = ()
    manifest: Mapping[str, Any] = field(default_factory=dict)
    details: Mapping[RowKey, RowDetail] = field(default_factory=dict)
    cases_path: Path | None = None
    #: set when the ledger was over ``load_ledgers(max_rows=…)``: ``rows`` is a sample, this says which and how many
    sample: LedgerSample | None = None

    @cached_property
    def receipt_index(self) -> Mapping[RowKey, Path]:
        """Each receipt by the ``(case_id, repeat_id)`` it records (see :func:`receipt_index`)."""
        return receipt_index(self.receipts, str(self.manifest.get("repeat_id") or "0"))

    @property
    def split(self) -> str:
        splits = sorted({self.cases[r.case_id].split.value for r in self.rows if r.case_id in self.cases})
        return "+".join(splits)

    @property
    def gold_sha256(self) -> str:
        return gold_sha256(self.rows, self.cases)

    def row_keys(self) -> list[RowKey]:
        return [(r.case_id, r.repeat_id) for r in self.rows]


@dataclass(frozen=True)
class LedgerSet:
    """Every result folder under one root."""

    root: Path
    kind: str  # "artifact" | "runs"
    tasks: Mapping[str, LedgerTask]
    assets: Assets | None = None
    manifest: Mapping[str, Any] = field(default_factory=dict)

    @property
    def rows(self) -> int:
        return sum(len(t.rows) for t in self.tasks.values())


def _unique_rows(rows: Sequence[PredictionRow], file: str) -> None:
    seen: dict[RowKey, int] = {}
    for r in rows:
        key = (r.case_id, r.repeat_id)
        if key in seen:
            raise DataError(ErrorCode.DUPLICATE_ID, "one row per (case_id, repeat_id)", file=file, line=r.line,
                            field="case_id", got=f"{r.case_id} repeat {r.repeat_id}",
                            detail=f"first seen on line {seen[key]}")
        seen[key] = r.line


_CasesCache = dict[Path, dict[str, Case]]


def receipt_index(receipts: Sequence[Path], default_repeat: str = "0") -> dict[RowKey, Path]:
    """``(case_id, repeat_id) -> receipt``: the case and repeat a receipt records (published receipts record no
    repeat: the run manifest's ``repeat_id``, else ``"0"``).  Two receipts for one row are a located error."""
    out: dict[RowKey, Path] = {}
    for path in receipts:
        receipt = read_json(path, "a receipt JSON object", record=True)
        if not isinstance(receipt, Mapping) or not isinstance(receipt.get("case_id"), str):
            raise DataError(ErrorCode.INVALID_VALUE, "a receipt naming its case_id", file=str(path), field="case_id")
        key = (receipt["case_id"], str(receipt.get("repeat_id", default_repeat)))
        if key in out:
            raise DataError(ErrorCode.DUPLICATE_ID, "one receipt per (case_id, repeat_id)", file=str(path),
                            field="case_id", got=f"{key[0]} repeat {key[1]}", detail=f"also in {out[key]}")
        out[key] = path
    return out


def replay_by_repeat(controller: Controller, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                     index: Mapping[RowKey, Path], *, name: str = "replay") -> tuple[tuple[PredictionRow, ...],
                                                                                     tuple[Decision, ...]]:
    """:func:`~routebr_kit.runs.replay.replay_rows` once per ``repeat_id`` (recorded replies are keyed by case
    ID, so rows of two repeats of one case must never share a replay), each with that repeat's receipts; the
    results in the order of ``rows``."""
    groups: dict[str, list[int]] = {}
    for i, r in enumerate(rows):
        groups.setdefault(r.repeat_id, []).append(i)
    done: dict[int, tuple[PredictionRow, Decision]] = {}
    for repeat, positions in groups.items():
        receipts = [p for (_, r), p in index.items() if r == repeat]
        result = replay_rows(controller, [rows[i] for i in positions], cases, receipts=receipts, name=name)
        done.update(zip(positions, zip(result.rows, result.decisions)))
    return tuple(done[i][0] for i in range(len(rows))), tuple(done[i][1] for i in range(len(rows)))


def check_state_schema(task: LedgerTask, assets: Assets) -> None:
    """The base of a review is what the run ran under: a run recorded with ``--state-schema FILE`` (its hash in the
    manifest) must be reviewed against that schema file, and a run under the derived schema against none —
    otherwise every replay would change decisions the release did not change.  A located error names the file."""
    hashes = task.manifest.get("hashes")  # a kit run or shadow records it (a published manifest does not)
    if not task.system.uses_controller or not isinstance(hashes, Mapping) or "state_schema" not in hashes:
        return
    sha = hashes["state_schema"] or None  # None: the schema derived from the rules
    have = assets.policy.state_schema.sha256 or None
    if have != sha:
        def name(h: str | None) -> str:
            return "the schema derived from the rules" if h is None else f"a state-schema file with sha256 {h[:12]}"

        raise DataError(ErrorCode.INCONSISTENT_ASSETS, f"the state schema the run recorded ({name(sha)})",
                        file=str(task.path / MANIFEST), field="hashes.state_schema", got=name(have),
                        detail="give the base the schema the run used (state_schema.json in the base asset "
                               "directory, or --base-state-schema FILE)")


def load_ledgers(path: str | Path, *, cases: str | Path | None = None, assets: Assets | None = None,
                 details: bool = True, cache: _CasesCache | None = None, max_rows: int | None = None) -> LedgerSet:
    """The ledgers under ``path``: a published artifact directory, a run directory, or a tree of them.

    ``cases`` is the gold cases file for run directories whose manifest does not name one (shadow outputs do);
    ``assets`` the assets they ran under (default: the ones stored next to the cases file), needed only to
    derive decision details of rows without receipts.  ``cache`` shares parsed cases files between loads (the diff
    loads a base and a shadow of it, which name the same cases files).  ``max_rows``: a run's ledger over this many
    rows is never loaded whole — it is streamed once and sampled (:func:`~routebr_kit.store.ledger.sample_predictions`,
    the task's ``sample`` says so); a published artifact's ledgers are small and always read whole.
    """
    cache = cache if cache is not None else {}
    root = Path(path)
    if is_artifact_dir(root):
        return _artifact_set(Artifact(root), details, cache)
    if not root.is_dir():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a run directory, a shadow output or an artifact directory",
                        file=str(root))
    found = sorted({p.parent for p in root.rglob(PREDICTIONS) if RAW not in p.relative_to(root).parts[:-1]})
    if not found:
        raise DataError(ErrorCode.FILE_NOT_FOUND, f"at least one {PREDICTIONS} under the directory", file=str(root))
    top = root / SHADOW_MANIFEST
    top_manifest = read_json(top, "a shadow_manifest.json object", record=True) if top.exists() else {}
    tasks = {}
    for folder in found:
        key = folder.relative_to(root).as_posix()
        tasks[key] = _run_task(key, folder, cases, assets, cache, details, max_rows)
    return LedgerSet(root, "runs", tasks, assets, top_manifest)


def _cases_file(folder: Path, manifest: Mapping[str, Any], explicit: str | Path | None) -> Path:
    named = (manifest.get(SHADOW_KEY) or {}).get("cases_path")
    if named:
        return Path(named)
    if explicit is not None:
        return Path(explicit)
    raise DataError(ErrorCode.EMPTY_VALUE, "--cases FILE (the gold cases of this run directory)",
                    file=str(folder / MANIFEST), field="cases_path")


def _run_task(key: str, folder: Path, cases_arg: str | Path | None, assets: Assets | None,
              loaded: dict[Path, dict[str, Case]], want_details: bool, max_rows: int | None = None) -> LedgerTask:
    manifest_path = folder / MANIFEST
    manifest = read_json(manifest_path, "a run_manifest.json object", record=True) if manifest_path.exists() else {}
    _ledger.check_run_manifest(manifest, str(manifest_path))
    if not manifest.get("system"):
        raise DataError(ErrorCode.EMPTY_VALUE, "a run_manifest.json naming the run's system", file=str(manifest_path),
                        field="system")
    try:
        system = System(manifest["system"])
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "a system (" + ", ".join(s.value for s in System) + ")",
                        file=str(manifest_path), field="system", got=manifest["system"]) from None
    sample = None
    if max_rows is not None and _ledger.count_lines(folder / PREDICTIONS) - 1 > max_rows:
        rows, sample = _ledger.sample_predictions(folder / PREDICTIONS, max_rows)
    else:
        rows = read_predictions(folder / PREDICTIONS)
    _unique_rows(rows, str(folder / PREDICTIONS))
    cases_path = _cases_file(folder, manifest, cases_arg)
    resolved = cases_path.resolve()
    if resolved not in loaded:
        loaded[resolved] = {c.case_id: c for c in load_cases(cases_path)}
    cases = loaded[resolved]
    beside = cases_path.parent / "catalog.csv"  # none there: nothing to check dispatched actions against
    catalog = assets.catalog if assets is not None else load_catalog(beside) if beside.is_file() else None
    if catalog is not None:
        _ledger.check_catalog(rows, catalog.ids, str(folder / PREDICTIONS))
    for r in rows:
        if r.case_id not in cases:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a case of the gold cases file",
                            file=str(folder / PREDICTIONS), line=r.line, field="case_id", got=r.case_id,
                            detail=f"cases file {cases_path}")
    raw = folder / RAW
    receipts = tuple(sorted(raw.glob("*.json"))) if raw.is_dir() else ()
    details: dict[RowKey, RowDetail] = {}
    task = LedgerTask(key, system, rows, cases, folder, receipts, manifest, details, cases_path, sample)
    if want_details and system.uses_controller:
        details.update(_shadow_details(folder / SHADOW_ROWS) or _receipt_details(task))
        if len(details) < len(rows):
            missing = [r for r in rows if (r.case_id, r.repeat_id) not in details]
            chosen = assets if assets is not None else assets_beside(cases_path)
            options = ControllerOptions.for_system(system, **controller_overrides(manifest))
            details.update(_replayed_details(chosen, options, missing, cases, task.receipt_index))
    return task


def controller_overrides(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """The controller options a kit run manifest records (published manifests record none)."""
    options = manifest.get("options") or {}
    out: dict[str, Any] = {}
    for name in ("enforce_state", "enable_grounding", "repair"):
        if isinstance(options.get(name), bool):
            out[name] = options[name]
    if options.get("fallback"):
        out["fallback"] = Terminal(options["fallback"])
    return out


def _shadow_details(path: Path) -> dict[RowKey, RowDetail]:
    if not path.exists():
        return {}
    out = {}
    for line, record in read_json_lines(path, "one JSON object per line", record=True):
        _ledger.check_detail_record(record, str(path), line, keyed=True)
        if record.get("replayed"):
            out[(str(record["case_id"]), str(record["repeat_id"]))] = RowDetail.of_dict(record)
    return out


def _receipt_details(task: LedgerTask) -> dict[RowKey, RowDetail]:
    out = {}
    for key, path in task.receipt_index.items():
        receipt = read_json(path, "a receipt JSON object", record=True)
        summary = receipt.get("summary") if isinstance(receipt, Mapping) else None
        if summary is not None and not isinstance(summary, Mapping):
            raise DataError(ErrorCode.WRONG_TYPE, "a JSON object", file=str(path), field="summary",
                            got=type(summary).__name__)
        decision = (summary or {}).get("decision")
        if decision is not None:
            _ledger.check_detail_record(decision, str(path), None, keyed=False)
        if isinstance(decision, dict) and "reason" in decision:
            out[key] = RowDetail.of_dict(decision)
    return out


def _replayed_details(assets: Assets, options: ControllerOptions, rows: Sequence[PredictionRow],
                      cases: Mapping[str, Case], index: Mapping[RowKey, Path]) -> dict[RowKey, RowDetail]:
    if not rows:
        return {}
    _, decisions = replay_by_repeat(assets.controller(options), rows, cases, index, name="review:details")
    return {(r.case_id, r.repeat_id): RowDetail.of_decision(d) for r, d in zip(rows, decisions)}


def _artifact_set(artifact: Artifact, want_details: bool, cache: _CasesCache) -> LedgerSet:
    by_phase = {}
    for phase in (SELECT, CONFIRM):
        key = artifact.cases_path(phase).resolve()
        if key not in cache:
            cache[key] = dict(artifact.cases(phase))
        by_phase[phase] = cache[key]
    tasks = {}
    for t in artifact.tasks():
        cases = by_phase[t.phase]
        rows = read_predictions(t.predictions_path)
        _ledger.check_catalog(rows, artifact.assets.catalog.ids, str(t.predictions_path))
        for r in rows:
            if r.case_id not in cases:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"a case of the {t.phase} file",
                                file=str(t.predictions_path), line=r.line, field="case_id", got=r.case_id)
        _unique_rows(rows, str(t.predictions_path))
        receipts = tuple(t.receipts())
        details: dict[RowKey, RowDetail] = {}
        task = LedgerTask(t.key, t.system, rows, cases, t.path, receipts, t.manifest(), details,
                          artifact.cases_path(t.phase))
        if want_details and t.system.uses_controller:
            details.update(_replayed_details(artifact.assets, ControllerOptions.for_system(t.system), rows, cases,
                                             task.receipt_index))
        tasks[t.key] = task
    return LedgerSet(artifact.root / "experiments" / "results", "artifact", tasks, artifact.assets,
                     {"artifact": str(artifact.root)})


def load_many(paths: Sequence[str | Path], *, cases: str | Path | None = None, assets: Assets | None = None,
              details: bool = True) -> LedgerSet:
    """One ledger set from several roots (task keys prefixed by each root's folder name when there are several)."""
    if not paths:
        raise DataError(ErrorCode.EMPTY_VALUE, "at least one ledger directory", field="ledger")
    sets = [load_ledgers(p, cases=cases, assets=assets, details=details) for p in paths]
    if len(sets) == 1:
        return sets[0]
    names = [Path(p).resolve().name for p in paths]
    if len(set(names)) != len(names):
        raise DataError(ErrorCode.DUPLICATE_ID, "ledger directories with distinct folder names", got=names,
                        field="ledger")
    tasks = {}
    for name, s in zip(names, sets):
        for key, task in s.tasks.items():
            new_key = name if key == "." else f"{name}/{key}"
            tasks[new_key] = replace(task, key=new_key)
    return LedgerSet(Path(paths[0]).resolve().parent, "runs", tasks, assets)


__all__ = ["SHADOW_KEY", "SHADOW_MANIFEST", "LedgerSet", "LedgerTask", "RowDetail", "check_state_schema",
           "controller_overrides", "gold_sha256", "load_ledgers", "load_many", "receipt_index", "replay_by_repeat"]
