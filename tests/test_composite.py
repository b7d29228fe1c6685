"""Composite requests (issue 32, item 3): one call proposes 1-3 items under the composite contract; each item is
decided by the controller's own Algorithm 1 in order, earlier items entering the session history later items'
rules read; atomic and independent modes; typed codes for malformed lists; single-item requests decide exactly as
through the single-item contract; the B1/B2 one-call variants; the composite JSON schema."""

from __future__ import annotations

from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routebr_kit.backends.constrain import answer_schema, response_format, schema_for_call
from routebr_kit.backends.scripted import ScriptedBackend
from routebr_kit.core.composite import COMPOSITE_CONTRACT_VERSION, MAX_ITEMS, CompositeMode
from routebr_kit.core.composite_decision import CompositeController, CompositeDecision, ItemStatus
from routebr_kit.core.controller import Controller
from routebr_kit.core.records import Entity, ReasonCode, RouteRequest, RuntimeState, Stage, Terminal
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.prompts import load_prompts
from routebr_kit.store.assets import load_catalog, load_rules
from routebr_kit.systems import CompositeBaseline

ROOT = Path(__file__).resolve().parents[1]
CATALOG = load_catalog(ROOT / "routebr_kit/resources/catalog.csv")
A3, A5, A2, A4 = "A3_ACCOUNT_ANALYSIS", "A5_PROTECTED_ACTION", "A2_INFO_LOOKUP", "A4_SUPPORT_RESPONSE"
ENTITIES = (Entity("ETF_1", "ETF", "An ETF"), Entity("ETF_2", "ETF", "Another ETF"),
            Entity("ACC_1", "ACCOUNT", "The account"), Entity("TOPIC_1", "TOPIC", "A topic"))
SESSION_STATE = RuntimeState({"safety_escalation_required": False, "identity_verified": True})
CHECKED = {"at": 900, "kind": "identity_check"}


def item(action, obj):
    return {"action_id": action, "object_id": obj}


def items(*pairs):
    return {"items": [item(a, o) for a, o in pairs]}


@pytest.fixture(scope="module")
def session_controller():
    return Controller(CATALOG, load_rules(ROOT / "data/sessions/rules.csv", CATALOG))


@pytest.fixture(scope="module")
def same_minute_controller():
    """A protected action is deferred when anything was dispatched in the last minute (a count rule)."""
    rules = [rule("C10", 10, A5, {"@count": {"kind": "dispatch", "window_s": 60, "gte": 1}}, "DEFER"),
             rule("R999", 999, "*", {}, "ALLOW")]
    return Controller(CATALOG, PolicyEngine(rules, CATALOG.ids))


def session_request(session, state=SESSION_STATE):
    return RouteRequest("r1", "check my balance and sell ETF_1", (), state, ENTITIES, session)


# --------------------------------------------------------------------------------------------- typed codes


@pytest.mark.parametrize("output, code, field", [
    ({"items": []}, "ITEMS_EMPTY", "items"),
    ({"items": [item(A2, "TOPIC_1"), item(A3, "ACC_1"), item(A5, "ETF_1"), item(A5, "ETF_2")]},
     "ITEMS_TOO_LONG", "items"),
    ({"items": [item(A5, "ETF_1"), item(A5, "ETF_1")]}, "ITEMS_DUPLICATE", "items[1]"),
    ({"items": [item(A5, "ETF_1"), "A5"]}, "ITEM_NOT_AN_OBJECT", "items[1]"),
    ({"items": item(A5, "ETF_1")}, "ITEMS_NOT_A_LIST", "items"),
    (item(A5, "ETF_1"), "ITEMS_NOT_A_LIST", "items"),
    ('{"items": [{"action_id": "A5_PROTECTED_ACTION"', "INVALID_JSON", "output"),
    ('```json\n{"items": []}\n```', "INVALID_JSON", "output"),
    ('{"items": [], "items": []}', "DUPLICATE_KEY", "items"),
    ([item(A5, "ETF_1")], "NOT_AN_OBJECT", "output"),
])
@pytest.mark.parametrize("repair", [True, False])
def test_malformed_lists_fail_closed_with_typed_codes(session_controller, output, code, field, repair):
    c = CompositeController(session_controller if repair else session_controller.with_options(repair=False))
    d = c.decide(session_request({"now": 1000, "events": [CHECKED]}), output)
    assert d.failed_closed and d.items == () and d.dispatched == ()
    assert d.terminal is Terminal.CLARIFY and d.terminals == ()
    assert (field, code) in [(e.field, e.code.value) for e in d.errors]
    # no format-only repair can keep the choice of a malformed list: none is asked for
    expected = ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED if repair else ReasonCode.FAIL_CLOSED_INVALID_OUTPUT
    assert d.reason is expected and not d.repair_attempted and d.calls == 1
    record = d.as_dict()
    assert record["reason"] == expected.value and record["contract_version"] == COMPOSITE_CONTRACT_VERSION
    assert record["trace"][-1]["step"] == "EMIT" and expected.value in record["trace"][-1]["detail"]


