"""``Controller.decide``'s fast path against a plain reference implementation of Algorithm 1.

The reference below is written from the records' public API only: the contract's three phases one by one
(``parse_output``, ``check_action``, ``check_topk``, ``check_object`` — not ``clean_proposal`` nor
``check_proposal``'s shortcut), the state schema's ``check`` on a plain dict, first-match by
``PolicyEngine.matching`` (``Condition.holds``, not the compiled chains), and ``Decision(...)`` built by its
dataclass constructor.  Hypothesis draws random catalogs, rule programs, entity lists, states (valid, mistyped,
missing, non-finite), options and first/repair outputs (clean, invalid, JSON text, junk), and the controller's
decision must equal the reference's — as a record, as ``as_dict()`` and as ``trace()``.
"""

from __future__ import annotations

import json
from dataclasses import fields
from types import MappingProxyType

from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core.contract import (
    anchor_errors,
    check_action,
    check_object,
    check_topk,
    guard_repair,
    held_identifiers,
    parse_output,
)
from routebr_kit.core.controller import (
    NO_REPAIR,
    ContractLog,
    DecisionContext,
    OneCallRouter,
    _new_decision,
)
from routebr_kit.core.records import new_proposal

ACTIONS = ("A0", "A1", "A2", "A3")
TYPES = ("T1", "T2", "T3")
ENTITY_IDS = ("E0", "E1", "E2", "E3")

# ------------------------------------------------------------------------------------------ reference


def _contract(raw, catalog, candidates):
    """The three phases, every error, no shortcut: ``(proposal or None, errors)``."""
    parsed, parse_errors = parse_output(raw)
    if parsed is None:
        return None, parse_errors
    errors: list = []
    action = check_action(parsed, catalog, errors)
    topk = check_topk(parsed, catalog, action.action_id if action else None, errors)
    object_id = check_object(parsed, action, candidates, errors)
    if errors:
        return None, tuple(errors)
    return rk.Proposal(action.action_id, object_id, topk), ()


class _Checked:
    """The shape ``guard_repair`` reads."""

    def __init__(self, proposal):
        self.proposal = proposal


def reference_decide(controller: rk.Controller, request: rk.RouteRequest, first, repair=NO_REPAIR) -> rk.Decision:
    """Algorithm 1 on stored outputs, step by step."""
    options, catalog, policy = controller.options, controller.catalog, controller.policy
    context = DecisionContext(controller.hashes, options)
    rid, fallback = request.request_id, options.fallback

    def fail(reason, log=None, first_output=first):
        return rk.Decision(rid, fallback, rk.NONE, rk.NONE, reason, context, first_output=first_output, log=log)

    if options.enforce_state:  # 0. the state schema, before any model output is read
        violations = policy.state_schema.check(dict(request.state.values))
        if violations:
            return rk.Decision(rid, fallback, rk.NONE, rk.NONE, rk.ReasonCode.FAIL_CLOSED_INVALID_STATE, context,
                               state_errors=violations)
    proposal, errors = _contract(first, catalog, request.candidate_index)  # 1. the contract
    log = None
    if proposal is None:
        if not options.repair:
            return fail(rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT, ContractLog(errors))
        held = held_identifiers(first)  # 2. at most one format-only repair, held to the first reply
        refused = anchor_errors(held)
        if refused:
            return fail(rk.ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED, ContractLog(errors, False, None, refused))
        if repair is NO_REPAIR:
            return fail(rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT, ContractLog(errors))
        repaired, repair_errors = _contract(repair, catalog, request.candidate_index)
        changed = guard_repair(held, _Checked(repaired))
        if changed or repaired is None:
            reason = (rk.ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL if changed
                      else rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT)
            return fail(reason, ContractLog(errors, True, repair, changed or repair_errors))
        proposal, log = repaired, ContractLog(errors, True, repair)
    action_id, object_id = proposal.action_id, proposal.object_id  # 3. commit to the primary action
    rule = policy.matching(action_id, request.state.values)[0]  # 4. the state gate: first match
    blocked = rule.decision is not rk.Boundary.ALLOW
    if blocked and options.enforce_state:
        return rk.Decision(rid, rk.Terminal.from_boundary(rule.decision), action_id, object_id,
                           rk.ReasonCode.BOUNDARY_TERMINAL, context, proposal, rule,
                           rk.ObjectResolution.NOT_EVALUATED, first, log)
    ok = rk.ReasonCode.DISPATCH_STATE_NOT_ENFORCED if blocked else rk.ReasonCode.DISPATCH_OK
    if not catalog[action_id].requires_object:  # 5. the object gate
        outcome = rk.Terminal.DISPATCH, ok, rk.ObjectResolution.NOT_REQUIRED
    elif not options.enable_grounding:
        outcome = (rk.Terminal.CLARIFY, rk.ReasonCode.OBJECT_GROUNDING_DISABLED,
                   rk.ObjectResolution.GROUNDING_DISABLED)
        object_id = rk.UNRESOLVED
    elif object_id == rk.UNRESOLVED:
        outcome = rk.Terminal.CLARIFY, rk.ReasonCode.OBJECT_UNRESOLVED, rk.ObjectResolution.UNRESOLVED
    else:
        outcome = rk.Terminal.DISPATCH, ok, rk.ObjectResolution.RESOLVED
    terminal, reason, resolution = outcome
    return rk.Decision(rid, terminal, action_id, object_id, reason, context, proposal, rule, resolution, first, log)


