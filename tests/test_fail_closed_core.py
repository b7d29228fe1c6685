"""Issue 12 (items 1, 3, 5, 6) on the online path: the repair guard holds whatever the first reply exposes, model
replies are strict JSON of bounded depth, every record serialises, and a runtime state that breaks its schema
fails closed.  Ends with a seeded fuzz of 10,000 replies through ``decide`` and ``route``."""

from __future__ import annotations

import asyncio
import json
import math
import random
import time

import pytest
from core_fixtures import A1, A3, A4, A5, CATALOG, POLICY, STATE, controller, proposal, request, scripted
from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core.contract import held_identifiers
from routebr_kit.core.state import StateErrorCode, StateSchema
from routebr_kit.core.strict_json import JsonIssue, StrictJsonError, strict_loads
from routebr_kit.systems.baselines import DirectBaseline

C = rk.ContractErrorCode
R = rk.ReasonCode
S = rk.Stage

# ---------------------------------------------------------------------------------------- 1. repair guard

SWAP = proposal(A5, "P_ALPHA", [A5])  # the attack: a "repair" that swaps in the protected action


def _fenced(text: str) -> str:
    return "```json\n" + text + "\n```"


MALFORMED = {  # each keeps A1 / P_ALPHA visible, none is one strict-JSON object
    "fenced": _fenced(json.dumps(proposal())),
    "prose": "Here is my routing decision: " + json.dumps(proposal()),
    "truncated": json.dumps(proposal())[:-3],
    "single_quotes": str(proposal()),
    "array": json.dumps([proposal()]),
    "double_encoded": json.dumps(json.dumps(proposal())),
    "two_equal_objects": json.dumps(proposal()) + json.dumps(proposal()),
}


@pytest.mark.parametrize("form", sorted(MALFORMED))
def test_a_repair_that_swaps_the_action_fails_closed_whatever_the_first_reply_looks_like(form):
    d = controller().route(request(), scripted(MALFORMED[form], repair=[SWAP]))
    assert not d.dispatched and d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert C.REPAIR_CHANGED_ACTION in {e.code for e in d.repair_errors}
    assert d.legacy_reason_codes == ["FAIL_CLOSED_ROUTEBR"]


@pytest.mark.parametrize("form", sorted(MALFORMED))
def test_a_format_only_repair_is_still_accepted(form):
    d = controller().route(request(), scripted(MALFORMED[form], repair=[proposal()]))
    assert d.dispatched and d.repair_attempted and (d.action_id, d.object_id) == (A1, "P_ALPHA")


def test_a_repair_that_swaps_the_object_of_a_malformed_reply_fails_closed():
    d = controller().route(request(), scripted(MALFORMED["fenced"], repair=[proposal(A1, "P_BETA")]))
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert [e.code for e in d.repair_errors] == [C.REPAIR_CHANGED_OBJECT]


@pytest.mark.parametrize("first", [
    "oops", "", "```\n```", "[]", "null", '"just a string"', "{}", '{"action": "A1_ADVISORY"}', 42, None, [1, 2],
    '{"action_id": "", "object_id": "P_ALPHA"}',
])
def test_no_repair_is_requested_when_the_first_reply_exposes_no_action(first):
    backend = scripted(first, repair=[proposal()])
    d = controller().route(request(), backend)
    assert d.reason is R.FAIL_CLOSED_REPAIR_UNANCHORED and not d.dispatched and not d.repair_attempted
    assert backend.stages() == [S.ROUTEBR] and d.calls == 1
    assert [(e.code, e.field) for e in d.repair_errors] == [(C.REPAIR_UNANCHORED, "action_id")]
    assert d.legacy_reason_codes == ["FAIL_CLOSED_ROUTEBR"]
    assert controller().decide(request(), first, json.dumps(proposal())) == d  # decide agrees with route
    assert [t.step for t in d.trace()][-2:] == [rk.TraceStep.REPAIR, rk.TraceStep.EMIT]


