"""One release compiled over an abstract space: per action, a decision diagram from states to the winning rule
(or the fail-closed class), and the controller's outcome for each (action, object class, winning rule).

The outcomes are not re-derived from the controller's code: each one is read by **running the real controller**
(:meth:`~routebr_kit.core.controller.Controller.decide`) on a witness state of the region and a witness proposal,
and the rule it reports is checked against the diagram (a disagreement raises :class:`VerifierMismatch`).  What
the analysis relies on is the controller's structure (Algorithm 1): the outcome depends on the state only through
the state-schema check and the first matching rule of the committed action, and on the proposal only through its
action and its object's class (a candidate of type T, ``UNRESOLVED``, ``NONE``).  The differential tests and the
sampling tests check exactly that.

Uses only the public core API (catalog, rules, schema, controller).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.controller import Controller, ControllerOptions
from ..core.errors import DataError, ErrorCode, KitError
from ..core.records import (
    NONE,
    OBJECT_FREE_TYPE,
    UNRESOLVED,
    Boundary,
    Catalog,
    Entity,
    ReasonCode,
    Registry,
    RouteRequest,
    RuntimeState,
    Terminal,
)
from ..core.rules import Condition, PolicyEngine, Rule
from .mdd import Manager
from .space import Space

#: Leaf of the states that break the release's runtime-state schema (the controller's fail-closed terminal).
FAIL = "<fail-closed: invalid state>"
#: Leaf for an action the release's catalog does not hold (a proposal naming it breaks the contract).
_NO_ACTION = "<action outside the catalog>"
#: The object type no catalog names (a candidate of "another type" for every action).
OTHER_TYPE = "OTHER_TYPE"


class VerifierMismatch(KitError):
    """The real controller disagreed with the analysis on a witness: a bug in the verifier (never expected)."""


@dataclass(frozen=True, slots=True, order=True)
class ObjectClass:
    """The class of a proposal's ``object_id``: a candidate of one type, ``UNRESOLVED`` or ``NONE``."""

    key: str  # "UNRESOLVED", "NONE" or the candidate's object type

    @property
    def is_candidate(self) -> bool:
        return self.key not in (UNRESOLVED, NONE)

    def label(self) -> str:
        return f"candidate of type {self.key}" if self.is_candidate else self.key


@dataclass(frozen=True, slots=True)
class Outcome:
    """What the controller emitted: the terminal, the reason code and the winning rule (``None`` if not reached)."""

    terminal: Terminal
    reason: ReasonCode
    rule_id: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"terminal": self.terminal.value, "reason": self.reason.value, "rule": self.rule_id}

    def describe(self) -> str:
        return f"{self.terminal.value} ({self.reason.value}{', ' + self.rule_id if self.rule_id else ''})"


def object_classes(catalogs: Iterable[Catalog], registries: Iterable[Registry | None]) -> tuple[ObjectClass, ...]:
    """Every object type a catalog names or a registry holds, one type no catalog names, ``UNRESOLVED``, ``NONE``."""
    types: set[str] = set()
    for catalog in catalogs:
        for a in catalog:
            types.update(t for t in a.required_object_types if t != OBJECT_FREE_TYPE)
    for registry in registries:
        if registry is not None:
            types.update(e.object_type for e in registry)
    other = OTHER_TYPE
    while other in types:
        other += "_"
    return (*(ObjectClass(t) for t in sorted(types)), ObjectClass(other), ObjectClass(UNRESOLVED), ObjectClass(NONE))


def _witness_entity(object_type: str, registries: Sequence[Registry | None]) -> Entity:
    """A registry entity of the type (the first, by ID), or a synthesized one when no registry holds it."""
    for registry in registries:
        if registry is not None:
            found = _first_of_type(registry).get(object_type)
            if found is not None:
                return found
    return Entity(f"WITNESS:{object_type}", object_type, f"witness {object_type}")


_FIRST: dict[int, tuple[Registry, dict[str, Entity]]] = {}


