"""Change-impact selection: which recorded rows an asset (or option) edit can affect, computed without any model call.

**The controller set** — exact, by construction. For every controller row (routebr, a_state, a_ground) the recorded
replies are decided on each side of the review's one replay (:class:`~routebr_kit.review.shadow.ReviewReplay`, whose
candidate side *is* the shadow replay): once by the base release's controller on the cases as recorded, once by the
candidate's controller (candidate catalog, rules, state schema and registry-rebased candidate lists, with the
``options`` a shadow would get) — and a row is selected when anything the controller reads or concludes for it
differs (:class:`ControllerView`, stage by stage): the state-schema verdict and which fields fail (checked first,
before any model call), the contract check and repair, the winning rule (ID, version, decision, priority,
condition), the object gate, and the emitted terminal, action, object and reason (the fallback option included). The
first differing stage is the row's ``why`` (the diff's stage names).

What is exact, precisely (the domain of the theorem): *given the recorded replies*, the shadow replay of a row under
the same edit and options produces the candidate decision computed here: within one review it is the same replay,
and across calls the same function on the same inputs. Hence (i) **sound**: every row whose shadow decision (final
path, boundary, dispatched object) changes is selected; (ii) **exact** for rule, state-schema and option edits: a
selected row's decision record (:meth:`Decision.as_dict <routebr_kit.core.decision.Decision.as_dict>` without the
asset hashes) differs, and every row whose record differs is selected. Both are property-tested against
:func:`shadow_replay` over generated edits (``tests/test_impact_sound.py``). Outside that domain — a catalog edit
visible in the prompt, a registry edit that changes a candidate list, a prompt edit — the model would see a
different input, so the recorded replies no longer say what it would answer: those rows form the **live re-run
slice** (flagged by the shadow's own rule, :func:`~routebr_kit.review.shadow.row_flags`) and the controller set is
exact only for the recorded replies. B1/B2 rows are model-decided (the shadow keeps them as recorded): they are
never in the controller set; a B2 row joins the live slice when its prompt's rule table changes.

Per edit class (:class:`~routebr_kit.review.assets.EditClass`) the report gives the paper's regression slice and
the affected set: **rules / state_schema** — the controller set; **registry** — the rows whose candidate list
changes (⊇ the controller set's registry effect) plus the controller set; **catalog** — the controller set plus
the rows whose prompt changed; **prompts** — the rows that called a changed stage; **profile / adapter** — no
recorded row can show the effect, so the adapter tests to run.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..core.controller import Controller, Decision
from ..core.decision import jsonable
from ..evaluation.metrics import calls_of
from ..store.ledger import PredictionRow
from .assets import AssetEdit, AssetFiles, EditClass
from .diff import ChangeStage
from .ledgers import LedgerSet, LedgerTask
from .shadow import BaseCache, ReviewReplay, ShadowFlag, review_replay, row_flags

#: The paper's regression slices (§III-D), per edit class.
PAPER_SLICES: Mapping[EditClass, str] = {
    EditClass.RULES: "FLIP regression: every state-flip pair",
    EditClass.REGISTRY: "ENTITY regression: every object-grounding case",
    EditClass.CATALOG: "MAIN plus the known account-analysis / information-lookup confusion cases",
    EditClass.PROMPTS: "MAIN plus the known account-analysis / information-lookup confusion cases",
    EditClass.STATE_SCHEMA: "none named by the paper (it has no state-schema asset): every controller row",
    EditClass.PROFILE_ADAPTER: "schema, response-identity, timeout, repair and fail-closed adapter tests",
}
#: The confusable pair of actions the paper names.
_CONFUSION_ACTIONS = ("A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS")
#: What an adapter edit must pass: (property, pytest node ID).
ADAPTER_TESTS: tuple[tuple[str, str], ...] = (
    ("schema", "tests/test_backend_openai.py::test_happy_path_sends_the_contract_body_and_records_the_reply"),
    ("schema", "tests/test_backend_profiles.py"),
    ("response identity",
     "tests/test_backend_openai.py::test_wrong_or_missing_model_identity_fails_closed_in_the_adapter"),
    ("response identity", "tests/test_backend_openai.py::test_accepted_reported_aliases_pass"),
    ("timeout", "tests/test_backend_openai.py::test_timeout_is_retried_then_fails_closed_with_the_timeout_reason"),
    ("timeout", "tests/test_backend_openai.py::test_429_then_success_honours_retry_after"),
    ("repair", "tests/test_backend_openai.py::test_malformed_content_takes_the_repair_path_with_the_target_schema"),
    ("fail-closed", "tests/test_backend_openai.py::test_persistent_500_becomes_a_recorded_fail_closed_terminal"),
    ("fail-closed", "tests/test_backend_openai.py::test_malformed_response_fails_closed"),
    ("fail-closed", "tests/test_backend_openai.py::test_connection_refused_is_a_transport_failure"),
    ("fail-closed", "tests/test_runner_server.py"),
)


def artifact_asset_files(artifact_root: str | Path) -> AssetFiles:
    """The published release: ``data/`` assets plus ``experiments/prompts.json``."""
    root = Path(artifact_root)
    files = AssetFiles.from_dir(root / "data")
    prompts = root / "experiments" / "prompts.json"
    return files.replace(prompts=prompts) if prompts.is_file() else files


@dataclass(frozen=True, slots=True)
class AffectedRow:
    task: str
    system: str
    case_id: str
    repeat_id: str
    split: str
    why: str
    base_rule: str | None = None
    candidate_rule: str | None = None
    base_reason: str | None = None
    candidate_reason: str | None = None
    base_final_path: str | None = None
    candidate_final_path: str | None = None
    calls: int = 0
    tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Cost:
    rows: int
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _cost(rows: Sequence[PredictionRow]) -> Cost:
    priced = [r.estimated_cost_usd for r in rows if r.estimated_cost_usd]
    try:
        usd = round(sum(float(p) for p in priced), 6) if priced and len(priced) == len(rows) else None
    except ValueError:
        usd = None
    return Cost(len(rows), sum(calls_of(r) for r in rows), sum(r.input_tokens for r in rows),
                sum(r.output_tokens for r in rows), usd)


@dataclass(frozen=True)
class ImpactReport:
    edit: AssetEdit
    exact: Mapping[EditClass, tuple[AffectedRow, ...]]
    live_rerun: tuple[AffectedRow, ...]
    live_cost: Cost
    paper_slices: Mapping[EditClass, tuple[tuple[str, str, str], ...]] = field(default_factory=dict)
    adapter_tests: tuple[tuple[str, str], ...] = ()
    rows: int = 0
    #: the controller set of the whole edit (module docstring): rows the controller decides differently
    controller: tuple[AffectedRow, ...] = ()
    options: Mapping[str, Any] = field(default_factory=dict)

    def selected(self, cls: EditClass | None = None) -> set[tuple[str, str, str]]:
        """``(task, case_id, repeat_id)`` of the affected set of one class, or of every class plus the controller
        set (``None``; an option-only edit has no class but may have a controller set)."""
        chosen = [cls] if cls is not None else list(self.exact)
        keys = {(r.task, r.case_id, r.repeat_id) for c in chosen for r in self.exact.get(c, ())}
        if cls is None:
            keys |= self.controller_keys()
        return keys

    def controller_keys(self) -> set[tuple[str, str, str]]:
        return {(r.task, r.case_id, r.repeat_id) for r in self.controller}

    def stages(self) -> dict[str, int]:
        """Controller-set rows per first differing stage."""
        return dict(Counter(r.why for r in self.controller))

    def summary(self) -> list[dict[str, Any]]:
        out = []
        for cls in self.edit.classes:
            slice_keys = set(self.paper_slices.get(cls, ()))
            exact = {(r.task, r.case_id, r.repeat_id) for r in self.exact.get(cls, ())}
            out.append({"edit": cls.value, "paper slice": PAPER_SLICES[cls],
                        "paper slice rows": len(slice_keys) if cls is not EditClass.PROFILE_ADAPTER
                        else f"{len(self.adapter_tests)} tests",
                        "exact affected rows": len(exact), "outside paper slice": len(exact - slice_keys)
                        if cls is not EditClass.PROFILE_ADAPTER else 0,
                        "controller decides differently": len(exact & self.controller_keys())})
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"edit": self.edit.as_dict(), "rows": self.rows, "summary": self.summary(),
                "exact": {c.value: [r.as_dict() for r in rows] for c, rows in self.exact.items()},
                "controller": [r.as_dict() for r in self.controller], "controller_stages": self.stages(),
                "options": {k: getattr(v, "value", v) for k, v in self.options.items()},
                "live_rerun": [r.as_dict() for r in self.live_rerun], "live_cost": self.live_cost.as_dict(),
                "paper_slices": {c.value: [list(k) for k in keys] for c, keys in self.paper_slices.items()},
                "adapter_tests": [{"property": p, "test": t} for p, t in self.adapter_tests]}


def _rule_text(r: Any) -> str | None:
    return None if r is None else f"{r.rule_id}@{r.version}->{r.decision.value}"


def _strict(value: Any) -> str:
    """A type-strict text of a value (``false`` and ``0`` differ, as the controller's checks say they do)."""
    return json.dumps(jsonable(value), sort_keys=True, ensure_ascii=False)


@dataclass(frozen=True, slots=True)
class ControllerView:
    """What the controller read and concluded for one row, per pipeline stage (everything a
    :class:`~routebr_kit.core.decision.Decision` records that a release can change; never the asset hashes)."""

    state_schema: tuple[Any, ...]  # enforced?, violations (code, field, value)
    contract: tuple[Any, ...]  # outputs read?, errors, repair attempted/errors, failure, accepted proposal
    rule: tuple[Any, ...] | None  # winning rule: ID, version, decision, priority, condition (type-strict)
    object_gate: tuple[Any, ...]  # grounding enabled?, resolution, object
    terminal: tuple[Any, ...]  # terminal, action, object, reason

    @classmethod
    def of(cls, d: Decision, rules: dict[int, tuple[Any, ...]]) -> ControllerView:
        """The view of one decision.  The outputs themselves are the recorded replies, the same on both sides of
        a review: what can differ is whether each was read (``None``: the state failed first, or no repair was
        asked for) and what the contract made of it.  ``rules`` memoizes the rule views (a few rules decide
        every row)."""
        rule, failure, log, proposal = d.rule, d.failure, d.log, d.proposal
        rule_view = None if rule is None else rules.get(id(rule))
        if rule is not None and rule_view is None:
            rule_view = rules[id(rule)] = (rule.rule_id, rule.version, rule.decision.value, rule.priority,
                                           _strict(dict(rule.condition.source)))
        contract: tuple[Any, ...] = (d.first_output is None, proposal is None or (
            proposal.action_id, proposal.object_id, proposal.topk))
        if log is not None:  # an irregular first pass: its errors, the repair and any failure
            contract += (tuple(_strict(e.as_dict()) for e in log.first_errors), log.repair_attempted,
                         log.repair_output is None, tuple(_strict(e.as_dict()) for e in log.repair_errors),
                         None if failure is None else (failure.kind.value, failure.message))
        return cls(
            (d.options.enforce_state, tuple((v.code.value, v.field, v.got) for v in d.state_errors)),
            contract,
            rule_view,
            (d.options.enable_grounding, d.object_resolution.value, d.object_id),
            (d.terminal.value, d.action_id, d.object_id, d.reason.value),
        )

    def first_difference(self, other: ControllerView) -> ChangeStage | None:
        """The first stage, in pipeline order, whose record differs (``None``: the controller decides alike)."""
        for stage, name in _VIEW_STAGES:
            if getattr(self, name) != getattr(other, name):
                return stage
        return None


_VIEW_STAGES = ((ChangeStage.STATE_SCHEMA, "state_schema"), (ChangeStage.CONTRACT, "contract"),
                (ChangeStage.RULE, "rule"), (ChangeStage.OBJECT_GATE, "object_gate"),
                (ChangeStage.TERMINAL, "terminal"))

def _same_controller_inputs(edit: AssetEdit, base: Controller, candidate: Controller, rebased: bool) -> bool:
    """Whether the candidate controller reads exactly what the base one reads (then no decision can differ)."""
    a, b = edit.base_assets, edit.candidate_assets

    def same(x: Any, y: Any) -> bool:  # one object, or loaded from byte-identical files
        return x is y or bool(x.sha256 and x.sha256 == y.sha256)

    return (not rebased and base.options == candidate.options and same(a.catalog, b.catalog)
            and same(a.policy, b.policy) and a.policy.state_schema.sha256 == b.policy.state_schema.sha256)


def _controller_affected(task: LedgerTask, replay: ReviewReplay) -> list[AffectedRow]:
    """The controller set of one task (see the module docstring): rows whose :class:`ControllerView` differs
    between the base decision and the candidate decision of the same recorded replies — the two sides of the
    review's one ``replay``."""
    if not task.system.uses_controller:
        return []
    base_c, cand_c = replay.controllers(task)
    if _same_controller_inputs(replay.edit, base_c, cand_c, bool(replay.rebased(task)[1])):
        return []
    base_d, cand_d = replay.base(task), replay.candidate(task)[1]
    out = []
    memo: dict[int, tuple[Any, ...]] = {}  # (the rules outlive this loop: their ids stay unique within it)
    for row, a, b in zip(task.rows, base_d, cand_d):
        stage = ControllerView.of(a, memo).first_difference(ControllerView.of(b, memo))
        if stage is not None:
            out.append(AffectedRow(task.key, task.system.value, row.case_id, row.repeat_id,
                                   task.cases[row.case_id].split.value, stage.value, _rule_text(a.rule),
                                   _rule_text(b.rule), a.reason.value, b.reason.value, a.final_path, b.final_path,
                                   calls_of(row), row.input_tokens + row.output_tokens))
    return out


def _paper_slice(cls: EditClass, ledgers: LedgerSet) -> tuple[tuple[str, str, str], ...]:
    confused: set[str] = set()
    if cls in (EditClass.CATALOG, EditClass.PROMPTS):
        for task in ledgers.tasks.values():
            for r in task.rows:
                gold = task.cases[r.case_id].gold.action
                if gold in _CONFUSION_ACTIONS and r.pred_action in _CONFUSION_ACTIONS and r.pred_action != gold:
                    confused.add(r.case_id)
    keys = []
    for task in ledgers.tasks.values():
        for r in task.rows:
            split = task.cases[r.case_id].split.value
            hit = {EditClass.RULES: split == "FLIP", EditClass.REGISTRY: split == "ENTITY",
                   EditClass.CATALOG: split == "MAIN" or r.case_id in confused,
                   EditClass.PROMPTS: split == "MAIN" or r.case_id in confused,
                   EditClass.STATE_SCHEMA: task.system.uses_controller}.get(cls, False)
            if hit:
                keys.append((task.key, r.case_id, r.repeat_id))
    return tuple(keys)


def impact(edit: AssetEdit, ledgers: LedgerSet | None = None, options: Mapping[str, Any] | None = None, *,
           cache: BaseCache | None = None, replay: ReviewReplay | None = None) -> ImpactReport:
    """Classify ``edit`` and select, in ``ledgers``, the rows it can affect (see the module docstring).  ``options``
    are controller option overrides, as :func:`~routebr_kit.review.shadow.shadow_replay` takes them; ``replay`` is
    the review's one replay of both sides (:class:`~routebr_kit.review.shadow.ReviewReplay`; one is made when none
    is given, its base side from ``cache`` when that holds it)."""
    options = dict(options or {})
    exact: dict[EditClass, dict[tuple[str, str, str], AffectedRow]] = {
        c: {} for c in edit.classes if c is not EditClass.PROFILE_ADAPTER}
    controller: list[AffectedRow] = []
    live: list[AffectedRow] = []
    live_rows: list[PredictionRow] = []
    slices: dict[EditClass, tuple[tuple[str, str, str], ...]] = {}
    total = 0

    def add(cls: EditClass, row: AffectedRow) -> None:
        if cls in exact:
            exact[cls].setdefault((row.task, row.case_id, row.repeat_id), row)

    if ledgers is not None:
        sides = review_replay(ledgers, edit, options, replay, cache=cache)
        rules_in_prompt = sides.rules_in_prompt
        for task in ledgers.tasks.values():
            total += len(task.rows)
            changed_lists = sides.rebased(task)[1]
            decided = _controller_affected(task, sides)
            controller.extend(decided)
            for row in decided:
                for cls in (EditClass.RULES, EditClass.STATE_SCHEMA, EditClass.CATALOG, EditClass.REGISTRY):
                    add(cls, row)
            for row in task.rows:
                affected = partial(AffectedRow, task.key, task.system.value, row.case_id, row.repeat_id,
                                   task.cases[row.case_id].split.value, calls=calls_of(row),
                                   tokens=row.input_tokens + row.output_tokens)
                if row.case_id in changed_lists:
                    add(EditClass.REGISTRY, affected("candidate list changes"))
                flags = row_flags(task, row, None, edit, changed_lists, rules_in_prompt)  # the shadow's own rule
                for cls, wanted in ((EditClass.CATALOG, ShadowFlag.CATALOG_IN_PROMPT_CHANGED),
                                    (EditClass.PROMPTS, ShadowFlag.PROMPT_STAGE_CHANGED)):
                    if wanted in flags:
                        add(cls, affected("prompt changes"))
                if flags:
                    live.append(affected("+".join(f.value for f in flags)))
                    live_rows.append(row)
        slices = {cls: _paper_slice(cls, ledgers) for cls in edit.classes if cls is not EditClass.PROFILE_ADAPTER}
    adapter = ADAPTER_TESTS if EditClass.PROFILE_ADAPTER in edit.classes else ()
    return ImpactReport(edit, {c: tuple(v.values()) for c, v in exact.items()}, tuple(live), _cost(live_rows),
                        slices, adapter, total, tuple(controller), options)


__all__ = ["ADAPTER_TESTS", "PAPER_SLICES", "AffectedRow", "BaseCache", "ControllerView", "Cost", "ImpactReport",
           "artifact_asset_files", "impact"]
