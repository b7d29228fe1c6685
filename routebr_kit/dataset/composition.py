"""The benchmark's composition: the paper's exact counts and an explicit, deterministic allocation of scenario slots.

Every count the paper fixes is a quota in the tables below; the seed decides only *which* slot receives which
quota item (which slots carry an unresolvable reference, which cue count, which partition, which lower-priority
predicate), never *how many*.  A :class:`Slot` is a planned scenario: its action, the runtime condition meant to
decide it (:class:`Route`), its object difficulty, its cue count, an optional second blocking predicate that loses
on priority, its partition, and (FLIP) its pair.

The allocation asks the rule engine — never a hard-coded table — which conditions block which action, which one
outranks the entity rule, and which lower-priority predicate can be added without changing the winner.  The gold
labels themselves are computed later from each case's runtime state (:mod:`routebr_kit.dataset.labels`).

The skeleton depends on the seed only, so the English and the Chinese benchmark of one seed are parallel: same
slots, same states, same gold labels, different wording and registry.
"""

from __future__ import annotations

import enum
import random
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import Any, TypeVar

from ..core.errors import DataError, ErrorCode
from ..core.records import Boundary
from ..core.rules import PolicyEngine, Rule
from ..store.cases import ObjectDifficulty, Split

T = TypeVar("T")

A1, A2, A3, A4, A5 = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                      "A5_PROTECTED_ACTION")
#: The five-action ontology (the published validator's constant).
ACTIONS = (A1, A2, A3, A4, A5)
_OBJECT_ACTIONS = (A1, A2, A3, A5)

# --------------------------------------------------------------------------------------------- the paper's counts

SPLIT_SIZES: Mapping[Split, int] = MappingProxyType(
    {Split.DEV: 120, Split.MAIN: 300, Split.FLIP: 120, Split.ENTITY: 60})
ACTION_TOTALS: Mapping[str, int] = MappingProxyType({A1: 123, A2: 123, A3: 123, A4: 108, A5: 123})
BOUNDARY_TOTALS: Mapping[Boundary, int] = MappingProxyType({
    Boundary.ALLOW: 262, Boundary.CLARIFY: 128, Boundary.DEFER: 75, Boundary.HANDOFF: 75, Boundary.REJECT: 60})
#: Minimum CONFIRM cases in which more than one non-default rule matches (priority decides).
MIN_PRIORITY_DECIDED_CONFIRM = 23


class Partition(str, enum.Enum):
    """The two disjoint evaluation subsets of the 480 non-DEV cases."""

    SELECT = "SELECT"
    CONFIRM = "CONFIRM"


PARTITION_SIZES: Mapping[Partition, Mapping[Split, int]] = MappingProxyType({
    Partition.SELECT: MappingProxyType({Split.MAIN: 100, Split.FLIP: 40, Split.ENTITY: 20}),
    Partition.CONFIRM: MappingProxyType({Split.MAIN: 200, Split.FLIP: 80, Split.ENTITY: 40}),
})
#: (dispatchable, bounded) gold final paths.
DEV_DISPATCH = (50, 70)
PARTITION_DISPATCH: Mapping[Partition, tuple[int, int]] = MappingProxyType(
    {Partition.SELECT: (76, 84), Partition.CONFIRM: (136, 184)})


# --------------------------------------------------------------------------------------------- routes


class Route(str, enum.Enum):
    """The runtime condition a slot is planned around (one blocking predicate, or none)."""

    ALLOW = "ALLOW"  # every predicate clear
    SAFETY = "SAFETY"
    UNSUPPORTED = "UNSUPPORTED"
    UNAVAILABLE = "UNAVAILABLE"
    SCOPE = "SCOPE"
    ENTITY = "ENTITY"  # the reference cannot be resolved (R040, or the object gate when decoupled)
    IDENTITY = "IDENTITY"
    NO_PERMISSION = "NO_PERMISSION"
    STALE = "STALE"

    @property
    def predicate(self) -> tuple[str, bool] | None:
        """The state field this route sets, and its blocking value."""
        return _BLOCKING.get(self)


