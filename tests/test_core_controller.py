"""The controller (Algorithm 1): the ten behaviours the paper lists, and every branch the published tests left out."""

from __future__ import annotations

import asyncio
import json

import pytest
from core_fixtures import A1, A3, A4, A5, CATALOG, POLICY, controller, proposal, request, scripted

import routebr_kit as rk
from routebr_kit.core.calls import FailureKind, ModelReply

C = rk.ContractErrorCode
R = rk.ReasonCode
#: An invalid first reply that still exposes its identifiers (a repair can be held to them).
TRUNCATED = '{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ['


# ---------------------------------------------------------------------------------------- the paper's ten


def test_normal_dispatch_uses_one_call():
    backend = scripted(proposal())
    d = controller().route(request(), backend)
    assert (d.terminal, d.action_id, d.object_id) == (rk.Terminal.DISPATCH, A1, "P_ALPHA")
    assert d.reason is R.DISPATCH_OK and d.rule_id == "R999"
    assert d.object_resolution is rk.ObjectResolution.RESOLVED
    assert backend.stages() == [rk.Stage.ROUTEBR]
    assert (d.calls, d.first_pass_valid, d.fallback, d.final_path, d.strict_path) == (
        1, True, False, A1, f"{A1}@P_ALPHA")


def test_invalid_json_is_repaired_once_then_accepted():
    backend = scripted('{"action_id": "A1_ADVISORY", "object_id": "P_ALPHA", "topk": ["A1_ADVISORY"',
                       repair=[json.dumps(proposal())])
    d = controller().route(request(), backend)
    assert d.dispatched and d.repair_attempted and not d.first_pass_valid
    assert [e.code for e in d.first_errors] == [C.INVALID_JSON]
    assert d.first_errors[0].message.startswith("invalid JSON:")
    assert backend.stages() == [rk.Stage.ROUTEBR, rk.Stage.REPAIR_ROUTEBR]


def test_invalid_json_twice_fails_closed():
    d = controller().route(request(), scripted(TRUNCATED, repair=["still not json"]))
    assert d.terminal is rk.Terminal.CLARIFY and d.reason is R.FAIL_CLOSED_INVALID_OUTPUT
    assert [e.code for e in d.errors] == [C.INVALID_JSON, C.INVALID_JSON]
    assert (d.action_id, d.object_id, d.calls, d.valid) == ("NONE", "NONE", 2, False)
    assert d.legacy_reason_codes == ["FAIL_CLOSED_ROUTEBR"]


def test_out_of_list_object_fails_closed_even_if_a_rule_would_block():
    bad = proposal(obj="OUTSIDE")
    d = controller().route(request(safety_escalation_required=True), scripted(bad, repair=[bad]))
    assert d.reason is R.FAIL_CLOSED_INVALID_OUTPUT and d.rule is None
    assert [e.code for e in d.errors] == [C.OBJECT_OUTSIDE_REGISTRY] * 2


def test_primary_commitment_never_promotes_an_allowed_secondary():
    # A1 is blocked by R002 (entity unresolved); A4 (second in topk) would be allowed.
    d = controller().route(request(entity_resolved=False), scripted(proposal(A1, topk=[A1, A4])))
    assert d.terminal is rk.Terminal.CLARIFY and d.action_id == A1 and d.rule_id == "R002"
    assert d.reason is R.BOUNDARY_TERMINAL and d.legacy_reason_codes == ["PRIMARY_BOUNDARY_TERMINAL", "R002"]
    commit = [t for t in d.trace() if t.step is rk.TraceStep.COMMIT][0]
    assert "diagnostic only" in commit.detail


def test_state_removal_dispatches_and_records_the_bypassed_rule():
    d = controller(enforce_state=False).route(request(safety_escalation_required=True), scripted(proposal()))
    assert d.dispatched and d.rule_id == "R001" and d.rule.decision is rk.Boundary.HANDOFF
    assert d.reason is R.DISPATCH_STATE_NOT_ENFORCED
    assert d.as_dict()["gate_enforced"] is False


def test_object_validation_removal_forces_unresolved():
    d = controller(enable_grounding=False).route(request(), scripted(proposal()))
    assert (d.terminal, d.object_id, d.reason) == (rk.Terminal.CLARIFY, "UNRESOLVED", R.OBJECT_GROUNDING_DISABLED)
    assert d.object_resolution is rk.ObjectResolution.GROUNDING_DISABLED
    # a blocked case still reports the proposed object (as published)
    blocked = controller(enable_grounding=False).route(request(safety_escalation_required=True), scripted(proposal()))
    assert (blocked.terminal, blocked.object_id) == (rk.Terminal.HANDOFF, "P_ALPHA")


