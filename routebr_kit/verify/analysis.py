"""``verify`` of one release: the exact partition of the state space, each action's outcome on every region, the
dispatch formulas, the findings (dead, shadowed, redundant rules; actions that never dispatch; the default rule's
reachability) and the properties of an assertion file, each violation with a counterexample replayed through the
real controller.

**What is exact, and over what.**  A *state* is an assignment of the fields the runtime-state schema declares
(fields it does not declare never change a decision; with ``additional_fields: false`` they are absent).  The
partition is computed symbolically (:mod:`~routebr_kit.verify.space`, :mod:`~routebr_kit.verify.mdd`), never by
enumerating states; ``states_total`` counts the admitted states when there are finitely many (booleans, ``null``,
the points of ``allowed`` lists; an interval of numbers or strings counts as unbounded).  A *region* is a maximal
set of states on which one action's winning rule is fixed, or on which the state breaks the schema;
``regions_total`` counts them over all actions (the published program: 5 fail-closed regions and 35 rule
regions).  The outcome of a region for an action and an object class (a candidate of
a type, ``UNRESOLVED``, ``NONE``) is the one the real controller emits on a witness of the region (replayed, and
checked against the predicted rule).  Controller options: the fallback terminal and A-ground; A-state (no state
gate) is refused.
"""

from __future__ import annotations

import enum
import functools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..core.controller import ControllerOptions
from ..core.errors import DataError
from ..core.records import NONE, UNRESOLVED, Catalog, Registry, Terminal
from ..core.rules import Operator, PolicyEngine, Rule
from ..core.state import StateSchema, state_type_of
from .formula import region_terms, render
from .mdd import Manager, count_mul, count_sum
from .program import FAIL, ObjectClass, Outcome, Release, kind_of, object_classes, representatives, witness_proposal
from .properties import ObjectKind, Property, ProposalScope, Quantifier, StateScope
from .space import Source, Space, build_space, literals_of


class RuleStatus(str, enum.Enum):
    LIVE = "live"  # the first match for some admitted state and some action it applies to
    UNREACHABLE = "unreachable"  # after an unconditional rule for every action it applies to
    UNSATISFIABLE = "unsatisfiable"  # no admitted state meets its condition
    SHADOWED = "shadowed"  # every admitted state meeting it is taken by higher-priority rules


@dataclass(frozen=True)
class RuleFinding:
    rule_id: str
    priority: int
    decision: str
    status: RuleStatus
    covered_by: tuple[str, ...] = ()  # for SHADOWED: the earlier rules overlapping its condition
    live_for: tuple[str, ...] = ()
    dead_for: tuple[str, ...] = ()  # actions it applies to but never wins for (while live for others)
    states: int | None = 0  # admitted (state, action) pairs it wins, summed over actions (None: unbounded)
    redundant: bool = False  # removing it changes no outcome (terminal, reason) of any state and proposal
    redundant_note: str = ""

    @property
    def dead(self) -> bool:
        return self.status is not RuleStatus.LIVE

    def as_dict(self) -> dict[str, Any]:
        return {"rule_id": self.rule_id, "priority": self.priority, "decision": self.decision,
                "status": self.status.value, "covered_by": list(self.covered_by), "live_for": list(self.live_for),
                "dead_for": list(self.dead_for), "states": self.states, "redundant": self.redundant,
                "redundant_note": self.redundant_note}