@pytest.mark.parametrize("first", [
    json.dumps(proposal(A1)) + json.dumps(proposal(A5)),  # several objects
    '{"action_id": "A1_ADVISORY", "action_id": "A5_PROTECTED_ACTION", "object_id": "P_ALPHA", "topk": []}',
    "Either {'action_id': 'A1_ADVISORY'} or {'action_id': 'A5_PROTECTED_ACTION'}",
])
def test_contradictory_actions_in_the_first_reply_are_unanchored(first):
    backend = scripted(first, repair=[proposal(A1)])
    d = controller().route(request(), backend)
    assert d.reason is R.FAIL_CLOSED_REPAIR_UNANCHORED and backend.stages() == [S.ROUTEBR]


def test_contradictory_objects_are_unanchored():
    first = _fenced(json.dumps(proposal(A1, "P_ALPHA")) + json.dumps(proposal(A1, "P_BETA")))
    d = controller().route(request(), scripted(first, repair=[proposal(A1, "P_ALPHA")]))
    assert d.reason is R.FAIL_CLOSED_REPAIR_UNANCHORED
    assert [e.field for e in d.repair_errors] == ["object_id"]


def test_held_identifiers_read_the_top_level_of_a_json_object_first():
    nested = {"action_id": A1, "object_id": "P_ALPHA", "alternatives": {"action_id": A5}}
    assert held_identifiers(json.dumps(nested)).action_ids == (A1,)
    assert held_identifiers(nested).action_ids == (A1,)
    assert held_identifiers('{\\"action_id\\": \\"A3_ACCOUNT_ANALYSIS\\"}').action_ids == (A3,)
    assert held_identifiers("myaction_id: 'A5'").action_ids == ()  # a key, not a suffix of another word


def test_the_repair_prompts_state_the_rule():
    from routebr_kit.prompts import load_prompts

    en = load_prompts("en").texts["REPAIR"]
    assert "exactly as invalid_output states them" in en and "is rejected" in en
    assert "leaves missing, empty or null may not be supplied" in en
    zh = load_prompts("zh").texts["REPAIR"]
    assert "invalid_output 写出的 action_id 与 object_id 必须逐字保留" in zh and "不得补上" in zh


@st.composite
def malformed_first(draw):
    """A first reply with a known action and object, malformed in a random way."""
    action = draw(st.sampled_from(list(CATALOG.ids)))
    obj = draw(st.sampled_from(["P_ALPHA", "P_BETA", "ACC_1", "SVC_1", "UNRESOLVED", "NONE"]))
    body = draw(st.fixed_dictionaries({"action_id": st.just(action), "object_id": st.just(obj)},
                                      optional={"topk": st.lists(st.sampled_from(list(CATALOG.ids)), max_size=4),
                                                "note": st.text(max_size=10)}))
    text = json.dumps(body)
    form = draw(st.sampled_from(["fence", "prose", "cut", "quotes", "array", "double", "twice"]))
    text = {"fence": _fenced(text), "prose": "route: " + text + " ok", "cut": text[:-1], "quotes": str(body),
            "array": json.dumps([body]), "double": json.dumps(text), "twice": text + "\n" + text}[form]
    return text, action, obj


@settings(max_examples=300, deadline=None)
@given(first=malformed_first(), repair_action=st.sampled_from(list(CATALOG.ids)),
       repair_object=st.sampled_from(["P_ALPHA", "P_BETA", "ACC_1", "SVC_1", "UNRESOLVED", "NONE"]))
def test_property_no_repair_dispatches_other_identifiers_than_the_first_reply(first, repair_action, repair_object):
    text, action, obj = first
    repaired = {"action_id": repair_action, "object_id": repair_object, "topk": [repair_action]}
    d = controller().decide(request(), text, json.dumps(repaired))
    if d.dispatched:
        assert (d.action_id, d.object_id) == (action, obj)
    if (repair_action, repair_object) != (action, obj):
        assert not d.dispatched and d.fallback


# ---------------------------------------------------------------------------------------- 3. strict JSON replies


