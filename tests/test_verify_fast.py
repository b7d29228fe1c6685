"""The verifier's fast paths against textbook references built here, on random programs (issue 21, speed).

* the first-match diagram of each action (a top-down bit-set walk that drops dominated rules) against the
  bottom-up fold ``ite(cube_1, r_1, ite(cube_2, r_2, … default))`` masked by the schema, built in the same
  hash-consed manager — so "equal" is the same node id, i.e. the same function on every abstract state;
* the rules whose removal changes an action's decision (one memoised search per action) against, per rule, the
  diagram of the extended chain without it compared state by state with the chain's;
* the redundancy finding of :func:`verify_release` (which skips rebuilding the program when the schema provably
  stays the same) against rebuilding every reduced program and comparing every action's decisions;
* weighted counts and witness points (one pass each) against the per-leaf recursions they replaced;
* a base and a candidate sharing chain diagrams in one manager against each compiled alone.

The generators (``verify_generators.random_rules``, and the benchmark's synthetic programs at small sizes with
cross-field tests) include what the fast paths did not anticipate: unsatisfiable rules, duplicated conditions,
``exists``, ``null`` literals, cross-field groups, rules after an unconditional one, mistyped values.
"""

from __future__ import annotations

import itertools
import random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from verify_generators import program_of, random_rules, random_state

from routebr_kit.core.controller import Controller, ControllerOptions
from routebr_kit.core.errors import DataError
from routebr_kit.core.records import Boundary, Catalog, Entity, Registry, RouteRequest, RuntimeState
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.verify import verify_release
from routebr_kit.verify.mdd import Manager
from routebr_kit.verify.program import FAIL, Release
from routebr_kit.verify.space import Source, build_space
from routebr_kit.verify.synthetic import CATALOG, REGISTRY, perturbed, synthetic_program

SEEDS = st.integers(min_value=0, max_value=2 ** 32 - 1)
NO_MATCH = "<no rule matches>"


def _policy(seed: int) -> PolicyEngine | None:
    """A random program, or ``None`` when the core rejects it or the space refuses it (a cross-field group
    beyond ``MAX_GROUP_CONFIGS``, a typed refusal tested in ``test_verify.py``)."""
    rng = random.Random(seed)
    if rng.random() < 0.5:
        policy = program_of(random_rules(rng, size=rng.randint(1, 12)))
    else:
        sizes = {"booleans": rng.randint(1, 6), "numbers": rng.randint(1, 3), "strings": rng.randint(0, 2),
                 "rules": rng.randint(1, 30), "cross": rng.random() < 0.5}
        try:
            policy = synthetic_program(rng.randrange(10 ** 6), **sizes).policy()
        except DataError:
            return None
    if policy is None:
        return None
    try:
        space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
    except DataError:
        return None
    if max((len(v.values) for v in space.variables), default=0) > 400:
        return None  # (a large cross-field group: the references below are quadratic; test_verify.py covers them)
    return policy


def _release(policy: PolicyEngine) -> Release:
    space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
    manager = Manager([len(v.values) for v in space.variables])
    return Release("t", CATALOG, policy, space, manager, registry=REGISTRY)


def _fold(release: Release, rules, base_leaf: str) -> int:
    """The textbook first-match diagram: fold the rules bottom-up with ``ite``, then map invalid states to FAIL."""
    m, space = release.manager, release.space
    out = m.leaf(base_leaf)
    for r in reversed(rules):
        cube = space.cube(r.condition)
        if cube is not None:
            out = m.ite_cube(cube, m.leaf(r.rule_id), out)
    ok = m.leaf(True)
    for lv in range(m.depth):
        invalid = frozenset(range(m.sizes[lv])) - release.valid[lv]
        if invalid:
            ok = m.ite_cube({lv: invalid}, m.leaf(False), ok)
    return m.apply(lambda fine, v: v if fine else FAIL, ok, out)


def _reference_changing(release: Release, action: str) -> set[str]:
    m = release.manager
    chain, extended = release.chain(action), release.extended_chain(action)
    decision = {r.rule_id: r.decision for r in extended}
    first = _fold(release, chain, NO_MATCH)
    out = set()
    for r in chain:
        without = _fold(release, [x for x in extended if x.rule_id != r.rule_id], NO_MATCH)
        changes = m.apply(lambda a, b, r=r: a == r.rule_id and (b == NO_MATCH or decision[b] is not decision[a]),
                          first, without)
        if True in m.leaves(changes):
            out.add(r.rule_id)
    return out


