"""Generators of random rule programs, states and proposals for the verifier's differential and sampling tests
(every operator, cross-field references, exists, null literals, int/float literals, retyped and non-finite values,
subclasses of str, arrays, objects, missing and extra fields)."""

from __future__ import annotations

import math
import random

from routebr_kit.core.errors import DataError
from routebr_kit.core.records import Entity, RouteRequest, RuntimeState
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.verify.space import MISSING, Kind
from routebr_kit.verify.synthetic import CATALOG

FIELDS = ("a", "b", "c", "n", "m", "s", "t")
LITERALS = (True, False, None, -1, 0, 1, 2, 2.5, 1.0, "", "a", "b", "v1", "v2", "a\x00")
DECISIONS = ("ALLOW", "ALLOW", "CLARIFY", "DEFER", "HANDOFF", "REJECT")
OPS = ("eq", "ne", "lt", "lte", "gt", "gte", "in", "not_in", "exists")
ENTITIES = (Entity("E:1", "ETF", "fund"), Entity("A:1", "ACCOUNT", "account"), Entity("T:1", "TOPIC", "topic"),
            Entity("S:1", "SERVICE", "service"), Entity("X:1", "COMMODITY", "other"))
#: The catalog as plain data for the reference evaluator.
REFERENCE_CATALOG = {a.action_id: (a.requires_object, set(a.required_object_types)) for a in CATALOG}


class Text(str):
    """A str subclass: of no admitted type for the schema, never equal for the engine."""


def _typed_field(rng: random.Random, kinds: dict[str, str]) -> tuple[str, str]:
    name = rng.choice(FIELDS)
    kinds.setdefault(name, rng.choice(["boolean", "number", "string"]))
    return name, kinds[name]


def _literal(rng: random.Random, kind: str) -> object:
    pool = [v for v in LITERALS if (kind == "boolean" and type(v) is bool) or (kind == "number" and type(v) in
            (int, float)) or (kind == "string" and type(v) is str)]
    return rng.choice(pool + [None] if rng.random() < 0.15 else pool)


def random_rules(rng: random.Random, *, size: int | None = None, cross: bool = True) -> list[dict]:
    """A program as plain dicts (the reference's input); ``program_of`` builds it for the core."""
    kinds: dict[str, str] = {}
    rules = []
    for k in range(size if size is not None else rng.randint(1, 7)):
        condition: dict = {}
        for _ in range(rng.randint(0, 3)):
            name, kind = _typed_field(rng, kinds)
            roll = rng.random()
            if roll < 0.3:
                condition[name] = _literal(rng, kind)
                continue
            spec = {}
            for op in rng.sample(OPS, rng.randint(1, 2)):
                if op == "exists":
                    spec[op] = rng.random() < 0.6
                elif op in ("in", "not_in"):
                    spec[op] = [_literal(rng, kind) for _ in range(rng.randint(1, 3))]
                elif cross and rng.random() < 0.2 and op in ("eq", "ne", "lt", "lte", "gt", "gte"):
                    others = [f for f in FIELDS if f != name and kinds.get(f, kind) == kind]
                    if not others:
                        continue
                    spec[op] = {"field": rng.choice(others)}
                    kinds.setdefault(spec[op]["field"], kind)
                elif op in ("lt", "lte", "gt", "gte") and kind == "boolean":
                    continue
                else:
                    spec[op] = _literal(rng, kind)
                    if op in ("lt", "lte", "gt", "gte") and spec[op] is None:
                        spec[op] = 0 if kind == "number" else "a"
            if spec:
                condition[name] = spec
        applies = "*" if rng.random() < 0.4 else rng.sample(CATALOG.ids, rng.randint(1, 3))
        rules.append({"rule_id": f"R{k:02d}", "priority": rng.randint(1, 9) * 10, "applies_to": applies,
                      "condition": condition, "decision": rng.choice(DECISIONS)})
    rules.append({"rule_id": "R99", "priority": 999, "applies_to": "*", "condition": {},
                  "decision": rng.choice(("ALLOW", "ALLOW", "CLARIFY"))})
    return rules