@pytest.mark.parametrize("raw, code", [
    ('{"action_id": "A1_ADVISORY", "action_id": "A5_PROTECTED_ACTION", "object_id": "P_ALPHA", '
     '"topk": ["A5_PROTECTED_ACTION"]}', C.DUPLICATE_KEY),
    ('{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"], "x": {"a": 1, "a": 2}}',
     C.DUPLICATE_KEY),
    ('{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"], "score": NaN}',
     C.NON_FINITE_NUMBER),
    ('{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"], "score": -Infinity}',
     C.NON_FINITE_NUMBER),
    ('{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"], "score": 1e999}',
     C.NON_FINITE_NUMBER),
])
def test_non_strict_json_replies_are_contract_errors(raw, code):
    d = controller(repair=False).decide(request(), raw)
    assert d.reason is R.FAIL_CLOSED_INVALID_OUTPUT and [e.code for e in d.first_errors] == [code]
    json.dumps(d.as_dict(), allow_nan=False)


def test_a_duplicated_action_id_names_the_key():
    raw = '{"action_id": "A1_ADVISORY", "action_id": "A5_PROTECTED_ACTION", "object_id": "P_ALPHA", "topk": []}'
    (error,) = controller(repair=False).decide(request(), raw).first_errors
    assert (error.code, error.field) == (C.DUPLICATE_KEY, "action_id")


json_scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | \
    st.text(max_size=6)
json_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=3) |
                           st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(value=json_values)
def test_property_strict_json_agrees_with_json_on_strict_documents(value):
    text = json.dumps(value)
    assert strict_loads(text) == json.loads(text)


@settings(max_examples=200, deadline=None)
@given(value=st.dictionaries(st.text(min_size=1, max_size=4), json_values, min_size=1, max_size=4))
def test_property_any_repeated_key_is_rejected(value):
    key = next(iter(value))
    text = json.dumps(value)[:-1] + ", " + json.dumps(key) + ": 1}"
    with pytest.raises(StrictJsonError) as err:
        strict_loads(text)
    assert err.value.issue is JsonIssue.DUPLICATE_KEY and err.value.key == key


# ---------------------------------------------------------------------------------------- 5. deep nesting


def _nested(depth: int, leaf=None):
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("depth", [33, 900, 3000, 200_000])
def test_deeply_nested_text_replies_are_contract_errors(depth):
    raw = '{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"], "x": ' + \
        "[" * depth + "]" * depth + "}"
    d = controller().route(request(), scripted(raw, repair=[raw]))
    assert d.fallback and C.NESTING_TOO_DEEP in {e.code for e in d.errors}
    json.dumps(d.as_dict())
    assert d.trace()


@pytest.mark.parametrize("depth", [40, 3000, 50_000])
def test_deep_values_in_parsed_replies_never_raise_and_records_serialise(depth):
    deep = _nested(depth)
    for raw in ({**proposal(), "extra": deep}, {**proposal(), "action_id": deep}, deep):
        for d in (controller().decide(request(), raw), controller().route(request(), scripted(raw, repair=[raw]))):
            assert not d.dispatched
            json.dumps(d.as_dict(), allow_nan=False)
            assert all(len(t.detail) < 2000 for t in d.trace())


def test_a_self_containing_reply_is_too_deep_not_a_crash():
    loop: dict = {**proposal()}
    loop["self"] = loop
    d = controller().decide(request(), loop)
    assert d.fallback and [e.code for e in d.first_errors] == [C.NESTING_TOO_DEEP]
    json.dumps(d.as_dict())


def test_records_hold_non_finite_floats_as_text():
    d = controller(repair=False).decide(request(), {"action_id": math.nan, "object_id": math.inf, "topk": []})
    record = json.loads(json.dumps(d.as_dict(), allow_nan=False))
    assert record["first_output"]["action_id"] == "nan"


