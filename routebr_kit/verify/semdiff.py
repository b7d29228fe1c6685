"""``verify --base --candidate``: the exact semantic diff of two releases.

Both releases are compiled over one space (the common refinement of their literals; a field only one of them
declares is, for the other, a field it ignores — or rejects, with ``additional_fields: false``).  For every action
of either catalog and every object class, the pair of diagrams is combined: each leaf of the product is a *region*
on which both releases' winning rules (or fail-closed classes) are fixed.  Per action:

* ``relation`` — over the (state, object class) pairs that dispatch: ``equivalent`` (the same set), ``narrowing``
  (the candidate's is a proper subset), ``widening`` (a proper superset), ``incomparable`` (neither);
* ``states_changed`` — the states on which some object class gets another terminal (``None`` when unbounded; then
  ``regions_changed`` counts the changed regions);
* ``witnesses`` — one per changed region: a concrete state and proposal, and both outcomes, each confirmed by
  replaying it through that release's real controller.

With recorded traffic (:class:`~routebr_kit.verify.coverage.Observation`) it also says how many changed regions a
recorded row falls in.  The exit status a CI job reads: :meth:`SemanticDiff.exit_status`.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.controller import ControllerOptions
from ..core.records import Catalog, Registry, Terminal
from ..core.rules import PolicyEngine
from .mdd import Manager
from .program import FAIL, ObjectClass, Outcome, Release, object_classes, representatives, witness_proposal
from .schemas import extra_fields, schema_changes, unknown_field_warnings
from .space import Source, build_space
from .traffic_coverage import Observation

#: At most this many witnesses per action are replayed and listed (the count of changed regions is always exact).
_MAX_WITNESSES = 64


class Relation(str, enum.Enum):
    EQUIVALENT = "equivalent"
    NARROWING = "narrowing"
    WIDENING = "widening"
    INCOMPARABLE = "incomparable"


@dataclass(frozen=True)
class Witness:
    action_id: str
    state: Mapping[str, Any]
    proposal: Mapping[str, Any]
    base: Outcome
    candidate: Outcome
    confirmed: bool
    changed_classes: tuple[str, ...]  # every object class whose terminal changes on this region

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action_id, "state": dict(self.state), "proposal": dict(self.proposal),
                "base": self.base.as_dict(), "candidate": self.candidate.as_dict(), "confirmed": self.confirmed,
                "changed_object_classes": list(self.changed_classes)}

    def line(self) -> str:
        return (f"{self.action_id} / {self.proposal['object_id']} on {dict(self.state)}: "
                f"{self.base.describe()} -> {self.candidate.describe()}"
                + (" [confirmed by replay]" if self.confirmed else " [NOT CONFIRMED]"))


@dataclass(frozen=True)
class ActionDiff:
    action_id: str
    relation: Relation
    states_changed: int | None
    regions_changed: int
    regions_gaining_dispatch: int
    regions_losing_dispatch: int
    regions_reason_only: int  # same terminals, another reason code
    regions_rule_only: int  # same outcomes, another winning rule (trace only)
    witnesses: tuple[Witness, ...]
    recorded_rows_in_changed: int = 0
    recorded_regions_seen: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {"action": self.action_id, "relation": self.relation.value, "states_changed": self.states_changed,
                "regions_changed": self.regions_changed, "regions_gaining_dispatch": self.regions_gaining_dispatch,
                "regions_losing_dispatch": self.regions_losing_dispatch,
                "regions_reason_only": self.regions_reason_only, "regions_rule_only": self.regions_rule_only,
                "recorded_rows_in_changed_regions": self.recorded_rows_in_changed,
                "changed_regions_seen_by_recorded_rows": self.recorded_regions_seen,
                "witnesses": [w.as_dict() for w in self.witnesses]}


@dataclass(frozen=True)
class SemanticDiff:
    actions: tuple[ActionDiff, ...]
    states_total: int | None  # states either release admits (None: unbounded)
    states_changed: int | None  # states on which some action and object class gets another terminal
    regions_changed: int
    outcome_equivalent: bool  # no terminal and no reason code differs anywhere
    recorded_rows: int = 0
    recorded_states: int = 0
    recorded_states_in_changed: int = 0
    regions_seen: int = 0
    notes: tuple[str, ...] = field(default_factory=tuple)  # the schema changes, field by field, with their effect
    warnings: tuple[str, ...] = field(default_factory=tuple)  # fields nothing else has seen (did you mean ...?)
    fields: tuple[str, ...] = field(default_factory=tuple)  # the variables the analysis covered

    def coverage_line(self) -> str:
        """``changed states seen by the recorded traffic: k of n`` (what shadow replay alone could have caught)."""
        if self.states_changed is not None:
            return (f"changed states seen by the recorded traffic: {self.recorded_states_in_changed} of "
                    f"{self.states_changed:,}" + ("" if self.recorded_rows else " (no recorded traffic given)"))
        return (f"changed states seen by the recorded traffic: {self.recorded_states_in_changed} of unbounded "
                f"({self.regions_seen} of {self.regions_changed} changed regions)"
                + ("" if self.recorded_rows else " (no recorded traffic given)"))

    def relation(self, action: str) -> Relation:
        return next(a.relation for a in self.actions if a.action_id == action)

    @property
    def widening(self) -> int:
        """Actions whose dispatch set grows somewhere (relation widening or incomparable): the gate's metric."""
        return sum(a.relation in (Relation.WIDENING, Relation.INCOMPARABLE) for a in self.actions)

    def blocking(self, allow_widening: Sequence[str] = ()) -> tuple[str, ...]:
        return tuple(a.action_id for a in self.actions
                     if a.relation in (Relation.WIDENING, Relation.INCOMPARABLE) and a.action_id not in allow_widening)

    def exit_status(self, allow_widening: Sequence[str] = ()) -> int:
        """0 when every relation is equivalent or narrowing (or widens only an allowed action), else 1."""
        return 1 if self.blocking(allow_widening) else 0

    def as_dict(self, allow_widening: Sequence[str] = ()) -> dict[str, Any]:
        return {"kind": "routebr-verify-diff/v1", "states_total": self.states_total,
                "states_changed": self.states_changed, "regions_changed": self.regions_changed,
                "outcome_equivalent": self.outcome_equivalent, "widening": self.widening,
                "allowed_widening": list(allow_widening), "blocking": list(self.blocking(allow_widening)),
                "passed": self.exit_status(allow_widening) == 0,
                "recorded": {"rows": self.recorded_rows, "distinct_states": self.recorded_states,
                             "states_in_changed_regions": self.recorded_states_in_changed,
                             "changed_regions_seen": self.regions_seen},
                "coverage": self.coverage_line(), "fields": list(self.fields),
                "notes": list(self.notes), "warnings": list(self.warnings),
                "actions": [a.as_dict() for a in self.actions]}

    def lines(self, allow_widening: Sequence[str] = (), show: int = 3) -> list[str]:
        total = "unbounded" if self.states_total is None else f"{self.states_total:,}"
        changed = (f"{self.states_changed:,} of {total} states change" if self.states_changed is not None
                   else f"{self.regions_changed} regions change (the state space is unbounded)")
        out = [changed + (f"; the recorded traffic ({self.recorded_rows} rows, {self.recorded_states} distinct states)"
                          f" sees {self.recorded_states_in_changed} of the changed states in "
                          f"{self.regions_seen} of {self.regions_changed} changed regions"
                          if self.recorded_rows else "")]
        out.append(self.coverage_line())
        out += [f"schema change: {n}" for n in self.notes]
        out += [f"warning: {w}" for w in self.warnings]
        for a in self.actions:
            states = "unbounded" if a.states_changed is None else f"{a.states_changed:,}"
            out.append(f"{a.action_id}: {a.relation.value.upper()}  states changed {states}, regions changed "
                       f"{a.regions_changed} (+dispatch {a.regions_gaining_dispatch}, -dispatch "
                       f"{a.regions_losing_dispatch}; reason only {a.regions_reason_only}; trace only "
                       f"{a.regions_rule_only})")
            for w in a.witnesses[:show]:
                out.append("    " + w.line())
            if len(a.witnesses) > show:
                out.append(f"    ... {len(a.witnesses) - show} more witnesses (--json)")
        blocking = self.blocking(allow_widening)
        out.append("verdict: " + (f"FAIL — dispatch widens for {', '.join(blocking)}" if blocking else
                                  "PASS — every action is equivalent or narrowing"
                                  + (f" (widening allowed for {', '.join(allow_widening)})" if allow_widening else "")))
        return out


