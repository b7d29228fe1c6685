"""B1 Direct and B2 Direct+Guard in the library: payloads, a validator at least as strict as RouteBR's, one guarded
format-only repair, the published fail-closed error codes, and B2's rule-citation diagnostic."""

from __future__ import annotations

import json

import pytest
from core_fixtures import A1, A3, A4, A5, CATALOG, POLICY, request
from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.backends import ScriptedBackend
from routebr_kit.systems.baselines import (
    DirectBaseline,
    check_direct,
    direct_payload,
    prediction_from_direct,
    rule_citation,
)

C = rk.ContractErrorCode
R = rk.ReasonCode
S = rk.Stage
B1 = DirectBaseline(CATALOG, POLICY, guard=False)
B2 = DirectBaseline(CATALOG, POLICY, guard=True)


def route(terminal="DISPATCH", action=A1, obj="P_ALPHA", boundary="ALLOW", topk=None, **extra) -> dict:
    return {"terminal": terminal, "action_id": action, "object_id": obj, "boundary": boundary,
            "topk": topk if topk is not None else [action], **extra}


def codes(raw, guard=False):
    return set(check_direct(raw, CATALOG, request().candidate_index, POLICY if guard else None).codes)


def test_payloads_show_state_to_both_and_rules_only_to_b2():
    req = request()
    b1, b2 = direct_payload(req, CATALOG), direct_payload(req, CATALOG, POLICY)
    assert b1["runtime_context"] == req.state.as_dict() and "rules" not in b1
    assert [r["rule_id"] for r in b2["rules"]] == ["R001", "R002", "R060", "R999"]
    assert B1.payload(req) == b1 and B2.payload(req) == b2


def test_valid_routes_are_accepted():
    assert codes(route()) == set()
    assert codes(route("HANDOFF", boundary="HANDOFF")) == set()
    assert codes(route("CLARIFY", obj="UNRESOLVED"), guard=False) == set()  # ALLOW with a clarifying terminal
    assert codes(route(rule_ids=["R999"]), guard=True) == set()


@pytest.mark.parametrize("raw, expected", [
    (route(terminal="GO"), {C.TERMINAL_INVALID}),
    (route(boundary="MAYBE"), {C.BOUNDARY_INVALID}),
    (route(boundary=None), {C.BOUNDARY_INVALID}),
    (route("DISPATCH", boundary="REJECT"), {C.DISPATCH_REQUIRES_ALLOW}),
    (route("CLARIFY", boundary="DEFER"), {C.TERMINAL_BOUNDARY_MISMATCH}),
    (route(action="A9"), {C.ACTION_OUTSIDE_CATALOG, C.TOPK_OUTSIDE_CATALOG}),
    (route(topk=[A3]), {C.TOPK_NOT_PRIMARY_FIRST}),
    (route(topk=[A1, A1]), {C.TOPK_NOT_UNIQUE}),
    (route(topk=[]), {C.TOPK_LENGTH}),
    (route(obj="P_GAMMA"), {C.OBJECT_OUTSIDE_REGISTRY}),
    # stricter than the published baseline validator: the object contract of the primary action
    (route(obj="ACC_1"), {C.OBJECT_TYPE_MISMATCH}),
    (route(obj="NONE"), {C.OBJECT_REQUIRED}),
    (route(action=A4, obj="UNRESOLVED"), {C.OBJECT_FREE_REQUIRES_NONE}),
    ("not json", {C.INVALID_JSON}),
    ("[1, 2]", {C.NOT_AN_OBJECT}),
])
def test_every_violation_has_a_code(raw, expected):
    assert codes(raw) == expected


@pytest.mark.parametrize("cited", [None, [], ["R404"], "R001", [1]])
def test_b2_must_cite_known_rules(cited):
    assert codes(route(rule_ids=cited), guard=True) == {C.RULE_IDS_UNKNOWN}
    assert codes(route(rule_ids=cited), guard=False) == set()  # B1 ignores the field


def test_accepted_route_scores_with_its_own_terminal():
    dispatched = B1.decide(request(), route())
    assert (dispatched.final_path, dispatched.boundary, dispatched.reason) == (A1, "ALLOW", R.DISPATCH_OK)
    blocked = B2.decide(request(), route("REJECT", action=A5, boundary="REJECT", rule_ids=["R060"]))
    assert (blocked.final_path, blocked.action_id, blocked.reason) == ("T_REJECT", A5, R.BOUNDARY_TERMINAL)
    unresolved = B1.decide(request(), route(obj="UNRESOLVED"))
    assert unresolved.final_path == A1 and unresolved.strict_path == f"{A1}@UNRESOLVED"  # as published


def test_format_repair_then_accept_records_first_pass_invalid():
    backend = ScriptedBackend({S.B2_DIRECT_GUARD: ["```json\n" + json.dumps(route(rule_ids=["R999"])) + "```"],
                               S.REPAIR_B2_DIRECT_GUARD: [route(rule_ids=["R999"])]})
    decision = B2.route(request(), backend)
    assert decision.valid and not decision.first_pass_valid and decision.calls == 2
    assert backend.stages() == [S.B2_DIRECT_GUARD, S.REPAIR_B2_DIRECT_GUARD]
    repair = backend.calls[1].payload
    assert repair["original_stage"] == "B2_DIRECT_GUARD" and "rule_ids" in repair["target_schema"]
    assert repair["original_payload"] == B2.payload(request())