def _first_of_type(registry: Registry) -> dict[str, Entity]:
    cached = _FIRST.get(id(registry))
    if cached is None or cached[0] is not registry:
        first: dict[str, Entity] = {}
        for e in sorted(registry, key=lambda e: e.object_id):
            first.setdefault(e.object_type, e)
        cached = (registry, first)
        _FIRST[id(registry)] = cached
    return cached[1]


def kind_of(catalog: Catalog, action: str, cls: ObjectClass) -> str:
    """How the contract sees an object class for an action: ``candidate`` (of a permitted type), ``other_type``,
    ``UNRESOLVED``, ``NONE`` — or ``no_action`` when the catalog lacks the action.  The controller's outcome depends
    on the object only through this."""
    if action not in catalog:
        return "no_action"
    if not cls.is_candidate:
        return cls.key
    entry = catalog[action]
    return "candidate" if entry.requires_object and entry.permits(cls.key) else "other_type"


def representatives(classes: Sequence[ObjectClass], catalogs: Sequence[Catalog], action: str
                    ) -> tuple[ObjectClass, ...]:
    """One object class per combination of :func:`kind_of` over the catalogs (the first, in order)."""
    seen: dict[tuple[str, ...], ObjectClass] = {}
    for cls in classes:
        seen.setdefault(tuple(kind_of(c, action, cls) for c in catalogs), cls)
    return tuple(seen.values())


@dataclass(frozen=True)
class Proposal:
    """A concrete witness proposal and the request candidates it needs."""

    action_id: str
    object_class: ObjectClass
    entity: Entity | None

    @property
    def object_id(self) -> str:
        return self.entity.object_id if self.entity is not None else self.object_class.key

    def output(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "object_id": self.object_id, "topk": [self.action_id]}

    def as_dict(self) -> dict[str, Any]:
        out = {**self.output(), "object_class": self.object_class.label()}
        if self.entity is not None:
            out["candidates"] = [self.entity.prompt_view()]
        return out


def witness_proposal(action_id: str, cls: ObjectClass, registries: Sequence[Registry | None]) -> Proposal:
    return Proposal(action_id, cls, _witness_entity(cls.key, registries) if cls.is_candidate else None)


def replay(controller: Controller, state: Mapping[str, Any], proposal: Proposal) -> Outcome:
    """The real controller's decision on a concrete state and proposal (stored output, no repair)."""
    candidates = (proposal.entity,) if proposal.entity is not None else ()
    request = RouteRequest("verify", "", (), RuntimeState(dict(state)), candidates)
    decision = controller.decide(request, proposal.output())
    return Outcome(decision.terminal, decision.reason, decision.rule_id)