def semantic_diff(base_catalog: Catalog, base_policy: PolicyEngine, cand_catalog: Catalog, cand_policy: PolicyEngine,
                  base_registry: Registry | None = None, cand_registry: Registry | None = None, *,
                  options: ControllerOptions | None = None, witnesses: bool = True,
                  observations: Sequence[Observation] = ()) -> SemanticDiff:
    """The exact semantic diff of two releases (see the module docstring)."""
    recorded_fields = tuple(dict.fromkeys(k for o in observations for k in o.state))
    extras = extra_fields(base_policy.state_schema, cand_policy.state_schema, recorded_fields)
    space = build_space([Source.of_rules(base_policy.rules, base_policy.state_schema),
                         Source.of_rules(cand_policy.rules, cand_policy.state_schema),
                         *([Source((), None, extras)] if extras else [])])
    manager = Manager([len(v.values) for v in space.variables])
    actions = tuple(dict.fromkeys((*base_catalog.ids, *cand_catalog.ids)))
    base, cand = (Release(name, catalog, policy, space, manager, options=options, registry=registry, actions=actions)
                  for name, catalog, policy, registry in (("base", base_catalog, base_policy, base_registry),
                                                          ("candidate", cand_catalog, cand_policy, cand_registry)))
    registries = [base_registry, cand_registry]
    classes = object_classes([base_catalog, cand_catalog], registries)
    weights = _weights(space, (base_policy.state_schema, cand_policy.state_schema), extras)
    prefer = [sorted(range(size), key=lambda v, lv=lv: (v not in base.valid[lv] or v not in cand.valid[lv],
                                                         v not in base.valid[lv] and v not in cand.valid[lv], v))
              for lv, size in enumerate(manager.sizes)]
    seen_points: dict[str, list[tuple[int, ...]]] = {}
    for o in observations:
        if o.action_id in actions:
            seen_points.setdefault(o.action_id, []).append(space.classify(o.state))
    reports = []
    changed_any = manager.leaf(False)
    equivalent = True
    total_seen = 0
    recorded_changed_states: set[tuple] = set()
    joints: dict[str, int] = {}
    for action in actions:
        joint = joints[action] = manager.apply(lambda a, b: (a, b), base.diagrams[action], cand.diagrams[action])
        reps = representatives(classes, [base_catalog, cand_catalog], action)
        kinds: dict[Hashable, tuple[bool, bool, bool, bool, bool]] = {}
        for pair in manager.leaves(joint):
            kinds[pair] = _change(base, cand, action, reps, pair, registries)
            equivalent = equivalent and not (kinds[pair][0] or kinds[pair][3])
        changed = manager.map(lambda pair, kinds=kinds: kinds[pair][0], joint)
        changed_any = manager.apply(lambda a, b: a or b, changed_any, changed)
        counts = manager.count(changed, weights)
        states_changed = counts.get(True, 0)
        changed_pairs = [p for p, k in kinds.items() if k[0]]
        listed = [_witness(base, cand, space, manager, joint, pair, action, reps, registries, prefer)
                  for pair in sorted(changed_pairs, key=lambda p: (FAIL in p, repr(p)))[:_MAX_WITNESSES]
                  ] if witnesses else []
        rows_in, regions_seen = 0, set()
        for point in seen_points.get(action, ()):
            pair = manager.evaluate(joint, point)
            if kinds[pair][0]:
                rows_in += 1
                regions_seen.add(pair)
        total_seen += len(regions_seen)
        sums = [sum(k[i] for k in kinds.values()) for i in range(1, 5)]
        relation = (Relation.INCOMPARABLE if sums[0] and sums[1] else Relation.WIDENING if sums[0]
                    else Relation.NARROWING if sums[1] else Relation.EQUIVALENT)
        reports.append(ActionDiff(action, relation, states_changed, len(changed_pairs), *sums, tuple(listed), rows_in,
                                  len(regions_seen)))
    for o in observations:
        if manager.evaluate(changed_any, space.classify(o.state)):
            recorded_changed_states.add(tuple(sorted((k, repr(v)) for k, v in o.state.items())))
    joint0 = joints[actions[0]]
    admitted = manager.map(lambda pair: pair != (FAIL, FAIL), joint0)
    states_total = manager.count(admitted, weights).get(True, 0)
    notes = schema_changes(base_policy.state_schema, cand_policy.state_schema, recorded_fields)
    warnings = tuple(unknown_field_warnings(base_policy, cand_policy, recorded_fields))
    distinct = {tuple(sorted((k, repr(v)) for k, v in o.state.items())) for o in observations}
    return SemanticDiff(tuple(reports), states_total, manager.count(changed_any, weights).get(True, 0),
                        sum(a.regions_changed for a in reports), equivalent, len(observations), len(distinct),
                        len(recorded_changed_states), total_seen, tuple(notes), warnings,
                        tuple(v.name for v in space.variables))


