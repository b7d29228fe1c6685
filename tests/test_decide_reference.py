"""``Controller.decide`` — :meth:`Controller.run` on stored replies — against a plain reference implementation, for
every Python value an output can be, and the single read it makes of each output (one snapshot, one parse).

The reference below is written from the records' public API only: the output read once by this module's own
``plain`` (a JSON value: exact ``str``/``int``/``float``, ``dict``, ``list``; nothing below the contract's depth
bound), the contract's three phases one by one (``parse_output``, ``check_action``, ``check_topk``,
``check_object``), the state schema's ``check`` on a plain dict, first-match by ``PolicyEngine.matching``
(``Condition.holds``, not the compiled chains), and ``Decision(...)`` built by its dataclass constructor.
Hypothesis draws random catalogs, rule programs, entity lists, states (valid, mistyped, missing, non-finite),
options and first/repair outputs (clean, invalid, JSON text, junk) and then *disguises* each output: every
mapping as a ``dict``, ``OrderedDict``, ``MappingProxyType``, ``dict`` subclass, ``UserDict`` or a ``Mapping``
whose values change after the first read; every string as itself, a ``str`` subclass, ``numpy.str_`` or a ``str``
subclass whose ``==`` always holds; every list as a list, a list subclass or a tuple; numbers as ``int``/``float``
subclasses.  ``decide`` and ``route`` must both give the reference's decision on the output's single read — as a
record, as ``as_dict()`` and as ``trace()``.
"""

from __future__ import annotations

import json
from collections import OrderedDict, UserDict
from collections.abc import Mapping
from types import MappingProxyType

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core.contract import (
    OpaqueValue,
    anchor_errors,
    check_action,
    check_object,
    check_topk,
    guard_repair,
    held_identifiers,
    parse_output,
    snapshot,
)
from routebr_kit.core.controller import NO_REPAIR, ContractLog, DecisionContext
from routebr_kit.core.strict_json import exceeds_depth

ACTIONS = ("A0", "A1", "A2", "A3")
TYPES = ("T1", "T2", "T3")
ENTITY_IDS = ("E0", "E1", "E2", "E3")

# ------------------------------------------------------------------------------------------ reference


MAX_DEPTH = 32  # the contract's bound: a container at level 33 is read as empty (nothing below it matters)