# ------------------------------------------------------------------------------------------ strategies

type_lists = st.lists(st.sampled_from(("NONE",) + TYPES), max_size=3, unique=True).map(tuple)


@st.composite
def catalogs(draw):
    ids = draw(st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=4, unique=True))
    return rk.Catalog(tuple(rk.CatalogAction(a, a, a, draw(type_lists)) for a in ids))


# One JSON type per state field (the derived schema allows no mixing): the identity-pair fast case, strings, numbers
# and a presence-only field.
conditions = st.fixed_dictionaries({}, optional={
    "b1": st.booleans(),
    "b2": st.booleans() | st.just({"ne": True}),
    "s": st.sampled_from(["x", "y"]) | st.just({"in": ["x", "z"]}) | st.just({"not_in": ["y"]}),
    "n": st.integers(-2, 2) | st.builds(lambda v: {"gte": v}, st.integers(-2, 2)) | st.just({"lt": {"field": "m"}}),
    "o": st.builds(lambda v: {"exists": v}, st.booleans()),
})


@st.composite
def policies(draw, catalog):
    rules = []
    for i in range(draw(st.integers(0, 5))):
        target = draw(st.just("*") | st.lists(st.sampled_from(catalog.ids), min_size=1, max_size=3, unique=True))
        rules.append(rk.rule(f"R{i}", draw(st.integers(0, 50)), target, draw(conditions),
                             draw(st.sampled_from(list(rk.Boundary)))))
    rules.append(rk.rule("R_DEFAULT", draw(st.integers(0, 100)), "*", {}, draw(st.sampled_from(list(rk.Boundary)))))
    return rk.PolicyEngine(rules, catalog.ids)


state_values = st.sampled_from([True, False, 1, 0, None, "x", "y", 1.5, -1, float("nan"), float("inf")])
states = st.dictionaries(st.sampled_from(["b1", "b2", "s", "n", "m", "o", "extra"]), state_values, max_size=7)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=6)
action_ids = st.sampled_from(ACTIONS) | json_values
object_ids = st.sampled_from(ENTITY_IDS + (rk.UNRESOLVED, rk.NONE)) | json_values


def _deep(levels: int):
    value: object = 1
    for _ in range(levels):
        value = [value]
    return value


