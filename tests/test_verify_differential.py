"""Differential tests: the rule engine and the controller against an independent reference evaluator
(``tests/reference_rules.py``, no code shared with ``core/``), and the verifier's regions against the controller on
states sampled inside them.  ``benchmarks/bench_differential.py`` runs the first over a million triples."""

from __future__ import annotations

import random

import reference_rules as ref
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_generators import (
    REFERENCE_CATALOG,
    program_of,
    random_proposal,
    random_rules,
    random_state,
    request_of,
    sample_in,
)

from routebr_kit.core.controller import Controller, ControllerOptions
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.core.records import Terminal
from routebr_kit.verify.mdd import Manager
from routebr_kit.verify.program import ObjectClass, Release, object_classes
from routebr_kit.verify.space import Source, build_space
from routebr_kit.verify.synthetic import CATALOG

SEEDS = st.integers(min_value=0, max_value=2 ** 32 - 1)


def _controller_outcome(controller: Controller, state: dict, proposal: dict, candidates) -> tuple:
    d = controller.decide(request_of(state, candidates), proposal)
    return d.terminal.value, d.reason.value, d.rule_id


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_controller_agrees_with_the_reference_evaluator(seed):
    rng = random.Random(seed)
    rules = random_rules(rng)
    policy = program_of(rules)
    if policy is None:
        return
    fallback = rng.choice(["CLARIFY", "DEFER", "HANDOFF", "REJECT"])
    controller = Controller(CATALOG, policy, ControllerOptions(fallback=Terminal(fallback)))
    for _ in range(20):
        state = random_state(rng, policy.state_schema if rng.random() < 0.8 else None)
        proposal, candidates = random_proposal(rng)
        expected = ref.decide(rules, REFERENCE_CATALOG, state, proposal,
                              {e.object_id: e.object_type for e in candidates}, fallback)
        assert _controller_outcome(controller, state, proposal, candidates) == expected, (rules, state, proposal)


def test_the_reference_evaluator_can_disagree():
    """The differential check has teeth: a reference with one operator flipped disagrees on some triple."""
    rules = [{"rule_id": "R1", "priority": 1, "applies_to": "*", "condition": {"x": {"lt": 3}},
              "decision": "REJECT"},
             {"rule_id": "R9", "priority": 9, "applies_to": "*", "condition": {}, "decision": "ALLOW"}]
    controller = Controller(CATALOG, program_of(rules))
    proposal = {"action_id": "A4_SUPPORT_RESPONSE", "object_id": "NONE", "topk": ["A4_SUPPORT_RESPONSE"]}
    flipped = [{**rules[0], "condition": {"x": {"lte": 3}}}, rules[1]]
    state = {"x": 3}
    assert _controller_outcome(controller, state, proposal, ()) != ref.decide(flipped, REFERENCE_CATALOG, state,
                                                                               proposal, {})


def _space(policy):
    """The verifier's space, or ``None`` when a cross-field group exceeds its configuration cap (a typed refusal)."""
    try:
        return build_space([Source.of_rules(policy.rules, policy.state_schema)])
    except DataError as exc:
        assert exc.code is ErrorCode.INVALID_VALUE and "cross-field groups" in exc.expected
        return None


def predicted(release: Release, space, state: dict, proposal: dict, candidates) -> tuple:
    """The verifier's outcome for a concrete state: locate its region, read the region's (replayed) outcome."""
    action = proposal["action_id"]
    index = {e.object_id: e for e in candidates}
    obj = proposal["object_id"]
    cls = ObjectClass(index[obj].object_type) if obj in index else ObjectClass(obj)
    leaf = release.manager.evaluate(release.diagrams[action], space.classify(state))
    o = release.outcome(action, cls, leaf)
    return o.terminal.value, o.reason.value, o.rule_id


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_every_region_holds_the_controller_outcome_of_states_sampled_inside_it(seed):
    """Random states (weird values included) are located in the verifier's partition; the controller's decision on
    each equals the outcome the verifier gives its region."""
    rng = random.Random(seed)
    rules = random_rules(rng)
    policy = program_of(rules)
    if policy is None:
        return
    space = _space(policy)
    if space is None:
        return
    release = Release("r", CATALOG, policy, space, Manager([len(v.values) for v in space.variables]))
    controller = Controller(CATALOG, policy)
    for _ in range(25):
        state = random_state(rng, policy.state_schema if rng.random() < 0.8 else None)
        proposal, candidates = random_proposal(rng)
        proposal["topk"] = [proposal["action_id"]]
        if proposal["action_id"] not in CATALOG or (proposal["object_id"] == "ghost"):
            continue
        assert predicted(release, space, state, proposal, candidates) == \
            _controller_outcome(controller, state, proposal, candidates), (rules, state, proposal)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_values_sampled_inside_each_class_land_in_it_and_decide_alike(seed):
    """For every region of every action: states built from random values *inside* each class of the region's
    witness point (not the canonical witnesses) get the region's outcome from the controller."""
    rng = random.Random(seed)
    rules = random_rules(rng, cross=rng.random() < 0.5)
    policy = program_of(rules)
    if policy is None:
        return
    space = _space(policy)
    if space is None:
        return
    m = Manager([len(v.values) for v in space.variables])
    release = Release("r", CATALOG, policy, space, m)
    controller = Controller(CATALOG, policy)
    classes = object_classes([CATALOG], [])
    from verify_generators import ENTITIES
    for action in CATALOG.ids:
        for leaf in m.leaves(release.diagrams[action]):
            found = m.find(release.diagrams[action], lambda v, leaf=leaf: v == leaf)
            point = [rng.randrange(m.sizes[lv]) if v is None else v for lv, v in enumerate(found[0])]
            state = {}
            for var, index in zip(space.variables, point):
                value = var.values[index]
                if var.grouped:
                    state.update(var.assignment(index))
                    continue
                piece = rng.choice(value.pieces)
                sample = sample_in(piece, rng)
                if sample is not ref.ABSENT and piece.kind.value != "missing":
                    state[var.fields[0]] = sample
            assert space.classify(state) == tuple(point) or any(
                space.variables[lv].grouped for lv in range(len(point))), (state, point)
            cls = rng.choice(classes)
            entity = next((e for e in ENTITIES if e.object_type == cls.key), None)
            proposal = {"action_id": action, "object_id": entity.object_id if entity else cls.key, "topk": [action]}
            candidates = (entity,) if entity else ()
            expected = release.outcome(action, cls if entity or not cls.is_candidate else ObjectClass("NONE"), leaf)
            if not entity and cls.is_candidate:
                continue
            got = _controller_outcome(controller, state, proposal, candidates)
            assert got == (expected.terminal.value, expected.reason.value, expected.rule_id), (rules, state, proposal)
