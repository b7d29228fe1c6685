"""One replay path, two entry points: deciding stored outputs equals routing with a backend that returns them.

``Controller.decide(request, first, repair)`` (stored outputs, no backend — what the replay function and every
offline derivation rely on) must give the same decision as ``Controller.aroute`` with a backend that answers the
proposal stage with ``first`` and the repair stage with ``repair``; and ``replay_rows`` over ledger rows must give the
same decisions as ``decide`` on the rows' rebuilt proposals (served to the proposal stage and to its repair).
"""

from __future__ import annotations

import asyncio
import json

from core_fixtures import A1, A3, A4, A5, CATALOG, STATE, controller, request, scripted
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store import Gold, ObjectDifficulty
from routebr_kit.store.ledger import prediction_from_decision

ACTIONS = st.sampled_from([A1, A3, A4, A5, "A9_UNKNOWN", "", "NONE"])
OBJECTS = st.sampled_from(["P_ALPHA", "P_BETA", "ACC_1", "SVC_1", "NONE", "UNRESOLVED", "P_GHOST", ""])
PROPOSALS = st.fixed_dictionaries({"action_id": ACTIONS, "object_id": OBJECTS,
                                   "topk": st.lists(ACTIONS, min_size=0, max_size=4)})


@st.composite
def outputs(draw):
    """A stored model output: a proposal dict, its JSON text, a broken rendering of it, or any JSON value."""
    proposal = draw(PROPOSALS)
    if draw(st.booleans()):
        proposal["topk"] = [proposal["action_id"], *proposal["topk"]]
    kind = draw(st.sampled_from(["dict", "json", "fenced", "truncated", "prose", "value"]))
    text = json.dumps(proposal)
    return {"dict": proposal, "json": text, "fenced": f"```json\n{text}\n```", "truncated": text[: len(text) // 2],
            "prose": f"Here you go: {text}",
            "value": draw(st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.integers())))}[kind]


STATES = st.fixed_dictionaries({key: st.booleans() for key in STATE})
OPTIONS = st.fixed_dictionaries({"enforce_state": st.booleans(), "enable_grounding": st.booleans(),
                                 "repair": st.booleans()})


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=outputs(), repair=st.one_of(st.none(), outputs()), state=STATES, options=OPTIONS)
def test_decide_on_stored_outputs_equals_aroute_with_a_backend_returning_them(first, repair, state, options):
    engine = controller(**options)
    req = request(**state)
    stored = engine.decide(req, first) if repair is None else engine.decide(req, first, repair)
    backend = scripted(first, repair=() if repair is None else (repair,))
    routed = asyncio.run(engine.aroute(req, backend))
    if repair is None and routed.repair_attempted:
        # nothing was recorded for the repair the live protocol asked for: the stored-output path fails closed
        assert stored.fallback and stored.terminal is engine.options.fallback
        return
    assert stored == routed
    assert stored.as_dict() == routed.as_dict()


@settings(max_examples=200, deadline=None)
@given(proposals=st.lists(PROPOSALS, min_size=1, max_size=6), state=STATES)
def test_replay_rows_equals_decide_on_the_rebuilt_proposals(proposals, state):
    engine = controller()
    cases, rows = {}, []
    for i, proposal in enumerate(proposals):
        req = rk.RouteRequest(f"T{i:03d}", "Tell me about Alpha", (), rk.RuntimeState(state),
                              request().candidates)
        cases[req.request_id] = rk.Case(req, rk.Split.MAIN, Gold(A1, ObjectDifficulty.EXPLICIT_NAME, "P_ALPHA",
                                                                    rk.Boundary.ALLOW, A1, ("R999",)))
        rows.append(prediction_from_decision(engine.decide(req, proposal), "routebr"))
    replayed = replay_rows(engine, rows, cases)
    for row, decision in zip(rows, replayed.decisions):
        # a ledger row rebuilds one output, which the replay backend serves to the proposal and to its repair
        assert decision == engine.decide(cases[row.case_id].request, row.proposal_output, row.proposal_output)
    assert [r.pred_final_path for r in replayed.rows] == [r.pred_final_path for r in rows]
    assert CATALOG.ids  # the fixture catalog is the one both paths used
