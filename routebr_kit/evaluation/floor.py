"""The trivial-proposer floor (issue 33): what a proposer that ignores the request reaches on the same cases.

For each catalog action in turn, a constant proposer answers that action with the first candidate whose type the
action accepts (``UNRESOLVED`` when none; ``NONE`` for an object-free action) and ``topk = [action]``; the
release's controller decides each case from it (the runtime state and the rules do the rest).  The floor is the
best such constant proposer by exact match (ties: catalog order), named by its action, with its FD and FB on the
same cases.  Because the state decides most routes, the floor is far above zero — an accuracy must be read against
it.  Deterministic; no model.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.records import NONE, UNRESOLVED
from ..store.cases import Case
from ..store.ledger import prediction_from_decision
from .metrics import Count, Scores, score


@dataclass(frozen=True, slots=True)
class Floor:
    """The best constant proposer on a set of cases."""

    action_id: str
    scores: Scores
    by_action: Mapping[str, Count]

    @property
    def exact(self) -> Count:
        return self.scores.contract_exact

    def line(self) -> str:
        s = self.scores
        low, high = s.contract_exact.wilson
        return (f"floor (always {self.action_id}): exact {s.contract_exact} = {100 * s.contract_exact.rate:.1f}% "
                f"(Wilson 95% {100 * low:.1f}-{100 * high:.1f}%) · FD {s.false_dispatch} · FB {s.false_block}")

    def as_dict(self) -> dict[str, Any]:
        s = self.scores
        return {"action_id": self.action_id, "exact": s.contract_exact.hits, "n": s.contract_exact.n,
                "exact_rate": s.contract_exact.rate, "false_dispatch": str(s.false_dispatch),
                "false_block": str(s.false_block),
                "by_action": {a: {"exact": c.hits, "n": c.n} for a, c in self.by_action.items()}}


def constant_proposal(action: Any, case: Case) -> dict[str, Any]:
    """The constant proposer's answer for ``case``: ``action`` with the first candidate of an accepted type."""
    if not action.requires_object:
        object_id = NONE
    else:
        object_id = next((e.object_id for e in case.request.candidates
                          if e.object_type in action.required_object_types), UNRESOLVED)
    return {"action_id": action.action_id, "object_id": object_id, "topk": [action.action_id]}


def trivial_floor(cases: Sequence[Case], controller: Any, *, system_id: str = "floor") -> Floor:
    """The floor of ``cases`` under ``controller`` (a :class:`~routebr_kit.core.controller.Controller`)."""
    cases = list(cases)
    index = {c.case_id: c for c in cases}
    best: tuple[str, Scores] | None = None
    by_action: dict[str, Count] = {}
    for action in controller.catalog.actions:
        rows = [prediction_from_decision(controller.decide(c.request, constant_proposal(action, c)), system_id)
                for c in cases]
        scores = score(rows, index)
        by_action[action.action_id] = scores.contract_exact
        if best is None or scores.contract_exact.hits > best[1].contract_exact.hits:
            best = (action.action_id, scores)
    assert best is not None
    return Floor(best[0], best[1], by_action)


def ledger_set_floor(ledgers: Any) -> Floor | None:
    """The floor of the cases a :class:`~routebr_kit.review.ledgers.LedgerSet` scores (``None`` without assets)."""
    if getattr(ledgers, "assets", None) is None:
        return None
    chosen: dict[str, Case] = {}
    for task in ledgers.tasks.values():
        for row in task.rows:
            case = task.cases.get(row.case_id)
            if case is not None:
                chosen.setdefault(case.case_id, case)
    return trivial_floor(list(chosen.values()), ledgers.assets.controller()) if chosen else None


__all__ = ["Floor", "constant_proposal", "ledger_set_floor", "trivial_floor"]