class Release:
    """A release (catalog, rule program, options, registry) compiled over ``space`` in ``manager``."""

    def __init__(self, name: str, catalog: Catalog, policy: PolicyEngine, space: Space, manager: Manager, *,
                 options: ControllerOptions | None = None, registry: Registry | None = None,
                 actions: Sequence[str] | None = None) -> None:
        options = options or ControllerOptions()
        if not options.enforce_state:
            raise DataError(ErrorCode.INVALID_VALUE, "a controller that enforces the state gate (under A-state every "
                            "accepted proposal dispatches whatever the state: there is nothing to analyse)",
                            got="enforce_state=false", field="options")
        self.name = name
        self.catalog = catalog
        self.policy = policy
        self.space = space
        self.manager = manager
        self.options = options
        self.registry = registry
        self.controller = Controller(catalog, policy, options, registry_sha256=registry.sha256 if registry else "")
        self.valid = space.valid(policy.state_schema)
        self.actions = tuple(actions) if actions is not None else catalog.ids
        self._fail = manager.leaf(FAIL)
        self._changing: dict[str, frozenset[str]] = {}
        self._tails: dict[tuple[int, int], int] = {}
        self._chains: dict[str, list[Rule]] = {}
        self._rules_by_id = {r.rule_id: r for r in policy.rules}
        self.diagrams: dict[str, int] = {a: self.chain_diagram(self.chain(a) if a in catalog else [_NO_ACTION_RULE])
                                         for a in self.actions}
        self._outcomes: dict[tuple[str, ObjectClass, Hashable], Outcome] = {}
        self._states: dict[tuple[str, Hashable], dict[str, Any]] = {}
        self._points: dict[str, dict[Hashable, list[int | None]]] = {}
        self._preference: list[list[int]] | None = None

    # ---- compilation
    def chain(self, action: str) -> list[Rule]:
        """The action's rules in first-match order, up to and including the first unconditional one."""
        if action not in self._chains:
            self._chains[action] = self._rules_until(action, 1)
        return self._chains[action]

    def extended_chain(self, action: str) -> list[Rule]:
        """The chain plus the rules after its unconditional end, up to the next unconditional one: the rules that
        decide once any one rule of the chain is removed."""
        return self._rules_until(action, 2)

    def _rules_until(self, action: str, unconditional: int) -> list[Rule]:
        """The action's rules in first-match order, up to and including its ``unconditional``-th unconditional one."""
        rules, seen = [], 0
        for r in self.policy.rules:
            if r.applies(action):
                rules.append(r)
                seen += r.condition.unconditional
                if seen == unconditional:
                    break
        return rules

    def _tail(self, level: int, leaf: int) -> int:
        """``leaf`` where every variable from ``level`` on takes an admitted value, :data:`FAIL` elsewhere: once a
        rule matches, the rest of the state must still pass the schema."""
        key = (level, leaf)
        found = self._tails.get(key)
        if found is None:
            m = self.manager
            found = leaf
            for lv in range(m.depth - 1, level - 1, -1):
                invalid = frozenset(range(m.sizes[lv])) - self.valid[lv]
                if invalid:
                    found = m.node(lv, tuple(self._fail if v in invalid else found for v in range(m.sizes[lv])))
            self._tails[key] = found
        return found

    def chain_diagram(self, rules: Sequence[Rule]) -> int:
        """The first-match diagram of ``rules`` (ending in an unconditional one) on the states the schema admits,
        :data:`FAIL` elsewhere.

        Built top-down, level by level: a path keeps the rules still possible (every constraint above it holds) as
        a bit set (bit ``k``: the ``k``-th rule) and ends at the first rule with no constraint left — the first
        match.  Rules after a satisfied one are dropped, since they can no longer match first.  Sub-diagrams are
        memoised on (level, rules still possible), after dropping the rules another one still possible dominates
        from that level on (:meth:`_Chain.pruned`), so that paths differing only in rules that can no longer win
        share one sub-diagram."""
        m, fail, sizes = self.manager, self._fail, self.manager.sizes
        # The diagram is a function of the rule IDs, their cubes and the admitted values only (not of decisions):
        # releases compiled in one manager (a base and its candidate) share it.
        cubes = [self.space.cube(r.condition) for r in rules]
        shared = ("chain", tuple((r.rule_id, None if cube is None else tuple(sorted(cube.items())))
                                 for r, cube in zip(rules, cubes)),
                  tuple(self.valid[lv] for lv in range(m.depth)))
        found = m.cache.get(shared)
        if found is not None:
            return found
        c = _Chain(rules, self.space, sizes, self.valid, dominance=True)
        last, done, constrained, compat, valid, invalid = c.last, c.done, c.constrained, c.compat, c.valid, c.invalid
        leaves = [m.leaf(i) for i in c.ids]
        tail, node = self._tail, m.node
        memo: dict[tuple[int, int], int] = {}

        def rec(level: int, alive: int) -> int:
            key = (level, alive)
            found = memo.get(key)
            if found is not None:
                return found
            alive = pruned(alive, level)
            found = memo.get((level, alive))
            if found is not None:
                memo[key] = found
                return found
            key2 = (level, alive)
            head = (alive & -alive).bit_length() - 1
            if last[head] < level:  # every constraint of the first possible rule holds: it matches
                out = tail(level, leaves[head])
            else:
                sure = alive & done[level]
                if sure:
                    alive &= ((sure & -sure) << 1) - 1
                if not alive & constrained[level]:
                    inner = rec(level + 1, alive)
                    bad = invalid[level]
                    out = node(level, tuple(fail if v in bad else inner for v in range(sizes[level])))
                else:
                    kids = [fail] * sizes[level]
                    step = compat[level]
                    for v in valid[level]:
                        kids[v] = rec(level + 1, alive & step[v])
                    out = node(level, tuple(kids))
            memo[key] = memo[key2] = out
            return out

        pruned = c.pruned
        out = m.cache[shared] = rec(0, c.canonical(c.alive, 0))
        return out

    def changing_winners(self, action: str) -> frozenset[str]:
        """The rules of the action's chain whose removal changes its decision on some admitted state: the rules
        that are the first match of some admitted state on which the next matching rule of the extended chain
        decides otherwise (or no later rule matches).  Cached per action.

        Why this is the whole question: under first match by priority, removing rule ``r`` changes the decision
        only on ``r``'s own region (the states where it is the first match); there the decision becomes that of
        the next matching rule.  So no reduced program is compiled: for each rule, one memoised walk of the
        action's first-match diagram restricted to the nodes that still reach ``r``'s leaf (the diagram settles
        the earlier rules and ``r`` itself, canonically), carrying as a bit set the later rules still possible.
        A walk answers as soon as a later rule is certain to match — no change if every rule still possible up to
        it decides like ``r``, a change if none does (a node reaching ``r``'s leaf extends to an admitted state:
        the diagram sends every inadmissible value to :data:`FAIL`) — or when no later rule is possible.  It stops
        at the first changing path.  (``tests/test_verify_fast.py`` checks it against rebuilding the chain without
        each rule, and the redundancy finding against comparing every reduced program's outcomes through the
        controller.)"""
        found = self._changing.get(action)
        if found is not None:
            return found
        m = self.manager
        rules = self.extended_chain(action)
        c = _Chain(rules, self.space, m.sizes, self.valid)
        decision_of = [r.decision for r in rules]
        index = {rule_id: k for k, rule_id in enumerate(c.ids)}
        diagram = self.diagrams[action]
        reach = m.reach(diagram, lambda leaf: 1 << index[leaf] if leaf in index else 0)
        winners = 0
        for k in range(len(c.ids)):
            bit = 1 << k
            alike = sum(1 << j for j, d in enumerate(decision_of) if d is decision_of[k])
            if reach[diagram] & bit and self._changes(c, diagram, bit, c.alive & ~((bit << 1) - 1), alike, reach):
                winners |= bit
        result = frozenset(c.ids[k] for k in range(len(rules)) if winners >> k & 1)
        self._changing[action] = result
        return result

    def _changes(self, c: _Chain, diagram: int, bit: int, later: int, alike: int, reach: Mapping[int, int]) -> bool:
        """Whether some admitted state of the region of the rule ``bit`` (its leaf in ``diagram``) has no later
        rule of ``later`` matching, or a first later match outside ``alike`` (the rules deciding like it)."""
        m, done, constrained, compat, valid = self.manager, c.done, c.constrained, c.compat, c.valid
        memo: dict[tuple[int, int, int], bool] = {}

        def walk(level: int, x: int, alive: int) -> bool:
            key = (level, x, alive)
            found = memo.get(key)
            if found is not None:
                return found
            out: bool | None = None
            if not alive:
                out = True
            else:
                sure = alive & done[level]  # rules whose every constraint holds on this path: the first decides
                if sure:
                    alive &= ((sure & -sure) << 1) - 1
                    same = alive & alike
                    out = False if same == alive else True if not same else None
            if out is None:
                step = compat[level]
                if not m.is_leaf(x) and m.level(x) == level:
                    kids = m.children(x)
                    out = any(reach[kids[v]] & bit and walk(level + 1, kids[v], alive & step[v])
                              for v in valid[level])
                elif not alive & constrained[level]:
                    out = walk(level + 1, x, alive)
                else:  # (the diagram tests every level with an inadmissible value, i.e. every field a rule names:
                    # kept for a schema admitting every value of a field)
                    out = any(walk(level + 1, x, alive & step[v]) for v in valid[level])
            memo[key] = out
            return out

        return walk(0, diagram, later)

    def policy_rule(self, rule_id: str) -> Rule:
        return self._rules_by_id[rule_id]

    # ---- outcomes
    def preference(self) -> list[list[int]]:
        """Per level, the values tried first for witnesses: the ones this release admits, in domain order."""
        if self._preference is None:
            self._preference = [sorted(range(size), key=lambda v, lv=lv: (v not in self.valid[lv], v))
                                for lv, size in enumerate(self.manager.sizes)]
        return self._preference

    def complete(self, partial: Sequence[int | None], preference: Sequence[Sequence[int]] | None = None) -> list[int]:
        prefer = preference or self.preference()
        return [prefer[lv][0] if v is None else v for lv, v in enumerate(partial)]

    def witness_state(self, action: str, leaf: Hashable) -> dict[str, Any]:
        key = (action, leaf)
        if key not in self._states:
            prefer = self.preference()
            points = self._points.get(action)
            if points is None:
                points = self._points[action] = self.manager.find_all(self.diagrams[action], prefer)
            if leaf not in points:
                raise KeyError(leaf)
            self._states[key] = self.space.concretize(self.complete(points[leaf], prefer))
        return self._states[key]

    def outcome(self, action: str, cls: ObjectClass, leaf: Hashable, registries: Sequence[Registry | None] = ()
                ) -> Outcome:
        """The controller's outcome for the action, the object class and the states of one leaf (replayed once)."""
        key = (action, cls, leaf)
        found = self._outcomes.get(key)
        if found is None:
            state = self.witness_state(action, leaf)
            found = self._outcomes[key] = self.confirm(state, witness_proposal(action, cls, [self.registry,
                                                                                           *registries]), leaf)
        return found

    def confirm(self, state: Mapping[str, Any], proposal: Proposal, leaf: Hashable) -> Outcome:
        """Replay and check that the controller met the rule (or the fail-closed class) the diagram predicts."""
        got = replay(self.controller, state, proposal)
        contract_broken = got.rule_id is None and got.reason.fail_closed and \
            got.reason is not ReasonCode.FAIL_CLOSED_INVALID_STATE
        if leaf == FAIL:
            ok = got.reason is ReasonCode.FAIL_CLOSED_INVALID_STATE
        elif leaf == _NO_ACTION or not self.contract_valid(proposal.action_id, proposal.object_class):
            ok = contract_broken
        else:
            ok = got.rule_id == leaf
        if not ok:
            raise VerifierMismatch(f"{self.name}: the controller decided {got.describe()} on state {state!r} and "
                                   f"proposal {proposal.output()!r}; the analysis predicted leaf {leaf!r}")
        return got

    def admitted_weights(self) -> list[list[int | None]]:
        """Per level, each value's number of concrete values if this release admits it, else 0 — over the fields
        the release declares (a level of undeclared fields counts one representative)."""
        declared = {f.name for f in self.policy.state_schema.fields}
        out = []
        for lv, var in enumerate(self.space.variables):
            if set(var.fields) & declared:
                out.append([size if v in self.valid[lv] else 0 for v, size in enumerate(var.sizes())])
            else:
                first = min(self.valid[lv]) if self.valid[lv] else 0
                out.append([1 if v == first else 0 for v in range(len(var.values))])
        return out

    def contract_valid(self, action: str, cls: ObjectClass) -> bool:
        """Whether a proposal of this action with an object of this class meets the contract (state aside)."""
        if action not in self.catalog:
            return False
        entry = self.catalog[action]
        if not entry.requires_object:
            return cls.key == NONE
        return cls.key == UNRESOLVED or (cls.is_candidate and entry.permits(cls.key))