def test_adapter_payload_has_no_state_or_rules_and_repair_restates_the_schema():
    backend = scripted({"action_id": A1}, repair=[proposal()])
    controller().route(request(), backend)
    first, repair = backend.calls
    assert set(first.payload) == {"request", "history", "catalog", "entities", "contract"}
    assert "runtime_context" not in json.dumps(first.payload) and "R001" not in json.dumps(first.payload)
    assert first.payload["entities"][0] == {"object_id": "P_ALPHA", "object_type": "PRODUCT",
                                           "display_name": "Alpha Fund", "aliases": ["ALPHA"]}
    assert repair.stage is rk.Stage.REPAIR_ROUTEBR
    assert repair.payload["original_stage"] == "ROUTEBR"
    assert repair.payload["original_payload"] == first.payload
    assert set(repair.payload["target_schema"]) == {"action_id", "object_id", "topk"}
    assert json.loads(repair.payload["invalid_output"]) == {"action_id": A1}
    assert "topk must contain one to three action IDs" in repair.payload["validation_errors"]


def test_object_free_service_dispatches_with_none():
    d = controller().route(request(), scripted(proposal(A4, "NONE", [A4])))
    assert d.dispatched and d.object_id == "NONE" and d.object_resolution is rk.ObjectResolution.NOT_REQUIRED


@pytest.mark.parametrize("obj", ["UNRESOLVED", "P_ALPHA", "SVC_1"])
def test_object_free_service_rejects_any_object_but_none(obj):
    d = controller().decide(request(), proposal(A4, obj, [A4]))
    assert [e.code for e in d.errors] == [C.OBJECT_FREE_REQUIRES_NONE] and d.fallback


def test_unresolved_object_clarifies():
    d = controller().route(request(), scripted(proposal(A1, "UNRESOLVED")))
    assert (d.terminal, d.object_id, d.reason) == (rk.Terminal.CLARIFY, "UNRESOLVED", R.OBJECT_UNRESOLVED)
    assert d.legacy_reason_codes == ["PRIMARY_OBJECT_UNRESOLVED"]


def test_persistent_failure_after_repair_fails_closed():
    d = controller().route(request(), scripted(proposal(obj="X"), repair=[proposal(obj="Y")]))
    assert d.reason is R.FAIL_CLOSED_INVALID_OUTPUT
    assert d.repair_attempted and not d.valid and d.calls == 2


# ---------------------------------------------------------------------------------------- contract branches


@pytest.mark.parametrize("topk, code", [
    ([], C.TOPK_LENGTH),
    ([A1, A3, A4, A5], C.TOPK_LENGTH),
    ("A1_ADVISORY", C.TOPK_LENGTH),
    (None, C.TOPK_LENGTH),
    ([A1, A1], C.TOPK_NOT_UNIQUE),
    ([A1, "A9_UNKNOWN"], C.TOPK_OUTSIDE_CATALOG),
    ([A3, A1], C.TOPK_NOT_PRIMARY_FIRST),
    ([A1, ["nested"]], C.TOPK_OUTSIDE_CATALOG),
])
def test_every_topk_error(topk, code):
    d = controller().decide(request(), {**proposal(), "topk": topk})
    assert code in [e.code for e in d.errors] and d.fallback


def test_type_mismatch_and_none_on_object_requiring_action():
    assert [e.code for e in controller().decide(request(), proposal(A1, "ACC_1", [A1])).errors] == [
        C.OBJECT_TYPE_MISMATCH]
    assert [e.code for e in controller().decide(request(), proposal(A1, "NONE", [A1])).errors] == [
        C.OBJECT_REQUIRED]
    assert controller().decide(request(), proposal(A3, "ACC_1", [A3])).dispatched


def test_action_outside_catalog_skips_relation_checks():
    d = controller().decide(request(), {"action_id": "A9", "object_id": "P_ALPHA", "topk": [A1]})
    assert [e.code for e in d.errors] == [C.ACTION_OUTSIDE_CATALOG]


@pytest.mark.parametrize("raw, code", [
    ("[1, 2]", C.NOT_AN_OBJECT),
    ("null", C.NOT_AN_OBJECT),
    (None, C.NOT_AN_OBJECT),
    (42, C.NOT_AN_OBJECT),
    (b'{"action_id": "A1_ADVISORY"}', C.NOT_AN_OBJECT),
    ("```json\n{}\n```", C.INVALID_JSON),
    ("[" * 100_000, C.NESTING_TOO_DEEP),
])
def test_unparseable_outputs(raw, code):
    assert [e.code for e in controller().decide(request(), raw).first_errors] == [code]


