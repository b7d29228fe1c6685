"""Controller invariants over arbitrary proposals, repairs, states and options (hypothesis)."""

from __future__ import annotations

import json

from core_fixtures import CATALOG, POLICY, request
from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk

ACTIONS = list(CATALOG.ids)
OBJECTS = ["P_ALPHA", "P_BETA", "ACC_1", "SVC_1", "UNRESOLVED", "NONE", "OUTSIDE", ""]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
action_ids = st.sampled_from(ACTIONS) | json_values
object_ids = st.sampled_from(OBJECTS) | json_values
topks = st.lists(st.sampled_from(ACTIONS) | json_values, max_size=4) | json_values


@st.composite
def outputs(draw):
    """A model output: usually a proposal-shaped dict, sometimes JSON text of one, sometimes anything."""
    proposal = draw(st.fixed_dictionaries({}, optional={"action_id": action_ids, "object_id": object_ids,
                                                        "topk": topks, "extra": json_values}))
    kind = draw(st.sampled_from(["dict", "dict", "json", "any", "truncated"]))
    if kind == "json":
        return json.dumps(proposal)
    if kind == "truncated":
        return json.dumps(proposal)[:-1]
    if kind == "any":
        return draw(json_values)
    return proposal


state_values = st.sampled_from([True, False, 1, 0, None, "true"])
states = st.fixed_dictionaries({}, optional={"safety_escalation_required": state_values,
                                             "entity_resolved": state_values, "action_permission": state_values})
options = st.builds(rk.ControllerOptions,
                    fallback=st.sampled_from([t for t in rk.Terminal if t is not rk.Terminal.DISPATCH]),
                    enforce_state=st.booleans(), enable_grounding=st.booleans(), repair=st.booleans())


@settings(max_examples=400, deadline=None)
@given(first=outputs(), repair=st.none() | outputs(), state=states, opts=options)
def test_controller_invariants(first, repair, state, opts):
    req = rk.RouteRequest("P", "u", (), rk.RuntimeState(state), request().candidates)
    controller = rk.Controller(CATALOG, POLICY, opts)
    decision = controller.decide(req, first) if repair is None else controller.decide(req, first, repair)

    assert decision == (controller.decide(req, first) if repair is None else controller.decide(req, first, repair))
    if decision.fallback:
        assert decision.terminal is opts.fallback and decision.action_id == "NONE" and not decision.dispatched
        return
    proposal = decision.proposal
    assert proposal is not None and decision.action_id == proposal.action_id == proposal.topk[0]
    if not decision.dispatched:
        return
    # every dispatched action is in the catalog ...
    action = CATALOG[decision.action_id]
    # ... every dispatched required object is a request candidate of a permitted type ...
    if action.requires_object:
        entity = req.candidate_index[decision.object_id]
        assert entity.object_type in action.required_object_types
    else:
        assert decision.object_id == "NONE"
    # ... with state enforced, nothing dispatches unless the winning rule allows it ...
    if opts.enforce_state:
        assert POLICY.evaluate(decision.action_id, state).decision is rk.Boundary.ALLOW
    # ... and a lower-ranked candidate is never what gets dispatched.
    assert decision.action_id == proposal.topk[0]


@settings(max_examples=200, deadline=None)
@given(first=outputs(), state=states)
def test_blocked_primary_is_never_replaced(first, state):
    req = rk.RouteRequest("P", "u", (), rk.RuntimeState(state), request().candidates)
    decision = rk.Controller(CATALOG, POLICY).decide(req, first)
    if decision.proposal is not None and decision.rule.decision is not rk.Boundary.ALLOW:
        assert not decision.dispatched and decision.action_id == decision.proposal.action_id