def plain(value, level: int = 1):
    """This test's own single read of an output as a JSON value (no cycles in what the strategies draw)."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, str):
        return "".join([value])  # an exact str of the same characters, whatever the subclass's ``==`` says
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, Mapping):
        return {} if level > MAX_DEPTH else {plain(k): plain(v, level + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [] if level > MAX_DEPTH else [plain(v, level + 1) for v in value]
    raise AssertionError(f"the strategies draw no {type(value)}")


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
    """Algorithm 1 on stored outputs, step by step, on their single read (``plain``)."""
    first = plain(first)
    repair = repair if repair is NO_REPAIR else plain(repair)
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


# ------------------------------------------------------------------------------------------ disguises


class StrSub(str):
    pass


class AlwaysEqual(str):
    """A str whose ``==`` always holds and ``!=`` never does (same hash: a dict still finds it by its text)."""

    __hash__ = str.__hash__

    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False


class IntSub(int):
    pass


class ListSub(list):
    pass


class DictSub(dict):
    pass


class ChangingMapping(Mapping):
    """A mapping whose every value is ``first[key]`` on its first read and ``later[key]`` (or junk) afterwards."""

    def __init__(self, first: dict, later: dict) -> None:
        self._first, self._later, self._reads = first, later, set()

    def __getitem__(self, key):
        if key not in self._first:
            raise KeyError(key)
        if key in self._reads:
            return self._later.get(key, ["changed"])
        self._reads.add(key)
        return self._first[key]

    def __iter__(self):
        return iter(self._first)

    def __len__(self):
        return len(self._first)


STRINGS = (str, StrSub, np.str_, AlwaysEqual)
KEYS = (str, StrSub, np.str_, AlwaysEqual)  # (AlwaysEqual keeps str's hash: its ``==`` runs only on equal hashes)
SEQUENCES = (list, ListSub, tuple)
MAPPINGS = ("dict", "OrderedDict", "MappingProxyType", "DictSub", "UserDict", "changing")
LATER = {"action_id": "A0", "object_id": rk.UNRESOLVED, "topk": ["A0"]}  # what a second read would see


def _recipe(draw, value):
    """A builder of fresh disguised copies of ``value`` (fresh: a changing mapping's first read happens once)."""
    if isinstance(value, bool) or value is None:
        return lambda: value
    if isinstance(value, str):
        kind = draw(st.sampled_from(STRINGS))
        return lambda: kind(value)
    if isinstance(value, int):
        kind = draw(st.sampled_from((int, IntSub)))
        return lambda: kind(value)
    if isinstance(value, float):
        kind = draw(st.sampled_from((float, np.float64)))
        return lambda: kind(value)
    if isinstance(value, Mapping):
        keys = [(draw(st.sampled_from(KEYS)), k) for k in value]
        items = [(key, _recipe(draw, v)) for key, v in zip(keys, value.values())]
        wrap = draw(st.sampled_from(MAPPINGS))

        def build():
            built = {kind(k): make() for (kind, k), make in items}
            if wrap == "changing":
                return ChangingMapping(built, LATER)
            return {"dict": dict, "OrderedDict": OrderedDict, "MappingProxyType": MappingProxyType,
                    "DictSub": DictSub, "UserDict": UserDict}[wrap](built)
        return build
    items = [_recipe(draw, v) for v in value]
    kind = draw(st.sampled_from(SEQUENCES))
    return lambda: kind(make() for make in items)


@st.composite
def disguises(draw, value):
    return _recipe(draw, value)


def _same(decision: rk.Decision, expected: rk.Decision) -> None:
    assert decision == expected
    assert decision.as_dict() == expected.as_dict()
    assert decision.trace() == expected.trace()
    assert decision.legacy_reason_codes == expected.legacy_reason_codes


def _route(controller: rk.Controller, request: rk.RouteRequest, first, repair) -> rk.Decision:
    backend = rk.backends.ScriptedBackend({rk.Stage.ROUTEBR: [first], rk.Stage.REPAIR_ROUTEBR: [repair]})
    return controller.route(request, backend)


# ------------------------------------------------------------------------------------------ properties


@settings(max_examples=600, deadline=None)
@given(scenarios())
def test_decide_equals_the_reference_algorithm(scenario):
    controller, request, first, repair = scenario
    _same(controller.decide(request, first, repair), reference_decide(controller, request, first, repair))


@settings(max_examples=500, deadline=None)
@given(scenarios(), st.data())
def test_no_value_decides_otherwise_than_its_single_read(scenario, data):
    """Issue 19, bullet 3: for every disguise of an output (subclasses, numpy strings, ordered, read-only, user and
    changing mappings, tuples), ``decide`` and ``route`` give the reference's decision on the output's single
    read."""
    controller, request, first, repair = scenario
    first_copy = data.draw(disguises(first))
    repair_copy = (lambda: NO_REPAIR) if repair is NO_REPAIR else data.draw(disguises(repair))
    expected = reference_decide(controller, request, first, repair)
    _same(controller.decide(request, first_copy(), repair_copy()), expected)
    if repair is not NO_REPAIR:
        _same(_route(controller, request, first_copy(), repair_copy()), expected)


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


# ------------------------------------------------------------------------------------------ the issue's examples

ISSUE_CATALOG = rk.Catalog((rk.CatalogAction("A1_ADVISORY", "a", "a", ("ETF",)),
                            rk.CatalogAction("A5_PROTECTED_ACTION", "p", "p", ("ETF",))))
ISSUE_POLICY = rk.PolicyEngine([rk.rule("R060", 70, ["A5_PROTECTED_ACTION"], {"action_permission": False}, "REJECT"),
                                rk.rule("R999", 999, "*", {}, "ALLOW")], ISSUE_CATALOG.ids)
ISSUE_REQUEST = rk.RouteRequest("Q", "t", (), rk.RuntimeState({"action_permission": True}),
                                (rk.Entity("SSE:510050", "ETF", "50ETF"),))


def test_a_numpy_string_decides_the_same_in_a_dict_and_an_ordered_dict():
    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    raw = {"action_id": "A1_ADVISORY", "object_id": "SSE:510050", "topk": [np.str_("A1_ADVISORY")]}
    as_dict, as_ordered = controller.decide(ISSUE_REQUEST, raw), controller.decide(ISSUE_REQUEST, OrderedDict(raw))
    plain_dict = controller.decide(ISSUE_REQUEST, {**raw, "topk": ["A1_ADVISORY"]})
    assert as_dict == as_ordered == plain_dict and as_dict.reason is rk.ReasonCode.DISPATCH_OK
    assert type(as_dict.topk[0]) is str and type(as_dict.first_output["topk"][0]) is str


def test_a_mapping_that_changes_between_reads_is_decided_on_its_first_read():
    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    rejected = {"action_id": "A5_PROTECTED_ACTION", "object_id": "NOT_A_CANDIDATE", "topk": ["A5_PROTECTED_ACTION"]}
    accepted = {"action_id": "A5_PROTECTED_ACTION", "object_id": "SSE:510050", "topk": ["A5_PROTECTED_ACTION"]}
    d = controller.decide(ISSUE_REQUEST, ChangingMapping(rejected, accepted))
    assert d.reason is rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT and not d.dispatched
    assert d.first_output == rejected
    d = controller.decide(ISSUE_REQUEST, ChangingMapping(accepted, rejected))
    assert d.dispatched and d.first_output == accepted


def test_a_string_whose_equality_always_holds_is_compared_by_its_text():
    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    raw = {"action_id": "A1_ADVISORY", "object_id": "SSE:510050", "topk": [AlwaysEqual("A5_PROTECTED_ACTION")]}
    assert controller.decide(ISSUE_REQUEST, raw).reason is rk.ReasonCode.FAIL_CLOSED_INVALID_OUTPUT
    assert controller.decide(ISSUE_REQUEST, raw) == controller.decide(ISSUE_REQUEST, OrderedDict(raw))


# ------------------------------------------------------------------------------------------ the single read itself


json_like = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=12)