@pytest.mark.parametrize("value", [None, 1, 1.5, True, [], ["A9_UNKNOWN"], {"a": 1}, "x" * 1_000_000])
@pytest.mark.parametrize("field", ["action_id", "object_id", "topk"])
def test_hostile_values_in_any_field_are_errors_never_exceptions(field, value):
    raw = {**proposal(), field: value}
    d = controller().decide(request(), raw)
    assert d.fallback and d.errors
    assert all(len(e.got) <= 200 for e in d.errors)  # no 1 MB value copied into the record


# ---------------------------------------------------------------------------------------- repair guard


def test_repair_that_changes_the_action_fails_closed():
    first = {"action_id": A1, "object_id": "P_ALPHA", "topk": "A1_ADVISORY"}  # parseable ids, bad topk
    d = controller().route(request(), scripted(first, repair=[proposal(A3, "P_ALPHA", [A3])]))
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert [e.code for e in d.repair_errors] == [C.REPAIR_CHANGED_ACTION]


def test_repair_that_changes_the_object_fails_closed():
    first = {"action_id": A1, "object_id": "P_ALPHA", "topk": []}
    d = controller().route(request(), scripted(first, repair=[proposal(A1, "P_BETA", [A1])]))
    assert [e.code for e in d.repair_errors] == [C.REPAIR_CHANGED_OBJECT]


def test_repair_may_not_supply_an_object_the_first_reply_never_reached():
    """Issue 19: a first reply that breaks off before its object gives none; the repair may say UNRESOLVED (and the
    object gate then clarifies) but not name an object."""
    d = controller().route(request(), scripted('{"action_id": "A1_ADVISORY", "obj', repair=[proposal()]))
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL and d.repair_attempted and not d.dispatched
    assert [e.code for e in d.repair_errors] == [C.REPAIR_ADDED_OBJECT]
    d = controller().route(request(), scripted('{"action_id": "A1_ADVISORY", "obj',
                                               repair=[proposal(A1, "UNRESOLVED")]))
    assert d.terminal is rk.Terminal.CLARIFY and d.reason is R.OBJECT_UNRESOLVED and d.repair_attempted


def test_no_repair_is_asked_for_when_the_first_reply_exposes_no_action():
    backend = scripted("oops", repair=[proposal()])
    d = controller().route(request(), backend)
    assert d.reason is R.FAIL_CLOSED_REPAIR_UNANCHORED and not d.repair_attempted
    assert backend.stages() == [rk.Stage.ROUTEBR]


def test_repair_disabled_fails_closed_at_once():
    backend = scripted("oops", repair=[proposal()])
    d = controller(repair=False).route(request(), backend)
    assert d.fallback and not d.repair_attempted and backend.stages() == [rk.Stage.ROUTEBR]


def test_decide_without_recorded_repair_fails_closed_and_with_one_accepts():
    c = controller()
    assert c.decide(request(), TRUNCATED).reason is R.FAIL_CLOSED_INVALID_OUTPUT
    assert c.decide(request(), TRUNCATED, json.dumps(proposal())).dispatched
    assert c.decide(request(), TRUNCATED, None).reason is R.FAIL_CLOSED_INVALID_OUTPUT


# ---------------------------------------------------------------------------------------- backend failures


class _Raises:
    name = "raises"

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def complete(self, call):
        raise self.exc


class _Returns:
    name = "returns"

    def __init__(self, value) -> None:
        self.value = value

    async def complete(self, call):
        return self.value


@pytest.mark.parametrize("backend, reason", [
    (_Raises(ConnectionError("refused")), R.FAIL_CLOSED_BACKEND_ERROR),
    (_Raises(TimeoutError("slow")), R.FAIL_CLOSED_BACKEND_TIMEOUT),
    (_Raises(TimeoutError()), R.FAIL_CLOSED_BACKEND_TIMEOUT),
    (_Raises(KeyError("choices")), R.FAIL_CLOSED_BACKEND_ERROR),
    (_Returns("not a reply"), R.FAIL_CLOSED_BACKEND_ERROR),
    (_Returns(ModelReply.failed(FailureKind.MODEL_IDENTITY, "gpt-x")), R.FAIL_CLOSED_MODEL_IDENTITY),
    (_Returns(ModelReply.failed(FailureKind.HTTP_STATUS, "500")), R.FAIL_CLOSED_BACKEND_ERROR),
    (scripted(), R.FAIL_CLOSED_BACKEND_ERROR),  # script exhausted
])
def test_backend_failures_end_in_the_fail_closed_terminal(backend, reason):
    d = controller(fallback=rk.Terminal.DEFER).route(request(), backend)
    assert (d.terminal, d.reason, d.action_id) == (rk.Terminal.DEFER, reason, "NONE")
    assert d.failure is not None and not d.repair_attempted
    assert d.trace()[0].outcome == "backend failure"