@dataclass(frozen=True)
class Region:
    """One action's states on which one rule wins (or the schema fails), with the outcome per object class."""

    rule_id: str | None  # None: the states that break the schema
    decision: str
    states: int | None
    outcomes: Mapping[str, Outcome]  # object-class label -> outcome
    witness: Mapping[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {"rule": self.rule_id, "decision": self.decision, "states": self.states,
                "outcomes": {k: v.as_dict() for k, v in self.outcomes.items()}, "witness_state": dict(self.witness)}


@dataclass(frozen=True)
class ActionReport:
    action_id: str
    requires_object: bool
    object_label: str  # the object class the formulas are about
    regions: tuple[Region, ...]
    dispatch_formula: str
    formula_complete: bool
    dispatch_states: int | None
    terminal_formulas: Mapping[str, str]
    default_rule: str
    default_reachable: bool
    never_dispatches: bool

    def as_dict(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "requires_object": self.requires_object,
                "object_class": self.object_label, "dispatch_formula": self.dispatch_formula,
                "formula_complete": self.formula_complete, "dispatch_states": self.dispatch_states,
                "terminal_formulas": dict(self.terminal_formulas), "default_rule": self.default_rule,
                "default_reachable": self.default_reachable, "never_dispatches": self.never_dispatches,
                "regions": [r.as_dict() for r in self.regions]}


@dataclass(frozen=True)
class Counterexample:
    state: Mapping[str, Any]
    proposal: Mapping[str, Any]
    outcome: Outcome
    confirmed: bool  # replayed through the real controller, which emitted exactly ``outcome``

    def as_dict(self) -> dict[str, Any]:
        return {"state": dict(self.state), "proposal": dict(self.proposal), "outcome": self.outcome.as_dict(),
                "confirmed": self.confirmed}


@dataclass(frozen=True)
class PropertyResult:
    prop: Property
    holds: bool
    vacuous: bool
    checked: int  # (region, action, object class) cells in scope
    counterexample: Counterexample | None = None

    def line(self) -> str:
        if self.holds:
            return f"HOLDS {self.prop.name}: {self.prop.describe()}" + (" (vacuous: nothing in scope)"
                                                                          if self.vacuous else "")
        c = self.counterexample
        assert c is not None
        return (f"VIOLATED {self.prop.name}: {self.prop.describe()}\n  counterexample (replayed through the controller"
                f"{', confirmed' if c.confirmed else ''}): state {dict(c.state)}, proposal {c.proposal['action_id']} / "
                f"{c.proposal['object_id']} ({c.proposal['object_class']}) -> {c.outcome.describe()}")

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.prop.name, "property": self.prop.describe(), "holds": self.holds,
                "vacuous": self.vacuous, "cells_checked": self.checked,
                "counterexample": None if self.counterexample is None else self.counterexample.as_dict()}


@dataclass(frozen=True)
class VerifyReport:
    rules_sha256: str
    catalog_sha256: str
    fallback: Terminal
    fields: tuple[str, ...]
    states_total: int | None
    regions_total: int
    actions: tuple[ActionReport, ...]
    rules: tuple[RuleFinding, ...]
    properties: tuple[PropertyResult, ...] = ()
    diagram_nodes: int = 0
    closed: bool = False  # the schema has additional_fields: false (a state carrying any other field fails closed)

    @property
    def passed(self) -> bool:
        return all(p.holds for p in self.properties)

    @property
    def dead(self) -> tuple[RuleFinding, ...]:
        return tuple(r for r in self.rules if r.dead)

    @property
    def redundant(self) -> tuple[RuleFinding, ...]:
        return tuple(r for r in self.rules if r.redundant)

    def findings(self) -> dict[str, Any]:
        return {
            "dead_rules": [r.rule_id for r in self.dead],
            "shadowed_rules": [r.rule_id for r in self.rules if r.status is RuleStatus.SHADOWED],
            "unsatisfiable_rules": [r.rule_id for r in self.rules if r.status is RuleStatus.UNSATISFIABLE],
            "unreachable_rules": [r.rule_id for r in self.rules if r.status is RuleStatus.UNREACHABLE],
            "dead_for_some_actions": {r.rule_id: list(r.dead_for) for r in self.rules if r.dead_for and not r.dead},
            "redundant_rules": [r.rule_id for r in self.redundant],
            "never_dispatching_actions": [a.action_id for a in self.actions if a.never_dispatches],
            "default_rule_reachable": {a.action_id: a.default_reachable for a in self.actions},
        }

    def as_dict(self) -> dict[str, Any]:
        return {"kind": "routebr-verify/v1", "rules_sha256": self.rules_sha256, "catalog_sha256": self.catalog_sha256,
                "fallback": self.fallback.value, "fields": list(self.fields), "closed_schema": self.closed,
                "states_total": self.states_total,
                "regions_total": self.regions_total, "findings": self.findings(),
                "actions": [a.as_dict() for a in self.actions], "rules": [r.as_dict() for r in self.rules],
                "properties": [p.as_dict() for p in self.properties], "passed": self.passed}

    def lines(self) -> list[str]:
        states = "unbounded" if self.states_total is None else f"{self.states_total:,}"
        out = [f"state space: {len(self.fields)} fields ({', '.join(self.fields)}); states_total {states}; "
               f"regions_total {self.regions_total} ((action, winning rule) regions, and per action the states that "
               f"break the schema, ending in {self.fallback.value})"]
        if self.closed:
            out.append("closed schema (additional_fields: false): a state carrying any field but these fails closed "
                       f"({self.fallback.value}, FAIL_CLOSED_INVALID_STATE) for every action; the formulas below are "
                       "over the states that carry no other field")
        out.append("")
        for a in self.actions:
            count = "unbounded" if a.dispatch_states is None else f"{a.dispatch_states:,} states"
            out.append(f"{a.action_id} dispatches ({a.object_label}) iff {a.dispatch_formula}   [{count}]"
                       + ("" if a.formula_complete else "  (prime terms; cover not minimised)"))
            for terminal, formula in a.terminal_formulas.items():
                out.append(f"    {terminal} iff {formula}")
        f = self.findings()
        out += ["", "findings:",
                f"  dead rules: {', '.join(f['dead_rules']) or 'none'}"
                + "".join(f"\n    {r.rule_id}: {r.status.value}"
                          + (f" (covered by {', '.join(r.covered_by)})" if r.covered_by else "") for r in self.dead),
                "  rules dead for some of their actions: "
                + (", ".join(f"{k} for {', '.join(v)}" for k, v in f["dead_for_some_actions"].items()) or "none"),
                f"  redundant rules (removal changes no outcome): {', '.join(f['redundant_rules']) or 'none'}",
                f"  actions that never dispatch: {', '.join(f['never_dispatching_actions']) or 'none'}",
                "  default rule reachable: " + ", ".join(f"{a.action_id} {'yes' if a.default_reachable else 'NO'} "
                                                         f"({a.default_rule})" for a in self.actions)]
        if self.properties:
            out += ["", "properties:"] + [p.line() for p in self.properties]
            bad = [p for p in self.properties if not p.holds]
            out.append(f"{len(self.properties) - len(bad)} of {len(self.properties)} properties hold"
                       + (f"; violated: {', '.join(p.prop.name for p in bad)}" if bad else ""))
        return out


