"""Issue 19, bullet 4: a format-only repair keeps the first reply's identifiers — including absent ones.

An empty, whitespace-only, ``null`` or missing ``action_id`` / ``object_id`` in the first reply is "none given":

* no action given → no repair can be held to the reply: no repair call, ``FAIL_CLOSED_REPAIR_UNANCHORED``;
* no object given → the repair may say ``UNRESOLVED`` (or ``NONE`` for an object-free action) but may not name an
  object: ``FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL`` with ``REPAIR_ADDED_OBJECT``.

Each case runs through ``decide``, ``route`` (a scripted backend), ``run`` against a real local HTTP server, and the
replay of that run's receipts; B1/B2 share the guard under the kit protocol.
"""

from __future__ import annotations

import json

import pytest
from core_fixtures import A1, A3, A4, A5, CATALOG, POLICY, controller, proposal, request, scripted
from openai_server import OpenAIServer, completion, user_payload

import routebr_kit as rk
from routebr_kit.backends.registry import make_backend
from routebr_kit.core.contract import held_identifiers
from routebr_kit.runs.replay import replay_rows
from routebr_kit.runs.runner import run_cases
from routebr_kit.systems.baselines import DirectBaseline

C = rk.ContractErrorCode
R = rk.ReasonCode

#: How a first reply leaves an identifier out: a value (JSON) or no key at all.
ABSENT = {"empty": "", "whitespace": "   ", "tab_newline": "\t\n", "null": None, "missing": ...}


def first_reply(slot: str, absent: str, action: str = A5, obj: str = "P_ALPHA") -> dict:
    """An invalid first reply (its ``slot`` left out), which therefore asks for a repair."""
    reply = {"action_id": action, "object_id": obj, "topk": [action]}
    if ABSENT[absent] is ...:
        del reply[slot]
    else:
        reply[slot] = ABSENT[absent]
    return reply


FORMS = {"dict": lambda reply: reply, "json": json.dumps, "fenced": lambda reply: f"```json\n{json.dumps(reply)}\n```"}


@pytest.mark.parametrize("absent", sorted(ABSENT))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_absent_object_is_not_a_slot_the_repair_may_fill(absent, form):
    """The issue's example and its variants: the repair names SSE-style object P_ALPHA for an A5 reply without one."""
    first = FORMS[form](first_reply("object_id", absent))
    repair = proposal(A5, "P_ALPHA", [A5])
    assert held_identifiers(first).object_ids == () and held_identifiers(first).action_ids == (A5,)
    backend = scripted(first, repair=[repair])
    routed = controller().route(request(), backend)
    decided = controller().decide(request(), first, repair)
    for d in (routed, decided):
        assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL and not d.dispatched and d.repair_attempted
        assert [(e.code, e.field) for e in d.repair_errors] == [(C.REPAIR_ADDED_OBJECT, "object_id")]
        assert d.legacy_reason_codes == ["FAIL_CLOSED_ROUTEBR"] and d.final_path == "T_CLARIFY"
    assert routed == decided and backend.stages() == [rk.Stage.ROUTEBR, rk.Stage.REPAIR_ROUTEBR]


@pytest.mark.parametrize("absent", sorted(ABSENT))
@pytest.mark.parametrize("form", sorted(FORMS))
def test_an_absent_action_asks_for_no_repair(absent, form):
    first = FORMS[form](first_reply("action_id", absent))
    backend = scripted(first, repair=[proposal(A5, "P_ALPHA", [A5])])
    routed = controller().route(request(), backend)
    decided = controller().decide(request(), first, proposal(A5, "P_ALPHA", [A5]))
    for d in (routed, decided):
        assert d.reason is R.FAIL_CLOSED_REPAIR_UNANCHORED and not d.repair_attempted and d.calls == 1
        assert [(e.code, e.field) for e in d.repair_errors] == [(C.REPAIR_UNANCHORED, "action_id")]
    assert routed == decided and backend.stages() == [rk.Stage.ROUTEBR]


@pytest.mark.parametrize("absent", sorted(ABSENT))
def test_a_repair_may_still_say_no_object(absent):
    """"No object" is not a value: UNRESOLVED clarifies (object gate), NONE dispatches an object-free action."""
    first = first_reply("object_id", absent, action=A1)
    d = controller().decide(request(), first, proposal(A1, "UNRESOLVED", [A1]))
    assert d.terminal is rk.Terminal.CLARIFY and d.reason is R.OBJECT_UNRESOLVED and d.repair_attempted
    first = first_reply("object_id", absent, action=A4)
    d = controller().decide(request(), first, proposal(A4, "NONE", [A4]))
    assert d.dispatched and (d.action_id, d.object_id) == (A4, "NONE") and d.repair_attempted
    first = first_reply("object_id", absent, action=A3)
    d = controller().decide(request(), first, proposal(A3, "ACC_1", [A3]))  # a valid object, but none was given
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    assert [e.code for e in d.repair_errors] == [C.REPAIR_ADDED_OBJECT]


def test_a_top_level_identifier_is_what_the_object_gives():
    """A JSON object's own (blank) identifier is authoritative: a value mentioned elsewhere in it does not count."""
    first = {"action_id": A5, "object_id": "", "topk": [A5], "note": {"object_id": "P_ALPHA"}}
    assert held_identifiers(first).object_ids == ()
    assert controller().decide(request(), first, proposal(A5, "P_ALPHA", [A5])).reason is \
        R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
    wrapped = {"proposal": {"action_id": A5, "object_id": "P_ALPHA"}}  # no top-level key: the text is scanned
    assert held_identifiers(wrapped) == rk.core.HeldIdentifiers((A5,), ("P_ALPHA",))
    assert controller().decide(request(), wrapped, proposal(A5, "P_ALPHA", [A5])).dispatched