def test_an_invalid_item_is_refused_with_its_field(session_controller):
    d = CompositeController(session_controller).decide(
        session_request({"now": 1000, "events": [CHECKED]}), items((A2, "TOPIC_1"), (A5, "TOPIC_1")))
    assert d.reason is ReasonCode.FAIL_CLOSED_INVALID_OUTPUT  # (anchored, but no repair was recorded)
    assert [(e.field, e.code.value) for e in d.errors] == [("items[1].object_id", "OBJECT_TYPE_MISMATCH")]


def test_one_repair_held_item_by_item(session_controller):
    c = CompositeController(session_controller)
    req = session_request({"now": 1000, "events": [CHECKED]})
    first = {"items": [{**item(A3, "ACC_1"), "topk": A3}, item(A5, "ETF_1")]}  # topk not a list
    d = c.decide(req, first, items((A3, "ACC_1"), (A5, "ETF_1")))
    assert not d.failed_closed and d.repair_attempted and d.calls == 2
    assert [e.code.value for e in d.errors] == ["TOPK_LENGTH"]
    changed = c.decide(req, first, items((A3, "ACC_1"), (A5, "ETF_2")))
    assert changed.reason is ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert ("items[1].object_id", "REPAIR_CHANGED_OBJECT") in [(e.field, e.code.value) for e in changed.errors]
    dropped = c.decide(req, first, items((A3, "ACC_1")))
    assert dropped.reason is ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    unanchored = c.decide(req, {"items": [item(A3, "ACC_1"), {"object_id": "ETF_1"}]}, items((A3, "ACC_1")))
    assert unanchored.reason is ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED
    assert ("items[1].action_id", "REPAIR_UNANCHORED") in [(e.field, e.code.value) for e in unanchored.errors]


def test_a_broken_state_or_session_fails_closed_before_the_call(session_controller):
    backend = ScriptedBackend({})
    d = CompositeController(session_controller).route(session_request({"now": -1}), backend)
    assert d.reason is ReasonCode.FAIL_CLOSED_INVALID_STATE and d.calls == 0 and backend.calls == []
    assert d.state_decision.state_errors and d.as_dict()["state_decision"]["reason"] == "FAIL_CLOSED_INVALID_STATE"


def test_a_backend_failure_fails_closed(session_controller):
    backend = ScriptedBackend({Stage.ROUTEBR_COMPOSITE: [TimeoutError("slow")]})
    d = CompositeController(session_controller).route(session_request({"now": 1000, "events": [CHECKED]}), backend)
    assert d.reason is ReasonCode.FAIL_CLOSED_BACKEND_TIMEOUT and d.items == ()
    assert d.trace()[0].outcome == "backend failure"


# --------------------------------------------------------------------------------------------- semantics


def test_a_dispatched_first_item_is_seen_by_the_second_items_count_rule(same_minute_controller):
    """"Check my balance and sell ETF_1": alone, the sale dispatches; after the balance check of the same request
    the count rule sees that dispatch and defers the sale."""
    req = session_request({"now": 1000, "events": []}, RuntimeState({}))
    alone = same_minute_controller.decide(req, {**item(A5, "ETF_1"), "topk": [A5]})
    assert alone.dispatched
    output = items((A3, "ACC_1"), (A5, "ETF_1"))
    atomic = CompositeController(same_minute_controller, "atomic").decide(req, output)
    assert atomic.terminal is Terminal.DEFER and atomic.dispatched == ()
    assert [o.status for o in atomic.items] == [ItemStatus.WITHHELD, ItemStatus.NOT_DISPATCHED]
    assert atomic.terminals == (Terminal.DEFER, Terminal.DEFER)
    second = atomic.items[1].decision
    assert second.rule_id == "C10"
    evidence = [t.detail for t in second.trace() if t.outcome.startswith("temporal:")]
    assert evidence and "#0 t=1000 dispatch A3_ACCOUNT_ANALYSIS@ACC_1" in evidence[0]
    independent = CompositeController(same_minute_controller, "independent").decide(req, output)
    assert independent.terminals == (Terminal.DISPATCH, Terminal.DEFER)
    assert independent.dispatched == ((A3, "ACC_1"),) and independent.terminal is Terminal.DEFER
    # the order is the customer's: the sale first, then the balance check, both dispatch
    reversed_ = CompositeController(same_minute_controller, "atomic").decide(req, items((A5, "ETF_1"), (A3, "ACC_1")))
    assert reversed_.terminal is Terminal.DISPATCH and reversed_.dispatched == ((A5, "ETF_1"), (A3, "ACC_1"))