# --------------------------------------------------------------------------------------------- analysis


def _object_groups(catalog: Catalog, action: str, classes: Sequence[ObjectClass]) -> list[tuple[ObjectKind, str,
                                                                                               ObjectClass]]:
    """The four object classes of one action, each with one representative type: a candidate of a permitted type,
    one of another type, ``UNRESOLVED``, ``NONE``."""
    entry = catalog[action]
    permitted = [c for c in classes if c.is_candidate and entry.permits(c.key)]
    other = [c for c in classes if c.is_candidate and not entry.permits(c.key)]
    out = []
    if permitted and entry.requires_object:
        out.append((ObjectKind.CANDIDATE, f"candidate ({'|'.join(c.key for c in permitted)})", permitted[0]))
    others = other + (permitted if not entry.requires_object else [])
    if others:
        out.append((ObjectKind.OTHER_TYPE, "candidate of another type", others[0]))
    out.append((ObjectKind.UNRESOLVED, UNRESOLVED, ObjectClass(UNRESOLVED)))
    out.append((ObjectKind.NONE, NONE, ObjectClass(NONE)))
    return out


def verify_release(catalog: Catalog, policy: PolicyEngine, registry: Registry | None = None, *,
                   options: ControllerOptions | None = None, properties: Sequence[Property] = (),
                   state_schema: StateSchema | None = None, redundancy: bool = True) -> VerifyReport:
    """The full analysis of one release.  ``state_schema`` is the schema *file* the policy was loaded with, if any
    (needed to tell whether removing a rule changes the derived schema); ``redundancy=False`` skips the redundancy
    finding (one more pass per action)."""
    sources = [Source.of_rules(policy.rules, policy.state_schema),
               *(Source.of_condition(p.when) for p in properties)]
    space = build_space(sources)
    manager = Manager([len(v.values) for v in space.variables])
    release = Release("release", catalog, policy, space, manager, options=options, registry=registry)
    classes = object_classes([catalog], [registry])
    weights = release.admitted_weights()
    wins: dict[tuple[str, str], int | None] = {}
    actions = [_action_report(release, action, classes, weights, wins) for action in catalog.ids]
    rules = _rule_findings(release, wins, state_schema, redundancy)
    regions_total = sum(len(manager.leaves(release.diagrams[a])) for a in catalog.ids)
    nodes = sum(manager.size(release.diagrams[a]) for a in catalog.ids)
    results = tuple(_check_property(release, p, classes) for p in properties)
    fields = tuple(f.name for f in policy.state_schema.fields)
    states_total = functools.reduce(count_mul, map(count_sum, weights), 1)
    return VerifyReport(policy.sha256, catalog.sha256, release.options.fallback, fields, states_total,
                        regions_total, tuple(actions), rules, results, nodes,
                        not policy.state_schema.additional_fields)