def test_repair_call_failure_is_recorded():
    backend = scripted(TRUNCATED, repair=[ModelReply.failed(FailureKind.TIMEOUT, "read timeout")])
    d = controller().route(request(), backend)
    assert d.reason is R.FAIL_CLOSED_BACKEND_TIMEOUT and d.repair_attempted and d.calls == 2
    assert [e.code for e in d.first_errors] == [C.INVALID_JSON]


def test_route_works_inside_a_running_event_loop():
    async def inside() -> rk.Decision:
        return controller().route(request(), scripted(proposal()))

    assert asyncio.run(inside()).dispatched


# ---------------------------------------------------------------------------------------- construction


def test_dispatch_cannot_be_the_fallback():
    with pytest.raises(rk.DataError) as err:
        rk.ControllerOptions(fallback=rk.Terminal.DISPATCH)
    assert err.value.code is rk.ErrorCode.DISPATCH_FALLBACK


def test_fallback_must_be_a_terminal():
    with pytest.raises(rk.DataError) as err:
        rk.ControllerOptions(fallback="CLARIFY")
    assert err.value.code is rk.ErrorCode.UNKNOWN_ENUM


def test_empty_catalog_is_rejected():
    with pytest.raises(rk.DataError) as err:
        rk.Controller(rk.Catalog(()), POLICY)
    assert err.value.code is rk.ErrorCode.EMPTY_CATALOG


def test_rules_for_another_catalog_are_rejected():
    other = rk.Catalog((*CATALOG.actions, rk.CatalogAction("A9_NEW", "New", "", ("PRODUCT",))))
    with pytest.raises(rk.DataError) as err:
        rk.Controller(other, POLICY)
    assert err.value.code is rk.ErrorCode.INCONSISTENT_ASSETS


def test_options_for_systems():
    assert rk.ControllerOptions.for_system("a_state").enforce_state is False
    assert rk.ControllerOptions.for_system(rk.System.A_GROUND).enable_grounding is False
    with pytest.raises(rk.DataError):
        rk.ControllerOptions.for_system("b1_direct")


def test_with_options_keeps_assets():
    c = controller().with_options(enforce_state=False)
    assert c.catalog is CATALOG and c.options.enforce_state is False


def test_sentinel_ids_cannot_be_registered():
    with pytest.raises(rk.DataError):
        rk.Entity("UNRESOLVED", "PRODUCT", "x")


# ---------------------------------------------------------------------------------------- records


def test_decision_record_is_complete_and_serialisable():
    d = controller().route(request(), scripted(TRUNCATED, repair=[proposal()]))
    record = json.loads(json.dumps(d.as_dict()))
    assert record["hashes"] == {"catalog": CATALOG.sha256, "rules": POLICY.sha256, "registry": ""}
    assert record["first_output"] == TRUNCATED and record["repair_output"] == proposal()
    assert record["proposal"] == {"action_id": A1, "object_id": "P_ALPHA", "topk": [A1, A4]}
    assert record["rule"]["rule_id"] == "R999" and record["object_resolution"] == "RESOLVED"
    assert [t["step"] for t in record["trace"]] == ["PROPOSE", "VALIDATE", "REPAIR", "COMMIT", "STATE_GATE",
                                                   "OBJECT_GATE", "EMIT"]


def test_decisions_are_immutable():
    d = controller().decide(request(), proposal())
    with pytest.raises(AttributeError):
        d.terminal = rk.Terminal.REJECT  # type: ignore[misc]


def test_same_inputs_same_decision():
    c = controller()
    assert c.decide(request(), proposal()) == c.decide(request(), proposal())


def test_protected_action_figure_one():
    allowed = controller().decide(request(), proposal(A5, "P_ALPHA", [A5, A3]))
    rejected = controller().decide(request(action_permission=False), proposal(A5, "P_ALPHA", [A5, A3]))
    assert allowed.final_path == A5 and rejected.final_path == "T_REJECT" and rejected.rule_id == "R060"
