"""Shadow replay: every recorded proposal re-decided under candidate assets and options, with no model call.

For each result folder of a :class:`~routebr_kit.review.ledgers.LedgerSet`:

* **controller rows** (routebr, a_state, a_ground) are replayed through a controller built from the candidate
  assets by the one replay function, :func:`routebr_kit.runs.replay.replay_rows`, on the cases *as the candidate
  release would present them* (a registry edit removes or rewrites entities in each case's candidate list);
* **baseline rows** (b1, b2) are model-decided routes: they are kept as recorded.

A replay is exact only when the model would have seen the same input.  Rows where that is not so are *flagged*,
never silently passed off as exact (:class:`ShadowFlag`): a candidate list changed by a registry edit, a catalog
edit visible in the prompt, a changed prompt stage the row used, the rule table a B2 prompt embeds, or a call the
candidate options need that the ledger never recorded.  Flagged rows still carry the replayed decision (what the
controller would do if the model answered as before), so the diff can show them, but ``needs_live_rerun`` says
they are an estimate.

:func:`write_shadow` writes normal run directories (``predictions.csv``, ``run_manifest.json``, optionally
``raw/<case_id>.json`` receipts; for an artifact one per published result folder at the same relative path), each
with a ``shadow_rows.jsonl`` of per-row flags and decision details, and a top-level ``shadow_manifest.json`` naming
the base and candidate asset hashes.  A candidate identical to the base gives zero
changed decisions (tested).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.calls import FailureKind
from ..core.controller import Controller, ControllerOptions, Decision
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_json
from ..core.records import Entity, RouteRequest, System, Terminal
from ..evaluation.metrics import calls_of
from ..store.assets import Assets
from ..store.cases import Case
from ..store.files import read_json
from ..store.ledger import MANIFEST, RAW, PredictionRow, write_json_atomic, write_predictions
from .assets import AssetEdit, rules_prompt_view
from .ledgers import (
    SHADOW_KEY,
    SHADOW_MANIFEST,
    SHADOW_ROWS,
    LedgerSet,
    LedgerTask,
    RowDetail,
    check_state_schema,
    controller_overrides,
    gold_sha256,
    replay_by_repeat,
)


class ShadowFlag(str, enum.Enum):
    """Why a shadow-replayed row is not exact under the candidate release (it needs a live re-run)."""

    CANDIDATES_CHANGED = "CANDIDATES_CHANGED"  # registry edit: the case's candidate list (in the prompt) changed
    CATALOG_IN_PROMPT_CHANGED = "CATALOG_IN_PROMPT_CHANGED"  # catalog edit visible in every prompt
    PROMPT_STAGE_CHANGED = "PROMPT_STAGE_CHANGED"  # the instruction of a stage this row called changed
    RULES_IN_PROMPT_CHANGED = "RULES_IN_PROMPT_CHANGED"  # B2 sees the rule table
    UNRECORDED_CALL = "UNRECORDED_CALL"  # the candidate options ask for a call the ledger never recorded


#: Option names ``--options`` accepts (controller options; the fallback is a bounded terminal).
_OPTION_NAMES = ("fallback", "enforce_state", "enable_grounding", "repair")

_STAGE_OF_SYSTEM = {System.ROUTEBR: "ROUTEBR", System.A_STATE: "ROUTEBR", System.A_GROUND: "ROUTEBR",
                    System.B1_DIRECT: "B1_DIRECT", System.B2_DIRECT_GUARD: "B2_DIRECT_GUARD"}


def parse_options(items: Sequence[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """``["fallback=DEFER", "repair=false"]`` (or a mapping) → validated controller option overrides."""
    if not items:
        return {}
    pairs: list[tuple[str, Any]] = []
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        for item in items:
            name, sep, value = str(item).partition("=")
            if not sep or not name.strip():
                raise DataError(ErrorCode.INVALID_VALUE, "NAME=VALUE", got=item, field="options")
            pairs.append((name.strip(), value.strip()))
    out: dict[str, Any] = {}
    for name, value in pairs:
        if name not in _OPTION_NAMES:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(_OPTION_NAMES), got=name, field="options")
        if name in out:
            raise DataError(ErrorCode.DUPLICATE_ID, "each option at most once", got=name, field="options")
        if name == "fallback":
            try:
                out[name] = value if isinstance(value, Terminal) else Terminal(str(value).upper())
            except ValueError:
                raise DataError(ErrorCode.UNKNOWN_ENUM, "a terminal (CLARIFY, DEFER, HANDOFF, REJECT)", got=value,
                                field="options.fallback") from None
        elif isinstance(value, bool):
            out[name] = value
        elif str(value).lower() in ("true", "false"):
            out[name] = str(value).lower() == "true"
        else:
            raise DataError(ErrorCode.WRONG_TYPE, "true or false", got=value, field=f"options.{name}")
    ControllerOptions(**out)  # validates (a DISPATCH fallback is refused here)
    return out


def _options_view(options: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (v.value if isinstance(v, Terminal) else v) for k, v in options.items()}


# --------------------------------------------------------------------------------------------- cases under a registry


def rebase_cases(cases: Mapping[str, Case], edit: AssetEdit) -> tuple[dict[str, Case], frozenset[str]]:
    """Every case under the candidate registry, and the IDs of the cases whose candidate list changed.

    A case's candidate list as the candidate registry presents it: removed entities dropped, modified ones
    rewritten from the candidate registry.  Additions never enter an existing list (the list is the case's input;
    the registry only bounds it)."""
    changes, registry = edit.registry_changed, edit.candidate_assets.registry
    if not changes:
        return dict(cases), frozenset()

    def rebased(e: Entity) -> Entity:
        if changes.get(e.object_id) != "modified" or registry is None:
            return e
        new = registry[e.object_id]
        return Entity(new.object_id, new.object_type, new.display_name, new.aliases, new.attributes)

    out, changed = {}, set()
    for case_id, case in cases.items():
        r = case.request
        new = tuple(rebased(e) for e in r.candidates if changes.get(e.object_id) != "removed")
        if [e.prompt_view() for e in new] != [e.prompt_view() for e in r.candidates]:
            changed.add(case_id)
            case = replace(case, request=RouteRequest(r.request_id, r.utterance, r.history, r.state, new))
        out[case_id] = case
    return out, frozenset(changed)


# --------------------------------------------------------------------------------------------- replay


@dataclass(frozen=True, slots=True)
class ShadowRow:
    """One source row re-decided under the candidate release."""

    source: PredictionRow
    row: PredictionRow
    decision: Decision | None  # None for baseline rows (kept as recorded)
    flags: tuple[ShadowFlag, ...] = ()  # any flag: the row needs a live re-run

    @property
    def changed(self) -> bool:
        """The emitted decision differs (final path, boundary or dispatched object)."""
        a, b = self.source, self.row
        return (a.pred_final_path, a.pred_boundary, a.strict_path) != (b.pred_final_path, b.pred_boundary,
                                                                        b.strict_path)


@dataclass(frozen=True)
class ShadowTask:
    source: LedgerTask
    rows: tuple[ShadowRow, ...]
    cases: Mapping[str, Case]  # the cases under the candidate release

    @property
    def key(self) -> str:
        return self.source.key

    @property
    def flagged(self) -> tuple[ShadowRow, ...]:
        return tuple(r for r in self.rows if r.flags)

    def flag_records(self) -> list[dict[str, Any]]:
        """The flagged rows as a run manifest's ``shadow.needs_live_rerun`` lists them."""
        return [{"case_id": r.row.case_id, "repeat_id": r.row.repeat_id, "flags": [f.value for f in r.flags]}
                for r in self.flagged]


