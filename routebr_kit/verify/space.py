"""The abstract state space: every runtime-state field split into the finitely many value classes the rules can tell
apart, and the cross-field groups whose members' relative order matters.

A **value class** is a set of values of one field on which every predicate of every program under analysis (and of
every assertion's ``when``), and every program's state-schema check of that field, gives one answer.  It is built,
field by field, from the literals the sources mention:

* ``missing`` — the field is absent;
* ``boolean`` — ``false`` and ``true``; ``null``;
* ``number`` and ``string`` — each literal (and each ``allowed`` value of a schema) is a point, and the open
  intervals between consecutive literals (and below the first, above the last) are classes, in the order the rule
  engine compares them (numbers by value, ``1 == 1.0``; strings by code point).  An open interval with no value in
  it (between two adjacent floats, or between ``"a"`` and ``"a\\x00"``) is dropped;
* ``+inf`` / ``-inf`` — only for a field compared with a number by an ordering operator (the engine orders them,
  the schema rejects them);
* ``other`` — every value of no type above: another JSON type, an array or object, ``NaN``, an instance of a
  subclass of ``str`` or ``int`` (the engine's equality is type-strict, the schema's type check exact).

Pieces that no predicate and no schema check tells apart are then merged (``"any other string"``).

Fields compared with each other (``{"amount": {"lte": {"field": "limit"}}}``) form a **group**: the members share
one set of breakpoints, and the group is one variable whose values are the realizable *configurations* — each
member's class and, for members in the same open interval, their weak order (``a < b``, ``a = b``, ``a > b``),
kept only where the interval holds enough distinct values.

Why it is exact: a literal predicate's truth on a value depends only on the value's JSON type, its equality with
the literal and its order relative to it; a cross-field predicate's only on both types and their relative order;
a schema check only on type, presence and membership in ``allowed``.  Every class fixes all of these, so each
predicate and each check is constant on it; its truth is read by running the engine's own
:meth:`~routebr_kit.core.rules.Predicate.holds` and :meth:`~routebr_kit.core.state.StateSchema.check` on the class's
witness value.  ``tests/test_verify_differential.py`` samples random values inside every class through the controller.

Standard library only.
"""

from __future__ import annotations

import enum
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.rules import Condition, Operator, Predicate
from ..core.state import StateSchema, StateType, state_type_of

MISSING: Any = type("Missing", (), {"__repr__": lambda self: "<missing>"})()
#: Largest number of configurations a cross-field group may have (beyond it the analysis refuses, typed).
MAX_GROUP_CONFIGS = 50_000
#: An interval holding at least this many values is counted as unbounded.
_COUNTED = 4
_ORDERING = (Operator.LT, Operator.LTE, Operator.GT, Operator.GTE)


class Kind(str, enum.Enum):
    MISSING = "missing"
    BOOLEAN = "boolean"
    NULL = "null"
    NUMBER = "number"
    STRING = "string"
    POS_INF = "+inf"
    NEG_INF = "-inf"
    OTHER = "other"


_TYPE_KIND = {StateType.BOOLEAN: Kind.BOOLEAN, StateType.NULL: Kind.NULL, StateType.NUMBER: Kind.NUMBER,
              StateType.STRING: Kind.STRING}