def test_a_proposal_of_depth_32_is_still_accepted_and_33_is_not():
    ok = {**proposal(), "extra": _nested(31)}  # the object is level 1, so "extra" reaches depth 32
    assert controller().decide(request(), ok).dispatched
    assert controller().decide(request(), json.dumps(ok)).dispatched
    too_deep = {**proposal(), "extra": _nested(32)}
    assert not controller().decide(request(), too_deep).dispatched
    assert not controller().decide(request(), json.dumps(too_deep)).dispatched


# ---------------------------------------------------------------------------------------- records are UTF-8

#: Text with lone surrogates (what a JSON ``\\ud800`` escape decodes to) among ordinary characters.
surrogate_text = st.text(st.characters(min_codepoint=0xD7F0, max_codepoint=0xE010) | st.sampled_from("aé中\n"),
                         min_size=1, max_size=6)


def _encodable(record) -> None:
    json.dumps(record, ensure_ascii=False).encode("utf-8")  # raises UnicodeEncodeError on a lone surrogate


@settings(max_examples=300, deadline=None)
@given(field=st.sampled_from(["action_id", "object_id", "topk", "note", "key"]), text=surrogate_text,
       as_text=st.booleans(), repair=st.booleans())
def test_every_record_is_utf8_encodable(field, text, as_text, repair):
    """Issue 19, bullet 8: a lone surrogate anywhere in a reply (a value, a key, the text) leaves ``as_dict()`` and
    ``trace()`` encodable, for RouteBR and for B1/B2."""
    raw = {**proposal(), field: [text] if field == "topk" else text} if field != "key" else {**proposal(), text: 1}
    raw = json.dumps(raw, ensure_ascii=False) if as_text else raw
    again = json.dumps(proposal()) if repair else rk.core.controller.NO_REPAIR
    for d in (controller().decide(request(), raw, again), controller().route(request(), scripted(raw, repair=[raw])),
              DirectBaseline(CATALOG, POLICY, guard=True).decide(request(), raw)):
        _encodable(d.as_dict())
        if isinstance(d, rk.Decision):
            for event in d.trace():
                (event.outcome + event.detail).encode("utf-8")


def test_records_escape_lone_surrogates_as_the_writer_does():
    """One escaping rule: the writer's ``escape_surrogates`` is the core's, and a record holds exactly its result."""
    from routebr_kit.core.strict_json import escape_surrogates
    from routebr_kit.store import redact

    assert redact.escape_surrogates is escape_surrogates
    text = "a\ud800b\udfffc"
    assert escape_surrogates(text) == "a\\ud800b\\udfffc" == redact.csv_cell(text)
    assert redact.encode_json(text) == b'"a\\ud800b\\udfffc"\n'  # in JSON text: the escape, read back as `text`
    d = controller().decide(request(), {**proposal(), "note": text})
    assert d.as_dict()["first_output"]["note"] == escape_surrogates(text)
    assert d.first_output["note"] == text  # the decision itself keeps the output as read
    odd = rk.Entity("P_\udc80", "PRODUCT", "odd")  # a registry ID with a lone surrogate
    req = rk.RouteRequest("T1", "u", (), rk.RuntimeState(STATE), (odd,))
    d = controller().decide(req, proposal(A1, "P_\udc80", [A1]))
    assert d.dispatched and d.as_dict()["object_id"] == "P_\\udc80" and "P_\\udc80" in d.as_dict()["strict_path"]
    assert all("\ud800" not in e.detail and "\udc80" not in e.outcome + e.detail for e in d.trace())


# ---------------------------------------------------------------------------------------- 6. state schema