def _reference_redundant(policy: PolicyEngine) -> dict[str, bool]:
    """Per rule: the program without it is valid, has the same schema, and decides alike for every action on every
    admitted state (compared on one space of both programs)."""
    out = {}
    for r in policy.rules:
        try:
            reduced = PolicyEngine([x for x in policy.rules if x.rule_id != r.rule_id], CATALOG.ids)
        except DataError:
            out[r.rule_id] = False
            continue
        if reduced.state_schema.as_dict() != policy.state_schema.as_dict():
            out[r.rule_id] = False
            continue
        space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
        m = Manager([len(v.values) for v in space.variables])
        full = Release("a", CATALOG, policy, space, m, registry=REGISTRY)
        less = Release("b", CATALOG, reduced, space, m, registry=REGISTRY)
        dec_full = {x.rule_id: x.decision for x in policy.rules}
        same = True
        for action in CATALOG.ids:
            a = _fold(full, full.chain(action), NO_MATCH)
            b = _fold(less, less.chain(action), NO_MATCH)
            differs = m.apply(lambda x, y, dec_full=dec_full: x != y if FAIL in (x, y)
                              else dec_full[x] is not dec_full[y], a, b)
            if True in m.leaves(differs):
                same = False
                break
        out[r.rule_id] = same
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_first_match_diagrams_equal_the_bottom_up_fold(seed):
    policy = _policy(seed)
    if policy is None:
        return
    release = _release(policy)
    for action in CATALOG.ids:
        assert release.diagrams[action] == _fold(release, release.chain(action), NO_MATCH), action


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_changing_winners_equal_removal_by_rebuilding_the_chain(seed):
    policy = _policy(seed)
    if policy is None:
        return
    release = _release(policy)
    for action in CATALOG.ids:
        assert set(release.changing_winners(action)) == _reference_changing(release, action), action


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_redundancy_finding_equals_rebuilding_every_reduced_program(seed):
    policy = _policy(seed)
    if policy is None:
        return
    report = verify_release(CATALOG, policy, REGISTRY)
    assert {f.rule_id: f.redundant for f in report.rules} == _reference_redundant(policy)


def _count_reference(m: Manager, a: int, weights) -> dict:
    """The per-node recursion over leaf dictionaries (the previous implementation of ``Manager.count``)."""
    def mul(x, y):
        return 0 if x == 0 or y == 0 else None if x is None or y is None else x * y

    def add(x, y):
        return None if x is None or y is None else x + y

    total = []
    for w in weights:
        t = 0
        for v in w:
            t = add(t, v)
        total.append(t)

    def skip(frm, to):
        out = 1
        for lv in range(frm, to):
            out = mul(out, total[lv])
        return out

    memo: dict = {}

    def rec(x):
        if x in memo:
            return memo[x]
        if m.is_leaf(x):
            found = {m.value(x): 1}
        else:
            lv, found = m.level(x), {}
            for v, c in enumerate(m.children(x)):
                factor = mul(weights[lv][v], skip(lv + 1, m.level(c)))
                if factor == 0:
                    continue
                for leaf, n in rec(c).items():
                    found[leaf] = add(found.get(leaf, 0), mul(factor, n))
        memo[x] = found
        return found

    head = skip(0, m.level(a))
    return {k: v for k, v in ((k, mul(head, n)) for k, n in rec(a).items()) if v != 0}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_one_pass_counts_and_witnesses_equal_the_per_leaf_recursions(seed):
    policy = _policy(seed)
    if policy is None:
        return
    release = _release(policy)
    rng = random.Random(seed)
    m = release.manager
    prefer = release.preference()
    for action in CATALOG.ids:
        d = release.diagrams[action]
        for weights in (release.admitted_weights(),
                        [[rng.choice([0, 1, 2, None]) for _ in range(size)] for size in m.sizes]):
            assert m.count(d, weights) == _count_reference(m, d, weights)
        points = m.find_all(d, prefer)
        assert set(points) == set(m.leaves(d))
        for leaf, point in points.items():
            assert m.find(d, lambda v, leaf=leaf: v == leaf, prefer) == (point, leaf)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_a_shared_manager_gives_each_release_its_own_diagrams(seed):
    policy = _policy(seed)
    if policy is None:
        return
    rng = random.Random(seed)
    rules = list(policy.rules)
    i = rng.randrange(len(rules))
    r = rules[i]
    rules[i] = rule(r.rule_id, r.priority, r.applies_to, dict(r.condition.source),
                    rng.choice([b for b in Boundary if b is not r.decision]))
    if rng.random() < 0.5 and len(rules) > 1:  # a condition change too: the diagrams then differ
        j = rng.randrange(len(rules) - 1)
        rules[j] = rule(rules[j].rule_id, rules[j].priority, rules[j].applies_to, {}, rules[j].decision)
    try:
        cand = PolicyEngine(rules, CATALOG.ids)
    except DataError:
        return
    space = build_space([Source.of_rules(policy.rules, policy.state_schema),
                         Source.of_rules(cand.rules, cand.state_schema)])
    shared = Manager([len(v.values) for v in space.variables])
    pair = [Release(n, CATALOG, p, space, shared, registry=REGISTRY) for n, p in (("b", policy), ("c", cand))]
    for release in pair:
        alone = Release("x", CATALOG, release.policy, space, Manager(shared.sizes), registry=REGISTRY)
        for action in CATALOG.ids:
            assert shared.count(release.diagrams[action], release.admitted_weights()) == \
                alone.manager.count(alone.diagrams[action], alone.admitted_weights())
            assert release.diagrams[action] == _fold(release, release.chain(action), NO_MATCH)