@settings(max_examples=400, deadline=None)
@given(json_like | st.builds(_deep, st.integers(28, 36)), st.data())
def test_snapshot_is_the_plain_single_read(value, data):
    """``snapshot`` of any disguise is this module's ``plain`` of the original: exact types all the way down,
    idempotent, and nothing deeper than the bound is kept."""
    copy = data.draw(disguises(value))
    taken = snapshot(copy())
    assert taken == plain(value) and snapshot(taken) == taken

    def exact(v):
        if isinstance(v, dict):
            return type(v) is dict and all(type(k) is str and exact(x) for k, x in v.items())
        if isinstance(v, list):
            return type(v) is list and all(exact(x) for x in v)
        return type(v) in (str, int, float, bool, type(None))
    assert exact(taken)


class Unreadable(Mapping):
    def __getitem__(self, key):
        raise RuntimeError("no")

    def __iter__(self):
        return iter(["action_id"])

    def __len__(self):
        return 1


class Faker:
    """An object that claims to be a dict (``isinstance`` trusts ``__class__``)."""

    @property
    def __class__(self):
        return dict


def test_snapshot_of_values_that_are_not_json():
    assert snapshot({"a": b"x", "b": {1, 2}, "c": Faker()})["a"] == OpaqueValue("bytes", "b'x'")
    assert type(snapshot({"b": {1, 2}})["b"]) is OpaqueValue and type(snapshot(Faker())) is OpaqueValue
    assert snapshot({1: "x"}) == OpaqueValue("dict", "{1: 'x'}")  # a key that is not a string: not a JSON object
    assert type(snapshot({"x": Unreadable()})["x"]) is OpaqueValue
    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    for raw in ({1: "x"}, Unreadable(), Faker(), b'{"action_id": "A1_ADVISORY"}', {"action_id": Faker()}):
        d = controller.decide(ISSUE_REQUEST, raw)  # never raises, always fail-closed
        assert d.fallback and d == controller.decide(ISSUE_REQUEST, raw)
        json.dumps(d.as_dict(), ensure_ascii=False).encode("utf-8")