@dataclass(frozen=True)
class ShadowResult:
    edit: AssetEdit
    options: Mapping[str, Any]
    tasks: tuple[ShadowTask, ...]
    source_root: Path
    #: the review's one replay of both sides this result is the candidate view of
    replay: ReviewReplay | None = field(default=None, repr=False, compare=False)

    @property
    def rows(self) -> int:
        return sum(len(t.rows) for t in self.tasks)

    @property
    def changed(self) -> int:
        return sum(r.changed for t in self.tasks for r in t.rows)

    @property
    def needs_live_rerun(self) -> int:
        return sum(len(t.flagged) for t in self.tasks)

    def summary(self) -> list[dict[str, Any]]:
        return [{"task": t.key, "system": t.source.system.value, "rows": len(t.rows),
                 "changed": sum(r.changed for r in t.rows), "needs_live_rerun": len(t.flagged)} for t in self.tasks]


def row_flags(task: LedgerTask, row: PredictionRow, decision: Decision | None, edit: AssetEdit,
              candidates_changed: frozenset[str], rules_in_prompt: bool) -> tuple[ShadowFlag, ...]:
    """Why ``row`` (replayed as ``decision``, or as recorded when ``None``) is not exact under the candidate."""
    flags = []
    if row.case_id in candidates_changed:
        flags.append(ShadowFlag.CANDIDATES_CHANGED)
    if edit.catalog_prompt_changed:
        flags.append(ShadowFlag.CATALOG_IN_PROMPT_CHANGED)
    stages = set(edit.prompt_stages_changed)
    repaired = calls_of(row) > 1 or (decision is not None and decision.repair_attempted)
    if _STAGE_OF_SYSTEM[task.system] in stages or ("REPAIR" in stages and repaired):
        flags.append(ShadowFlag.PROMPT_STAGE_CHANGED)
    if rules_in_prompt and task.system is System.B2_DIRECT_GUARD:
        flags.append(ShadowFlag.RULES_IN_PROMPT_CHANGED)
    if decision is not None and decision.failure is not None and decision.failure.kind is FailureKind.CACHE_MISS:
        flags.append(ShadowFlag.UNRECORDED_CALL)
    return tuple(flags)