@dataclass(frozen=True, slots=True)
class Piece:
    """One convex set of values: a point, an open interval ``(lo, hi)`` (``None``: unbounded), ``missing``,
    an infinity, or ``other``.  ``witnesses``: up to a few values inside it, increasing."""

    kind: Kind
    lo: Any = None
    hi: Any = None
    point: bool = False
    witnesses: tuple[Any, ...] = ()
    size: int | None = 1  # number of values; None: unbounded (or at least _COUNTED)

    @property
    def kinds(self) -> frozenset[Kind]:
        return frozenset((self.kind,))

    def contains(self, value: Any) -> bool:
        kind = self.kind
        if kind is Kind.MISSING:
            return value is MISSING
        if value is MISSING:
            return False
        if kind is Kind.POS_INF or kind is Kind.NEG_INF:
            return type(value) is float and value == self.lo
        if kind is Kind.OTHER:
            return False  # the fallback class: see FieldDomain.classify
        t = state_type_of(value)
        if t is None or _TYPE_KIND[t] is not kind:
            return False
        if kind is Kind.BOOLEAN:
            return value is self.lo
        if kind is Kind.NULL:
            return True
        if self.point:
            return value == self.lo
        return (self.lo is None or self.lo < value) and (self.hi is None or value < self.hi)

    def describe(self) -> str:
        kind = self.kind
        if kind is Kind.MISSING:
            return "missing"
        if kind is Kind.OTHER:
            return "of another type"
        if kind in (Kind.POS_INF, Kind.NEG_INF):
            return kind.value
        if kind is Kind.NULL:
            return "null"
        if self.point:
            return literal_text(self.lo)
        if self.lo is None and self.hi is None:
            return f"any {kind.value}"
        if self.lo is None:
            return f"< {literal_text(self.hi)}"
        if self.hi is None:
            return f"> {literal_text(self.lo)}"
        return f"in ({literal_text(self.lo)}, {literal_text(self.hi)})"


@dataclass(frozen=True, slots=True)
class ValueClass:
    """A set of values of one field that every predicate and schema check treats alike (one or more pieces)."""

    pieces: tuple[Piece, ...]

    @property
    def witness(self) -> Any:
        first = self.pieces[0]
        return first.witnesses[0] if first.witnesses else MISSING

    @property
    def size(self) -> int | None:
        sizes = [p.size for p in self.pieces]
        return None if None in sizes else sum(sizes)  # type: ignore[arg-type]

    @property
    def kinds(self) -> frozenset[Kind]:
        return frozenset(p.kind for p in self.pieces)

    def contains(self, value: Any) -> bool:
        return any(p.contains(value) for p in self.pieces)

    def describe(self) -> str:
        return " or ".join(p.describe() for p in self.pieces)


def literal_text(value: Any) -> str:
    if value is True:
        return "true"
    if value is False:
        return "false"
    if value is None:
        return "null"
    if isinstance(value, str):
        return repr(value).replace("'", '"') if ('"' not in value) else repr(value)
    return repr(value)


# --------------------------------------------------------------------------------------------- values between bounds


def _number_after(x: Any, hi: Any) -> Any:
    """The nicest number strictly between ``x`` and ``hi`` (``None``: unbounded), or ``None`` if there is none.
    Ints and finite floats compare exactly in Python; the smallest int and the smallest float above ``x`` decide
    whether the interval is empty."""
    if x is None:
        return 0 if hi is None or hi > 0 else math.ceil(hi) - 1
    smallest_int = math.floor(x) + 1
    try:
        f = float(x)
        if f <= x:
            f = math.nextafter(f, math.inf)
        smallest_float = f if math.isfinite(f) else None
    except OverflowError:
        smallest_float = None
    if hi is None:
        return smallest_int
    if smallest_int < hi:
        return smallest_int
    if isinstance(x, float) or isinstance(hi, float):
        try:
            middle = (x + hi) / 2
            if x < middle < hi:
                return middle
        except OverflowError:
            pass
    if smallest_float is not None and smallest_float < hi:
        return smallest_float
    return None


def _string_after(x: str | None, hi: str | None) -> str | None:
    """The nicest string strictly between ``x`` and ``hi``: ``x + "a"``, ``x + "0"`` or the smallest, ``x + "\\0"``
    (only ``hi == x + "\\0"`` leaves nothing between)."""
    if x is None:
        if hi:  # just below the bound, e.g. "v1" below "v2" (else the smallest string, "")
            last = ord(hi[-1])
            return hi[:-1] + chr(last - 1) if last > 0x61 or 0x30 < last <= 0x39 or 0x41 < last <= 0x5a else ""
        return "" if hi is None else None
    for candidate in (x + "a", x + "0", x + "\x00"):
        if hi is None or candidate < hi:
            return candidate
    return None