def test_snapshot_reads_each_container_once_and_keeps_cycles_out():
    reads = []

    class Counting(Mapping):
        def __init__(self, data):
            self.data = data

        def __getitem__(self, key):
            reads.append(key)
            return self.data[key]

        def __iter__(self):
            return iter(self.data)

        def __len__(self):
            return len(self.data)

    shared = Counting({"k": "v"})
    assert snapshot({"a": shared, "b": [shared, shared]}) == {"a": {"k": "v"}, "b": [{"k": "v"}, {"k": "v"}]}
    assert reads == ["k"]
    loop: dict = {"action_id": "A1_ADVISORY"}
    loop["self"] = loop
    loop["again"] = loop  # two ways round the cycle: copied level by level, linear in the depth bound
    taken = snapshot(loop)
    assert exceeds_depth(taken, MAX_DEPTH)
    assert rk.core.parse_output(loop)[1][0].code is rk.ContractErrorCode.NESTING_TOO_DEEP
    level, node = 1, taken
    while node:
        node, level = node["self"], level + 1
    assert level == MAX_DEPTH + 1  # the container at level 33 is copied empty


def test_deciding_runs_no_code_of_the_output():
    """A key or value whose ``==``, ``hash`` or ``__str__`` would run code is read by identity and characters only."""
    calls = []

    class Loud(str):
        __hash__ = str.__hash__

        def __eq__(self, other):
            calls.append("eq")
            return True

        def __ne__(self, other):
            calls.append("ne")
            return False

        def __str__(self):
            calls.append("str")
            return "A5_PROTECTED_ACTION"

    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    raw = {Loud("action_id"): Loud("A1_ADVISORY"), "object_id": Loud("SSE:510050"), "topk": [Loud("A1_ADVISORY")]}
    d = controller.decide(ISSUE_REQUEST, raw)
    assert calls == [] and d.dispatched and d.strict_path == "A1_ADVISORY@SSE:510050"
    assert type(next(iter(d.first_output))) is str and type(d.action_id) is str


# ------------------------------------------------------------------------------------------ one read per output

CLEAN = {"action_id": "A1_ADVISORY", "object_id": "SSE:510050", "topk": ["A1_ADVISORY"]}


def _counting_snapshots(monkeypatch) -> list:
    """Every call of ``snapshot``, wherever the kit's modules bound it, and of the strict JSON parser."""
    import sys

    from routebr_kit.core import contract
    calls: list = []
    original, loads = contract.snapshot, contract.strict_loads

    def counted(raw):
        calls.append("snapshot")
        return original(raw)

    def parsed(text, **kwargs):
        calls.append("parse")
        return loads(text, **kwargs)

    for module in [m for name, m in sys.modules.items() if name.startswith("routebr_kit") and m is not None]:
        if getattr(module, "snapshot", None) is original:
            monkeypatch.setattr(module, "snapshot", counted)
        if getattr(module, "strict_loads", None) is loads:
            monkeypatch.setattr(module, "strict_loads", parsed)
    return calls


@pytest.mark.parametrize(("first", "repair", "reads"), [
    (CLEAN, NO_REPAIR, ["snapshot"]),  # clean
    (OrderedDict(CLEAN), NO_REPAIR, ["snapshot"]),  # clean, in a disguise
    (json.dumps(CLEAN), NO_REPAIR, ["snapshot", "parse"]),  # clean JSON text
    ({**CLEAN, "object_id": "NOT_A_CANDIDATE"}, NO_REPAIR, ["snapshot"]),  # fails the contract, no repair recorded
    ('{"action_id": "A1_ADVISORY", "object_id": 1', NO_REPAIR, ["snapshot", "parse"]),  # broken JSON
    ("not json at all", NO_REPAIR, ["snapshot", "parse"]),  # unanchored: refused before a repair
    ({**CLEAN, "object_id": "NOT_A_CANDIDATE"}, CLEAN, ["snapshot", "snapshot"]),  # one read per reply
])
def test_each_output_is_read_once_per_decision(monkeypatch, first, repair, reads):
    """Issue 29: one snapshot (and, for text, one parse) per output, clean or not — the contract, the repair
    guard and the record all see that one read."""
    controller = rk.Controller(ISSUE_CATALOG, ISSUE_POLICY)
    expected = controller.decide(ISSUE_REQUEST, first, repair)
    calls = _counting_snapshots(monkeypatch)
    assert controller.decide(ISSUE_REQUEST, first, repair) == expected
    assert calls == reads
