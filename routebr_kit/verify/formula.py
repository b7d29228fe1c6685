"""Formulas over state fields for a region of admitted states: a disjunction of conjunctions of field tests.

The cubes come from the diagram's paths; each is expanded to a *prime* (no test can be widened or dropped without
leaving the region) and the cover is made *irredundant* (no term can be dropped).  That is minimal in the sense of
the two-level logic literature's "irredundant prime cover", not necessarily the fewest terms (a minimum cover is
NP-hard); for the published program every action's dispatch region is one term.  Tests are written over admitted
states: a field a term does not mention may take any value the schema admits.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence

from .mdd import Manager
from .space import Kind, Space, literal_text

#: Beyond this many terms the cover is not made irredundant (reported as such).
_MAX_IRREDUNDANT = 40
#: A formula shows at most this many terms (the rest are counted).
_MAX_SHOWN = 24
#: Beyond this many paths no formula is built (the region is reported by its size only).
_MAX_PATHS = 200

_Term = dict[int, frozenset[int]]


def _within(m: Manager, node: int, term: _Term, valid: Sequence[frozenset[int]], inside: Callable[[Hashable], bool],
            full: dict) -> bool:
    """Whether every admitted point of ``term`` reaches an accepted leaf.  ``full`` (shared between the calls on
    one region): per node, whether *every* admitted point below it does (then so does every point of the term),
    and per (node, the term's tests at and below the node's level) the answer of an earlier call."""
    depth = m.depth
    suffix: list[tuple] = [()] * (depth + 1)
    acc: tuple = ()
    tests = sorted(term.items(), reverse=True)
    i = 0
    for lv in range(depth - 1, -1, -1):
        while i < len(tests) and tests[i][0] >= lv:
            acc = (tests[i], *acc)
            i += 1
        suffix[lv] = acc
    level_of, kids_of, value_of = m._level, m._children, m._value

    def rec(x: int) -> bool:
        kids = kids_of[x]
        if kids is None:
            return bool(inside(value_of[x]))
        if _full(m, x, valid, inside, full):
            return True
        level = level_of[x]
        key = (x, suffix[level])
        found = full.get(key)
        if found is None:
            allowed = term.get(level, valid[level])
            found = all(rec(kids[v]) for v in allowed & valid[level])
            full[key] = found
        return found

    return rec(node)


def _full(m: Manager, node: int, valid: Sequence[frozenset[int]], inside: Callable[[Hashable], bool],
          memo: dict[int, bool]) -> bool:
    """Whether every admitted point below ``node`` reaches an accepted leaf (memoised in ``memo``)."""
    found = memo.get(node)
    if found is None:
        if m.is_leaf(node):
            found = bool(inside(m.value(node)))
        else:
            kids = m.children(node)
            found = all(_full(m, kids[v], valid, inside, memo) for v in valid[m.level(node)])
        memo[node] = found
    return found


def region_terms(m: Manager, node: int, inside: Callable[[Hashable], bool], valid: Sequence[frozenset[int]]
                 ) -> tuple[list[_Term], bool]:
    """An irredundant prime cover of the admitted points reaching accepted leaves, and whether it was completed
    (``False``: the region has more than :data:`MAX_PATHS` paths, or the cover more than :data:`MAX_IRREDUNDANT`
    terms, and the terms are only prime)."""
    terms: list[_Term] = []
    complete = True
    for path in m.paths(node, inside):
        term = {lv: s & valid[lv] for lv, s in path.items() if s & valid[lv] != valid[lv]}
        if any(not s for s in term.values()):
            continue
        terms.append(term)
        if len(terms) > _MAX_PATHS:
            return terms, False
    full: dict = {}
    primes: list[_Term] = []
    for term in terms:
        if any(_covers(p, term) for p in primes):
            continue
        for lv in sorted(term):
            wider = dict(term)
            del wider[lv]
            if _within(m, node, wider, valid, inside, full):
                term = wider
                continue
            for v in sorted(valid[lv] - term[lv]):
                grown = {**term, lv: term[lv] | {v}}
                if _within(m, node, grown, valid, inside, full):
                    term = grown
        primes = [p for p in primes if not _covers(term, p)] + [term]
    if len(primes) > _MAX_IRREDUNDANT:
        return primes, False
    primes.sort(key=lambda t: (len(t), sorted(t)))
    kept = list(primes)
    union = _Unions(m.sizes, valid)
    for term in sorted(primes, key=len, reverse=True):
        others = [t for t in kept if t is not term]
        if others and union.covers(others, term):
            kept = others
    return kept, complete


def _covers(a: _Term, b: _Term) -> bool:
    """Whether term ``a`` contains term ``b``."""
    return all(lv in b and b[lv] <= s for lv, s in a.items())


class _Unions:
    """Whether a union of terms covers a term (on admitted values), by small diagrams in one shared manager: the
    union of a list of terms is folded in list order, so folds of a common prefix are built once."""

    def __init__(self, sizes: Sequence[int], valid: Sequence[frozenset[int]]) -> None:
        self.m = Manager(sizes)
        self.valid = valid
        self.yes, self.no = self.m.leaf(True), self.m.leaf(False)
        self._fold: dict[tuple[int, int], int] = {}

    def covers(self, terms: Sequence[_Term], target: _Term) -> bool:
        m, union = self.m, self.no
        for t in terms:
            key = (id(t), union)
            found = self._fold.get(key)
            if found is None:
                found = self._fold[key] = m.ite_cube(t, self.yes, union)
            union = found
        return _within(m, union, target, self.valid, lambda v: v is True, {})


def _render_term(space: Space, term: Mapping[int, frozenset[int]]) -> str:
    if not term:
        return "true"
    return " ∧ ".join(_render_test(space, lv, values) for lv, values in sorted(term.items()))


def render(space: Space, terms: Sequence[_Term]) -> str:
    if not terms:
        return "false"
    if len(terms) == 1:
        return _render_term(space, terms[0])
    shown = " ∨ ".join(f"({_render_term(space, t)})" if len(t) > 1 else _render_term(space, t)
                       for t in terms[:_MAX_SHOWN])
    return shown + (f" ∨ … ({len(terms) - _MAX_SHOWN} more terms)" if len(terms) > _MAX_SHOWN else "")


def _render_test(space: Space, level: int, values: frozenset[int]) -> str:
    """One field's test, e.g. ``action_permission=true``, ``risk_score < 0.8``, ``channel ∈ {"app", "web"}``."""
    var = space.variables[level]
    if var.grouped:
        return "(" + " ∨ ".join(_config_text(var, i) for i in sorted(values)) + ")"
    name = var.fields[0]
    classes = [var.values[i] for i in sorted(values)]
    if len(classes) == 1:
        return _class_test(name, classes[0])
    points = [c for c in classes if len(c.pieces) == 1 and c.pieces[0].point and
              c.pieces[0].kind in (Kind.STRING, Kind.NUMBER, Kind.BOOLEAN)]
    if len(points) == len(classes):
        return f"{name} ∈ {{{', '.join(literal_text(c.pieces[0].lo) for c in points)}}}"
    return "(" + " ∨ ".join(_class_test(name, c) for c in classes) + ")"