def _weights(space: Any, schemas: Sequence[Any], extras: Sequence[str]) -> list[list[int | None]]:
    """Per level, how many concrete values each abstract value stands for (``None``: unboundedly many)."""
    declared = {f.name for schema in schemas for f in schema.fields}
    weights: list[list[int | None]] = []
    for var in space.variables:
        if set(var.fields) & declared:
            weights.append(list(var.sizes()))
        elif set(var.fields) & set(extras):  # an undeclared field under a closed schema: missing, or any value
            weights.append([1 if v == 0 else None for v in range(len(var.values))])
        else:
            weights.append([1 if v == 0 else 0 for v in range(len(var.values))])
    return weights


def _change(base: Release, cand: Release, action: str, reps: Sequence[Any], pair: Any, registries: list
            ) -> tuple[bool, bool, bool, bool, bool]:
    """How one region pair differs over the object classes: ``(terminal, gained, lost, reason, rule)``."""
    ob = {c: base.outcome(action, c, pair[0], registries) for c in reps}
    oc = {c: cand.outcome(action, c, pair[1], registries) for c in reps}
    terminal = any(ob[c].terminal is not oc[c].terminal for c in reps)
    gained = any(oc[c].terminal is Terminal.DISPATCH and ob[c].terminal is not Terminal.DISPATCH for c in reps)
    lost = any(ob[c].terminal is Terminal.DISPATCH and oc[c].terminal is not Terminal.DISPATCH for c in reps)
    reason = not terminal and any(ob[c].reason is not oc[c].reason for c in reps)
    return terminal, gained, lost, reason, not terminal and not reason and pair[0] != pair[1]