def test_a_dispatched_first_item_counts_towards_the_second_items_sum_rule(session_controller):
    """Two sales of 60000 each: the first fits the daily total of 100000; the second, with the first in the
    history, exceeds it (T120)."""
    req = session_request({"now": 1000, "events": [CHECKED], "attributes": {"amount": 60000}})
    output = items((A5, "ETF_1"), (A5, "ETF_2"))
    independent = CompositeController(session_controller, "independent").decide(req, output)
    assert independent.terminals == (Terminal.DISPATCH, Terminal.REJECT)
    assert independent.items[1].decision.rule_id == "T120"
    atomic = CompositeController(session_controller, "atomic").decide(req, output)
    assert atomic.terminal is Terminal.REJECT and atomic.dispatched == ()
    small = req.with_session({"now": 1000, "events": [CHECKED], "attributes": {"amount": 40000}})
    assert CompositeController(session_controller, "atomic").decide(small, output).dispatched == (
        (A5, "ETF_1"), (A5, "ETF_2"))


def test_atomic_skips_items_after_the_first_non_dispatch(session_controller):
    req = session_request({"now": 1000, "events": [CHECKED]})
    output = items((A2, "TOPIC_1"), (A5, "UNRESOLVED"), (A3, "ACC_1"))
    d = CompositeController(session_controller, "atomic").decide(req, output)
    assert [o.status for o in d.items] == [ItemStatus.WITHHELD, ItemStatus.NOT_DISPATCHED, ItemStatus.SKIPPED]
    assert d.items[2].decision is None and d.terminal is Terminal.CLARIFY
    assert d.items[1].decision.reason is ReasonCode.OBJECT_UNRESOLVED
    ind = CompositeController(session_controller, "independent").decide(req, output)
    assert ind.terminals == (Terminal.DISPATCH, Terminal.CLARIFY, Terminal.DISPATCH)
    # the history the request leaves: one event per decided item
    after = ind.session_after(ind.items[0].decision.session)
    assert [(e.kind, e.action_id, e.terminal) for e in after.events[1:]] == [
        ("dispatch", A2, "DISPATCH"), ("non_dispatch", A5, "CLARIFY"), ("dispatch", A3, "DISPATCH")]
    assert [e.kind for e in d.events(1000)] == ["non_dispatch", "non_dispatch"]
    steps = [t.step.value for t in d.trace()]
    assert steps.count("ITEM") == 3 and steps[-1] == "EMIT"


def test_records_are_replayable_json(session_controller):
    import json

    req = session_request({"now": 1000, "events": [CHECKED]})
    c = CompositeController(session_controller, "independent")
    d = c.decide(req, json.dumps(items((A3, "ACC_1"), (A5, "ETF_1"))))
    record = json.loads(json.dumps(d.as_dict()))
    again = c.decide(req, record["first_output"])
    assert again.as_dict() == d.as_dict()
    assert [i["decision"]["terminal"] for i in record["items"]] == ["DISPATCH", "DISPATCH"]


def test_live_route_sends_the_composite_contract(session_controller):
    backend = ScriptedBackend({Stage.ROUTEBR_COMPOSITE: [items((A5, "ETF_1"))]})
    d = CompositeController(session_controller).route(session_request({"now": 1000, "events": [CHECKED]}), backend)
    assert d.dispatched == ((A5, "ETF_1"),)
    (call,) = backend.calls
    assert call.stage is Stage.ROUTEBR_COMPOSITE
    assert call.payload["contract"]["contract_version"] == COMPOSITE_CONTRACT_VERSION
    assert "runtime_context" not in call.payload  # the proposer never sees state or rules