_BLOCKING = {
    Route.SAFETY: ("safety_escalation_required", True),
    Route.UNSUPPORTED: ("request_supported", False),
    Route.UNAVAILABLE: ("service_available", False),
    Route.SCOPE: ("request_scope_clear", False),
    Route.ENTITY: ("entity_resolved", False),
    Route.IDENTITY: ("identity_verified", False),
    Route.NO_PERMISSION: ("action_permission", False),
    Route.STALE: ("context_fresh", False),
}
_ENTITY_PREDICATE = _BLOCKING[Route.ENTITY]

#: A runtime state with every predicate clear (key order is the published ``runtime_context_json`` order).
CLEAR_STATE: Mapping[str, Any] = MappingProxyType({
    "identity_verified": True, "entity_resolved": True, "action_permission": True, "service_available": True,
    "context_fresh": True, "safety_escalation_required": False, "request_supported": True,
    "request_scope_clear": True, "policy_version": "v1",
})

UNRESOLVABLE = (ObjectDifficulty.CONFLICTING, ObjectDifficulty.UNDERSPECIFIED)


# --------------------------------------------------------------------------------------------- quota tables

#: Gold boundaries per action in each split (FLIP: per pair, the bounded member; every pair also has an ALLOW).
_BOUNDARY_QUOTA: Mapping[Split, Mapping[Boundary, int]] = MappingProxyType({
    Split.DEV: {Boundary.ALLOW: 10, Boundary.CLARIFY: 5, Boundary.DEFER: 3, Boundary.HANDOFF: 3, Boundary.REJECT: 3},
    Split.MAIN: {Boundary.ALLOW: 24, Boundary.CLARIFY: 12, Boundary.DEFER: 9, Boundary.HANDOFF: 9,
                 Boundary.REJECT: 6},
    Split.FLIP: {Boundary.CLARIFY: 3, Boundary.DEFER: 3, Boundary.HANDOFF: 3, Boundary.REJECT: 3},
    Split.ENTITY: {Boundary.ALLOW: 8, Boundary.CLARIFY: 7},
})
#: How a boundary is reached, as weights; routes that cannot produce it for an action are dropped first.
_ROUTE_WEIGHTS: Mapping[Boundary, Mapping[Route, int]] = MappingProxyType({
    Boundary.ALLOW: {Route.ALLOW: 1},
    Boundary.CLARIFY: {Route.ENTITY: 2, Route.SCOPE: 1, Route.IDENTITY: 1, Route.STALE: 1},
    Boundary.DEFER: {Route.UNAVAILABLE: 1},
    Boundary.HANDOFF: {Route.SAFETY: 1},
    Boundary.REJECT: {Route.UNSUPPORTED: 1, Route.NO_PERMISSION: 1},
})
#: Routes a split may use (FLIP pairs keep one request, so its references must resolve; ENTITY isolates objects).
_SPLIT_ROUTES: Mapping[Split, frozenset[Route]] = MappingProxyType({
    Split.DEV: frozenset(Route),
    Split.MAIN: frozenset(Route),
    Split.FLIP: frozenset(Route) - {Route.ENTITY},
    Split.ENTITY: frozenset({Route.ALLOW, Route.ENTITY}),
})
#: Object-requiring slots per action that carry an unresolvable reference although a higher-priority rule decides.
_EXTRA_UNRESOLVABLE: Mapping[Split, int] = MappingProxyType({Split.DEV: 2, Split.MAIN: 4})
#: Bounded slots per action that get a second, lower-priority blocking predicate (so priority decides).
_SECONDARY_QUOTA: Mapping[Split, int] = MappingProxyType({Split.DEV: 3, Split.MAIN: 8})
_DIFFICULTY_WEIGHTS: Mapping[Split, Mapping[ObjectDifficulty, int]] = MappingProxyType({
    Split.DEV: {ObjectDifficulty.EXPLICIT_NAME: 4, ObjectDifficulty.CODE_ONLY: 3, ObjectDifficulty.ANAPHORA: 3},
    Split.MAIN: {ObjectDifficulty.EXPLICIT_NAME: 4, ObjectDifficulty.CODE_ONLY: 3, ObjectDifficulty.ANAPHORA: 3},
    Split.FLIP: {ObjectDifficulty.EXPLICIT_NAME: 1, ObjectDifficulty.CODE_ONLY: 1, ObjectDifficulty.ANAPHORA: 1},
    Split.ENTITY: {ObjectDifficulty.CODE_ONLY: 1, ObjectDifficulty.ANAPHORA: 1},
})
_UNRESOLVABLE_WEIGHTS: Mapping[ObjectDifficulty, int] = MappingProxyType(
    {ObjectDifficulty.UNDERSPECIFIED: 1, ObjectDifficulty.CONFLICTING: 1})