class _Chain:
    """A rule list compiled over a space for the top-down walks, as bit sets over the rules' positions (bit ``k``:
    the ``k``-th rule; the lowest set bit is the first rule still possible): the rules with a satisfiable cube
    (``alive``), per level the rules constraining it (``constrained``), the rules whose every constraint lies above
    it (``done``) and, per value, the rules that value does not exclude (``compat``); the last constrained level
    of each rule, and the admitted values per level."""

    __slots__ = ("ids", "cubes", "alive", "last", "constrained", "done", "compat", "valid", "invalid", "dominated",
                 "gains")

    def __init__(self, rules: Sequence[Rule], space: Space, sizes: Sequence[int],
                 valid: Mapping[int, frozenset[int]], dominance: bool = False) -> None:
        self.ids = [r.rule_id for r in rules]
        self.cubes = [space.cube(r.condition) for r in rules]
        depth = len(sizes)
        alive = 0
        self.last = [depth] * len(rules)  # (a rule with no satisfiable cube is never alive)
        constrained = [0] * depth
        excluded = [[0] * size for size in sizes]
        for k, cube in enumerate(self.cubes):
            if cube is None:
                continue
            alive |= 1 << k
            self.last[k] = max(cube, default=-1)
            for level, allowed in cube.items():
                constrained[level] |= 1 << k
                for v in range(sizes[level]):
                    if v not in allowed:
                        excluded[level][v] |= 1 << k
        everyone = (1 << len(rules)) - 1
        self.alive = alive
        self.constrained = constrained
        self.compat = [[everyone & ~x for x in row] for row in excluded]
        self.done = [sum(1 << k for k in range(len(rules)) if (alive >> k) & 1 and self.last[k] < level)
                     for level in range(depth + 1)]
        self.valid = [sorted(valid[lv]) for lv in range(depth)]
        self.invalid = [frozenset(range(size)) - valid[lv] for lv, size in enumerate(sizes)]
        self.dominated: list[list[int]] = []
        self.gains: list[int] = []
        if dominance:
            self._dominance(valid, depth)

    def _dominance(self, valid: Mapping[int, frozenset[int]], depth: int) -> None:
        # dominated[level][k]: the earlier rules j whose constraints from ``level`` on admit every admitted value k's
        # admit — once both are still possible at ``level``, k can match only where j matches too.
        n = len(self.ids)
        dominated = [[0] * n for _ in range(depth + 1)]
        gains = [0] * (depth + 1)  # gains[level]: the rules some rule starts to dominate at ``level``
        residual = [None if cube is None else {lv: allowed & valid[lv] for lv, allowed in cube.items()}
                    for cube in self.cubes]
        for k in range(n):
            rk = residual[k]
            if rk is None:
                continue
            start = [0] * (depth + 2)
            for j in range(k):
                rj = residual[j]
                if rj is None:
                    continue
                since = 0
                for lv, allowed in rj.items():
                    if lv >= since and not (rk.get(lv, valid[lv]) <= allowed):
                        since = lv + 1
                start[since] |= 1 << j
            acc = 0
            for level in range(depth + 1):
                if start[level]:
                    acc |= start[level]
                    gains[level] |= 1 << k
                dominated[level][k] = acc
        self.dominated = dominated
        self.gains = gains

    def canonical(self, alive: int, level: int) -> int:
        """``alive`` without the rules dominated (see ``dominated``) by another rule of it: the first match never
        falls on them."""
        return self._without_dominated(alive, alive, level)

    def pruned(self, alive: int, level: int) -> int:
        """:meth:`canonical` of a subset of a set canonical one level up (the walks step down one level at a time):
        only the rules that gain a dominator at ``level`` can be newly dominated — domination, once it starts at
        a level, holds at every level below, and a rule dominated by a dropped rule is dominated by what dropped
        it.  (Either way only rules that cannot decide are dropped: any subset of the drops is sound.)"""
        return self._without_dominated(alive, alive & self.gains[level], level)

    def _without_dominated(self, alive: int, candidates: int, level: int) -> int:
        row = self.dominated[level]
        out, rest = alive, candidates
        while rest:
            low = rest & -rest
            rest ^= low
            if alive & row[low.bit_length() - 1]:
                out ^= low
        return out


#: Stands for the (empty) chain of an action outside the catalog: one unconditional pseudo-rule.
_NO_ACTION_RULE = Rule(_NO_ACTION, 0, ("*",), Condition((), {}), Boundary.REJECT)


__all__ = ["FAIL", "ObjectClass", "Outcome", "Proposal", "Release", "VerifierMismatch", "kind_of", "object_classes",
           "representatives", "replay", "witness_proposal"]