def test_mode_is_typed(session_controller):
    with pytest.raises(Exception) as err:
        CompositeController(session_controller, "all_or_nothing")
    assert err.value.code.value == "UNKNOWN_ENUM"
    assert CompositeMode.parse("independent") is CompositeMode.INDEPENDENT


# --------------------------------------------------------------------------------------------- single items unchanged

PLAIN_RULES = load_rules(ROOT / "routebr_kit/resources/boundary_rules.csv", CATALOG)
PLAIN = Controller(CATALOG, PLAIN_RULES)
STATE_KEYS = ("safety_escalation_required", "request_supported", "service_available", "request_scope_clear",
              "entity_resolved", "identity_verified", "action_permission", "context_fresh")
IDS = st.sampled_from([*CATALOG.ids, "A9_UNKNOWN", "", "  "]) | st.none() | st.integers(0, 3)
OBJECTS = st.sampled_from(["ETF_1", "ACC_1", "TOPIC_1", "UNRESOLVED", "NONE", "ETF_9", ""]) | st.none()


@st.composite
def proposals(draw):
    action = draw(IDS)
    topk = draw(st.sampled_from([[action], [action, A2], [A2], [], "x", [action, action]]))
    return {"action_id": action, "object_id": draw(OBJECTS), "topk": topk}


@st.composite
def states(draw):
    values = {k: draw(st.booleans()) for k in STATE_KEYS}
    if draw(st.integers(0, 9)) == 0:
        values[STATE_KEYS[draw(st.integers(0, len(STATE_KEYS) - 1))]] = "yes"  # breaks its schema
    return RuntimeState(values)


def _strip(errors):
    return sorted((e.code.value, e.field.removeprefix("items[0].")) for e in errors)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(), states(), st.sampled_from(list(CompositeMode)), st.booleans())
def test_single_items_decide_identically_through_both_paths(proposal, state, mode, repair):
    controller = PLAIN if repair else PLAIN.with_options(repair=False)
    req = RouteRequest("p", "u", (), state, ENTITIES)
    single = controller.decide(req, proposal)
    composite = CompositeController(controller, mode).decide(req, {"items": [proposal]})
    assert composite.terminal is single.terminal
    if single.reason is ReasonCode.FAIL_CLOSED_INVALID_STATE:
        assert composite.state_decision.as_dict() == single.as_dict() and composite.calls == single.calls == 0
    elif single.valid:
        (only,) = composite.items
        assert only.decision.as_dict() == single.as_dict()
        assert only.dispatched == single.dispatched and only.emitted is single.terminal
    else:
        assert composite.reason is single.reason and composite.items == ()
        assert _strip(composite.errors) == _strip(single.errors)


# --------------------------------------------------------------------------------------------- B1/B2


def direct(terminal, action, obj, boundary, **extra):
    return {"terminal": terminal, "action_id": action, "object_id": obj, "boundary": boundary, **extra}


@pytest.mark.parametrize("system", ["b1_direct", "b2_direct_guard"])
def test_baseline_composite_variants(system):
    guard = system == "b2_direct_guard"
    cite = {"rule_ids": ["R999"]} if guard else {}
    req = RouteRequest("b", "u", (), RuntimeState({k: True for k in STATE_KEYS}), ENTITIES)
    output = {"items": [direct("DISPATCH", A2, "TOPIC_1", "ALLOW", **cite),
                        direct("REJECT", A5, "ETF_1", "REJECT", **cite)]}
    atomic = CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES, "atomic").decide(req, output)
    assert isinstance(atomic, CompositeDecision) and atomic.system == system
    assert atomic.terminal is Terminal.REJECT and atomic.dispatched == ()
    assert [o.status for o in atomic.items] == [ItemStatus.WITHHELD, ItemStatus.NOT_DISPATCHED]
    ind = CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES, "independent").decide(req, output)
    assert ind.terminals == (Terminal.DISPATCH, Terminal.REJECT) and ind.dispatched == ((A2, "TOPIC_1"),)
    assert ind.items[0].decision.system.value == system and "ITEM" in [t.step.value for t in ind.trace()]
    dup = {"items": [output["items"][0], {**output["items"][0], "terminal": "CLARIFY"}]}
    refused = CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES).decide(req, dup)
    assert refused.failed_closed and "ITEMS_DUPLICATE" in [e.code.value for e in refused.errors]
    assert refused.terminal is Terminal.CLARIFY
    if guard:  # an item without its rule citation is an invalid item
        bad = {"items": [direct("DISPATCH", A2, "TOPIC_1", "ALLOW")]}
        no_cite = CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES).decide(req, bad)
        assert ("items[0].rule_ids", "RULE_IDS_UNKNOWN") in [(e.field, e.code.value) for e in no_cite.errors]
    backend = ScriptedBackend({f"{system.upper()}_COMPOSITE": [output]})
    routed = CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES, "independent").route(req, backend)
    assert routed.as_dict() == ind.as_dict()
    (call,) = backend.calls
    assert call.payload["contract"]["contract_version"] == COMPOSITE_CONTRACT_VERSION
    assert "runtime_context" in call.payload and ("rules" in call.payload) is guard