def _between(kind: Kind, lo: Any, hi: Any, count: int) -> tuple[Any, ...]:
    """Up to ``count`` increasing values strictly inside ``(lo, hi)``."""
    after = _number_after if kind is Kind.NUMBER else _string_after
    out: list[Any] = []
    x = lo
    if lo is None and hi is not None and kind is Kind.NUMBER:  # below the first literal: count ints below hi
        top = math.ceil(hi) - 1
        return tuple(range(top - count + 1, top + 1))
    while len(out) < count:
        value = after(x, hi)
        if value is None:
            break
        out.append(value)
        x = value
    return tuple(out)


def _type_pieces(kind: Kind, literals: Sequence[Any], count: int) -> list[Piece]:
    """Points at the sorted literals and the non-empty open intervals around them."""
    unique: dict[Any, Any] = {}
    for value in literals:
        unique.setdefault(value, value)  # 1 and 1.0 are one point (they compare equal)
    points = sorted(unique.values())
    pieces = []
    bounds = [None, *points, None]
    for i in range(len(bounds) - 1):
        lo, hi = bounds[i], bounds[i + 1]
        inside = _between(kind, lo, hi, max(count, _COUNTED))
        if inside:
            size = len(inside) if len(inside) < _COUNTED else None
            pieces.append(Piece(kind, lo, hi, False, inside[:max(count, 1)], size))
        if i < len(points):
            pieces.append(Piece(kind, points[i], points[i], True, (points[i],), 1))
    return pieces


# --------------------------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class Source:
    """What the space must tell apart for one program: its rules' predicates and its state schema."""

    predicates: tuple[Predicate, ...]
    schema: StateSchema | None  # None: an assertion's condition (no validity of its own)
    order: tuple[str, ...] = ()  # its fields in order of first use (variable-order hint)

    @classmethod
    def of_rules(cls, rules: Iterable[Any], schema: StateSchema) -> Source:
        predicates = tuple(p for r in rules for p in r.condition.predicates)
        order = dict.fromkeys(n for p in predicates for n in (p.key, p.other_field) if n is not None)
        return cls(predicates, schema, tuple({**order, **dict.fromkeys(f.name for f in schema.fields)}))

    @classmethod
    def of_condition(cls, condition: Condition) -> Source:
        return cls(condition.predicates, None, tuple(dict.fromkeys(p.key for p in condition.predicates)))


def literals_of(p: Predicate) -> tuple[Any, ...]:
    """The literals a predicate compares a field with (none for ``exists`` and cross-field tests)."""
    if p.op is Operator.EXISTS or p.other_field is not None:
        return ()
    return tuple(p.operand) if p.op in (Operator.IN, Operator.NOT_IN) else (p.operand,)


# --------------------------------------------------------------------------------------------- variables