def _action_report(release: Release, action: str, classes: Sequence[ObjectClass],
                   weights: Sequence[Sequence[int | None]], wins: dict[tuple[str, str], int | None]) -> ActionReport:
    m, diagram = release.manager, release.diagrams[action]
    entry = release.catalog[action]
    groups = _object_groups(release.catalog, action, classes)
    main = next(c for k, _, c in groups if k is (ObjectKind.CANDIDATE if entry.requires_object else ObjectKind.NONE))
    main_label = next(label for _, label, c in groups if c == main)
    counts = m.count(diagram, weights)
    leaves = sorted(m.leaves(diagram), key=lambda v: (v != FAIL, _priority(release, v)))
    regions = []
    for leaf in leaves:
        outcomes = {label: release.outcome(action, cls, leaf) for _, label, cls in groups}
        rule = None if leaf == FAIL else leaf
        decision = "fail-closed" if rule is None else release.policy_rule(rule).decision.value
        states = None if rule is None else counts.get(leaf, 0)  # (the states breaking the schema: unbounded)
        regions.append(Region(rule, decision, states, outcomes, release.witness_state(action, leaf)))
        if rule is not None:
            wins[(action, rule)] = counts.get(leaf, 0)
    terminal_of = {leaf: release.outcome(action, main, leaf).terminal for leaf in leaves}
    valid = [release.valid[lv] for lv in range(len(m.sizes))]
    dispatch_terms, complete = region_terms(m, diagram, lambda v: terminal_of.get(v) is Terminal.DISPATCH, valid)
    dispatch_states = count_sum(counts.get(leaf, 0) for leaf, t in terminal_of.items() if t is Terminal.DISPATCH)
    formulas = {}
    for terminal in Terminal:
        if terminal is Terminal.DISPATCH:
            continue
        if any(t is terminal and leaf != FAIL for leaf, t in terminal_of.items()):
            terms, done = region_terms(m, diagram, lambda v, t=terminal: v != FAIL and terminal_of.get(v) is t, valid)
            formulas[terminal.value] = render(release.space, terms) + ("" if done else "  (not minimised)")
    any_dispatch = any(release.outcome(action, cls, leaf).terminal is Terminal.DISPATCH
                       for cls in representatives(classes, [release.catalog], action) for leaf in leaves)
    default = next(r.rule_id for r in release.policy.rules if r.is_default)  # the program's explicit default
    return ActionReport(action, entry.requires_object, main_label, tuple(regions),
                        render(release.space, dispatch_terms), complete,
                        dispatch_states, formulas, default, default in m.leaves(diagram), not any_dispatch)


def _priority(release: Release, leaf: Any) -> tuple[int, str]:
    if leaf == FAIL:
        return (-1, "")
    r = release.policy_rule(leaf)
    return (r.priority, r.rule_id)


def _overlaps(space: Space, release: Release, a: Rule, b: Rule) -> bool:
    ca, cb = space.cube(a.condition), space.cube(b.condition)
    if ca is None or cb is None:
        return False
    for level in set(ca) | set(cb):
        allowed = release.valid[level]
        if level in ca:
            allowed = allowed & ca[level]
        if level in cb:
            allowed = allowed & cb[level]
        if not allowed:
            return False
    return True


def _rule_findings(release: Release, wins: Mapping[tuple[str, str], int | None], state_schema: StateSchema | None,
                   redundancy: bool) -> tuple[RuleFinding, ...]:
    m, space, catalog = release.manager, release.space, release.catalog
    counts = Counter(c for r in release.policy.rules for c in _schema_inputs(r)) if redundancy else None
    out = []
    for r in release.policy.rules:
        targets = [a for a in catalog.ids if r.applies(a)]
        in_chain = [a for a in targets if r in release.chain(a)]
        live = tuple(a for a in in_chain if r.rule_id in m.leaves(release.diagrams[a]))
        states = count_sum(wins.get((a, r.rule_id), 0) for a in live)
        covered: tuple[str, ...] = ()
        if live:
            status = RuleStatus.LIVE
        elif not in_chain:
            status = RuleStatus.UNREACHABLE
        elif not _overlaps(space, release, r, r):  # (a rule overlapping itself: its condition is satisfiable)
            status = RuleStatus.UNSATISFIABLE
        else:
            status = RuleStatus.SHADOWED
            earlier = {e.rule_id: e for a in in_chain for e in release.chain(a)[:release.chain(a).index(r)]}
            covered = tuple(e.rule_id for e in sorted((e for e in earlier.values() if _overlaps(space, release, e, r)),
                                                      key=lambda e: (e.priority, e.rule_id)))
        dead_for = tuple(a for a in targets if a not in live) if live else ()
        redundant, note = (_redundant(release, r, live, state_schema, counts) if redundancy
                           else (False, "not computed"))
        out.append(RuleFinding(r.rule_id, r.priority, r.decision.value, status, covered, live, dead_for, states,
                               redundant, note))
    return tuple(out)


