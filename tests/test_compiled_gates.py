"""What a controller compiles when it is built (``routebr_kit.core.compiled``), and the record builders of its hot path.

* ``PolicyEngine.decision_table``: the state gate as a table over every state a boolean schema admits — equal to
  ``first_match`` on every admitted state (hypothesis, random programs), absent whenever the schema's states are not
  a small finite set;
* ``StateSchema.key``: the fast validity test — a key exactly for a valid state of a fast-kind schema;
* ``gate_emissions``: the gates' one statement, equal to the reference Algorithm 1 by construction of the
  controller (``tests/test_decide_fast_path.py``) and pinned here case by case;
* ``new_proposal`` / ``new_decision``: records equal to, and as frozen as, the dataclass constructors';
* interned identifiers where the hot path looks them up (state field names, action and candidate IDs).
"""

from __future__ import annotations

import ast
import dataclasses
import itertools
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core import compiled
from routebr_kit.core.compiled import new_decision, new_proposal
from routebr_kit.core.controller import ControllerOptions, Decision, DecisionContext, gate_emissions
from routebr_kit.core.rules import first_match
from routebr_kit.store.artifact import Artifact

ACTIONS = ("A0", "A1", "A2")
CATALOG = rk.Catalog((rk.CatalogAction("A0", "a", "a", ("T",)), rk.CatalogAction("A1", "b", "b", ()),
                      rk.CatalogAction("A2", "c", "c", ("NONE",))))
FIELDS = ("f0", "f1", "f2", "f3", "f4", "f5")

# ------------------------------------------------------------------------------------------ decision tables

boolean_conditions = st.dictionaries(st.sampled_from(FIELDS), st.booleans() | st.just({"ne": True})
                                     | st.just({"in": [False]}), max_size=3)


@st.composite
def boolean_programs(draw):
    rules = [rk.rule(f"R{i}", draw(st.integers(0, 40)),
                     draw(st.just("*") | st.lists(st.sampled_from(ACTIONS), min_size=1, max_size=2, unique=True)),
                     draw(boolean_conditions), draw(st.sampled_from(list(rk.Boundary))))
             for i in range(draw(st.integers(0, 6)))]
    rules.append(rk.rule("R_DEFAULT", draw(st.integers(0, 60)), "*", {}, draw(st.sampled_from(list(rk.Boundary)))))
    return rk.PolicyEngine(rules, CATALOG.ids)


@settings(max_examples=300, deadline=None)
@given(boolean_programs(), st.dictionaries(st.sampled_from(("x", "y")), st.integers() | st.text(max_size=3)))
def test_the_decision_table_is_first_match_on_every_admitted_state(policy, extra):
    """Exactness: every admitted state's key maps to the rule ``first_match`` selects (fields no rule reads, in
    ``extra``, change nothing)."""
    names = [f.name for f in policy.state_schema.fields]
    for action in ACTIONS:
        table = policy.decision_table(action)
        assert table is not None and len(table) == 2 ** len(names)
        for values in itertools.product((False, True), repeat=len(names)):
            state = {**extra, **dict(zip(names, values))}
            key = policy.state_schema.key(state)
            assert key == values
            assert table[key] is first_match(policy.chain(action), state)


def test_no_table_when_the_states_are_not_a_small_finite_set():
    default = rk.rule("R_DEFAULT", 99, "*", {}, "ALLOW")
    cases = {
        "string field": [rk.rule("R1", 1, "*", {"tier": "gold"}, "REJECT")],
        "number field": [rk.rule("R1", 1, "*", {"score": {"gte": 3}}, "REJECT")],
        "optional field": [rk.rule("R1", 1, "*", {"kyc": {"exists": True}}, "REJECT")],
        "cross-field": [rk.rule("R1", 1, "*", {"a": {"lt": {"field": "b"}}}, "REJECT")],
        "eleven booleans": [rk.rule(f"R{i}", i, "*", {f"b{i}": True}, "REJECT") for i in range(11)],
    }
    for name, rules in cases.items():
        policy = rk.PolicyEngine([*rules, default], CATALOG.ids)
        assert policy.decision_table("A0") is None, name
    ten = rk.PolicyEngine([*(rk.rule(f"R{i}", i, "*", {f"b{i}": True}, "REJECT") for i in range(10)), default],
                          CATALOG.ids)
    assert len(ten.decision_table("A0")) == 1024


def test_the_published_program_compiles(routebr_artifact):
    controller = Artifact(routebr_artifact).assets.controller(ControllerOptions())
    assert all(plan.table is not None and len(plan.table) == 256 for plan in controller.tables.plans.values())
    a_state = controller.with_options(enforce_state=False)  # an unchecked state is never looked up in a table
    assert all(plan.table is None for plan in a_state.tables.plans.values())


# ------------------------------------------------------------------------------------------ state keys

SCHEMA = rk.PolicyEngine([rk.rule("R1", 1, "*", {"b": True, "a": False}, "REJECT"),
                          rk.rule("R9", 9, "*", {}, "ALLOW")], CATALOG.ids).state_schema


@pytest.mark.parametrize("state, key", [
    ({"a": True, "b": False}, (True, False)),
    ({"a": True, "b": False, "other": [1]}, (True, False)),  # fields no rule reads are allowed and unread
    ({"a": 1, "b": False}, None),  # type-strict: 1 is not true
    ({"a": 0.0, "b": False}, None),
    ({"a": None, "b": False}, None),
    ({"b": False}, None),  # missing
    ({}, None),
])
def test_state_key_is_given_exactly_for_valid_states(state, key):
    assert SCHEMA.key(state) == key
    assert (SCHEMA.check(state) == ()) == (key is not None)