@pytest.mark.parametrize("permission", ["false", 0, None, "False", [False], math.nan])
def test_a_mistyped_predicate_fails_closed_instead_of_dispatching_the_protected_action(permission):
    backend = scripted(proposal(A5, "P_ALPHA", [A5]))
    d = controller().route(request(action_permission=permission), backend)
    assert d.reason is R.FAIL_CLOSED_INVALID_STATE and not d.dispatched and d.rule is None
    assert [(v.code, v.field) for v in d.state_errors] == [(StateErrorCode.WRONG_TYPE, "action_permission")]
    assert backend.calls == [] and d.calls == 0  # checked before the proposal call
    assert d.terminal is rk.Terminal.CLARIFY and d.legacy_reason_codes == ["FAIL_CLOSED_ROUTEBR"]
    record = json.loads(json.dumps(d.as_dict()))
    assert record["state_errors"][0]["field"] == "action_permission"
    assert "action_permission: WRONG_TYPE" in d.trace()[0].detail


def test_a_missing_predicate_fails_closed():
    state = {k: v for k, v in STATE.items() if k != "action_permission"}
    req = rk.RouteRequest("T", "u", (), rk.RuntimeState(state), request().candidates)
    d = controller().decide(req, proposal(A5, "P_ALPHA", [A5]))
    assert d.reason is R.FAIL_CLOSED_INVALID_STATE
    assert [(v.code, v.field) for v in d.state_errors] == [(StateErrorCode.MISSING_FIELD, "action_permission")]


def test_the_fallback_terminal_is_the_configured_one_and_a_state_skips_the_schema_like_the_gate():
    bad = request(action_permission="false")
    assert controller(fallback=rk.Terminal.HANDOFF).decide(bad, proposal()).terminal is rk.Terminal.HANDOFF
    assert controller(enforce_state=False).decide(bad, proposal()).dispatched  # A-state: no gate at all


def test_the_derived_schema_lists_every_tested_field_with_its_literal_type():
    schema = POLICY.state_schema
    assert {f.name: (sorted(t.value for t in f.types), f.required) for f in schema.fields} == {
        "action_permission": (["boolean"], True), "entity_resolved": (["boolean"], True),
        "safety_escalation_required": (["boolean"], True)}
    assert schema.source == "derived" and schema.sha256 == ""


def test_derivation_rules():
    engine = rk.PolicyEngine([
        rk.rule("R1", 1, "*", {"score": {"gte": 3}, "tier": {"in": ["a", "b", None]}}, "REJECT"),
        rk.rule("R2", 2, "*", {"kyc": {"exists": False}}, "CLARIFY"),
        rk.rule("R3", 3, "*", {"amount": {"lte": {"field": "limit"}}, "kyc": "full"}, "DEFER"),
        rk.rule("R9", 9, "*", {}, "ALLOW")], CATALOG.ids)
    got = {f.name: (sorted(t.value for t in f.types), f.required) for f in engine.state_schema.fields}
    assert got["score"] == (["number"], True) and got["tier"] == (["null", "string"], True)
    assert got["kyc"] == (["string"], False)  # tested with exists: optional
    assert got["amount"] == (["boolean", "null", "number", "string"], True)


def test_a_field_compared_with_two_types_is_a_startup_error():
    with pytest.raises(rk.DataError) as err:
        rk.PolicyEngine([rk.rule("R1", 1, "*", {"x": True}, "REJECT"), rk.rule("R2", 2, "*", {"x": "true"}, "DEFER"),
                         rk.rule("R9", 9, "*", {}, "ALLOW")], CATALOG.ids)
    assert err.value.code is rk.ErrorCode.INVALID_OPERAND and err.value.detail == "rule R2"


def test_a_schema_override_rejects_rules_with_literals_it_does_not_admit():
    schema = StateSchema.from_dict({"fields": {"action_permission": {"type": "string",
                                                                     "allowed": ["granted", "denied"]}}})
    with pytest.raises(rk.DataError) as err:
        rk.PolicyEngine(POLICY.rules, CATALOG.ids, state_schema=schema)
    assert err.value.code is rk.ErrorCode.INVALID_OPERAND and err.value.detail == "rule R060"
    rules = [r for r in POLICY.rules if r.rule_id != "R060"] + [
        rk.rule("R060", 70, [A5], {"action_permission": "denied"}, "REJECT")]
    engine = rk.PolicyEngine(rules, CATALOG.ids, state_schema=schema)
    c = rk.Controller(CATALOG, engine)
    assert c.decide(request(action_permission="granted"), proposal(A5, "P_ALPHA", [A5])).dispatched
    d = c.decide(request(action_permission="maybe"), proposal(A5, "P_ALPHA", [A5]))
    assert [v.code for v in d.state_errors] == [StateErrorCode.VALUE_NOT_ALLOWED]
    with pytest.raises(rk.DataError):  # a value the schema does not list can never be tested for
        rk.PolicyEngine(rules[:-1] + [rk.rule("R060", 70, [A5], {"action_permission": "nope"}, "REJECT")],
                        CATALOG.ids, state_schema=schema)