def _schema_inputs(r: Rule) -> frozenset[tuple]:
    """What one rule contributes to the runtime-state schema :func:`~routebr_kit.core.rules.derive_state_schema`
    derives: the fields it names, the fields it tests with ``exists`` (made optional) and, per field, the JSON types
    of its literals.  The derived schema is a function of the union of these over the program's rules."""
    out: set[tuple] = set()
    for p in r.condition.predicates:
        out.add(("field", p.key))
        if p.other_field is not None:
            out.add(("field", p.other_field))
        if p.op is Operator.EXISTS:
            out.add(("exists", p.key))
        out.update(("type", p.key, state_type_of(v)) for v in literals_of(p))
    return frozenset(out)


def _removal_keeps_program(policy: PolicyEngine, r: Rule, counts: Counter) -> bool:
    """A sufficient condition, read without rebuilding the program, for the program without ``r`` to be valid with
    the very same schema: another rule makes every contribution ``r`` makes to the schema (so the unions the schema
    is derived from are unchanged, and every other rule was already checked against that schema), and another
    explicit default remains.  When it fails the reduced program is built and compared (see :func:`_redundant`)."""
    if len(policy.rules) < 2 or (r.is_default and sum(x.is_default for x in policy.rules) < 2):
        return False
    return all(counts[c] >= 2 for c in _schema_inputs(r))


def _redundant(release: Release, r: Rule, live: Sequence[str], state_schema: StateSchema | None,
               counts: Counter | None = None) -> tuple[bool, str]:
    """Whether removing ``r`` changes no outcome: on its region the next rule decides alike, and the derived schema
    stays the same (else the whole program without it is compared, exactly)."""
    if counts is None or not _removal_keeps_program(release.policy, r, counts):
        rest = [x for x in release.policy.rules if x.rule_id != r.rule_id]
        try:
            reduced = PolicyEngine(rest, release.catalog.ids, state_schema=state_schema)
        except DataError as exc:
            return False, f"the program is invalid without it ({exc.code.value})"
        if reduced.state_schema.as_dict() != release.policy.state_schema.as_dict():
            # Another schema admits a different set of states (a field dropped, made optional or required,
            # retyped): some state is admitted by exactly one of the two programs, and its reason code changes — to
            # or from FAIL_CLOSED_INVALID_STATE.  (Every schema admits some state: each field admits some value.)
            return False, "its removal changes the runtime-state schema"
    for action in live:
        if r.rule_id in release.changing_winners(action):
            return False, ""
    return True, "never the first match" if not live else "the next rule decides alike on its region"


def _check_property(release: Release, prop: Property, classes: Sequence[ObjectClass]) -> PropertyResult:
    """Check one property over every region in scope; a violation comes with a replayed counterexample."""
    m, space = release.manager, release.space
    when = space.cube(prop.when)
    checked = 0
    prefer = release.preference()
    for action in release.catalog.ids:
        diagram = release.diagrams[action]
        if when is None:
            break
        scoped = m.restrict(diagram, when)
        for cls in representatives(classes, [release.catalog], action):
            kind = ObjectKind(kind_of(release.catalog, action, cls))
            if prop.proposals is ProposalScope.VALID and not release.contract_valid(action, cls):
                continue
            in_pattern = prop.pattern.proposal_in(action, kind)
            if prop.quantifier is Quantifier.ALWAYS and not in_pattern:
                continue
            for leaf in m.leaves(scoped):
                if leaf is None or (leaf == FAIL and prop.states is StateScope.ADMITTED):
                    continue
                checked += 1
                outcome = release.outcome(action, cls, leaf)
                match = prop.pattern.outcome_in(outcome.terminal, outcome.reason, outcome.rule_id)
                violated = (in_pattern and match) if prop.quantifier is Quantifier.NEVER else not match
                if violated:
                    found = m.find(scoped, lambda v, leaf=leaf: v == leaf, prefer)
                    assert found is not None
                    state = space.concretize(release.complete(found[0], prefer))
                    proposal = witness_proposal(action, cls, [release.registry])
                    replayed = release.confirm(state, proposal, leaf)
                    example = Counterexample(state, proposal.as_dict(), replayed, replayed == outcome)
                    return PropertyResult(prop, False, False, checked, example)
    return PropertyResult(prop, True, checked == 0, checked)


__all__ = ["ActionReport", "Counterexample", "PropertyResult", "Region", "RuleFinding", "RuleStatus", "VerifyReport",
           "verify_release"]