#: Cue cells: 1 = SINGLE (the primary family only), 2 = DUAL, 3 = TRIPLE.
_CUE_WEIGHTS: Mapping[int, int] = MappingProxyType({1: 9, 2: 7, 3: 4})
CUE_CELLS: Mapping[int, str] = MappingProxyType({1: "SINGLE", 2: "DUAL", 3: "TRIPLE"})
_SPLIT_ORDER = (Split.DEV, Split.MAIN, Split.FLIP, Split.ENTITY)


# --------------------------------------------------------------------------------------------- slots


@dataclass(frozen=True, slots=True)
class Slot:
    """One planned scenario.  FLIP slots come in pairs (same ``pair``, same request side)."""

    split: Split
    action: str
    boundary: Boundary  # the gold boundary this slot is planned to have (checked against the computed label)
    route: Route
    difficulty: ObjectDifficulty
    cues: int
    secondary: Route | None = None
    partition: Partition | None = None
    pair: int | None = None
    decouplable: bool = False  # unresolvable reference whose state may say ``entity_resolved=true``

    @property
    def unresolvable(self) -> bool:
        return self.difficulty in UNRESOLVABLE

    @property
    def dispatchable(self) -> bool:
        return self.route is Route.ALLOW

    def state(self, decouple_entity_state: bool = False) -> dict[str, Any]:
        """The runtime state: clear, plus this slot's predicates (``entity_resolved`` follows the reference)."""
        values = dict(CLEAR_STATE)
        for route in (self.route, self.secondary):
            if route is not None and route.predicate is not None:
                key, value = route.predicate
                values[key] = value
        if self.unresolvable:
            values[_ENTITY_PREDICATE[0]] = decouple_entity_state and self.decouplable
        return values


