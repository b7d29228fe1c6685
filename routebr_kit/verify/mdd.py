"""A multi-valued decision diagram: reduced, ordered, hash-consed, with arbitrary hashable leaf values.

Level ``i`` is variable ``i`` of a :class:`~routebr_kit.verify.space.Space`, taking values ``0 .. sizes[i]-1``.  A
node is ``(level, children)``; a leaf is a value.  Nodes are reduced (a node whose children are all one node is that
node) and unique (one id per ``(level, children)``), so two diagrams denote the same function iff they are the same
id — equivalence is a comparison of two integers.

The operations the verifier needs: :meth:`Manager.ite_cube` (states in a cube → one diagram, elsewhere another: how a
first-match rule chain is built bottom-up), :meth:`Manager.apply` (combine two diagrams leaf by leaf), leaf sets,
point search, weighted counting and paths.  Standard library only.
"""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping, Sequence
from typing import Any

_Cube = Mapping[int, frozenset[int]]


class Manager:
    """The node store of diagrams over variables of the given domain sizes."""

    __slots__ = ("sizes", "depth", "_level", "_children", "_unique", "_leaf", "_value", "_leaves_memo", "_groups",
                 "cache")

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = tuple(sizes)
        self.depth = len(self.sizes)
        self._level: list[int] = []
        self._children: list[tuple[int, ...] | None] = []
        self._unique: dict[tuple[int, tuple[int, ...]], int] = {}
        self._leaf: dict[Hashable, int] = {}
        self._value: dict[int, Hashable] = {}
        self._leaves_memo: dict[int, tuple] = {}
        self._groups: dict[int, tuple[tuple[int, frozenset[int]], ...]] = {}  # node -> (child, its values)
        #: For clients: results that are functions of node ids of this manager (e.g. a compiled rule chain).
        self.cache: dict[Hashable, Any] = {}

    # ---- construction
    def leaf(self, value: Hashable) -> int:
        found = self._leaf.get(value)
        if found is None:
            found = len(self._level)
            self._level.append(self.depth)
            self._children.append(None)
            self._leaf[value] = found
            self._value[found] = value
        return found

    def node(self, level: int, children: tuple[int, ...]) -> int:
        first = children[0]
        if all(c == first for c in children):
            return first
        key = (level, children)
        found = self._unique.get(key)
        if found is None:
            found = len(self._level)
            self._level.append(level)
            self._children.append(children)
            self._unique[key] = found
        return found

    def level(self, node: int) -> int:
        return self._level[node]

    def children(self, node: int) -> tuple[int, ...]:
        children = self._children[node]
        assert children is not None
        return children

    def is_leaf(self, node: int) -> bool:
        return self._children[node] is None

    def value(self, node: int) -> Hashable:
        return self._value[node]

    def ite_cube(self, cube: _Cube, then: int, other: int) -> int:
        """The diagram equal to the leaf ``then`` on the states of ``cube`` and to ``other`` elsewhere."""
        levels = sorted(cube)
        if not levels:
            return then
        sets = [cube[lv] for lv in levels]
        memo: dict[tuple[int, int], int] = {}
        sizes, level_of, kids, make = self.sizes, self._level, self._children, self.node

        def rec(i: int, node: int) -> int:
            if i == len(levels):
                return then
            key = (i, node)
            found = memo.get(key)
            if found is not None:
                return found
            lv, allowed = levels[i], sets[i]
            nl = level_of[node]
            if nl < lv:
                out = make(nl, tuple(rec(i, c) for c in kids[node]))  # type: ignore[union-attr]
            elif nl == lv:
                out = make(lv, tuple(rec(i + 1, c) if v in allowed else c
                                     for v, c in enumerate(kids[node])))  # type: ignore[arg-type]
            else:
                inner = rec(i + 1, node)
                out = make(lv, tuple(inner if v in allowed else node for v in range(sizes[lv])))
            memo[key] = out
            return out

        return rec(0, other)

    def apply(self, fn: Callable[[Any, Any], Hashable], a: int, b: int) -> int:
        """The diagram of ``fn(leaf of a, leaf of b)`` state by state."""
        if a == b:  # (one diagram against itself: one walk)
            return self.map(lambda v: fn(v, v), a)
        memo: dict[tuple[int, int], int] = {}
        level_of, kids = self._level, self._children

        def rec(x: int, y: int) -> int:
            key = (x, y)
            found = memo.get(key)
            if found is not None:
                return found
            lx, ly = level_of[x], level_of[y]
            if kids[x] is None and kids[y] is None:
                out = self.leaf(fn(self._value[x], self._value[y]))
            else:
                lv = min(lx, ly)
                cx = kids[x] if lx == lv else None
                cy = kids[y] if ly == lv else None
                out = self.node(lv, tuple(rec(cx[v] if cx is not None else x, cy[v] if cy is not None else y)
                                          for v in range(self.sizes[lv])))
            memo[key] = out
            return out

        return rec(a, b)

    def map(self, fn: Callable[[Any], Hashable], a: int) -> int:
        memo: dict[int, int] = {}

        def rec(x: int) -> int:
            found = memo.get(x)
            if found is None:
                kids = self._children[x]
                found = self.leaf(fn(self._value[x])) if kids is None else self.node(
                    self._level[x], tuple(rec(c) for c in kids))
                memo[x] = found
            return found

        return rec(a)

    def restrict(self, a: int, cube: _Cube) -> int:
        """``a`` on the points of ``cube``; every other point leads to the leaf ``None``."""
        if not cube:
            return a
        mask = self.ite_cube(cube, self.leaf(True), self.leaf(False))
        return self.apply(lambda inside, v: v if inside else None, mask, a)

    # ---- inspection
    def leaves(self, a: int) -> tuple:
        """Every leaf value reachable from ``a`` (every one is taken by some point), in the order their nodes were
        made: a walk over them is the same in every process, whatever the string hash seed."""
        found = self._leaves_memo.get(a)
        if found is None:
            found = self._leaves_memo[a] = tuple(dict.fromkeys(
                self._value[x] for x in sorted(self._reachable(a)) if self._children[x] is None))
        return found

    def evaluate(self, a: int, point: Sequence[int]) -> Hashable:
        x = a
        while self._children[x] is not None:
            x = self._children[x][point[self._level[x]]]  # type: ignore[index]
        return self._value[x]

    def find(self, a: int, accept: Callable[[Hashable], bool], prefer: Sequence[Sequence[int]] | None = None
             ) -> tuple[list[int | None], Hashable] | None:
        """A partial point (``None``: any value) reaching an accepted leaf, or ``None``.  ``prefer[level]`` orders
        the values tried at each level."""
        ok = self._accepting(accept)
        if not ok(a):
            return None
        point, x = self._descend(a, ok, prefer)
        return point, self._value[x]

    def _descend(self, a: int, ok: Callable[[int], bool], prefer: Sequence[Sequence[int]] | None
                 ) -> tuple[list[int | None], int]:
        """From ``a`` to a leaf, at each node the first value in ``prefer`` order whose child is ``ok``: the partial
        point (``None``: a level the path skips) and the leaf."""
        point: list[int | None] = [None] * self.depth
        x = a
        while self._children[x] is not None:
            lv = self._level[x]
            kids = self._children[x]
            order = prefer[lv] if prefer is not None else range(len(kids))  # type: ignore[arg-type]
            v = next(v for v in order if ok(kids[v]))  # type: ignore[index]
            point[lv] = v
            x = kids[v]  # type: ignore[index]
        return point, x

    def _accepting(self, accept: Callable[[Hashable], bool]) -> Callable[[int], bool]:
        """``ok(x)``: whether some point from node ``x`` reaches an accepted leaf (memoised)."""
        memo: dict[int, bool] = {}

        def ok(x: int) -> bool:
            found = memo.get(x)
            if found is None:
                kids = self._children[x]
                found = memo[x] = accept(self._value[x]) if kids is None else any(ok(c) for c in set(kids))
            return found

        return ok

    def count(self, a: int, weights: Sequence[Sequence[int | None]]) -> dict[Hashable, int | None]:
        """Per leaf, the weighted number of points reaching it (a value's weight is its number of concrete values;
        ``None`` — unbounded — makes the total ``None``).  Levels a path skips count every value.

        One top-down pass in level order: each node receives the weighted number of partial points reaching it
        (the sum over its incoming edges), so the cost is one multiplication per edge whatever the number of
        leaves."""
        total = [count_sum(w) for w in weights]

        @functools.cache
        def skip(frm: int, to: int) -> int | None:  # every value of the levels frm..to-1
            return functools.reduce(count_mul, total[frm:to], 1)

        level_of, kids_of = self._level, self._children
        nodes = self._reachable(a)
        inflow: dict[int, int | None] = {a: skip(0, level_of[a])}
        out: dict[Hashable, int | None] = {}
        for x in sorted(nodes, key=level_of.__getitem__):
            f = inflow.get(x, 0)
            if f == 0:
                continue
            kids = kids_of[x]
            if kids is None:
                out[self._value[x]] = f
                continue
            lv = level_of[x]
            row = weights[lv]
            for v, c in enumerate(kids):
                factor = count_mul(row[v], skip(lv + 1, level_of[c]))
                if factor == 0:
                    continue
                inflow[c] = _count_add(inflow.get(c, 0), count_mul(f, factor))
        return {k: v for k, v in out.items() if v != 0}

    def _reachable(self, a: int) -> list[int]:
        stack, seen = [a], {a}
        kids_of = self._children
        while stack:
            for c in kids_of[stack.pop()] or ():
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return list(seen)

    def reach(self, a: int, bit_of: Callable[[Hashable], int]) -> dict[int, int]:
        """For every node reachable from ``a``, the union (``|``) of ``bit_of(leaf value)`` over the leaves it
        reaches: one bottom-up pass."""
        level_of, kids_of = self._level, self._children
        out: dict[int, int] = {}
        for x in sorted(self._reachable(a), key=level_of.__getitem__, reverse=True):
            kids = kids_of[x]
            if kids is None:
                out[x] = bit_of(self._value[x])
            else:
                out[x] = functools.reduce(operator.or_, (out[c] for c in set(kids)), 0)
        return out

    def find_all(self, a: int, prefer: Sequence[Sequence[int]] | None = None
                 ) -> dict[Hashable, list[int | None]]:
        """For every leaf value reachable from ``a``, the partial point :meth:`find` returns for it (the first
        path in ``prefer`` order), all from one bottom-up pass of leaf bit sets."""
        values: list[Hashable] = []

        def bit_of(value: Hashable) -> int:
            values.append(value)
            return 1 << (len(values) - 1)

        reach = self.reach(a, bit_of)
        return {value: self._descend(a, lambda c, want=1 << i: bool(reach[c] & want), prefer)[0]
                for i, value in enumerate(values)}

    def paths(self, a: int, accept: Callable[[Hashable], bool]) -> Iterator[dict[int, frozenset[int]]]:
        """Disjoint cubes covering the points that reach accepted leaves (edges to one child merged)."""
        ok = self._accepting(accept)
        groups = self._groups

        def rec(x: int, cube: dict[int, frozenset[int]]) -> Iterator[dict[int, frozenset[int]]]:
            kids = self._children[x]
            if kids is None:
                if accept(self._value[x]):
                    yield dict(cube)
                return
            lv = self._level[x]
            edges = groups.get(x)
            if edges is None:
                by_child: dict[int, list[int]] = {}
                for v, c in enumerate(kids):
                    by_child.setdefault(c, []).append(v)
                edges = groups[x] = tuple((c, frozenset(values)) for c, values in by_child.items())
            for c, values in edges:
                if ok(c):
                    cube[lv] = values
                    yield from rec(c, cube)
                    del cube[lv]

        if ok(a):
            yield from rec(a, {})

    def size(self, a: int) -> int:
        """Number of nodes (leaves included) reachable from ``a``."""
        return len(self._reachable(a))


# Counts of points, ``None`` standing for unboundedly many (``0 * None`` is 0).
def count_mul(a: int | None, b: int | None) -> int | None:
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def _count_add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def count_sum(values: Iterable[int | None]) -> int | None:
    return functools.reduce(_count_add, values, 0)


__all__ = ["Manager", "count_mul", "count_sum"]
