"""The published RouteBR program encoded for two policy engines — Cedar (``cedarpy``) and Rego (``regopy``) — so that
``benchmarks/bench_peers.py`` and ``tests/test_peers.py`` can check that they decide as :meth:`Controller.decide
<routebr_kit.core.controller.Controller.decide>` does, and time them side by side.

Both encodings are generated from the kit's loaded assets (catalog, rule program, state schema) and the controller
options (``enforce_state``: A-state; ``enable_grounding``: A-ground); nothing is hand-written per rule.

**Cedar.**  One request per decision (principal ``Router::"kit"``, action ``Action::"route"``, resource
``Proposal::"p"``); everything else is the context.  The runtime-state schema and the proposal contract are
``forbid`` policies; Algorithm 1's first match is compiled into one policy per (action, rule in the action's chain)
whose condition is the rule's condition *and the negation of every earlier rule's* — so exactly one policy decides
each request — and the outcome (terminal, reason, winning rule, object resolution) is read from the deciding
policy's annotations.  Allowing rules are ``permit`` policies, blocking rules and the object gate's CLARIFY are
``forbid`` policies.

**Rego.**  One module: ``state_ok`` and ``contract_ok`` rules, one ``else`` chain per action for the first match,
and a ``decision`` object.

**Semantic gaps** (each found while encoding; the harness closes them before the engine runs, and the test and the
benchmark count them in):

* *Parsing.*  Neither engine reads model text: the harness parses a text output as strict JSON (a repeated key or
  ``NaN``/``Infinity`` is not an object) and passes the object.  The kit's nesting bound (:data:`MAX_DEPTH`) and its
  single read of hostile Python values (``str`` subclasses, changing mappings) have no counterpart: the harness
  reads plain JSON values only.
* *Lists (Cedar).*  Cedar has sets, not lists: ``topk``'s order ("primary first") and duplicates cannot be stated.
  The harness passes ``topk_n`` (its length, ``-1`` when it is not a list) and ``topk0``..``topk2`` as separate
  context fields.
* *Types (Cedar).*  Cedar has no type test for strings and no floats; a value of another type in the state or the
  proposal is passed as an opaque record, which equals no literal (so a non-boolean state field fails the
  schema, as in the kit).  Only boolean state fields and equality conditions are encoded (the published
  program's whole vocabulary); anything else raises ``NotImplementedError``.
* *Errors (Cedar).*  A policy whose evaluation errors is skipped — for a ``forbid`` policy that would fail
  *open*.  Every attribute access is guarded with ``has``; the harness also checks that no request reports an
  evaluation error.
* *Repair.*  The repair protocol (anchoring a repair to the first reply's identifiers by scanning its text) is a
  call protocol, not a policy: only first outputs are encoded, and a fail-closed outcome is compared as the
  kit's fail-closed *family* (``FAIL_CLOSED_INVALID_STATE`` vs any invalid-output reason).
* *Records.*  The engines decide the outcome; the harness assembles the emitted action and object from the
  proposal (as the controller does after its gates).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from routebr_kit.core.controller import Controller, Decision
from routebr_kit.core.records import NONE, UNRESOLVED, Boundary, RouteRequest
from routebr_kit.core.rules import Operator, Rule
from routebr_kit.core.state import StateType

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: What both engines are compared on: terminal, action, object, winning rule, reason (family for fail-closed).
Outcome = tuple[str, str, str, "str | None", str]


# --------------------------------------------------------------------------------------------- the shared reading


class NotAnObject(Exception):
    """A text output that is not strict JSON for one object."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise NotAnObject("duplicate key")
    return out


def _no_constant(name: str) -> Any:
    raise NotAnObject(name)


