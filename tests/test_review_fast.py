"""Grouped replay equals row-by-row Controller.decide on every ledger field (hypothesis)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.core.controller import Controller, ControllerOptions
from routebr_kit.core.records import Entity, RouteRequest, RuntimeState, Terminal
from routebr_kit.review.fast import ColumnarLedger, decision_view, grouped_decide, row_by_row
from routebr_kit.store.assets import load_assets

FIELDS = ("identity_verified", "entity_resolved", "action_permission", "service_available", "context_fresh",
          "safety_escalation_required", "request_supported", "request_scope_clear")
ENTITIES = (Entity("E1", "ETF", "one"), Entity("E2", "ETF", "two"), Entity("T1", "TOPIC", "topic"),
            Entity("C1", "ACCOUNT", "acct"))


def _assets(routebr_artifact):
    d = routebr_artifact / "data"
    return load_assets(d / "catalog.csv", d / "boundary_rules.csv", d / "entity_catalog.csv")


states = st.fixed_dictionaries({f: st.booleans() for f in FIELDS}).map(
    lambda s: RuntimeState({**s, "policy_version": "v1"}))
requests = st.builds(lambda state, cands: RouteRequest("r", "u", (), state, tuple(cands)), states,
                     st.lists(st.sampled_from(ENTITIES), max_size=3, unique=True))
ACTIONS = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE", "A5_PROTECTED_ACTION", "X")
outputs = st.one_of(
    st.builds(lambda a, o, rest: {"action_id": a, "object_id": o, "topk": [a, *rest]}, st.sampled_from(ACTIONS),
              st.sampled_from(["E1", "E2", "T1", "C1", "UNRESOLVED", "NONE", "Z9"]),
              st.lists(st.sampled_from(ACTIONS[:5]), max_size=2, unique=True)),
    st.sampled_from(["not json", "[]", '{"action_id": "A1_ADVISORY"}', None]),
)


@given(reqs=st.lists(requests, min_size=1, max_size=8), outs=st.lists(outputs, min_size=1, max_size=8),
       rows=st.lists(st.tuples(st.integers(0, 7), st.integers(0, 7)), min_size=1, max_size=60),
       options=st.builds(ControllerOptions, st.sampled_from([Terminal.CLARIFY, Terminal.DEFER]), st.booleans(),
                         st.booleans(), st.booleans()))
@settings(max_examples=300, deadline=None)
def test_grouped_replay_equals_row_by_row_decide(routebr_artifact, reqs, outs, rows, options):
    controller = _assets(routebr_artifact).controller(options)
    ri = np.array([r % len(reqs) for r, _ in rows])
    oi = np.array([o % len(outs) for _, o in rows])
    ledger = ColumnarLedger(reqs, outs, ri, oi)
    grouped = grouped_decide(controller, ledger)
    reference = row_by_row(controller, ledger)
    assert [grouped.view(i) for i in range(len(ledger))] == [decision_view(d) for d in reference]
    assert grouped.groups <= len(ledger)


def test_grouping_collapses_repeated_signatures(routebr_artifact):
    controller: Controller = _assets(routebr_artifact).controller()
    state = RuntimeState({f: f != "safety_escalation_required" for f in FIELDS})
    reqs = [RouteRequest(f"r{i}", "u", (), state, (ENTITIES[i % 2],)) for i in range(50)]
    outs = [{"action_id": "A1_ADVISORY", "object_id": e.object_id, "topk": ["A1_ADVISORY"]} for e in ENTITIES[:2]]
    ledger = ColumnarLedger(reqs, outs, np.arange(1000) % 50, (np.arange(1000) % 50) % 2)
    grouped = grouped_decide(controller, ledger)
    assert grouped.groups == 2 and set(grouped.final_paths()) == {"A1_ADVISORY"}