def _witness(base: Release, cand: Release, space: Any, manager: Manager, joint: int, pair: Any, action: str,
             classes: Sequence[ObjectClass], registries: Sequence[Registry | None],
             prefer: Sequence[Sequence[int]]) -> Witness:
    found = manager.find(joint, lambda v: v == pair, prefer)
    assert found is not None
    point = [prefer[lv][0] if v is None else v for lv, v in enumerate(found[0])]
    state = space.concretize(point)
    changed = [c for c in classes if base.outcome(action, c, pair[0], registries).terminal
               is not cand.outcome(action, c, pair[1], registries).terminal]
    dispatching = [c for c in changed if Terminal.DISPATCH in (base.outcome(action, c, pair[0], registries).terminal,
                                                               cand.outcome(action, c, pair[1], registries).terminal)]
    chosen = (dispatching or changed)[0]
    proposal = witness_proposal(action, chosen, registries)
    got_b = base.confirm(state, proposal, pair[0])
    got_c = cand.confirm(state, proposal, pair[1])
    confirmed = (got_b == base.outcome(action, chosen, pair[0], registries)
                 and got_c == cand.outcome(action, chosen, pair[1], registries))
    return Witness(action, state, proposal.as_dict(), got_b, got_c, confirmed, tuple(c.label() for c in changed))


__all__ = ["ActionDiff", "Relation", "SemanticDiff", "Witness", "semantic_diff"]