def test_state_key_is_none_for_schemas_it_cannot_prove():
    optional = rk.PolicyEngine([rk.rule("R1", 1, "*", {"k": {"exists": True}}, "REJECT"),
                                rk.rule("R9", 9, "*", {}, "ALLOW")], CATALOG.ids).state_schema
    assert optional.key({"k": True}) is None and optional.check({"k": True}) == ()


# ------------------------------------------------------------------------------------------ gate emissions

OK, BT = rk.ReasonCode.DISPATCH_OK, rk.ReasonCode.BOUNDARY_TERMINAL
T, R, OR = rk.Terminal, rk.ReasonCode, rk.ObjectResolution


@pytest.mark.parametrize("decision, requires, options, resolved, unresolved", [
    ("ALLOW", True, {}, (T.DISPATCH, OK, OR.RESOLVED, None), (T.CLARIFY, R.OBJECT_UNRESOLVED, OR.UNRESOLVED, None)),
    ("ALLOW", False, {}, (T.DISPATCH, OK, OR.NOT_REQUIRED, None), (T.DISPATCH, OK, OR.NOT_REQUIRED, None)),
    ("HANDOFF", True, {}, (T.HANDOFF, BT, OR.NOT_EVALUATED, None), (T.HANDOFF, BT, OR.NOT_EVALUATED, None)),
    ("DEFER", True, {"enforce_state": False},
     (T.DISPATCH, R.DISPATCH_STATE_NOT_ENFORCED, OR.RESOLVED, None),
     (T.CLARIFY, R.OBJECT_UNRESOLVED, OR.UNRESOLVED, None)),
    ("ALLOW", True, {"enable_grounding": False},
     (T.CLARIFY, R.OBJECT_GROUNDING_DISABLED, OR.GROUNDING_DISABLED, rk.UNRESOLVED),
     (T.CLARIFY, R.OBJECT_GROUNDING_DISABLED, OR.GROUNDING_DISABLED, rk.UNRESOLVED)),
    ("REJECT", False, {"enable_grounding": False}, (T.REJECT, BT, OR.NOT_EVALUATED, None),
     (T.REJECT, BT, OR.NOT_EVALUATED, None)),
])
def test_gate_emissions(decision, requires, options, resolved, unresolved):
    rule = rk.rule("R", 1, "*", {}, decision)
    assert gate_emissions(rule, requires, ControllerOptions(**options)) == (resolved, unresolved)


# ------------------------------------------------------------------------------------------ record builders


def test_builders_make_the_same_frozen_records():
    context = DecisionContext(rk.AssetHashes("c", "r"), ControllerOptions())
    rule = rk.rule("R", 1, "*", {}, "ALLOW")
    proposal = new_proposal("A", "O", ("A",))
    built = new_decision("Q", T.DISPATCH, "A", "O", OK, context, proposal, rule, OR.RESOLVED, {"x": 1}, None)
    made = Decision("Q", T.DISPATCH, "A", "O", OK, context, rk.Proposal("A", "O", ("A",)), rule, OR.RESOLVED,
                    {"x": 1}, None)
    assert type(built) is Decision and type(proposal) is rk.Proposal
    assert built == made and repr(built) == repr(made) and built.state_errors == ()  # the default, as __init__
    assert hash(proposal) == hash(rk.Proposal("A", "O", ("A",)))
    assert dataclasses.replace(built, request_id="Q2").request_id == "Q2"
    for record, name in ((built, "terminal"), (proposal, "topk")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, name, None)
        with pytest.raises(dataclasses.FrozenInstanceError):
            delattr(record, name)


def test_the_drafts_mirror_the_records_and_a_changed_record_is_refused():
    """The builders' drafts have exactly the records' fields (checked on import); a record they no longer mirror is a
    TypeError, not a silently half-built record."""
    assert compiled._ProposalDraft.__slots__ == tuple(f.name for f in dataclasses.fields(rk.Proposal))
    assert compiled._DecisionDraft.__slots__ == tuple(f.name for f in dataclasses.fields(Decision))

    @dataclasses.dataclass(frozen=True, slots=True)
    class Wider:
        action_id: str
        object_id: str
        topk: tuple
        extra: int = 0

    with pytest.raises(TypeError):
        compiled._check_draft(compiled._ProposalDraft, Wider)


def test_the_core_generates_no_code():
    """No ``exec``/``eval``/``compile`` and no three-argument ``type(...)`` anywhere in the controller core."""
    found = []
    for path in sorted(Path(compiled.__file__).parent.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and (
                    node.func.id in ("exec", "eval", "compile") or (node.func.id == "type" and len(node.args) == 3)):
                found.append(f"{path.name}:{node.lineno}")
    assert found == []


# ------------------------------------------------------------------------------------------ interning


def test_identifiers_are_interned():
    """State field names, catalog action IDs and candidate IDs are interned where the hot path looks them up."""
    state = rk.RuntimeState(json.loads('{"flag": true}'))
    other = rk.RuntimeState(json.loads('{"flag": false}'))
    assert next(iter(state.values)) is next(iter(other.values))
    catalog = rk.Catalog((rk.CatalogAction("".join(["A", "1"]), "s", "d", ()),))
    assert next(iter(catalog.index)) is sys.intern("A1")
    controller = rk.Controller(catalog, rk.PolicyEngine([rk.rule("R", 1, "*", {}, "ALLOW")], catalog.ids))
    assert next(iter(controller.tables.plans)) is sys.intern("A1")
    request = rk.RouteRequest("Q", "t", (), state, (rk.Entity("".join(["E", "9"]), "T", "e"),))
    assert next(iter(request.candidate_index)) is sys.intern("E9")
