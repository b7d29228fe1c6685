"""An independent reference evaluator of the RouteBR rule language and controller gates, written from the semantics
stated in the kit's documentation (``core/rules.py``, ``core/state.py``, ``core/contract.py`` docstrings) — it
imports nothing from :mod:`routebr_kit`, so a shared bug cannot hide in both.

Inputs are plain data: rules as dicts (``rule_id``, ``priority``, ``applies_to``, ``condition``, ``decision``), a
catalog as ``{action_id: (requires_object, permitted_types)}``, a state dict, a proposal dict and the request's
candidates as ``{object_id: object_type}``.  The result is ``(terminal, reason, rule_id)``.
"""

from __future__ import annotations

import math

ABSENT = object()
ORDERINGS = ("lt", "lte", "gt", "gte")


def json_kind(v):
    """boolean / number / string / null / other — exact types only (a subclass of str is 'other')."""
    if v is True or v is False:
        return "boolean"
    if type(v) in (int, float):
        return "number"
    if type(v) is str:
        return "string"
    if v is None:
        return "null"
    return "other"


def admitted_kind(v):
    """The schema's view: like json_kind, but a non-finite float is of no admitted type."""
    k = json_kind(v)
    if k == "number" and type(v) is float and not math.isfinite(v):
        return "other"
    return k



def literal_equal(value, literal):
    # equality is type-strict: true is not 1, 1 is 1.0; NaN equals nothing
    kv, kl = json_kind(value), json_kind(literal)
    if kv != kl:
        return False
    return value == literal


def ordered(op, a, b):
    ka, kb = json_kind(a), json_kind(b)
    if ka != kb or ka not in ("number", "string"):
        return False
    return {"lt": a < b, "lte": a <= b, "gt": a > b, "gte": a >= b}[op]


def cross_equal(a, b):
    ka, kb = json_kind(a), json_kind(b)
    if ka != kb:
        # the engine compares arrays/objects by Python equality of their JSON class; both are 'other' here
        return False
    if ka == "other":
        return type(a) is type(b) and type(a) in (list, tuple, dict) and a == b
    return a == b


def test(state, field, op, operand, other):
    value = state.get(field, ABSENT)
    if op == "exists":
        return (value is not ABSENT) == operand
    if value is ABSENT:
        return False
    if other is not None:
        rhs = state.get(other, ABSENT)
        if rhs is ABSENT:
            return False
        if op == "eq":
            return cross_equal(value, rhs)
        if op == "ne":
            return not cross_equal(value, rhs)
        return ordered(op, value, rhs)
    if op == "eq":
        return literal_equal(value, operand)
    if op == "ne":
        return not literal_equal(value, operand)
    if op == "in":
        return any(literal_equal(value, x) for x in operand)
    if op == "not_in":
        return not any(literal_equal(value, x) for x in operand)
    return ordered(op, value, operand)


def predicates(condition):
    """(field, op, operand, other_field) for each test of a condition_json object."""
    out = []
    for field, spec in condition.items():
        if isinstance(spec, dict):
            for op, operand in spec.items():
                if isinstance(operand, dict):
                    out.append((field, op, None, operand["field"]))
                else:
                    out.append((field, op, operand, None))
        else:
            out.append((field, "eq", spec, None))
    return out


def schema_of(rules):
    """field -> (kinds or None for any scalar, required): required unless tested with exists; kinds from literals."""
    kinds, optional = {}, set()
    for r in rules:
        for field, op, operand, other in predicates(r["condition"]):
            kinds.setdefault(field, set())
            if other is not None:
                kinds.setdefault(other, set())
            if op == "exists":
                optional.add(field)
                continue
            if other is None:
                for lit in (operand if op in ("in", "not_in") else [operand]):
                    kinds[field].add(json_kind(lit))
    return {f: (k or None, f not in optional) for f, k in kinds.items()}


def state_ok(state, schema):
    for field, (kinds, required) in schema.items():
        value = state.get(field, ABSENT)
        if value is ABSENT:
            if required:
                return False
            continue
        k = admitted_kind(value)
        allowed = kinds if kinds is not None else {"boolean", "number", "string", "null"}
        if k not in allowed:
            return False
    return True


def proposal_ok(proposal, catalog, candidates):
    if not isinstance(proposal, dict):
        return False
    action, obj, topk = proposal.get("action_id"), proposal.get("object_id"), proposal.get("topk")
    if type(action) is not str or action not in catalog:
        return False
    if type(topk) is not list or not 1 <= len(topk) <= 3 or any(type(t) is not str or t not in catalog for t in topk):
        return False
    if len(set(topk)) != len(topk) or topk[0] != action:
        return False
    if type(obj) is not str or (obj not in candidates and obj not in ("UNRESOLVED", "NONE")):
        return False
    requires, types = catalog[action]
    if requires:
        if obj == "NONE":
            return False
        if obj in candidates and candidates[obj] not in types:
            return False
    elif obj != "NONE":
        return False
    return True


def decide(rules, catalog, state, proposal, candidates, fallback="CLARIFY", grounding=True):
    """(terminal, reason, rule_id) of the RouteBR controller, by the reference semantics."""
    if not state_ok(state, schema_of(rules)):
        return fallback, "FAIL_CLOSED_INVALID_STATE", None
    if not proposal_ok(proposal, catalog, candidates):
        return fallback, "FAIL_CLOSED_INVALID_OUTPUT", None
    action, obj = proposal["action_id"], proposal["object_id"]
    chain = sorted((r for r in rules if r["applies_to"] == "*" or action in r["applies_to"]),
                   key=lambda r: (r["priority"], r["rule_id"]))
    winner = next(r for r in chain if all(test(state, *p) for p in predicates(r["condition"])))
    if winner["decision"] != "ALLOW":
        return winner["decision"], "BOUNDARY_TERMINAL", winner["rule_id"]
    requires, _ = catalog[action]
    if not requires:
        return "DISPATCH", "DISPATCH_OK", winner["rule_id"]
    if not grounding:
        return "CLARIFY", "OBJECT_GROUNDING_DISABLED", winner["rule_id"]
    if obj == "UNRESOLVED":
        return "CLARIFY", "OBJECT_UNRESOLVED", winner["rule_id"]
    return "DISPATCH", "DISPATCH_OK", winner["rule_id"]
