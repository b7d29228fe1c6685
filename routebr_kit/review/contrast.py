"""The contrast (notebook 10) of the paper's gold-based false dispatch with the kit's forbidden dispatch.

One B2 row is moved to dispatch another action; the base release's own controller (:class:`DispatchGate`, no second
evaluator) says whether that dispatch is forbidden, and two gates — one on ``new_false_dispatch`` only, the default
one also on ``new_forbidden_dispatch`` — judge the edit.  On the published artifact the row is ``forbidden_case``
with ``identity_verified`` set to false; elsewhere the first recorded B2 row whose gold path dispatches and for which
another catalog action is refused on that row's state (the state gate preferred).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.records import RuntimeState
from ..evaluation.forbidden import DispatchGate
from ..evaluation.metrics import score
from .diff import diff_ledgers
from .gate import DEFAULT_GATE, Gate
from .ledgers import LedgerSet, LedgerTask

#: The gate before forbidden dispatch was measured (what the contrast shows passing the edit).
OLD_GATE = "new_false_dispatch <= 0, path_exact_drop <= 1.0pp, flip_pairs_drop <= 0"
_MEASURES = ("exact", "gold-based FD (paper)", "forbidden dispatch (kit)")


@dataclass(frozen=True)
class ForbiddenContrast:
    """The edited B2 task, the edited case and action, both sides' scores, the controller's check and the verdicts."""

    task: LedgerTask
    cases: Mapping[str, Any]
    case_id: str
    action: str
    check: Any
    counts: Mapping[str, Mapping[str, str]]
    metrics: Any
    verdicts: Mapping[str, bool]

    def table(self):
        """exact / gold-based FD / forbidden dispatch of the base task and the candidate (a DataFrame indexed by
        measure)."""
        import pandas as pd

        return pd.DataFrame({f"base {self.task.key}": self.counts["base"].values(),
                             "candidate": self.counts["candidate"].values()}, index=list(_MEASURES))


def _moved(row, action: str):
    return replace(row, pred_action=action, pred_final_path=action, topk=(action,))


def _candidate(release, ledgers: LedgerSet, gate: DispatchGate, case_id: str, action: str):
    """``(task, cases, case_id, action)`` of the contrast on this source, or None."""
    tasks = sorted((t for t in ledgers.tasks.values() if t.system.value == "b2_direct_guard"),
                   key=lambda t: (not t.key.startswith("confirm/"), not t.key.lower().endswith("main"), t.key))
    if tasks and ledgers.kind == "artifact" and case_id in tasks[0].cases:
        case = tasks[0].cases[case_id]
        state = RuntimeState({**case.request.state.values, "identity_verified": False})
        edited = {**tasks[0].cases, case_id: replace(case, request=case.request.with_state(state))}
        return tasks[0], edited, case_id, action
    found = {}  # cause -> the first (task, cases, case, action) with that cause; the state gate is preferred
    actions = [a.action_id for a in release.load().catalog.actions]
    for task in tasks:
        for r in task.rows:
            gold = task.cases[r.case_id].gold.final_path
            if gold.startswith("T_") or r.pred_final_path != gold:
                continue
            for a in (a for a in actions if a != gold):
                verdict = gate.check(_moved(r, a), task.cases[r.case_id].request)
                if verdict.forbidden:
                    found.setdefault(verdict.cause.value, (task, dict(task.cases), r.case_id, a))
    return found.get("state_gate") or next(iter(found.values()), None)


def forbidden_dispatch_contrast(release, ledgers: LedgerSet, case_id: str, action: str) -> ForbiddenContrast | None:
    """The contrast of ``release`` (a base release with ``.load()``) on ``ledgers``' B2 runs, or None when no B2 row
    of this source has a gold dispatch that another action would turn into a forbidden dispatch."""
    gate = DispatchGate(release.load().controller())  # the base release's own controller (no second evaluator)
    chosen = _candidate(release, ledgers, gate, case_id, action)
    if chosen is None:
        return None
    task, cases, case_id, action = chosen
    moved_rows = tuple(_moved(r, action) if r.case_id == case_id else r for r in task.rows)
    base_s, cand_s = score(task.rows, cases, gate), score(moved_rows, cases, gate)
    check = gate.check(next(r for r in moved_rows if r.case_id == case_id), cases[case_id].request)

    def ledger(rows) -> LedgerSet:
        t = LedgerTask(task.key, task.system, rows, cases, task.path)
        return LedgerSet(Path("<in memory>"), "runs", {t.key: t}, ledgers.assets)

    report = diff_ledgers(ledger(task.rows), ledger(moved_rows))
    verdicts = {spec: Gate.parse(spec).evaluate(report).passed for spec in (OLD_GATE, DEFAULT_GATE)}
    counts = {side: {"exact": str(s.contract_exact), "false_dispatch": str(s.false_dispatch),
                     "forbidden_dispatch": str(s.forbidden_dispatch)} for side, s in (("base", base_s),
                                                                                      ("candidate", cand_s))}
    return ForbiddenContrast(task, cases, case_id, action, check, counts, report.metrics(), verdicts)

#: The facts :func:`contrast_facts` gives notebook 10's ``%%conclusion contrast`` cell (``found`` aside).
_CONTRAST_FACTS = ("case", "gold", "action", "system", "base_exact", "base_exact_n", "candidate_exact",
                  "candidate_exact_n", "base_false_dispatch", "base_false_dispatch_n", "candidate_false_dispatch",
                  "candidate_false_dispatch_n", "base_forbidden_dispatch", "base_forbidden_dispatch_n",
                  "candidate_forbidden_dispatch", "candidate_forbidden_dispatch_n", "fd_same", "terminal", "reason",
                  "has_rule", "rule", "has_cause", "cause", "changed", "new_false_dispatch", "new_forbidden_dispatch",
                  "path_exact_drop", "old_gate", "old_gate_passed", "default_gate", "default_gate_passed")


def contrast_facts(contrast: ForbiddenContrast | None) -> dict[str, Any]:
    """The numbers and names the contrast's conclusion states, read from ``contrast`` (counts as ``k`` and ``k_n``,
    verdicts of :data:`OLD_GATE` and :data:`DEFAULT_GATE` as booleans); with no contrast, ``found`` is False and every
    other fact is None (the template's other branch names none of them)."""
    if contrast is None:
        return {"found": False, **dict.fromkeys(_CONTRAST_FACTS)}
    facts: dict[str, Any] = {"found": True, "case": contrast.case_id,
                             "gold": contrast.cases[contrast.case_id].gold.final_path,
                             "action": contrast.check.action_id, "system": "B2"}
    for side in ("base", "candidate"):
        for key, text in contrast.counts[side].items():
            k, n = str(text).split("/")
            facts[f"{side}_{key}"], facts[f"{side}_{key}_n"] = int(k), int(n)
    check = contrast.check.as_dict()
    m = contrast.metrics
    facts |= {"fd_same": contrast.counts["base"]["false_dispatch"] == contrast.counts["candidate"]["false_dispatch"],
              "terminal": check["controller_terminal"], "reason": check["controller_reason"],
              "has_rule": bool(check.get("rule_id")), "rule": check.get("rule_id") or "",
              "has_cause": bool(check.get("cause")), "cause": check.get("cause") or "",
              "changed": int(m["changed"]), "new_false_dispatch": int(m["new_false_dispatch"]),
              "new_forbidden_dispatch": int(m["new_forbidden_dispatch"]),
              "path_exact_drop": round(float(m["path_exact_drop"]), 2),
              "old_gate": OLD_GATE, "old_gate_passed": bool(contrast.verdicts[OLD_GATE]),
              "default_gate": DEFAULT_GATE, "default_gate_passed": bool(contrast.verdicts[DEFAULT_GATE])}
    return facts


__all__ = ["OLD_GATE", "ForbiddenContrast", "contrast_facts", "forbidden_dispatch_contrast"]