def _task_controller(task: LedgerTask, assets: Assets, options: Mapping[str, Any] | None = None) -> Controller:
    """The controller a controller task is replayed with: ``assets``, the system's options, the options the run
    recorded (a kit run's fallback, repair, ...) and then ``options`` (the review's overrides)."""
    recorded = controller_overrides(task.manifest)
    return assets.controller(ControllerOptions.for_system(task.system, **{**recorded, **(options or {})}))


def replay_task(task: LedgerTask, controller: Controller, cases: Mapping[str, Case],
                name: str = "shadow") -> tuple[tuple[PredictionRow, ...], tuple[Decision, ...]]:
    """Every row of a controller task re-decided by ``controller`` on ``cases`` from its recorded replies: the one
    replay function, once per ``repeat_id`` with that repeat's receipts (:func:`~.ledgers.replay_by_repeat`)."""
    return replay_by_repeat(controller, task.rows, cases, task.receipt_index, name=f"{name}:{task.key}")


#: ``(task key, base controller identity) -> base decisions``: a caller that reviews many edits against one base
#: may pass one dict (``cache=``) to decide the base once for all of them.
BaseCache = dict[tuple[Any, ...], tuple[Decision, ...]]


class ReviewReplay:
    """One replay of each side of a release review, of which the impact selection
    (:func:`~routebr_kit.review.impact`), the shadow replay (:func:`shadow_replay`) and the paired diff (of
    :func:`shadow_ledgers`) are views: per controller task, the **base** release's controller on the cases as
    recorded and the **candidate**'s (with the review's ``options``) on the cases under the candidate release
    (:func:`rebase_cases`), each replayed from the recorded replies at most once — the first time a view asks."""

    def __init__(self, ledgers: LedgerSet, edit: AssetEdit, options: Mapping[str, Any] | None = None, *,
                 cache: BaseCache | None = None) -> None:
        self.ledgers, self.edit, self.options = ledgers, edit, dict(options or {})
        for task in ledgers.tasks.values():
            check_state_schema(task, edit.base_assets)  # the base is what the run ran under
        self.rules_in_prompt = rules_prompt_view(edit.base_assets) != rules_prompt_view(edit.candidate_assets)
        self._cache: BaseCache = cache if cache is not None else {}
        self._rebased: dict[int, tuple[Mapping[str, Case], frozenset[str]]] = {}
        self._controllers: dict[str, tuple[Controller, Controller]] = {}
        self._candidate: dict[str, tuple[tuple[PredictionRow, ...], tuple[Decision, ...]]] = {}

    def rebased(self, task: LedgerTask) -> tuple[Mapping[str, Case], frozenset[str]]:
        """The task's cases under the candidate release, and the IDs of those whose candidate list changed."""
        found = self._rebased.get(id(task.cases))
        if found is None:
            found = self._rebased[id(task.cases)] = rebase_cases(task.cases, self.edit)
        return found

    def controllers(self, task: LedgerTask) -> tuple[Controller, Controller]:
        """The base and the candidate controller of a controller task (:func:`task_controller`)."""
        found = self._controllers.get(task.key)
        if found is None:
            found = self._controllers[task.key] = (_task_controller(task, self.edit.base_assets),
                                                   _task_controller(task, self.edit.candidate_assets, self.options))
        return found

    def base(self, task: LedgerTask) -> tuple[Decision, ...]:
        """The base side: every row of a controller task decided by the base controller, replayed once."""
        base_c, assets = self.controllers(task)[0], self.edit.base_assets
        key = (task.key, id(task), id(assets.catalog), id(assets.policy), base_c.options)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = replay_task(task, base_c, task.cases, "review:base")[1]
        return found

    def candidate(self, task: LedgerTask) -> tuple[tuple[PredictionRow, ...], tuple[Decision, ...]]:
        """The candidate side: every row of a controller task re-decided under the candidate, replayed once."""
        found = self._candidate.get(task.key)
        if found is None:
            found = self._candidate[task.key] = replay_task(task, self.controllers(task)[1], self.rebased(task)[0],
                                                            "review:candidate")
        return found