def test_closed_schema_rejects_unknown_fields():
    schema = StateSchema.from_dict({"additional_fields": False, "fields": {}})
    c = rk.Controller(CATALOG, rk.PolicyEngine(POLICY.rules, CATALOG.ids, state_schema=schema))
    d = c.decide(request(surprise=1), proposal())
    assert [(v.code, v.field) for v in d.state_errors] == [(StateErrorCode.UNKNOWN_FIELD, "surprise")]
    assert c.decide(request(), proposal()).dispatched
    assert c.hashes.as_dict()["state_schema"] == schema.sha256


state_values = st.sampled_from([True, False, 1, 0, None, "true", "false", 0.0, [], {}])


@settings(max_examples=400, deadline=None)
@given(state=st.fixed_dictionaries({}, optional={k: state_values for k in STATE}),
       action=st.sampled_from(list(CATALOG.ids)))
def test_property_nothing_dispatches_on_a_state_that_is_not_exactly_typed(state, action):
    req = rk.RouteRequest("P", "u", (), rk.RuntimeState(state), request().candidates)
    obj = "NONE" if action == A4 else "P_ALPHA" if action != A3 else "ACC_1"
    d = controller().decide(req, proposal(action, obj, [action]))
    exact = all(type(state.get(k)) is bool for k in STATE)
    assert (d.reason is R.FAIL_CLOSED_INVALID_STATE) == (not exact)
    if d.dispatched:
        assert exact and POLICY.evaluate(action, state).decision is rk.Boundary.ALLOW


def test_the_state_memo_cannot_go_stale():
    values = dict(STATE)
    state = rk.RuntimeState(values)
    req = rk.RouteRequest("T", "u", (), state, request().candidates)
    assert controller().decide(req, proposal(A5, "P_ALPHA", [A5])).dispatched
    values["action_permission"] = "false"  # the state copied its values: this changes nothing it holds
    assert controller().decide(req, proposal(A5, "P_ALPHA", [A5])).dispatched
    assert state.values["action_permission"] is True


# ---------------------------------------------------------------------------------------- fuzz


CANDIDATE_IDS = [e.object_id for e in request().candidates]
ANY_OBJECTS = [*CANDIDATE_IDS, "UNRESOLVED", "NONE", "OUTSIDE"]


def _random_text(rng: random.Random) -> str:
    kind = rng.randrange(4)
    if kind == 0:  # bytes as text
        return bytes(rng.randrange(256) for _ in range(rng.randrange(40))).decode("latin-1")
    if kind == 1:  # unicode, surrogates included
        ranges = ((32, 127), (0x80, 0x2FFFF), (0xD800, 0xE000))
        return "".join(chr(rng.randrange(*rng.choice(ranges))) for _ in range(rng.randrange(30)))
    if kind == 2:
        return rng.choice(["", "null", "[]", "{}", "NaN", '"x"', "{'a': 1}", "```", "{" * 50, "]"])
    return rng.choice(ANY_OBJECTS + list(CATALOG.ids))