@dataclass(frozen=True)
class Config:
    """One value of a group variable: each member's class (index into its pieces) and the order within intervals."""

    pieces: tuple[Piece, ...]
    ranks: tuple[int, ...]

    def values(self) -> tuple[Any, ...]:
        return tuple(p.witnesses[r] if p.witnesses else MISSING for p, r in zip(self.pieces, self.ranks))

    @property
    def size(self) -> int | None:  # (an upper bound when two members share a finite interval; exact otherwise)
        sizes = [p.size for p in self.pieces]
        return None if None in sizes else math.prod(sizes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Variable:
    """One level of the decision diagram: a field (values: classes) or a cross-field group (values: configs)."""

    fields: tuple[str, ...]
    values: tuple[Any, ...]  # ValueClass for a field, Config for a group
    _lookup: dict[tuple, int] = field(default_factory=dict, repr=False, compare=False)

    @property
    def name(self) -> str:
        return self.fields[0] if len(self.fields) == 1 else "(" + ", ".join(self.fields) + ")"

    @property
    def grouped(self) -> bool:
        return len(self.fields) > 1  # (a group has two members at least)

    def assignment(self, index: int) -> dict[str, Any]:
        """The witness values of value ``index`` (missing fields omitted)."""
        value = self.values[index]
        found = value.values() if isinstance(value, Config) else (value.witness,)
        return {f: v for f, v in zip(self.fields, found) if v is not MISSING}

    def sizes(self) -> tuple[int | None, ...]:
        return tuple(v.size for v in self.values)

    def classify(self, state: Mapping[str, Any]) -> int:
        """The index of the value a concrete state takes here."""
        if not self.grouped:
            return _index_of(self.values, state.get(self.fields[0], MISSING))
        values = [state.get(f, MISSING) for f in self.fields]
        pieces = self._lookup[("pieces",)]
        choice = tuple(_index_of(pieces, value) for value in values)
        return self._lookup[(choice, _ranks([pieces[c] for c in choice], values))]


def _index_of(items: Sequence[Piece | ValueClass], value: Any) -> int:
    """The piece (or class) holding ``value``; the ``other`` one when none does."""
    found = [i for i, item in enumerate(items) if item.contains(value)]
    return found[0] if found else next(i for i, item in enumerate(items) if Kind.OTHER in item.kinds)


def _ranks(pieces: Sequence[Piece], values: Sequence[Any]) -> tuple[int, ...]:
    """Each member's rank among the members in the same open interval (0 for a member alone in it, and for points,
    ``missing`` and ``other``, which fix every relation by themselves)."""
    ranks = [0] * len(values)
    for piece in set(pieces):
        if piece.kind not in (Kind.NUMBER, Kind.STRING) or piece.point:
            continue
        members = [i for i, p in enumerate(pieces) if p == piece]
        if len(members) < 2:
            continue
        distinct = sorted({values[i] for i in members})  # one type per interval: Python orders as the engine does
        for i in members:
            ranks[i] = distinct.index(values[i])
    return tuple(ranks)


def _weak_orders(members: int, available: int) -> list[tuple[int, ...]]:
    """Every weak order of ``members`` items using at most ``available`` distinct values: rank tuples onto
    ``0..r-1``."""
    out = []
    for r in range(1, min(members, available) + 1):
        for ranks in itertools.product(range(r), repeat=members):
            if len(set(ranks)) == r:
                out.append(ranks)
    return out


# --------------------------------------------------------------------------------------------- the space


@dataclass(frozen=True)
class Space:
    """The product of the variables: every abstract point is realised by at least one concrete state."""

    variables: tuple[Variable, ...]
    level: Mapping[str, int]  # field -> level of its variable
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    def concretize(self, point: Sequence[int]) -> dict[str, Any]:
        state: dict[str, Any] = {}
        for var, index in zip(self.variables, point):
            state.update(var.assignment(index))
        return state

    def classify(self, state: Mapping[str, Any]) -> tuple[int, ...]:
        return tuple(v.classify(state) for v in self.variables)

    def predicate_set(self, p: Predicate) -> frozenset[int]:
        """The values of ``p``'s variable on which it holds (read by running it on their witnesses; cached)."""
        cache = self._cache
        key = ("p", p.key, p.op, _hashable(p.operand), p.other_field)
        found = cache.get(key)
        if found is None:
            var = self.variables[self.level[p.key]]
            found = frozenset(i for i in range(len(var.values)) if p.holds(var.assignment(i)))
            cache[key] = found
        return found

    def cube(self, condition: Condition) -> dict[int, frozenset[int]] | None:
        """The condition as a cube (level -> allowed values), or ``None`` when no point satisfies it."""
        key = ("c", id(condition))
        found = self._cache.get(key)
        if found is not None and found[0] is condition:
            return found[1]
        cube = self._cube(condition)
        self._cache[key] = (condition, cube)
        return cube

    def _cube(self, condition: Condition) -> dict[int, frozenset[int]] | None:
        cube: dict[int, frozenset[int]] = {}
        for p in condition.predicates:
            level = self.level[p.key]
            allowed = self.predicate_set(p)
            cube[level] = cube[level] & allowed if level in cube else allowed
            if not cube[level]:
                return None
        return cube

    def valid(self, schema: StateSchema) -> dict[int, frozenset[int]]:
        """Per level, the values that pass ``schema``'s check of the variable's fields."""
        return {level: frozenset(i for i in range(len(var.values))
                                 if not {v.field for v in schema.check(var.assignment(i))} & set(var.fields))
                for level, var in enumerate(self.variables)}


def _hashable(value: Any) -> Any:
    """A key for a predicate operand: the literal with its type (``1`` and ``True`` differ), lists as tuples."""
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(v) for v in value)
    return (type(value).__name__, value)