def review_replay(ledgers: LedgerSet, edit: AssetEdit, options: Mapping[str, Any] | None = None,
                  replay: ReviewReplay | None = None, *, cache: BaseCache | None = None) -> ReviewReplay:
    """``replay`` checked to be of these ledgers, edit and options (a typed error otherwise), or a new
    :class:`ReviewReplay` of them."""
    if replay is None:
        return ReviewReplay(ledgers, edit, options, cache=cache)
    if ledgers is not replay.ledgers or edit is not replay.edit or dict(options or {}) != replay.options:
        raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the replay of the same ledgers, edit and options",
                        field="replay")
    return replay


def shadow_replay(ledgers: LedgerSet, edit: AssetEdit, options: Mapping[str, Any] | None = None, *,
                  replay: ReviewReplay | None = None) -> ShadowResult:
    """Every result folder of ``ledgers`` under the candidate release of ``edit`` (see the module docstring), no
    model call: the candidate side of ``replay`` (one is made when none is given)."""
    replay = review_replay(ledgers, edit, options, replay)
    tasks = []
    for task in ledgers.tasks.values():
        cases, candidates_changed = replay.rebased(task)
        pairs = zip(*replay.candidate(task)) if task.system.uses_controller else ((r, None) for r in task.rows)
        tasks.append(ShadowTask(task, tuple(
            ShadowRow(src, new, d, row_flags(task, src, d, edit, candidates_changed, replay.rules_in_prompt))
            for src, (new, d) in zip(task.rows, pairs)), cases))
    return ShadowResult(edit, replay.options, tuple(tasks), ledgers.root, replay)


# --------------------------------------------------------------------------------------------- writing


def _responses(task: LedgerTask, row: PredictionRow, decision: Decision | None) -> list[dict[str, Any]]:
    """The replies the shadow decision was made from, so a shadow output can itself be replayed."""
    receipt = task.receipt_index.get((row.case_id, row.repeat_id))
    if receipt is not None:
        return list(read_json(receipt, "a receipt JSON object", record=True).get("responses", []))
    stage = _STAGE_OF_SYSTEM[task.system]
    entries = [{"stage": stage, "content": row.proposal_output, "reported_model": "replay:predictions",
                "failure": None}]
    if decision is not None and decision.repair_attempted:
        entries.append({**entries[0], "stage": "REPAIR_" + stage})
    return entries


def _write_text(path: Path, text: str) -> None:
    # A shadow output is derived and reproducible from its inputs: per-task files are written whole but not fsynced
    # one by one; the top-level shadow_manifest.json, written last and atomically, marks the output complete.
    path.write_text(text, encoding="utf-8")