def _class_test(name: str, cls) -> str:  # type: ignore[no-untyped-def]
    parts = []
    for p in cls.pieces:
        if p.kind is Kind.MISSING:
            parts.append(f"{name} is missing")
        elif p.kind is Kind.OTHER:
            parts.append(f"{name} is of another type")
        elif p.point:
            parts.append(f"{name}={literal_text(p.lo)}")
        elif p.lo is None and p.hi is None:
            parts.append(f"{name} is a {p.kind.value}")
        elif p.lo is None:
            parts.append(f"{name} < {literal_text(p.hi)}")
        elif p.hi is None:
            parts.append(f"{name} > {literal_text(p.lo)}")
        else:
            parts.append(f"{literal_text(p.lo)} < {name} < {literal_text(p.hi)}")
    return parts[0] if len(parts) == 1 else "(" + " ∨ ".join(parts) + ")"


def _config_text(var, index: int) -> str:  # type: ignore[no-untyped-def]
    config = var.values[index]
    bits = []
    for name, piece in zip(var.fields, config.pieces):
        desc = piece.describe()
        bits.append(f"{name} {desc}" if not piece.point else f"{name}={literal_text(piece.lo)}")
    shared = {}
    for name, piece, rank in zip(var.fields, config.pieces, config.ranks):
        if not piece.point and piece.kind in (Kind.NUMBER, Kind.STRING):
            shared.setdefault((piece.lo, piece.hi, piece.kind), []).append((rank, name))
    for members in shared.values():
        if len(members) > 1:
            members.sort()
            text = members[0][1]
            for (r0, _), (r1, n1) in zip(members, members[1:]):
                text += (" = " if r0 == r1 else " < ") + n1
            bits.append(text)
    return " ∧ ".join(bits)


__all__ = ["region_terms", "render"]
