"""Gold labels, computed: the kit's controller applied to the gold (action, object) on the case's runtime state.

The gold proposal ``{action_id, object_id, topk: [action_id]}`` goes through :meth:`Controller.decide` — the
proposal contract (closed list, object type), the state gate (first matching rule) and the object gate — so a
gold label can never disagree with what the kit would do with a perfect proposal:

* ``boundary`` is the *final* boundary: the winning rule's decision, except that an object-requiring action whose
  gold object is ``UNRESOLVED`` and whose rules ``ALLOW`` ends in ``CLARIFY`` at the object gate;
* ``rule_ids`` is ``[winning rule]`` — for an object-gate ``CLARIFY`` that is the default rule (``R999``);
* ``final_path`` is the action on ``ALLOW``, else ``T_<BOUNDARY>``.

The generator writes these values; the audit recomputes them and reports any difference.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.controller import Controller
from ..core.errors import ContractErrorCode
from ..core.records import Boundary, ObjectResolution, RouteRequest


@dataclass(frozen=True, slots=True)
class GoldLabel:
    """The labels the kit computes for one case (``errors`` is non-empty when the gold proposal is invalid)."""

    boundary: Boundary | None
    rule_ids: tuple[str, ...]
    final_path: str
    object_gate: bool  # CLARIFY came from the object gate, not from a rule
    errors: tuple[ContractErrorCode, ...] = ()

    @property
    def valid(self) -> bool:
        return not self.errors


def gold_label(controller: Controller, request: RouteRequest, action_id: str, object_id: str) -> GoldLabel:
    """Run the gold proposal through the controller and read off boundary, winning rule and final path."""
    decision = controller.decide(request, {"action_id": action_id, "object_id": object_id, "topk": [action_id]})
    if decision.proposal is None:
        return GoldLabel(None, (), decision.final_path, False, tuple(e.code for e in decision.errors))
    return GoldLabel(
        boundary=Boundary(decision.boundary),
        rule_ids=(decision.rule_id,) if decision.rule_id else (),
        final_path=decision.final_path,
        object_gate=decision.object_resolution is ObjectResolution.UNRESOLVED,
    )