def test_baseline_composite_needs_the_kit_protocol():
    from routebr_kit.systems import DirectBaseline

    published = DirectBaseline.for_system("b1_direct", CATALOG, PLAIN_RULES, protocol="published")
    with pytest.raises(Exception) as err:
        CompositeBaseline(published)
    assert err.value.code.value == "INVALID_VALUE"


# --------------------------------------------------------------------------------------------- schema and prompts


def _payload(stage):
    if stage is Stage.ROUTEBR_COMPOSITE:
        return CompositeController(PLAIN).payload(RouteRequest("s", "u", (), RuntimeState({}), ENTITIES))
    system = "b2_direct_guard" if stage is Stage.B2_DIRECT_GUARD_COMPOSITE else "b1_direct"
    return CompositeBaseline.for_system(system, CATALOG, PLAIN_RULES).payload(
        RouteRequest("s", "u", (), RuntimeState({k: True for k in STATE_KEYS}), ENTITIES))


@pytest.mark.parametrize("stage", [Stage.ROUTEBR_COMPOSITE, Stage.B1_DIRECT_COMPOSITE,
                                   Stage.B2_DIRECT_GUARD_COMPOSITE])
def test_the_composite_schema_ties_each_items_object_to_its_action(stage):
    payload = _payload(stage)
    schema = schema_for_call(stage, payload)
    assert schema_for_call(stage.repair_stage, {"original_payload": payload}) == schema
    validator = jsonschema.Draft202012Validator(schema)
    branches = schema["properties"]["items"]["items"]["anyOf"]
    single = answer_schema(stage.single, payload["catalog"], payload["entities"],
                           [r["rule_id"] for r in payload.get("rules", [])])
    assert len(branches) == len(single["anyOf"]) and schema["properties"]["items"]["maxItems"] == MAX_ITEMS
    router = (CompositeController(PLAIN) if stage is Stage.ROUTEBR_COMPOSITE else CompositeBaseline.for_system(
        "b2_direct_guard" if "B2" in stage.value else "b1_direct", CATALOG, PLAIN_RULES))
    req = RouteRequest("s", "u", (), RuntimeState({k: True for k in STATE_KEYS}), ENTITIES)
    # every branch's instance, alone and after another, is schema-valid and accepted by the contract
    instances = []
    for branch in branches:
        instance = {k: (v["const"] if "const" in v else v["enum"][0] if "enum" in v else [v["items"]["enum"][0]])
                    for k, v in branch["properties"].items()}
        instances.append(instance)
    key = lambda i: (i["action_id"], i["object_id"])  # noqa: E731
    for a, b in zip(instances, instances[1:] + instances[:1]):
        answer = {"items": [a] if key(a) == key(b) else [a, b]}  # (B1/B2: a grammar may let a duplicate through)
        validator.validate(answer)
        assert router.check(answer, req).ok
    # an object of a type the action does not accept is outside the schema (and refused by the contract)
    wrong = {"items": [{**instances[0], "action_id": A2, "object_id": "ACC_1"}]}
    assert not validator.is_valid(wrong) and not router.check(wrong, req).ok
    assert not validator.is_valid({"items": []}) and not validator.is_valid({"items": instances[:4]})
    assert not validator.is_valid({"items": [instances[0], instances[0]]})
    assert response_format_name(stage, payload).endswith("_composite")


