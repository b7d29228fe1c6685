"""Change-impact selection: which recorded cases an asset edit can affect, computed without any model call.

For each edit class (:class:`~routebr_kit.review.assets.EditClass`) the report gives the paper's regression slice
*and* the exact affected set:

* **rules** — the controller rows whose winning rule (ID, version or decision) differs between the base and the
  candidate program for their recorded ``(action, state)``.  This is exact: a row is selected iff its shadow-replayed
  decision goes through a different rule (property-tested), so every row whose final path changes is inside it and
  nothing is selected that cannot change.  B2 rows see the rule table in their prompt: they join the live slice.
* **registry** — the rows whose case's candidate list changes (an entity removed, or its prompt view rewritten):
  that is the only way a registry reaches a decision (the object check runs on the candidate list), and it changes
  the prompt, so these rows also need a live re-run.
* **catalog / prompts** — the rows whose prompt changed (every row for a prompt-visible catalog edit; the rows that
  called a changed stage for a prompt edit): the live re-run slice, with its call and token cost from the ledger.
* **profile / adapter** — no recorded row can show the effect; the adapter test list is what must run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..evaluation.metrics import calls_of
from ..store.ledger import PredictionRow
from .assets import AssetEdit, AssetFiles, EditClass, rules_prompt_view
from .ledgers import LedgerSet, LedgerTask
from .shadow import ShadowFlag, rebase_cases, row_flags

#: The paper's regression slices (§III-D), per edit class.
PAPER_SLICES: Mapping[EditClass, str] = {
    EditClass.RULES: "FLIP regression: every state-flip pair",
    EditClass.REGISTRY: "ENTITY regression: every object-grounding case",
    EditClass.CATALOG: "MAIN plus the known account-analysis / information-lookup confusion cases",
    EditClass.PROMPTS: "MAIN plus the known account-analysis / information-lookup confusion cases",
    EditClass.PROFILE_ADAPTER: "schema, response-identity, timeout, repair and fail-closed adapter tests",
}
#: The confusable pair of actions the paper names.
CONFUSION_ACTIONS = ("A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS")
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
    calls: int = 0
    tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"task": self.task, "system": self.system, "case_id": self.case_id, "repeat_id": self.repeat_id,
                "split": self.split, "why": self.why, "base_rule": self.base_rule,
                "candidate_rule": self.candidate_rule, "calls": self.calls, "tokens": self.tokens}


@dataclass(frozen=True, slots=True)
class Cost:
    rows: int
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"rows": self.rows, "calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "usd": self.usd}


def _cost(rows: Sequence[PredictionRow]) -> Cost:
    priced = [r.estimated_cost_usd for r in rows if r.estimated_cost_usd]
    usd = None
    if priced and len(priced) == len(rows):
        try:
            usd = round(sum(float(p) for p in priced), 6)
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

    def selected(self, cls: EditClass | None = None) -> set[tuple[str, str, str]]:
        """``(task, case_id, repeat_id)`` of the exact affected set (one class or all) plus the live slice."""
        chosen = [cls] if cls is not None else list(self.exact)
        keys = {(r.task, r.case_id, r.repeat_id) for c in chosen for r in self.exact.get(c, ())}
        return keys

    def live_keys(self) -> set[tuple[str, str, str]]:
        return {(r.task, r.case_id, r.repeat_id) for r in self.live_rerun}

    def summary(self) -> list[dict[str, Any]]:
        out = []
        for cls in self.edit.classes:
            slice_keys = set(self.paper_slices.get(cls, ()))
            exact = {(r.task, r.case_id, r.repeat_id) for r in self.exact.get(cls, ())}
            out.append({"edit": cls.value, "paper slice": PAPER_SLICES[cls],
                        "paper slice rows": len(slice_keys) if cls is not EditClass.PROFILE_ADAPTER
                        else f"{len(self.adapter_tests)} tests",
                        "exact affected rows": len(exact), "outside paper slice": len(exact - slice_keys)
                        if cls is not EditClass.PROFILE_ADAPTER else 0})
        return out

    def as_dict(self) -> dict[str, Any]:
        return {"edit": self.edit.as_dict(), "rows": self.rows, "summary": self.summary(),
                "exact": {c.value: [r.as_dict() for r in rows] for c, rows in self.exact.items()},
                "live_rerun": [r.as_dict() for r in self.live_rerun], "live_cost": self.live_cost.as_dict(),
                "paper_slices": {c.value: [list(k) for k in keys] for c, keys in self.paper_slices.items()},
                "adapter_tests": [{"property": p, "test": t} for p, t in self.adapter_tests]}


def _rule_text(r: Any) -> str:
    return f"{r.rule_id}@{r.version}->{r.decision.value}"


def rule_affected(task: LedgerTask, edit: AssetEdit) -> list[AffectedRow]:
    """Controller rows whose winning rule differs for their recorded (action, state)."""
    if not task.system.uses_controller:
        return []
    base, cand = edit.base_assets.policy, edit.candidate_assets.policy
    out = []
    memo: dict[tuple[str, int], tuple[Any, Any]] = {}
    for row in task.rows:
        action = row.pred_action
        if not row.valid_json or action not in base.catalog_ids or action not in cand.catalog_ids:
            continue  # fail-closed rows never reach the rules
        case = task.cases[row.case_id]
        state = case.request.state
        key = (action, id(state))
        if key not in memo:
            memo[key] = (base.evaluate(action, state.values), cand.evaluate(action, state.values))
        rb, rc = memo[key]
        if (rb.rule_id, rb.version, rb.decision) != (rc.rule_id, rc.version, rc.decision):
            out.append(AffectedRow(task.key, task.system.value, row.case_id, row.repeat_id, case.split.value,
                                   "winning rule differs", _rule_text(rb), _rule_text(rc), calls_of(row),
                                   row.input_tokens + row.output_tokens))
    return out


def _paper_slice(cls: EditClass, ledgers: LedgerSet) -> tuple[tuple[str, str, str], ...]:
    confused: set[str] = set()
    if cls in (EditClass.CATALOG, EditClass.PROMPTS):
        for task in ledgers.tasks.values():
            for r in task.rows:
                gold = task.cases[r.case_id].gold.action
                if gold in CONFUSION_ACTIONS and r.pred_action in CONFUSION_ACTIONS and r.pred_action != gold:
                    confused.add(r.case_id)
    keys = []
    for task in ledgers.tasks.values():
        for r in task.rows:
            split = task.cases[r.case_id].split.value
            hit = {EditClass.RULES: split == "FLIP", EditClass.REGISTRY: split == "ENTITY",
                   EditClass.CATALOG: split == "MAIN" or r.case_id in confused,
                   EditClass.PROMPTS: split == "MAIN" or r.case_id in confused}.get(cls, False)
            if hit:
                keys.append((task.key, r.case_id, r.repeat_id))
    return tuple(keys)


def impact(edit: AssetEdit, ledgers: LedgerSet | None = None) -> ImpactReport:
    """Classify ``edit`` and select, in ``ledgers``, the rows it can affect (see the module docstring)."""
    exact: dict[EditClass, list[AffectedRow]] = {c: [] for c in edit.classes if c is not EditClass.PROFILE_ADAPTER}
    live: list[AffectedRow] = []
    live_rows: list[PredictionRow] = []
    slices: dict[EditClass, tuple[tuple[str, str, str], ...]] = {}
    total = 0
    if ledgers is not None:
        rules_in_prompt = rules_prompt_view(edit.base_assets) != rules_prompt_view(edit.candidate_assets)
        rebased: dict[int, frozenset[str]] = {}
        for task in ledgers.tasks.values():
            total += len(task.rows)
            if id(task.cases) not in rebased:
                rebased[id(task.cases)] = rebase_cases(task.cases, edit)[1]
            changed_lists = rebased[id(task.cases)]
            if EditClass.RULES in exact:
                exact[EditClass.RULES].extend(rule_affected(task, edit))
            for row in task.rows:
                case = task.cases[row.case_id]
                cost = (calls_of(row), row.input_tokens + row.output_tokens)
                if EditClass.REGISTRY in exact and row.case_id in changed_lists:
                    exact[EditClass.REGISTRY].append(AffectedRow(task.key, task.system.value, row.case_id,
                                                                 row.repeat_id, case.split.value,
                                                                 "candidate list changes", calls=cost[0],
                                                                 tokens=cost[1]))
                flags = row_flags(task, row, None, edit, changed_lists, rules_in_prompt)  # the shadow's own rule
                prompt_flags = [f for f in flags if f in (ShadowFlag.CATALOG_IN_PROMPT_CHANGED,
                                                           ShadowFlag.PROMPT_STAGE_CHANGED)]
                for cls, wanted in ((EditClass.CATALOG, ShadowFlag.CATALOG_IN_PROMPT_CHANGED),
                                    (EditClass.PROMPTS, ShadowFlag.PROMPT_STAGE_CHANGED)):
                    if cls in exact and wanted in prompt_flags:
                        exact[cls].append(AffectedRow(task.key, task.system.value, row.case_id, row.repeat_id,
                                                      case.split.value, "prompt changes", calls=cost[0],
                                                      tokens=cost[1]))
                if flags:
                    live.append(AffectedRow(task.key, task.system.value, row.case_id, row.repeat_id,
                                            case.split.value, "+".join(f.value for f in flags), calls=cost[0],
                                            tokens=cost[1]))
                    live_rows.append(row)
        slices = {cls: _paper_slice(cls, ledgers) for cls in edit.classes if cls is not EditClass.PROFILE_ADAPTER}
    adapter = ADAPTER_TESTS if EditClass.PROFILE_ADAPTER in edit.classes else ()
    return ImpactReport(edit, {c: tuple(v) for c, v in exact.items()}, tuple(live), _cost(live_rows), slices,
                        adapter, total)


__all__ = ["ADAPTER_TESTS", "CONFUSION_ACTIONS", "PAPER_SLICES", "AffectedRow", "Cost", "ImpactReport",
           "artifact_asset_files", "impact", "rule_affected"]