def test_synthetic_candidate_shares_the_base_diagrams():
    """A candidate that only changes decisions has the base's first-match diagrams (node for node)."""
    program = synthetic_program(3, booleans=6, numbers=2, strings=1, rules=25)
    base, cand = program.policy(), perturbed(program, 7).policy()
    space = build_space([Source.of_rules(base.rules, base.state_schema), Source.of_rules(cand.rules,
                                                                                          cand.state_schema)])
    m = Manager([len(v.values) for v in space.variables])
    b = Release("b", CATALOG, base, space, m, registry=REGISTRY)
    c = Release("c", CATALOG, cand, space, m, registry=REGISTRY)
    assert b.diagrams == c.diagrams


# --------------------------------------------------------------------------------------------- redundancy by outcomes

#: A two-action catalog (one action needs an ETF, one is object-free) and its registry: small enough to replay every
#: (state, proposal) pair of a program and of each of its reduced programs through the real controller.
SMALL_CATALOG = Catalog((CATALOG["A1_ADVISORY"], CATALOG["A4_SUPPORT_RESPONSE"]))
SMALL_REGISTRY = Registry((Entity("ETF:1", "ETF", "Fund one"), Entity("SVC:1", "SERVICE", "Service one")))
#: Objects a proposal may name: a permitted candidate, a candidate of an unnamed type, a ghost, UNRESOLVED, NONE.
OBJECTS = ("ETF:1", "SVC:1", "X:1", "ghost", "UNRESOLVED", "NONE")
CANDIDATES = (*SMALL_REGISTRY, Entity("X:1", "COMMODITY", "other"))
KINDS = {"a": "boolean", "b": "boolean", "n": "number", "m": "number", "s": "string", "t": "string"}
LITERALS_OF = {"boolean": (True, False), "number": (-1, 0, 1, 1.0, 2.5), "string": ("", "a", "b", "v1")}
MAX_CELLS = 160


def _literal_of(rng: random.Random, kind: str) -> object:
    return None if rng.random() < 0.1 else rng.choice(LITERALS_OF[kind])  # (null: the field's schema gains a type)


def _test_of(rng: random.Random, name: str, kind: str, fields: list[str]) -> object:
    roll = rng.random()
    if roll < 0.3:
        return _literal_of(rng, kind)
    if roll < 0.4:
        return {"exists": rng.random() < 0.6}
    if roll < 0.55:
        return {rng.choice(["in", "not_in"]): [_literal_of(rng, kind) for _ in range(rng.randint(1, 2))]}
    partners = [f for f in fields if f != name and KINDS[f] == kind]
    if roll < 0.8 and partners and kind != "boolean":
        return {rng.choice(["eq", "ne", "lt", "lte", "gt", "gte"]): {"field": rng.choice(partners)}}
    if kind == "boolean":
        return {"ne": rng.choice([True, False])}
    op = rng.choice(["eq", "ne", "lt", "lte", "gt", "gte"])
    value = _literal_of(rng, kind)
    return {op: value if value is not None or op in ("eq", "ne") else LITERALS_OF[kind][0]}