def apportion(total: int, weights: Mapping[T, int]) -> dict[T, int]:
    """Largest-remainder apportionment of ``total`` by ``weights`` (ties in declaration order); exact sum."""
    keys = [k for k, w in weights.items() if w > 0]
    if total and not keys:
        raise ValueError("nothing to apportion to")
    weight_sum = sum(weights[k] for k in keys)
    counts = {k: total * weights[k] // weight_sum for k in keys}
    remainders = sorted(keys, key=lambda k: (-(total * weights[k] % weight_sum), keys.index(k)))
    for k in remainders[: total - sum(counts.values())]:
        counts[k] += 1
    return counts


def _quota_list(total: int, weights: Mapping[T, int], rng: random.Random) -> list[T]:
    """``apportion`` expanded into a list and shuffled: exact counts, seeded arrangement."""
    items = [k for k, n in apportion(total, weights).items() for _ in range(n)]
    rng.shuffle(items)
    return items


def spread(n: int, m: int) -> list[bool]:
    """``m`` of ``n`` positions marked, evenly spaced (exactly ``m``; a sorted list stays stratified)."""
    return [(i + 1) * m // n > i * m // n for i in range(n)]


class _Oracle:
    """Questions about the rule program, answered by evaluating it (no hard-coded rule knowledge)."""

    def __init__(self, policy: PolicyEngine) -> None:
        self.policy = policy

    def rule(self, action: str, *routes: Route) -> Rule:
        values = dict(CLEAR_STATE)
        for route in routes:
            key, value = route.predicate  # type: ignore[misc]
            values[key] = value
        return self.policy.evaluate(action, values)

    def produces(self, action: str, route: Route, boundary: Boundary) -> bool:
        if route is Route.ALLOW:
            return self.rule(action).decision is boundary
        r = self.rule(action, route)
        return not r.is_default and r.decision is boundary

    def outranks_entity(self, action: str, route: Route) -> bool:
        """The route's rule still wins when the entity predicate blocks too."""
        return self.rule(action, route, Route.ENTITY) == self.rule(action, route)

    def secondaries(self, action: str, route: Route) -> list[Route]:
        """Blocking routes that also match but lose to ``route`` on priority."""
        winner = self.rule(action, route)
        return [s for s in Route if s not in (Route.ALLOW, Route.ENTITY, route)
                and not self.rule(action, s).is_default and self.rule(action, route, s) == winner]


# --------------------------------------------------------------------------------------------- allocation


def allocate(seed: int, policy: PolicyEngine) -> tuple[Slot, ...]:
    """All 600 slots in output order (DEV, MAIN, FLIP, ENTITY), partitions assigned.  Deterministic in ``seed``."""
    oracle = _Oracle(policy)
    slots: list[Slot] = []
    for split in _SPLIT_ORDER:
        rng = random.Random(f"{seed}:composition:{split.value}")
        group: list[Slot] = []
        for action in ACTIONS:
            if split is Split.ENTITY and action not in _OBJECT_ACTIONS:
                continue
            group.extend(_pairs(split, action, oracle, rng) if split is Split.FLIP
                         else _group(split, action, oracle, rng))
        slots.extend(_partitioned(split, group, rng))
    _check_plan(slots)
    return tuple(slots)


def _routes(split: Split, action: str, oracle: _Oracle) -> list[tuple[Boundary, Route]]:
    """Boundary and route of every slot of one action in one split (FLIP: the bounded pair members)."""
    planned = []
    for boundary, count in _BOUNDARY_QUOTA[split].items():
        weights = {r: w for r, w in _ROUTE_WEIGHTS[boundary].items()
                   if r in _SPLIT_ROUTES[split] and oracle.produces(action, r, boundary)}
        if not weights:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, f"a rule that makes {action} {boundary.value}",
                            field="condition_json", detail=f"{split.value} composition")
        for route, n in apportion(count, weights).items():
            planned.extend([(boundary, route)] * n)
    return planned


def _group(split: Split, action: str, oracle: _Oracle, rng: random.Random) -> list[Slot]:
    planned = _routes(split, action, oracle)
    routes = [route for _, route in planned]
    n = len(routes)
    difficulty: list[ObjectDifficulty] = [ObjectDifficulty.NONE] * n
    if action in _OBJECT_ACTIONS:
        unresolvable = [i for i, r in enumerate(routes) if r is Route.ENTITY]
        extra = [i for i, r in enumerate(routes)
                 if r not in (Route.ALLOW, Route.ENTITY) and oracle.outranks_entity(action, r)]
        rng.shuffle(extra)
        unresolvable += extra[: _EXTRA_UNRESOLVABLE.get(split, 0)]
        for i, d in zip(unresolvable, _quota_list(len(unresolvable), _UNRESOLVABLE_WEIGHTS, rng)):
            difficulty[i] = d
        resolvable = [i for i in range(n) if i not in set(unresolvable)]
        for i, d in zip(resolvable, _quota_list(len(resolvable), _DIFFICULTY_WEIGHTS[split], rng)):
            difficulty[i] = d
    secondary: list[Route | None] = [None] * n
    eligible = [i for i, r in enumerate(routes) if r not in (Route.ALLOW, Route.ENTITY)
                and oracle.secondaries(action, r)]
    rng.shuffle(eligible)
    for i in sorted(eligible[: _SECONDARY_QUOTA.get(split, 0)]):
        secondary[i] = rng.choice(oracle.secondaries(action, routes[i]))
    cues = _quota_list(n, _CUE_WEIGHTS, rng)
    slots = [Slot(split, action, planned[i][0], routes[i], difficulty[i], cues[i], secondary[i]) for i in range(n)]
    return _mark_decouplable(slots, rng)


def _mark_decouplable(slots: list[Slot], rng: random.Random) -> list[Slot]:
    """Half (rounded down) of the unresolvable references may keep ``entity_resolved=true`` when decoupling."""
    unresolvable = [i for i, s in enumerate(slots) if s.unresolvable]
    rng.shuffle(unresolvable)
    for i in unresolvable[: len(unresolvable) // 2]:
        slots[i] = replace(slots[i], decouplable=True)
    return slots


def _pairs(split: Split, action: str, oracle: _Oracle, rng: random.Random) -> list[Slot]:
    """FLIP: one ALLOW member and one member blocked by exactly one predicate, sharing the request side."""
    bounded = _routes(split, action, oracle)
    n = len(bounded)
    weights = _DIFFICULTY_WEIGHTS[split] if action in _OBJECT_ACTIONS else {ObjectDifficulty.NONE: 1}
    difficulty = _quota_list(n, weights, rng)
    cues = _quota_list(n, _CUE_WEIGHTS, rng)
    slots = []
    for i, (boundary, route) in enumerate(bounded):
        for member_boundary, member in ((Boundary.ALLOW, Route.ALLOW), (boundary, route)):
            slots.append(Slot(split, action, member_boundary, member, difficulty[i], cues[i], pair=i))
    return slots


def _partitioned(split: Split, group: list[Slot], rng: random.Random) -> list[Slot]:
    """Assign SELECT/CONFIRM (stratified, exact quotas), shuffle, and number FLIP pairs in output order."""
    if split is Split.DEV:
        rng.shuffle(group)
        return group
    if split is Split.FLIP:
        units = [tuple(s for s in group if (s.action, s.pair) == key)
                 for key in dict.fromkeys((s.action, s.pair) for s in group)]
        rng.shuffle(units)
        units.sort(key=lambda u: (u[1].action, u[1].route.value))  # stratify; order inside a stratum stays random
        marks = spread(len(units), PARTITION_SIZES[Partition.SELECT][split] // 2)
        placed = [tuple(replace(s, partition=_partition(m)) for s in unit) for unit, m in zip(units, marks)]
        rng.shuffle(placed)
        out = []
        for number, unit in enumerate(placed):
            members = list(unit)
            rng.shuffle(members)
            out.extend(replace(s, pair=number) for s in members)
        return out
    select_dispatch = _select_dispatch(split)
    placed = []
    for dispatchable, quota in ((True, select_dispatch),
                                (False, PARTITION_SIZES[Partition.SELECT][split] - select_dispatch)):
        stratum = [s for s in group if s.dispatchable is dispatchable]
        rng.shuffle(stratum)
        stratum.sort(key=lambda s: (s.secondary is None, s.action, s.route.value))
        placed += [replace(s, partition=_partition(m)) for s, m in zip(stratum, spread(len(stratum), quota))]
    rng.shuffle(placed)
    return placed


def _partition(selected: bool) -> Partition:
    return Partition.SELECT if selected else Partition.CONFIRM


def _select_dispatch(split: Split) -> int:
    """SELECT's dispatchable cases in MAIN/ENTITY: ENTITY is fixed, MAIN takes the rest of SELECT's 76."""
    if split is Split.ENTITY:
        return 10
    flip = PARTITION_SIZES[Partition.SELECT][Split.FLIP] // 2
    return PARTITION_DISPATCH[Partition.SELECT][0] - flip - 10


def _check_plan(slots: Sequence[Slot]) -> None:
    """The plan's own counts (splits, actions, partitions, dispatchable) — a broken quota table fails here."""
    expect = {
        "splits": (Counter(s.split for s in slots), dict(SPLIT_SIZES)),
        "actions": (Counter(s.action for s in slots), dict(ACTION_TOTALS)),
        "partitions": (Counter((s.partition, s.split) for s in slots if s.partition),
                       {(p, sp): n for p, sizes in PARTITION_SIZES.items() for sp, n in sizes.items()}),
        "dispatchable": (Counter((s.partition, s.dispatchable) for s in slots),
                         {(None, True): DEV_DISPATCH[0], (None, False): DEV_DISPATCH[1],
                          **{(p, d): n for p, pair in PARTITION_DISPATCH.items()
                             for d, n in zip((True, False), pair)}}),
    }
    for name, (got, want) in expect.items():
        if dict(got) != want:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, f"{name} {want}", got=dict(got),
                            detail="composition tables do not add up")
