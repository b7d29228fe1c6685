"""A counterexample of ``verify --horizon`` (:class:`~routebr_kit.verify.horizon.Counterexample`) decided again
from its serialised requests alone, request by request, by a fresh controller: each request's session holds the
external events before it and the decisions of the earlier requests of the replay itself.  The verifier confirms
its own witnesses; this is the independent reading of what it reports."""

from __future__ import annotations

from typing import Any

from ..core.controller import Controller
from ..core.decision import Decision
from ..core.records import NONE, UNRESOLVED, Catalog, Entity, RouteRequest, RuntimeState
from ..core.rules import PolicyEngine
from ..core.session import Event, Session, event_of_decision
from .horizon import OBJECT, Counterexample


def replay_counterexample(catalog: Catalog, policy: PolicyEngine, cx: Counterexample
                          ) -> tuple[list[dict[str, Any]], list[Decision]]:
    """``(rows, decisions)``: per request of ``cx``, a row (its number, clock, the events before it, the proposal,
    the decision, its rule and the temporal evidence) and the controller's decision.  An object the witness left
    unresolved is the witness object :data:`~routebr_kit.verify.horizon.OBJECT`."""
    controller = Controller(catalog, policy)
    history: list[Event] = []
    rows, decisions = [], []
    for req in cx.requests:
        history += [Event(**e) for e in req["external_events"]]
        proposal = req["proposal"]
        action = catalog[proposal["action_id"]]
        candidates = ()
        if action.requires_object:
            obj = proposal["object_id"] if proposal["object_id"] not in (UNRESOLVED, NONE) else OBJECT
            candidates = (Entity(obj, action.required_object_types[0], "witness object"),)
        session = Session(req["now"], tuple(history), req["attributes"])
        d = controller.decide(RouteRequest(f"cx{req['request']}", "(counterexample)", (), RuntimeState(req["state"]),
                                           candidates, session), proposal)
        decisions.append(d)
        history.append(event_of_decision(d, req["now"], req["attributes"]))
        rows.append({"request": req["request"], "t (s)": req["now"],
                     "events before": ", ".join(f"{e['kind']} at {e['at']}" for e in req["external_events"]),
                     "proposal": f"{proposal['action_id']}@{proposal['object_id']}", "decision": d.final_path,
                     "rule": d.rule_id, "temporal": "; ".join(o for o, _ in d.temporal_evidence())})
    return rows, decisions


__all__ = ["replay_counterexample"]
