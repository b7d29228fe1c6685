"""Small hand-built assets for controller tests (the shape of the paper's unit-test fixture, plus an object-free
action, a protected action and typed objects)."""

from __future__ import annotations

import routebr_kit as rk

A1, A3, A4, A5 = "A1_ADVISORY", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE", "A5_PROTECTED_ACTION"

CATALOG = rk.Catalog((
    rk.CatalogAction(A1, "Advisory", "explain", ("PRODUCT",)),
    rk.CatalogAction(A3, "Account analysis", "analyse", ("ACCOUNT", "PRODUCT")),
    rk.CatalogAction(A4, "Support", "help", ("NONE", "SERVICE")),
    rk.CatalogAction(A5, "Protected", "order", ("PRODUCT",)),
))

RULES = (
    rk.rule("R001", 10, "*", {"safety_escalation_required": True}, "HANDOFF"),
    rk.rule("R002", 20, [A1, A3, A5], {"entity_resolved": False}, "CLARIFY"),
    rk.rule("R060", 70, [A5], {"action_permission": False}, "REJECT"),
    rk.rule("R999", 999, "*", {}, "ALLOW"),
)
POLICY = rk.PolicyEngine(RULES, CATALOG.ids)

ALPHA = rk.Entity("P_ALPHA", "PRODUCT", "Alpha Fund", ("ALPHA",))
BETA = rk.Entity("P_BETA", "PRODUCT", "Beta Fund", ("BETA",))
ACCOUNT = rk.Entity("ACC_1", "ACCOUNT", "Main account")
SERVICE = rk.Entity("SVC_1", "SERVICE", "Card service")

STATE = {"safety_escalation_required": False, "entity_resolved": True, "action_permission": True}


def request(request_id: str = "T001", **state_changes) -> rk.RouteRequest:
    return rk.RouteRequest(request_id, "Tell me about Alpha", (), rk.RuntimeState({**STATE, **state_changes}),
                           (ALPHA, BETA, ACCOUNT, SERVICE))


def controller(**options) -> rk.Controller:
    return rk.Controller(CATALOG, POLICY, rk.ControllerOptions(**options))


def proposal(action: str = A1, obj: str = "P_ALPHA", topk: list | None = None) -> dict:
    return {"action_id": action, "object_id": obj, "topk": topk if topk is not None else [action, A4]}


def scripted(*first, repair=()) -> rk.backends.ScriptedBackend:
    return rk.backends.ScriptedBackend({rk.Stage.ROUTEBR: list(first), rk.Stage.REPAIR_ROUTEBR: list(repair)})