def _random_value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, 1, -7, 10**30, 1.5, math.nan, math.inf])
    if kind in (3, 4, 5):
        return _random_text(rng)
    if kind == 6:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        return {_random_text(rng): _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return _nested(rng.choice([5, 40, 2000]))


FITTING = {A1: ["P_ALPHA", "P_BETA", "UNRESOLVED"], A3: ["ACC_1", "P_BETA"], A4: ["NONE", "SVC_1"], A5: ["P_ALPHA"]}


def _random_proposal(rng: random.Random) -> tuple[dict, str]:
    action = rng.choice(list(CATALOG.ids)) if rng.random() < 0.9 else _random_value(rng)
    fitting = FITTING.get(action, ANY_OBJECTS) if type(action) is str else ANY_OBJECTS
    obj = rng.choice(fitting) if rng.random() < 0.6 else rng.choice(ANY_OBJECTS) if rng.random() < 0.8 else \
        _random_value(rng)
    body = {"action_id": action, "object_id": obj,
            "topk": [action, *rng.sample([a for a in CATALOG.ids if a != action], rng.randrange(3))]
            if rng.random() < 0.8
            else _random_value(rng)}
    if rng.random() < 0.2:
        body["extra"] = _random_value(rng)
    if rng.random() < 0.1:
        del body[rng.choice(list(body))]
    return body, action


def _random_reply(rng: random.Random, body: dict | None = None) -> tuple[object, set]:
    """A reply and the set of action IDs it was written with (empty when it holds none by construction)."""
    kind = rng.choice([0, 1, 2, 2, 2, 3, 3, 3, 4, 5, 6, 7, 8, 9, 10, 11])
    if kind == 0:
        return _random_text(rng), set()
    if kind == 1:
        return _random_value(rng), set()
    body, action = (body, body.get("action_id")) if body is not None else _random_proposal(rng)
    written = {action} if type(action) is str and "action_id" in body else set()
    try:
        text = json.dumps(body, ensure_ascii=rng.random() < 0.5)
    except (ValueError, RecursionError):
        return body, written
    if kind == 2:
        return body, written
    if kind == 3:
        return text, written
    if kind == 4:
        return _fenced(text), written
    if kind == 5:
        return "Answer: " + text + " (final)", written
    if kind == 6:
        return text[: rng.randrange(len(text) + 1)], written
    if kind == 7:
        return _str(body), written
    if kind == 8:
        return json.dumps([body]), written
    if kind == 9:
        return json.dumps(text), written
    if kind == 10:
        other, other_action = _random_proposal(rng)
        written |= {other_action} if type(other_action) is str and "action_id" in other else set()
        return text + _str(_dump(other)), written
    dup = text[:-1] + ', "action_id": "' + A5 + '"}' if text.endswith("}") else text
    return dup, written | {A5}


def _str(value) -> str:
    try:
        return str(value)
    except RecursionError:
        return "{'action_id': 'deep'}"


def _dump(value):
    """JSON text of a generated value, or the value itself when JSON cannot hold it (NaN, very deep)."""
    try:
        return json.dumps(value, allow_nan=False)
    except (ValueError, RecursionError):
        return value


STATES = [dict(STATE), dict(STATE), {**STATE, "entity_resolved": False}, {**STATE, "action_permission": False},
          {**STATE, "safety_escalation_required": True}, {**STATE, "action_permission": "false"},
          {k: v for k, v in STATE.items() if k != "action_permission"}, {**STATE, "entity_resolved": None}]
OPTIONS = [rk.ControllerOptions(), rk.ControllerOptions(fallback=rk.Terminal.DEFER),
           rk.ControllerOptions(enable_grounding=False), rk.ControllerOptions(repair=False)]


def _violations(d: rk.Decision, req: rk.RouteRequest, first, written: set, opts: rk.ControllerOptions) -> list[str]:
    json.dumps(d.as_dict(), allow_nan=False)  # serialisable
    d.trace()
    if not d.dispatched:
        return []
    bad = []
    if d.action_id not in CATALOG:
        bad.append("dispatch outside the catalog")
    action = CATALOG.index.get(d.action_id)
    if action is not None and action.requires_object and d.object_id not in req.candidate_index:
        bad.append("dispatch off the candidate list")
    if opts.enforce_state and (POLICY.state_schema.check(req.state.values) or
                               POLICY.evaluate(d.action_id, req.state.values).decision is not rk.Boundary.ALLOW):
        bad.append("dispatch against a non-ALLOW rule or an invalid state")
    if d.proposal is None or d.action_id != d.proposal.topk[0]:
        bad.append("dispatch of a lower-ranked candidate")
    if d.repair_attempted and written != {d.action_id}:
        bad.append(f"repair dispatched {d.action_id}, first reply written with {written}")
    return bad


def test_fuzz_ten_thousand_replies_through_decide_and_route():
    """10,000 seeded replies (with a random repair reply each) through ``decide`` and through the backend protocol
    with a ScriptedBackend: ``aroute`` for all of them in one event loop, and the synchronous ``route`` wrapper
    (one event loop per call, ~1 ms each here) for the first 500.  Zero exceptions, zero invariant violations,
    and the two entry points agree on every decision."""
    rng = random.Random(20240612)
    n, n_sync = 10_000, 500
    cases = []
    for i in range(n):
        body = _random_proposal(rng)[0]
        first, written = _random_reply(rng, body)
        pick = rng.random()  # the repair: the same body well-formed, the body with its action swapped, or anything
        repair = _dump(body) if pick < 0.4 else _dump({**body, "action_id": rng.choice(list(CATALOG.ids))}) \
            if pick < 0.6 else _random_reply(rng)[0]
        opts = rng.choice(OPTIONS)
        req = rk.RouteRequest(f"F{i}", "u", (), rk.RuntimeState(rng.choice(STATES)), request().candidates)
        cases.append((rk.Controller(CATALOG, POLICY, opts), req, first, repair, written, opts))

    def backend(first, repair):
        return rk.backends.ScriptedBackend({S.ROUTEBR: [first], S.REPAIR_ROUTEBR: [repair]})

    counts = {"decide": 0, "aroute": 0, "route": 0, "dispatched": 0, "repaired_dispatched": 0, "fail_closed": 0}
    exceptions: list = []
    violations: list = []
    decided: dict[int, rk.Decision] = {}

    def record(how: str, i: int, outcome) -> None:
        if isinstance(outcome, BaseException):
            exceptions.append((how, i, repr(outcome)[:200]))
            return
        _, req, first, _, written, opts = cases[i]
        counts[how] += 1
        violations.extend((how, i, v) for v in _violations(outcome, req, first, written, opts))
        if how == "decide":
            decided[i] = outcome
            counts["dispatched"] += outcome.dispatched
            counts["repaired_dispatched"] += outcome.repair_attempted and outcome.dispatched
            counts["fail_closed"] += outcome.fallback
        elif outcome != decided.get(i):
            violations.append((how, i, "route and decide disagree"))

    def attempt(call, *args):
        try:
            return call(*args)
        except Exception as exc:  # noqa: BLE001 - recorded, then asserted to be zero
            return exc

    started = time.perf_counter()
    for i, (c, req, first, repair, _, _) in enumerate(cases):
        record("decide", i, attempt(c.decide, req, first, repair))

    async def every():
        for i, (c, req, first, repair, _, _) in enumerate(cases):
            try:
                outcome = await c.aroute(req, backend(first, repair))
            except Exception as exc:  # noqa: BLE001 - recorded, then asserted to be zero
                outcome = exc
            record("aroute", i, outcome)

    asyncio.run(every())
    for i, (c, req, first, repair, _, _) in enumerate(cases[:n_sync]):
        record("route", i, attempt(c.route, req, backend(first, repair)))
    elapsed = time.perf_counter() - started
    print(f"fuzz: {n} replies; {counts}; {len(exceptions)} exceptions; {len(violations)} violations; "
          f"{elapsed:.1f} s")
    assert exceptions == [] and violations == []
    assert counts["decide"] == counts["aroute"] == n and counts["route"] == n_sync
    assert counts["dispatched"] > 300 and counts["repaired_dispatched"] > 50  # the interesting paths are reached