def test_failed_repair_fails_closed_with_the_published_error_code():
    bad = route(obj="P_GAMMA")
    decision = B1.route(request(), ScriptedBackend({S.B1_DIRECT: [bad], S.REPAIR_B1_DIRECT: [bad]}))
    assert (decision.terminal, decision.action_id, decision.object_id, decision.boundary) == (
        rk.Terminal.CLARIFY, "NONE", "NONE", "CLARIFY")
    assert decision.reason is R.FAIL_CLOSED_INVALID_OUTPUT and decision.error_code == "FAIL_CLOSED_B1_DIRECT"
    row = prediction_from_direct(decision, latency_ms=12.5)
    assert (row.system_id, row.pred_final_path, row.fallback_used, row.valid_json, row.topk, row.calls) == (
        "b1_direct", "T_CLARIFY", True, False, (), 2)


def test_repair_may_not_change_the_action_or_object():
    first = route(obj="P_GAMMA")
    decision = B1.route(request(), ScriptedBackend({S.B1_DIRECT: [first], S.REPAIR_B1_DIRECT: [route(obj="P_BETA")]}))
    assert decision.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert C.REPAIR_CHANGED_OBJECT in {e.code for e in decision.errors}


@pytest.mark.parametrize("exc, reason", [(TimeoutError("slow"), R.FAIL_CLOSED_BACKEND_TIMEOUT),
                                         (RuntimeError("down"), R.FAIL_CLOSED_BACKEND_ERROR)])
def test_backend_exceptions_fail_closed(exc, reason):
    decision = B2.route(request(), ScriptedBackend({S.B2_DIRECT_GUARD: [exc]}))
    assert decision.reason is reason and decision.error_code == "FAIL_CLOSED_B2_DIRECT_GUARD"


def test_dispatch_fallback_is_rejected():
    with pytest.raises(rk.DataError) as err:
        DirectBaseline(CATALOG, POLICY, guard=False, fallback=rk.Terminal.DISPATCH)
    assert err.value.code is rk.ErrorCode.DISPATCH_FALLBACK
    with pytest.raises(rk.DataError):
        DirectBaseline.for_system("routebr", CATALOG, POLICY)


def test_rule_citation_compares_with_the_true_first_match():
    blocked = request(action_permission=False)
    right = B2.decide(blocked, route("REJECT", action=A5, boundary="REJECT", rule_ids=["R060"]))
    wrong = B2.decide(blocked, route("REJECT", action=A5, boundary="REJECT", rule_ids=["R001"]))
    failed = B2.decide(blocked, "nope")
    citations = [rule_citation(d, blocked, POLICY) for d in (right, wrong, failed)]
    assert citations[0].correct and not citations[1].correct and citations[2] is None
    assert citations[1].as_dict() == {"cited": "R001", "first_match": "R060", "correct": False}


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                        max_size=3), max_leaves=8)
fields = st.fixed_dictionaries({}, optional={
    "terminal": st.sampled_from([t.value for t in rk.Terminal]) | json_values,
    "boundary": st.sampled_from([b.value for b in rk.Boundary]) | json_values,
    "action_id": st.sampled_from([A1, A3, A4, A5]) | json_values,
    "object_id": st.sampled_from(["P_ALPHA", "ACC_1", "SVC_1", "UNRESOLVED", "NONE"]) | json_values,
    "topk": st.lists(st.sampled_from([A1, A3, A4, A5]), max_size=4) | json_values,
    "rule_ids": st.lists(st.sampled_from(["R001", "R060", "R999", "R404"]), max_size=2) | json_values,
})


@settings(max_examples=300, deadline=None)
@given(raw=fields, as_text=st.booleans(), guard=st.booleans())
def test_any_output_is_accepted_consistently_or_rejected_with_codes(raw, as_text, guard):
    baseline = B2 if guard else B1
    decision = baseline.decide(request(), json.dumps(raw) if as_text else raw)
    if decision.fallback:
        assert decision.errors and decision.terminal is rk.Terminal.CLARIFY and decision.topk == ()
        return
    r = decision.route
    assert r.topk[0] == r.action_id and len(set(r.topk)) == len(r.topk) <= 3
    assert (r.terminal is rk.Terminal.DISPATCH) <= (r.boundary is rk.Boundary.ALLOW)
    assert r.boundary is rk.Boundary.ALLOW or r.terminal.value == r.boundary.value
    action = CATALOG[r.action_id]
    if action.requires_object:
        assert r.object_id == "UNRESOLVED" or request().candidate_index[r.object_id].object_type in (
            action.required_object_types)
    else:
        assert r.object_id == "NONE"
    assert not guard or (r.rule_ids and set(r.rule_ids) <= {"R001", "R002", "R060", "R999"})