def _row_record(r: ShadowRow) -> dict[str, Any]:
    d = r.decision
    rule = d.rule if d is not None else None
    return {"case_id": r.row.case_id, "repeat_id": r.row.repeat_id, "flags": [f.value for f in r.flags],
            "replayed": d is not None, "reason": d.reason.value if d is not None else None,
            "rule": None if rule is None else {"rule_id": rule.rule_id, "version": rule.version,
                                               "decision": rule.decision.value},
            "object_resolution": d.object_resolution.value if d is not None else None,
            "repair_attempted": d.repair_attempted if d is not None else False,
            "state_errors": [] if d is None else [v.as_dict() for v in d.state_errors]}


def write_shadow(result: ShadowResult, out_dir: str | Path, *, receipts: bool = False) -> Path:
    """Write every shadow task as a run directory under ``out_dir`` plus ``shadow_manifest.json``; returns it.

    Each run directory holds ``predictions.csv``, ``run_manifest.json`` (with a ``shadow`` section) and
    ``shadow_rows.jsonl``; ``receipts=True`` adds a full receipt per row under ``raw/`` (the decision record with its
    trace, and the replies it was made from, so the output can itself be shadow-replayed from receipts).
    """
    out = Path(out_dir)
    if (out / SHADOW_MANIFEST).exists() or any(out.glob("**/predictions.csv")):
        raise DataError(ErrorCode.INVALID_VALUE, "an output directory without ledgers", file=str(out))
    base_hashes, cand_hashes = result.edit.base.hashes(), result.edit.candidate.hashes()
    a = result.edit.candidate_assets
    for task in result.tasks:
        folder = out / task.key
        folder.mkdir(parents=True, exist_ok=True)
        write_predictions(folder / "predictions.csv", [r.row for r in task.rows])
        _write_text(folder / SHADOW_ROWS, "".join(json.dumps(_row_record(r), ensure_ascii=False,
                                                             separators=(",", ":")) + "\n" for r in task.rows))
        if receipts:
            (folder / RAW).mkdir(exist_ok=True)
            # <case_id>.json (the run layout); <case_id>.r<repeat_id>.json when a task holds several repeats of a
            # case, so no receipt overwrites another (each records its repeat)
            several = len({r.row.repeat_id for r in task.rows}) > 1
            for r in task.rows:
                name = f"{r.row.case_id}.r{r.row.repeat_id}.json" if several else f"{r.row.case_id}.json"
                _write_text(folder / RAW / name, json.dumps({
                    "case_id": r.row.case_id, "system": task.source.system.value, "repeat_id": r.row.repeat_id,
                    "backend": "shadow", "shadow": _row_record(r),
                    "responses": _responses(task.source, r.source, r.decision),
                    "summary": {"pred_final_path": r.row.pred_final_path,
                                "reason": None if r.decision is None else r.decision.reason.value,
                                "decision": None if r.decision is None else r.decision.as_dict()}},
                    ensure_ascii=False, separators=(",", ":")) + "\n")
        source_manifest = task.source.manifest
        rows = [r.row for r in task.rows]
        manifest = {
            "kit_version": __version__, "system": task.source.system.value, "split": task.source.split,
            "repeat_id": rows[0].repeat_id if rows else "0", "backend": "shadow", "simulated": False,
            "options": {**_base_options(task.source.system, task.source.manifest), **_options_view(result.options)},
            "hashes": {"catalog": a.catalog.sha256, "rules": a.policy.sha256,
                       "state_schema": a.policy.state_schema.sha256 or None,
                       "registry": a.registry.sha256 if a.registry else None,
                       "prompts": cand_hashes["prompts"],
                       "cases": sha256_json(sorted(task.cases))},
            "case_ids": [r.case_id for r in rows], "status": "complete",
            "summary": {"cases": len(rows), "fail_closed": sum(r.fallback_used for r in rows), "calls": 0},
            SHADOW_KEY: {
                "source": str(task.source.path), "source_key": task.key,
                "source_backend": source_manifest.get("backend") or source_manifest.get("profile_name"),
                "cases_path": str(task.source.cases_path.resolve()) if task.source.cases_path else None,
                "gold_sha256": gold_sha256(rows, task.source.cases), "base_hashes": base_hashes,
                "candidate_hashes": cand_hashes, "live_calls": 0,
                "changed_decisions": sum(r.changed for r in task.rows),
                "needs_live_rerun": task.flag_records(),
            },
        }
        _write_text(folder / MANIFEST, json.dumps(manifest, ensure_ascii=False, indent=1) + "\n")
    top = {
        "kit_version": __version__, "kind": "shadow", "source": str(result.source_root), "live_calls": 0,
        "edit": result.edit.as_dict(), "options": _options_view(result.options),
        "base_hashes": base_hashes, "candidate_hashes": cand_hashes,
        "rows": result.rows, "changed_decisions": result.changed, "needs_live_rerun": result.needs_live_rerun,
        "tasks": result.summary(),
    }
    write_json_atomic(out / SHADOW_MANIFEST, top)
    return out / SHADOW_MANIFEST