def response_format_name(stage, payload):
    from routebr_kit.backends.constrain import Constrain, SchemaStyle

    return response_format(Constrain.JSON_SCHEMA, SchemaStyle.OPENAI, stage, payload)["json_schema"]["name"]


def test_composite_prompts_extend_the_single_item_texts():
    prompts = load_prompts()
    for stage in (Stage.ROUTEBR_COMPOSITE, Stage.B1_DIRECT_COMPOSITE, Stage.B2_DIRECT_GUARD_COMPOSITE):
        text = prompts.instruction(stage)
        single = stage.single.value
        assert COMPOSITE_CONTRACT_VERSION in text and prompts.output_schemas[single] in text
        assert text.startswith(prompts.texts[single].split("{output_schema}")[0])
        repair = prompts.instruction(stage.repair_stage)
        assert stage.value in repair and prompts.output_schemas[stage.value] in repair
    assert COMPOSITE_CONTRACT_VERSION not in prompts.instruction(Stage.ROUTEBR)
    assert "items" not in prompts.instruction(Stage.ROUTEBR)


SESSION_RULES = load_rules(ROOT / "data/sessions/rules.csv", CATALOG)


@st.composite
def sessions(draw):
    now = draw(st.sampled_from([0, 600, 1000, 4000]))
    events = []
    for at in sorted(draw(st.lists(st.sampled_from([0, 300, 500, 900, 1000]), max_size=4))):
        if at > now:
            continue
        kind = draw(st.sampled_from(["identity_check", "dispatch", "approval"]))
        event = {"at": at, "kind": kind}
        if kind == "dispatch":
            event.update(action_id=A5, object_id="ETF_1", terminal="DISPATCH",
                         attributes={"amount": draw(st.sampled_from([0, 50000, 100000]))})
        events.append(event)
    session = {"now": now, "events": events, "attributes": {"amount": draw(st.sampled_from([0, 1, 60000]))}}
    if draw(st.integers(0, 9)) == 0:
        session["now"] = -1  # breaks its schema
    return session


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(proposals(), sessions(), st.sampled_from(list(CompositeMode)))
def test_single_items_with_sessions_decide_identically_through_both_paths(proposal, session, mode):
    controller = Controller(CATALOG, SESSION_RULES)
    req = session_request(session)
    single = controller.decide(req, proposal)
    composite = CompositeController(controller, mode).decide(req, {"items": [proposal]})
    assert composite.terminal is single.terminal
    if single.reason is ReasonCode.FAIL_CLOSED_INVALID_STATE:
        assert composite.state_decision.as_dict() == single.as_dict()
    elif single.valid:
        assert composite.items[0].decision.as_dict() == single.as_dict()
    else:
        assert composite.reason is single.reason and _strip(composite.errors) == _strip(single.errors)


def test_an_openai_compatible_request_carries_the_composite_prompt_and_schema(session_controller):
    from routebr_kit.backends.openai_compat import OpenAICompatBackend
    from routebr_kit.backends.profiles import load_profile
    from routebr_kit.backends.registry import DEFAULT_PROFILES
    from routebr_kit.core.calls import ModelCall

    profile = load_profile(DEFAULT_PROFILES, "local-smollm2")
    backend = OpenAICompatBackend(profile, load_prompts("en"), constrain="json-schema")
    payload = CompositeController(session_controller).payload(session_request({"now": 0}))
    body = backend.request_body(ModelCall("c", Stage.ROUTEBR_COMPOSITE, payload))
    assert COMPOSITE_CONTRACT_VERSION in body["messages"][0]["content"]
    assert body["response_format"]["schema"] == schema_for_call(Stage.ROUTEBR_COMPOSITE, payload)
    assert "items" in body["response_format"]["schema"]["properties"]


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.sampled_from([A2, A5, "ETF_1", "NONE", "items"]),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
                        st.sampled_from(["items", "action_id", "object_id", "topk", "x"]), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, JSON | st.just(None))
def test_any_json_output_is_decided_or_fails_closed_never_raises(first, repair):
    c = CompositeController(PLAIN, "independent")
    req = RouteRequest("f", "u", (), RuntimeState({k: True for k in STATE_KEYS}), ENTITIES)
    d = c.decide(req, {"items": first} if isinstance(first, list) else first, repair)
    assert d.failed_closed == (d.items == ())
    if d.failed_closed:
        assert d.reason.fail_closed and d.errors and d.dispatched == ()
    assert d.as_dict()["terminal"] == d.terminal.value