def build_space(sources: Sequence[Source]) -> Space:
    """The common abstract space of every source (programs and assertion conditions)."""
    order = list(dict.fromkeys([*(n for s in sources for n in s.order), *(
        n for s in sources for p in s.predicates for n in (p.key, p.other_field) if n is not None)]))
    schemas = [s.schema for s in sources if s.schema is not None]
    # Types each field's classes must cover: every type a schema admits, and every literal's type.
    types: dict[str, set[StateType]] = {name: set() for name in order}
    literals: dict[str, dict[StateType, list[Any]]] = {name: {} for name in order}
    ordered_number: set[str] = set()
    parent = {name: name for name in order}

    def find(x: str) -> str:
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for schema in schemas:
        for f in schema.fields:
            types[f.name] |= set(f.types)
            for value in f.allowed or ():
                t = state_type_of(value)
                if t is not None:
                    literals[f.name].setdefault(t, []).append(value)
    declared = {f.name for schema in schemas for f in schema.fields}
    for s in sources:
        for p in s.predicates:
            for value in literals_of(p):
                t = state_type_of(value)
                if t is None:
                    raise DataError(ErrorCode.INVALID_OPERAND, "finite JSON literals in every predicate", got=value,
                                    field=p.key)
                types[p.key].add(t)
                literals[p.key].setdefault(t, []).append(value)
                if p.op in _ORDERING and t is StateType.NUMBER:
                    ordered_number.add(p.key)
            if p.other_field is not None:
                parent[find(p.key)] = find(p.other_field)
                if p.op in _ORDERING:
                    ordered_number.update((p.key, p.other_field))
    for name in order:
        if name not in declared and not types[name]:
            types[name] = {StateType.BOOLEAN, StateType.NULL, StateType.NUMBER, StateType.STRING}
    groups: dict[str, list[str]] = {}
    for name in order:
        groups.setdefault(find(name), []).append(name)
    variables: list[Variable] = []
    level: dict[str, int] = {}
    done: set[str] = set()
    for name in order:
        if name in done:
            continue
        members = groups[find(name)]
        done.update(members)
        if len(members) == 1:
            var = _field_variable(name, types[name], literals[name], name in ordered_number, sources)
        else:
            var = _group_variable(members, types, literals, ordered_number)
        for m in members:
            level[m] = len(variables)
        variables.append(var)
    return Space(tuple(variables), level)