def _base_options(system: System, manifest: Mapping[str, Any]) -> dict[str, Any]:
    if not system.uses_controller:
        return {}
    o = ControllerOptions.for_system(system, **controller_overrides(manifest))
    return {"fallback": o.fallback.value, "enforce_state": o.enforce_state, "enable_grounding": o.enable_grounding,
            "repair": o.repair}


def trace_pair(ledgers: LedgerSet, shadow: ShadowResult, task_key: str, case_id: str,
               repeat_id: str = "0"):
    """A changed case's two traces side by side: the base decision (replayed under the base assets, as recorded:
    the review's own base side when ``shadow`` came from a review of these ``ledgers``) and the shadow decision
    under the candidate; a DataFrame of steps."""
    import pandas as pd

    from ..runs.replay import replay_rows

    task = ledgers.tasks[task_key]
    at = next(i for i, r in enumerate(task.rows) if (r.case_id, r.repeat_id) == (case_id, repeat_id))
    if shadow.replay is not None and shadow.replay.ledgers is ledgers:
        base = shadow.replay.base(task)[at]  # (replayed once per review, whoever asks first)
    else:
        base = replay_rows(ledgers.assets.controller(ControllerOptions.for_system(task.system)), [task.rows[at]],
                           task.cases, receipts=task.receipts).decisions[0]
    shadow_task = next(t for t in shadow.tasks if t.key == task_key)
    cand = next(r.decision for r in shadow_task.rows if (r.row.case_id, r.row.repeat_id) == (case_id, repeat_id))

    def steps(d) -> dict[str, str]:
        return {e.step.value: f"{e.outcome} — {e.detail}" if e.detail else e.outcome for e in d.trace()}

    a, b = steps(base), steps(cand)
    order = list(dict.fromkeys([*a, *b]))
    return pd.DataFrame({"step": order, "base": [a.get(k, "") for k in order],
                         "candidate": [b.get(k, "") for k in order]})


def shadow_ledgers(result: ShadowResult) -> LedgerSet:
    """The shadow result as a ledger set (in memory), ready for :func:`routebr_kit.review.diff.diff_ledgers`."""
    tasks = {}
    for t in result.tasks:
        details = {(r.row.case_id, r.row.repeat_id): RowDetail.of_decision(r.decision) for r in t.rows
                   if r.decision is not None}
        tasks[t.key] = LedgerTask(t.key, t.source.system, tuple(r.row for r in t.rows), t.source.cases,
                                  t.source.path, (), {SHADOW_KEY: {"needs_live_rerun": t.flag_records()}}, details,
                                  t.source.cases_path)
    return LedgerSet(Path("<shadow>"), "shadow", tasks, result.edit.candidate_assets)


__all__ = ["SHADOW_ROWS", "BaseCache", "ReviewReplay", "ShadowFlag", "ShadowResult", "ShadowRow", "ShadowTask",
           "parse_options", "rebase_cases", "replay_task", "review_replay", "row_flags", "shadow_ledgers",
           "shadow_replay", "trace_pair", "write_shadow"]