def program_of(rules: list[dict]) -> PolicyEngine | None:
    """The core's engine for the program, or ``None`` when the core rejects it (then the case is skipped)."""
    try:
        return PolicyEngine([rule(r["rule_id"], r["priority"], r["applies_to"], r["condition"], r["decision"])
                             for r in rules], CATALOG.ids)
    except DataError:
        return None


WEIRD = (math.nan, math.inf, -math.inf, [], [1], {"k": 1}, Text("a"), Text("v1"), 10 ** 30, -0.0, 3, 0.5, "c", "v10")


def random_state(rng: random.Random, schema=None) -> dict:
    """A state over the field pool; with the program's ``schema``, most states are admitted (each declared field
    gets a value of an admitted type 19 times in 20), so the rules themselves are exercised, not only the gate."""
    state = {}
    admitted = {f.name: {t.value for t in f.types} for f in schema.fields} if schema is not None else {}
    for name in FIELDS:
        roll = rng.random()
        if name in admitted and roll < 0.95:
            pool = [v for v in LITERALS + (3, 0.5, "c", "v10", -0.0) if _kind(v) in admitted[name]]
            if pool:
                state[name] = rng.choice(pool)
                continue
        if roll < 0.12 and not admitted:
            continue  # missing
        if rng.random() < 0.3:
            state[name] = rng.choice(WEIRD)
        elif rng.random() < 0.2:
            continue
        else:
            state[name] = rng.choice(LITERALS)
    if rng.random() < 0.2:
        state["extra"] = rng.choice(LITERALS + WEIRD)
    return state


def _kind(v: object) -> str:
    if type(v) is bool:
        return "boolean"
    if v is None:
        return "null"
    if type(v) in (int, float):
        return "number"
    return "string" if type(v) is str else "other"


def random_proposal(rng: random.Random) -> tuple[dict, tuple[Entity, ...]]:
    candidates = tuple(rng.sample(ENTITIES, rng.randint(0, 3)))
    action = rng.choice([*CATALOG.ids, *CATALOG.ids, "A9_BOGUS"])
    objects = [e.object_id for e in candidates] + ["UNRESOLVED", "NONE", "ghost"]
    obj = rng.choice(objects)
    if action in CATALOG and rng.random() < 0.6:  # most proposals meet the contract, so the gates are exercised
        entry = CATALOG[action]
        fitting = [e.object_id for e in candidates if entry.requires_object and entry.permits(e.object_type)]
        obj = rng.choice(fitting + ["UNRESOLVED"]) if entry.requires_object else "NONE"
    proposal: dict = {"action_id": action, "object_id": obj, "topk": [action]}
    if rng.random() < 0.1:
        proposal["topk"] = [action, action]
    elif rng.random() < 0.2:
        proposal["topk"] = [action, rng.choice([a for a in CATALOG.ids if a != action])]
    return proposal, candidates


def request_of(state: dict, candidates: tuple[Entity, ...]) -> RouteRequest:
    return RouteRequest("diff", "", (), RuntimeState(state), candidates)


def sample_in(piece, rng: random.Random) -> object:
    """A random value inside a :class:`~routebr_kit.verify.space.Piece` (for the sampling checks); falls back to a
    witness (``MISSING`` for the missing piece)."""
    if piece.kind is Kind.NUMBER and not piece.point:
        for _ in range(8):
            lo = piece.lo if piece.lo is not None else (piece.hi - 1e6 if piece.hi is not None else -1e6)
            hi = piece.hi if piece.hi is not None else lo + 2e6
            value = rng.choice((rng.uniform(lo, hi), round(rng.uniform(lo, hi))))
            if piece.contains(value):
                return value
    if piece.kind is Kind.STRING and not piece.point:
        for _ in range(8):
            base = piece.lo if piece.lo is not None else ""
            value = base + "".join(rng.choice("\x00 09AZaz~\u00e9\u4e2d") for _ in range(rng.randint(0, 3)))
            if piece.contains(value):
                return value
    if piece.kind is Kind.OTHER:
        return rng.choice([*piece.witnesses, [], {"k": 1}, float("nan"), Text("x")])
    return rng.choice(piece.witnesses) if piece.witnesses else MISSING