def read_proposal(output: Any) -> dict[str, Any] | None:
    """The harness's parse: a ``dict`` as it is, text as strict JSON for one object, else ``None``."""
    if isinstance(output, dict):
        return output
    if isinstance(output, str):
        try:
            value = json.loads(output, object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
        except (ValueError, NotAnObject, RecursionError):
            return None
        return value if isinstance(value, dict) else None
    return None


def kit_outcome(decision: Decision) -> Outcome:
    """The kit's decision in the compared form."""
    reason = decision.reason.value
    if decision.reason.fail_closed and reason != "FAIL_CLOSED_INVALID_STATE":
        reason = "FAIL_CLOSED_INVALID_OUTPUT"
    return decision.terminal.value, decision.action_id, decision.object_id, decision.rule_id, reason


def assemble(outcome: Mapping[str, Any], proposal: Mapping[str, Any] | None, fallback: str) -> Outcome:
    """An engine's outcome (``reason``, ``terminal``, ``rule``, ``object``) as the compared record."""
    reason = outcome["reason"]
    if reason.startswith("FAIL_CLOSED"):
        return fallback, NONE, NONE, None, reason
    assert proposal is not None
    obj = UNRESOLVED if reason == "OBJECT_GROUNDING_DISABLED" else proposal["object_id"]
    return outcome["terminal"], proposal["action_id"], obj, outcome["rule"], reason


def _chains(controller: Controller) -> dict[str, list[Rule]]:
    """Each action's rules in first-match order, up to the first unconditional one; only the vocabulary encoded
    here (equality of a state field to a boolean) is accepted."""
    policy = controller.policy
    for f in policy.state_schema.fields:
        if set(f.types) != {StateType.BOOLEAN} or f.allowed is not None or not f.required or not _IDENT.match(f.name):
            raise NotImplementedError(f"state field {f.name!r}: only named boolean fields are encoded")
    out = {}
    for action in controller.catalog.ids:
        chain = [r for r in policy.rules if r.applies(action)]
        for r in chain:
            for p in r.condition.predicates:
                if p.op is not Operator.EQ or type(p.operand) is not bool or p.other_field or not _IDENT.match(p.key):
                    raise NotImplementedError(f"rule {r.rule_id}: only field == true/false is encoded")
        cut = next(i for i, r in enumerate(chain) if r.condition.unconditional)
        out[action] = chain[:cut + 1]
    return out


def _gate(rule: Rule, requires_object: bool, controller: Controller) -> list[tuple[str, dict[str, str]]]:
    """What the gates emit once ``rule`` won: ``(object test, annotations)`` pairs, the test one of ``"any"``,
    ``"resolved"`` or ``"unresolved"`` (the object gate, paper steps 4–5)."""
    options = controller.options
    blocked = rule.decision is not Boundary.ALLOW
    if blocked and options.enforce_state:
        return [("any", {"terminal": rule.decision.value, "reason": "BOUNDARY_TERMINAL", "rule": rule.rule_id})]
    ok = "DISPATCH_STATE_NOT_ENFORCED" if blocked else "DISPATCH_OK"
    if not requires_object:
        return [("any", {"terminal": "DISPATCH", "reason": ok, "rule": rule.rule_id})]
    if not options.enable_grounding:
        return [("any", {"terminal": "CLARIFY", "reason": "OBJECT_GROUNDING_DISABLED", "rule": rule.rule_id})]
    return [("resolved", {"terminal": "DISPATCH", "reason": ok, "rule": rule.rule_id}),
            ("unresolved", {"terminal": "CLARIFY", "reason": "OBJECT_UNRESOLVED", "rule": rule.rule_id})]


def _q(text: str) -> str:
    return json.dumps(text)


# --------------------------------------------------------------------------------------------- Cedar


class CedarProgram:
    """The program as a Cedar policy set, the annotations of each policy (by cedarpy's policy ID) and the
    harness that turns a request and a stored output into a Cedar request."""

    def __init__(self, controller: Controller) -> None:
        import cedarpy

        self.controller = controller
        self.fallback = controller.options.fallback.value
        self.fields = [f.name for f in controller.policy.state_schema.fields]
        policies: list[tuple[str, str, dict[str, str]]] = []  # (effect, condition, annotations)
        state_ok = " && ".join(f"(context.state has {f} && (context.state.{f} == true || context.state.{f} == false))"
                               for f in self.fields) or "true"
        contract_ok = self._contract()
        gates = []
        if controller.options.enforce_state:
            policies.append(("forbid", f"!({state_ok})", {"reason": "FAIL_CLOSED_INVALID_STATE"}))
            gates.append(f"({state_ok})")
        policies.append(("forbid", " && ".join([*gates, f"!({contract_ok})"]),
                         {"reason": "FAIL_CLOSED_INVALID_OUTPUT"}))
        gates.append(f"({contract_ok})")
        for action, chain in _chains(controller).items():
            requires = controller.catalog[action].requires_object
            for i, r in enumerate(chain):
                fires = [f"context.p.action_id == {_q(action)}", self._holds(r),
                         *(f"!({self._holds(e)})" for e in chain[:i] if not e.condition.unconditional)]
                for test, notes in _gate(r, requires, controller):
                    extra = {"any": [], "resolved": [f'context.p.object_id != "{UNRESOLVED}"'],
                             "unresolved": [f'context.p.object_id == "{UNRESOLVED}"']}[test]
                    effect = "permit" if notes["terminal"] == "DISPATCH" else "forbid"
                    policies.append((effect, " && ".join([*gates, *fires, *extra]), notes))
        self.annotations = {f"policy{i}": notes for i, (_, _, notes) in enumerate(policies)}
        self.text = "\n".join(
            "".join(f"@{k}({_q(v)}) " for k, v in notes.items()) + f"{effect}(principal, action, resource) when "
            f"{{ {condition} }};" for effect, condition, notes in policies)
        self.policies = cedarpy.PolicySet.from_str(self.text) if hasattr(cedarpy.PolicySet, "from_str") \
            else cedarpy.PolicySet(self.text)
        self.entities = cedarpy.Entities.from_json_str("[]") if hasattr(cedarpy.Entities, "from_json_str") else "[]"

    @staticmethod
    def _holds(rule: Rule) -> str:
        tests = [f"(context.state has {p.key} && context.state.{p.key} == {str(p.operand).lower()})"
                 for p in rule.condition.predicates]
        return " && ".join(tests) or "true"

    def _contract(self) -> str:
        catalog = self.controller.catalog
        ids = "[" + ", ".join(_q(a) for a in catalog.ids) + "]"
        topk = [f"context.p_object && context.p has action_id && {ids}.contains(context.p.action_id)",
                "context.topk_n >= 1 && context.topk_n <= 3",
                "context has topk0 && context.topk0 == context.p.action_id",
                f"(context.topk_n < 2 || (context has topk1 && {ids}.contains(context.topk1) && "
                "context.topk1 != context.topk0))",
                f"(context.topk_n < 3 || (context has topk2 && {ids}.contains(context.topk2) && "
                "context.topk2 != context.topk0 && context.topk2 != context.topk1))",
                "context.p has object_id"]
        objects = []
        for a in catalog:
            if a.requires_object:
                typed = " || ".join(f'context.candidates.contains({{"id": context.p.object_id, "type": {_q(t)}}})'
                                    for t in a.required_object_types)
                objects.append(f'(context.p.action_id == {_q(a.action_id)} && (context.p.object_id == '
                               f'"{UNRESOLVED}" || {typed or "false"}))')
            else:
                objects.append(f'(context.p.action_id == {_q(a.action_id)} && context.p.object_id == "{NONE}")')
        return " && ".join([*topk, "(" + " || ".join(objects) + ")"])

    def request(self, request: RouteRequest, output: Any) -> tuple[dict[str, Any], dict[str, Any] | None]:
        """The Cedar request of one decision, and the harness's reading of the output."""
        proposal = read_proposal(output)
        p = proposal if proposal is not None else {}
        context: dict[str, Any] = {
            "state": {k: _cedar_value(v) for k, v in request.state.values.items()},
            "p": {k: _cedar_value(v) for k, v in p.items() if k in ("action_id", "object_id")},
            "p_object": proposal is not None,
            "candidates": [{"id": e.object_id, "type": e.object_type} for e in request.candidates],
        }
        topk = p.get("topk")
        context["topk_n"] = len(topk) if isinstance(topk, list) else -1
        if isinstance(topk, list):
            for i, item in enumerate(topk[:3]):
                context[f"topk{i}"] = _cedar_value(item)
        return {"principal": 'Router::"kit"', "action": 'Action::"route"', "resource": 'Proposal::"p"',
                "context": context}, proposal

    def decide(self, request: RouteRequest, output: Any) -> Outcome:
        import cedarpy

        cedar_request, proposal = self.request(request, output)
        result = cedarpy.is_authorized(cedar_request, self.policies, self.entities)
        return self.outcome(result, proposal)

    def outcome(self, result: Any, proposal: dict[str, Any] | None) -> Outcome:
        reasons = result.diagnostics.reasons
        if result.diagnostics.errors or len(reasons) != 1:
            raise AssertionError(f"cedar: {len(reasons)} deciding policies, errors {result.diagnostics.errors}")
        notes = self.annotations[reasons[0]]
        return assemble({"terminal": notes.get("terminal"), "rule": notes.get("rule"), **notes}, proposal,
                        self.fallback)


def _cedar_value(value: Any) -> Any:
    """A JSON value Cedar can hold (string, long, boolean, set, record); anything else as an opaque record."""
    if isinstance(value, bool) or (isinstance(value, int) and -(1 << 63) <= value < (1 << 63)):
        return value
    if isinstance(value, str):
        return value
    return {"opaque": type(value).__name__}


# --------------------------------------------------------------------------------------------- Rego


class RegoProgram:
    """The program as one Rego module (compiled once into a bundle) and the harness's input document."""

    def __init__(self, controller: Controller) -> None:
        import regopy

        self.controller = controller
        self.fallback = controller.options.fallback.value
        self.text = self._module(controller)
        self.interpreter = regopy.Interpreter()
        self.interpreter.add_module("routebr", self.text)
        self.bundle = self.interpreter.build("data.routebr.decision", ["routebr/decision"])

    @staticmethod
    def _module(controller: Controller) -> str:
        catalog, options = controller.catalog, controller.options
        fields = [f.name for f in controller.policy.state_schema.fields]
        lines = ["package routebr", "import rego.v1", "",
                 f"catalog := {json.dumps(list(catalog.ids))}",
                 f"fields := {json.dumps(fields)}",
                 "types := " + json.dumps({a.action_id: list(a.required_object_types) for a in catalog
                                           if a.requires_object}),
                 "object_free := " + json.dumps([a.action_id for a in catalog if not a.requires_object]), "",
                 "state_ok if { every f in fields { is_boolean(input.state[f]) } }", "",
                 "p := input.p",
                 "contract_ok if {", "  is_object(p)", "  is_string(p.action_id)", "  p.action_id in catalog",
                 "  is_array(p.topk)", "  count(p.topk) >= 1", "  count(p.topk) <= 3", "  p.topk[0] == p.action_id",
                 "  every t in p.topk { is_string(t); t in catalog }",
                 "  count({t | some t in p.topk}) == count(p.topk)",
                 "  object_ok", "}",
                 f'object_ok if {{ p.action_id in object_free; p.object_id == "{NONE}" }}',
                 f'object_ok if {{ types[p.action_id]; p.object_id == "{UNRESOLVED}" }}',
                 "object_ok if { some c in input.candidates; c.id == p.object_id; c.type in types[p.action_id] }", ""]
        outcomes = []
        for n, (action, chain) in enumerate(_chains(controller).items()):
            requires = catalog[action].requires_object
            body = []
            for i, r in enumerate(chain):
                holds = "; ".join(f"input.state.{pr.key} == {str(pr.operand).lower()}"
                                  for pr in r.condition.predicates) or "true"
                head = f"rule_{n} := {_q(r.rule_id)} if" if i == 0 else f"else := {_q(r.rule_id)} if"
                body.append(f"{head} {{ {holds} }}")
                for test, notes in _gate(r, requires, controller):
                    cond = {"any": "true", "resolved": f'p.object_id != "{UNRESOLVED}"',
                            "unresolved": f'p.object_id == "{UNRESOLVED}"'}[test]
                    outcomes.append(f"gate := {json.dumps(notes)} if {{ p.action_id == {_q(action)}; "
                                    f"rule_{n} == {_q(r.rule_id)}; {cond} }}")
            lines += [*body, ""]
        lines += outcomes
        first = ('decision := {"reason": "FAIL_CLOSED_INVALID_STATE"} if { not state_ok }\nelse := '
                 if options.enforce_state else "decision := ")
        lines += ["", first + '{"reason": "FAIL_CLOSED_INVALID_OUTPUT"} if { not contract_ok }', "else := gate"]
        return "\n".join(lines) + "\n"

    def decide(self, request: RouteRequest, output: Any) -> Outcome:
        proposal = read_proposal(output)
        document = {"state": dict(request.state.values), "p": proposal,
                    "candidates": [{"id": e.object_id, "type": e.object_type} for e in request.candidates]}
        try:
            text = json.dumps(document, allow_nan=False)
        except (TypeError, ValueError):  # a state value JSON cannot hold: the schema fails on it
            text = json.dumps({**document, "state": {k: v if isinstance(v, (bool, str, int)) else {"opaque": 1}
                                                     for k, v in request.state.values.items()}})
        self.interpreter.set_input_term(text)
        outcome = json.loads(str(self.interpreter.query_bundle(self.bundle)))["expressions"][0]
        return assemble({"terminal": None, "rule": None, **outcome}, proposal, self.fallback)


def agreement(controller: Controller, rows: Sequence[tuple[RouteRequest, Any]],
              engines: Sequence[Any]) -> list[tuple[int, str, Outcome, Outcome]]:
    """Every disagreement ``(row index, engine, kit outcome, engine outcome)`` over ``rows``."""
    out = []
    for i, (request, output) in enumerate(rows):
        mine = kit_outcome(controller.decide(request, output))
        for engine in engines:
            theirs = engine.decide(request, output)
            if theirs != mine:
                out.append((i, type(engine).__name__, mine, theirs))
    return out


__all__ = ["CedarProgram", "NotAnObject", "Outcome", "RegoProgram", "agreement", "assemble", "kit_outcome",
           "read_proposal"]