@st.composite
def outputs(draw):
    """Mostly well-formed proposals (so the fast path and the gates are exercised), plus every kind of junk."""
    action = draw(action_ids)
    topk_items = st.sampled_from(ACTIONS) | json_values
    topk = draw(st.lists(topk_items, max_size=4).map(lambda t: [action, *t] if isinstance(action, str) else t)
                | st.lists(topk_items, max_size=4) | json_values)
    proposal = draw(st.fixed_dictionaries({}, optional={"action_id": st.just(action), "object_id": object_ids,
                                                        "topk": st.just(topk)}))
    if draw(st.booleans()):
        proposal = {"action_id": action, "object_id": draw(object_ids), "topk": topk}
    if draw(st.integers(0, 5)) == 0:
        proposal["extra"] = draw(json_values | st.builds(_deep, st.integers(30, 34)))
    kind = draw(st.sampled_from(["dict", "dict", "dict", "json", "junk", "truncated"]))
    if kind == "dict":
        return proposal
    text = json.dumps(proposal, default=str)
    if kind == "json":
        return text
    if kind == "truncated":
        return text[: draw(st.integers(0, len(text)))]
    return draw(json_values)


entities = st.lists(st.builds(rk.Entity, st.sampled_from(ENTITY_IDS), st.sampled_from(TYPES), st.just("name")),
                    max_size=4, unique_by=lambda e: e.object_id).map(tuple)
options = st.builds(rk.ControllerOptions,
                    fallback=st.sampled_from([t for t in rk.Terminal if t is not rk.Terminal.DISPATCH]),
                    enforce_state=st.booleans(), enable_grounding=st.booleans(), repair=st.booleans())


DEFECTS = ("none", "none", "none", "duplicate_topk", "topk_not_primary_first", "topk_unknown_item", "topk_too_long",
           "topk_empty", "object_wrong_type", "object_not_candidate", "object_none", "object_unresolved",
           "action_unknown", "extra_key", "extra_too_deep", "missing_field", "topk_tuple", "mapping_proxy")


@st.composite
def near_valid(draw, catalog: rk.Catalog, candidates: tuple[rk.Entity, ...]):
    """A proposal valid for this catalog and entity list, then (usually) one targeted defect."""
    action = draw(st.sampled_from(catalog.actions))
    others = [a for a in catalog.ids if a != action.action_id]
    topk = [action.action_id, *draw(st.lists(st.sampled_from(others), max_size=2, unique=True))] if others else \
        [action.action_id]
    permitted = [e.object_id for e in candidates if e.object_type in action.required_object_types]
    object_id = draw(st.sampled_from(permitted + [rk.UNRESOLVED])) if action.requires_object else rk.NONE
    output = {"action_id": action.action_id, "object_id": object_id, "topk": topk}
    defect = draw(st.sampled_from(DEFECTS))
    if defect == "duplicate_topk":
        output["topk"] = [*topk, draw(st.sampled_from(topk))]
    elif defect == "topk_not_primary_first" and len(topk) > 1:
        output["topk"] = topk[::-1]
    elif defect == "topk_unknown_item":
        output["topk"] = [*topk[:2], "A9"]
    elif defect == "topk_too_long":
        output["topk"] = [*topk, *(a for a in ACTIONS if a not in topk)][:4]
    elif defect == "topk_empty":
        output["topk"] = []
    elif defect == "object_wrong_type":
        wrong = [e.object_id for e in candidates if e.object_id not in permitted]
        output["object_id"] = draw(st.sampled_from(wrong)) if wrong else "E9"
    elif defect == "object_not_candidate":
        output["object_id"] = next((e for e in ENTITY_IDS if e not in {c.object_id for c in candidates}), "E9")
    elif defect == "object_none":
        output["object_id"] = rk.NONE
    elif defect == "object_unresolved":
        output["object_id"] = rk.UNRESOLVED
    elif defect == "action_unknown":
        output["action_id"] = "A9"
    elif defect == "extra_key":
        output["note"] = draw(json_values)
    elif defect == "extra_too_deep":
        output["note"] = _deep(draw(st.integers(29, 33)))
    elif defect == "missing_field":
        del output[draw(st.sampled_from(sorted(output)))]
    elif defect == "topk_tuple":
        output["topk"] = tuple(topk)
    elif defect == "mapping_proxy":
        return MappingProxyType(output)
    return json.dumps(output) if draw(st.integers(0, 7)) == 0 else output