def test_a_truncated_first_reply_without_its_object_cannot_gain_one():
    cut = '{"action_id": "A5_PROTECTED_ACTION", "object_id": "P_AL'  # the object's value breaks off unquoted
    d = controller().decide(request(), cut, proposal(A5, "P_ALPHA", [A5]))
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL and [e.code for e in d.repair_errors] == [
        C.REPAIR_ADDED_OBJECT]
    whole = '{"action_id": "A5_PROTECTED_ACTION", "object_id": "P_ALPHA", "topk": ["A5_PRO'
    assert controller().decide(request(), whole, proposal(A5, "P_ALPHA", [A5])).dispatched


@pytest.mark.parametrize("guard", [False, True])
@pytest.mark.parametrize("absent", ["empty", "null", "missing", "whitespace"])
def test_b1_b2_share_the_guard_under_the_kit_protocol(guard, absent):
    first = {"terminal": "DISPATCH", "action_id": A5, "object_id": "P_ALPHA", "boundary": "ALLOW", "topk": [A5]}
    if guard:
        first["rule_ids"] = ["R999"]
    repair = dict(first)
    first = {**first, "object_id": ABSENT[absent]} if ABSENT[absent] is not ... else \
        {k: v for k, v in first.items() if k != "object_id"}
    kit = DirectBaseline(CATALOG, POLICY, guard=guard)
    d = kit.decide(request(), first, repair)
    assert d.reason is R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL and not d.dispatched
    assert [e.code for e in d.repair_errors] == [C.REPAIR_ADDED_OBJECT]
    assert kit.route(request(), scripted_direct(kit.stage, first, repair)) == d
    published = DirectBaseline(CATALOG, POLICY, guard=guard, protocol="published")  # as published: unguarded
    assert published.decide(request(), first, repair).dispatched


def scripted_direct(stage: rk.Stage, first, repair) -> rk.backends.ScriptedBackend:
    return rk.backends.ScriptedBackend({stage: [first], stage.repair_stage: [repair]})


# ------------------------------------------------------------------------------------------ a real local server

KEY = "sk-test-routebr-repair-4b1f0c2e"
ENV = "ROUTEBR_REPAIR_TEST_KEY"


def _responder(slot: str, absent: str):
    """First call: A5 on the first candidate A5 permits, ``slot`` left out; repair: the same, filled in."""
    def answer(body: dict, number: int) -> dict:
        payload = user_payload(body)
        original = payload.get("original_payload", payload)
        types = next(a["required_object_types"] for a in original["catalog"] if a["action_id"] == A5)
        obj = next(e["object_id"] for e in original["entities"] if e["object_type"] in types)
        reply = {"action_id": A5, "object_id": obj, "topk": [A5]}
        if "invalid_output" not in payload:
            reply = {k: v for k, v in reply.items() if k != slot} if ABSENT[absent] is ... else \
                {**reply, slot: ABSENT[absent]}
        return completion(json.dumps(reply), model=body.get("model", "test-model"))
    return answer


@pytest.fixture(scope="module")
def published(routebr_artifact):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    cases = rk.load_cases(data / "routebr_select_160.csv")
    a5_types = set(assets.catalog[A5].required_object_types)
    chosen = [c for c in cases if any(e.object_type in a5_types for e in c.request.candidates)][:6]
    assert len(chosen) == 6
    return assets, chosen


@pytest.mark.parametrize("slot, absent", [("object_id", "empty"), ("object_id", "null"), ("object_id", "missing"),
                                          ("object_id", "whitespace"), ("action_id", "empty"),
                                          ("action_id", "missing")])
def test_run_against_a_local_server_then_replay(published, tmp_path, monkeypatch, slot, absent):
    assets, cases = published
    monkeypatch.setenv(ENV, KEY)
    profiles = tmp_path / "profiles.json"
    with OpenAIServer(_responder(slot, absent)) as server:
        profiles.write_text(json.dumps({"local": {"base_url": server.base_url, "api_key_env": ENV,
                                                  "model": "test-model", "retry_backoff_s": 0.01}}), encoding="utf-8")
        backend = make_backend("local", cases=cases, profiles_path=profiles)
        result = run_cases(cases, backend, system="routebr", assets=assets, out_dir=tmp_path / "run",
                           concurrency=2, progress=False)
        calls = server.count
    expected = R.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL if slot == "object_id" else R.FAIL_CLOSED_REPAIR_UNANCHORED
    assert calls == len(cases) * (2 if slot == "object_id" else 1)
    assert {d.reason for d in result.decisions.values()} == {expected}
    assert all(r.fallback_used and r.pred_boundary != "ALLOW" for r in result.rows)
    if slot == "object_id":
        assert all([e.code for e in d.repair_errors] == [C.REPAIR_ADDED_OBJECT] for d in result.decisions.values())
    receipts = sorted((tmp_path / "run" / "raw").glob("*.json"))
    assert len(receipts) == len(cases)
    replayed = replay_rows(assets.controller(), result.rows, {c.case_id: c for c in cases}, receipts=receipts)
    assert [d.reason for d in replayed.decisions] == [expected] * len(cases)
    assert [r.as_csv_row() for r in replayed.rows] == [r.as_csv_row() for r in result.rows]