def _pieces(types: set[StateType], literals: Mapping[StateType, list[Any]], ordered: bool, count: int) -> list[Piece]:
    pieces = [Piece(Kind.MISSING, witnesses=(), size=1)]
    if StateType.BOOLEAN in types:
        pieces += [Piece(Kind.BOOLEAN, False, False, True, (False,)), Piece(Kind.BOOLEAN, True, True, True, (True,))]
    if StateType.NULL in types:
        pieces.append(Piece(Kind.NULL, None, None, True, (None,)))
    for t, kind in ((StateType.NUMBER, Kind.NUMBER), (StateType.STRING, Kind.STRING)):
        if t in types:
            pieces += _type_pieces(kind, literals.get(t, ()), count)
    if ordered and StateType.NUMBER in types:
        pieces += [Piece(Kind.POS_INF, math.inf, math.inf, True, (math.inf,)),
                   Piece(Kind.NEG_INF, -math.inf, -math.inf, True, (-math.inf,))]
    missing_types = [w for t, w in ((StateType.STRING, "?"), (StateType.NUMBER, 0), (StateType.BOOLEAN, False),
                                    (StateType.NULL, None)) if t not in types]
    pieces.append(Piece(Kind.OTHER, witnesses=(missing_types[0] if missing_types else (),), size=None))
    return pieces


def _field_variable(name: str, types: set[StateType], literals: Mapping[StateType, list[Any]], ordered: bool,
                    sources: Sequence[Source]) -> Variable:
    """A single field's classes: its pieces, merged where no predicate and no schema check differs."""
    pieces = _pieces(types, literals, ordered, 1)
    predicates = [p for s in sources for p in s.predicates if p.key == name]
    schemas = [s.schema for s in sources if s.schema is not None]
    merged: dict[tuple, list[Piece]] = {}
    for piece in pieces:
        assigned = {name: piece.witnesses[0]} if piece.witnesses else {}
        signature = (tuple(p.holds(assigned) for p in predicates),
                     tuple(not any(v.field == name for v in schema.check(assigned)) for schema in schemas))
        merged.setdefault(signature, []).append(piece)
    return Variable((name,), tuple(ValueClass(tuple(group)) for group in merged.values()))


def _group_variable(members: list[str], types: Mapping[str, set[StateType]],
                    literals: Mapping[str, Mapping[StateType, list[Any]]], ordered: set[str]) -> Variable:
    """A cross-field group: shared breakpoints, and every realizable configuration."""
    shared_types = set().union(*(types[m] for m in members))
    shared: dict[StateType, list[Any]] = {}
    for m in members:
        for t, values in literals[m].items():
            shared.setdefault(t, []).extend(values)
    count = len(members)
    pieces = _pieces(shared_types, shared, bool(ordered & set(members)), count)
    lookup: dict[tuple, Any] = {("pieces",): tuple(pieces)}
    configs: list[Config] = []
    for choice in itertools.product(range(len(pieces)), repeat=len(members)):
        chosen = [pieces[c] for c in choice]
        # members in the same open interval may take any realizable weak order
        buckets: dict[int, list[int]] = {}
        for i, c in enumerate(choice):
            if chosen[i].kind in (Kind.NUMBER, Kind.STRING) and not chosen[i].point:
                buckets.setdefault(c, []).append(i)
        shared_buckets = [idx for idx in buckets.values() if len(idx) > 1]
        options = [_weak_orders(len(idx), len(chosen[idx[0]].witnesses)) for idx in shared_buckets]
        for combo in itertools.product(*options):
            ranks = [0] * len(members)
            for idx, order in zip(shared_buckets, combo):
                for i, r in zip(idx, order):
                    ranks[i] = r
            config = Config(tuple(chosen), tuple(ranks))
            lookup[(tuple(choice), tuple(ranks))] = len(configs)
            configs.append(config)
            if len(configs) > MAX_GROUP_CONFIGS:
                raise DataError(ErrorCode.INVALID_VALUE, f"cross-field groups of at most {MAX_GROUP_CONFIGS:,} "
                                "configurations", got=list(members), field="condition_json")
    return Variable(tuple(members), tuple(configs), lookup)


__all__ = ["MISSING", "Config", "Kind", "Piece", "Source", "Space", "ValueClass", "Variable", "build_space"]