@st.composite
def scenarios(draw):
    catalog = draw(catalogs())
    controller = rk.Controller(catalog, draw(policies(catalog)), draw(options))
    candidates = draw(entities)
    request = rk.RouteRequest("Q1", "text", (), rk.RuntimeState(draw(states)), candidates)
    some_output = near_valid(catalog, candidates) | near_valid(catalog, candidates) | outputs()
    repair = draw(st.just(NO_REPAIR) | some_output)
    return controller, request, draw(some_output), repair


def _same(decision: rk.Decision, expected: rk.Decision) -> None:
    assert decision == expected
    assert decision.as_dict() == expected.as_dict()
    assert decision.trace() == expected.trace()
    assert decision.legacy_reason_codes == expected.legacy_reason_codes


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=600, deadline=None)
@given(scenarios())
def test_decide_equals_the_reference_algorithm(scenario):
    controller, request, first, repair = scenario
    _same(controller.decide(request, first, repair), reference_decide(controller, request, first, repair))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_fast_path_equals_the_general_protocol(scenario):
    """The dict shortcut in ``Controller.decide`` changes speed only: the generic protocol gives the same record."""
    controller, request, first, repair = scenario
    _same(controller.decide(request, first, repair), OneCallRouter.decide(controller, request, first, repair))


@settings(max_examples=300, deadline=None)
@given(scenarios())
def test_decide_is_repeatable_and_does_not_keep_verdicts(scenario):
    """Deciding twice gives equal records; deciding the same request under A-state first does not change what the
    enforcing controller decides afterwards (nothing learnt about a request is kept between calls)."""
    controller, request, first, repair = scenario
    expected = reference_decide(controller, request, first, repair)
    other = controller.with_options(enforce_state=not controller.options.enforce_state)
    other.decide(request, first, repair)
    _same(controller.decide(request, first, repair), expected)
    _same(controller.decide(request, first, repair), expected)


def test_the_fast_path_is_taken_on_a_clean_dict():
    """Guards the speed work itself: a clean dict output never reaches the general protocol."""
    catalog = rk.Catalog((rk.CatalogAction("A0", "a", "a", ("T1",)),))
    controller = rk.Controller(catalog, rk.PolicyEngine([rk.rule("R", 1, "*", {}, "ALLOW")], catalog.ids))
    request = rk.RouteRequest("Q", "t", (), rk.RuntimeState({}), (rk.Entity("E0", "T1", "e"),))
    calls = []

    class Spy(rk.Controller):
        __slots__ = ()

        def check(self, raw, req):
            calls.append(raw)
            return super().check(raw, req)

    spy = Spy(controller.catalog, controller.policy)
    decision = spy.decide(request, {"action_id": "A0", "object_id": "E0", "topk": ["A0"]})
    assert decision.strict_path == "A0@E0" and calls == []
    spy.decide(request, {"action_id": "A0", "object_id": "E9", "topk": ["A0"]})  # invalid: the general path
    assert len(calls) == 1


def test_fast_record_builders_set_every_field():
    """The hot path's builders make records equal to the dataclass constructors' (and cover every field)."""
    assert tuple(f.name for f in fields(rk.Proposal)) == ("action_id", "object_id", "topk")
    proposal = new_proposal("A", "O", ("A", "B"))
    assert proposal == rk.Proposal("A", "O", ("A", "B")) and type(proposal) is rk.Proposal
    context = DecisionContext(rk.AssetHashes("c", "r"), rk.ControllerOptions())
    rule = rk.rule("R", 1, "*", {}, "ALLOW")
    log = ContractLog((), True, "x")
    fast = _new_decision("Q", rk.Terminal.DISPATCH, "A", "O", rk.ReasonCode.DISPATCH_OK, context, proposal, rule,
                         rk.ObjectResolution.RESOLVED, {"raw": 1}, log)
    slow = rk.Decision("Q", rk.Terminal.DISPATCH, "A", "O", rk.ReasonCode.DISPATCH_OK, context, proposal, rule,
                       rk.ObjectResolution.RESOLVED, {"raw": 1}, log)
    assert fast == slow and fast.as_dict() == slow.as_dict() and hash(fast.request_id) == hash(slow.request_id)
    for name in (f.name for f in fields(rk.Decision)):
        assert getattr(fast, name) == getattr(slow, name)