def small_program(rng: random.Random) -> list:
    """A few rules over two or three fields of fixed kinds (numeric thresholds, int and float literals, string
    constants and orderings, booleans, ``null`` literals that retype a field, ``exists``, cross-field tests),
    with what a shortcut could miss: a field (``c``) only one rule mentions, duplicated conditions, decisions
    that mostly agree (so redundancy is common), an unconditional rule before the end, a second default."""
    fields = rng.sample(sorted(KINDS), rng.randint(1, 3))
    if rng.random() < 0.35:  # two fields of one kind, so that cross-field tests occur
        fields = [*rng.choice([("n", "m"), ("s", "t")]), *fields[:rng.randint(0, 1)]]
        fields = list(dict.fromkeys(fields))
    lonely = rng.choice(["boolean", "number", "string"])
    decisions = ["ALLOW", "HANDOFF"] if rng.random() < 0.6 else ["ALLOW", "CLARIFY", "DEFER", "HANDOFF", "REJECT"]
    rules, conditions = [], []
    for k in range(rng.randint(1, 5)):
        roll = rng.random()
        if conditions and roll < 0.2:
            condition = dict(rng.choice(conditions))
        elif roll < 0.27:
            condition = {}
        else:
            condition = {f: _test_of(rng, f, KINDS[f], fields) for f in rng.sample(fields, rng.randint(1, len(fields)))}
        if rng.random() < 0.2 and not any("c" in c for c in conditions):
            condition["c"] = _literal_of(rng, lonely) if rng.random() < 0.5 else {"exists": rng.random() < 0.5}
        conditions.append(condition)
        applies = "*" if rng.random() < 0.6 else [rng.choice(SMALL_CATALOG.ids)]
        rules.append(rule(f"R{k}", rng.randint(1, 9) * 10, applies, condition, rng.choice(decisions)))
    rules.append(rule("R99", 999, "*", {}, rng.choice(decisions)))
    if rng.random() < 0.3:
        rules.append(rule("R98", 990 if rng.random() < 0.5 else 1000, "*", {}, rng.choice(decisions)))
    return rules


def _outcomes(policy: PolicyEngine, states: list[dict]) -> list[tuple]:
    """(terminal, reason) of the real controller for every state, action and object (independent of verify/)."""
    controller = Controller(SMALL_CATALOG, policy, ControllerOptions(), registry_sha256=SMALL_REGISTRY.sha256)
    out = []
    for state in states:
        for action in SMALL_CATALOG.ids:
            for obj in OBJECTS:
                request = RouteRequest("ref", "", (), RuntimeState(dict(state)), CANDIDATES)
                d = controller.decide(request, {"action_id": action, "object_id": obj, "topk": [action]})
                out.append((d.terminal, d.reason))
    return out


def _cells(policies: list[PolicyEngine], limit: int = MAX_CELLS) -> list[dict] | None:
    """A witness state of every cell of the joint partition of the programs (``None``: more than ``limit``)."""
    space = build_space([Source.of_rules(p.rules, p.state_schema) for p in policies])
    sizes = [len(v.values) for v in space.variables]
    total = 1
    for n in sizes:
        total *= n
    if total > limit:
        return None
    return [space.concretize(list(point)) for point in itertools.product(*(range(n) for n in sizes))]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_redundancy_equals_comparing_each_reduced_program_through_the_controller(seed):
    """The reference definition, bluntly: rule ``r`` is redundant iff the program without it is valid and the real
    controller emits the same (terminal, reason) for every state and every proposal — states: a witness of every
    cell of the joint partition of both programs plus random concrete states (mistyped, missing and extra values
    included); proposals: every action with every kind of object."""
    rng = random.Random(seed)
    try:
        policy = PolicyEngine(small_program(rng), SMALL_CATALOG.ids)
    except DataError:
        return
    if _cells([policy]) is None:
        return
    report = verify_release(SMALL_CATALOG, policy, SMALL_REGISTRY)
    extra = [random_state(rng, policy.state_schema if rng.random() < 0.7 else None) for _ in range(12)]
    for finding in report.rules:
        try:
            reduced = PolicyEngine([x for x in policy.rules if x.rule_id != finding.rule_id], SMALL_CATALOG.ids)
        except DataError:
            assert not finding.redundant, finding
            continue
        cells = _cells([policy, reduced], 4 * MAX_CELLS)  # (another schema may split a class: a few more cells)
        states = (cells if cells is not None else _cells([policy])) + extra  # type: ignore[operator]
        same = _outcomes(policy, states) == _outcomes(reduced, states)
        assert finding.redundant is same, (finding.rule_id, finding.redundant_note, [r.as_dict() for r in
                                                                                       policy.rules])
