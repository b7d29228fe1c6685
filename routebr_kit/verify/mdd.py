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

from collections.abc import Callable, Hashable, Iterator, Mapping, Sequence
from typing import Any

Cube = Mapping[int, frozenset[int]]


class Manager:
    """The node store of diagrams over variables of the given domain sizes."""

    __slots__ = ("sizes", "depth", "_level", "_children", "_unique", "_leaf", "_value", "_leaves_memo")

    def __init__(self, sizes: Sequence[int]) -> None:
        self.sizes = tuple(sizes)
        self.depth = len(self.sizes)
        self._level: list[int] = []
        self._children: list[tuple[int, ...] | None] = []
        self._unique: dict[tuple[int, tuple[int, ...]], int] = {}
        self._leaf: dict[Hashable, int] = {}
        self._value: dict[int, Hashable] = {}
        self._leaves_memo: dict[int, frozenset] = {}

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

    def ite_cube(self, cube: Cube, then: int, other: int) -> int:
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

    def restrict(self, a: int, cube: Cube) -> int:
        """``a`` on the points of ``cube``; every other point leads to the leaf ``None``."""
        if not cube:
            return a
        mask = self.ite_cube(cube, self.leaf(True), self.leaf(False))
        return self.apply(lambda inside, v: v if inside else None, mask, a)

    # ---- inspection
    def leaves(self, a: int) -> frozenset:
        """Every leaf value reachable from ``a`` (every one is taken by some point)."""
        found = self._leaves_memo.get(a)
        if found is not None:
            return found
        stack, seen, out = [a], {a}, set()
        while stack:
            x = stack.pop()
            kids = self._children[x]
            if kids is None:
                out.add(self._value[x])
                continue
            for c in kids:
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        result = frozenset(out)
        self._leaves_memo[a] = result
        return result

    def evaluate(self, a: int, point: Sequence[int]) -> Hashable:
        x = a
        while self._children[x] is not None:
            x = self._children[x][point[self._level[x]]]  # type: ignore[index]
        return self._value[x]

    def find(self, a: int, accept: Callable[[Hashable], bool], prefer: Sequence[Sequence[int]] | None = None
             ) -> tuple[list[int | None], Hashable] | None:
        """A partial point (``None``: any value) reaching an accepted leaf, or ``None``.  ``prefer[level]`` orders
        the values tried at each level."""
        memo: dict[int, bool] = {}

        def ok(x: int) -> bool:
            found = memo.get(x)
            if found is None:
                kids = self._children[x]
                found = accept(self._value[x]) if kids is None else any(ok(c) for c in set(kids))
                memo[x] = found
            return found

        if not ok(a):
            return None
        point: list[int | None] = [None] * self.depth
        x = a
        while self._children[x] is not None:
            lv = self._level[x]
            kids = self._children[x]
            order = prefer[lv] if prefer is not None else range(len(kids))  # type: ignore[arg-type]
            v = next(v for v in order if ok(kids[v]))  # type: ignore[index]
            point[lv] = v
            x = kids[v]  # type: ignore[index]
        return point, self._value[x]

    def count(self, a: int, weights: Sequence[Sequence[int | None]]) -> dict[Hashable, int | None]:
        """Per leaf, the weighted number of points reaching it (a value's weight is its number of concrete values;
        ``None`` — unbounded — makes the total ``None``).  Levels a path skips count every value."""
        total = [_sum(w) for w in weights]
        memo: dict[int, dict[Hashable, int | None]] = {}

        def skip(frm: int, to: int) -> int | None:
            out: int | None = 1
            for lv in range(frm, to):
                out = _mul(out, total[lv])
            return out

        def rec(x: int) -> dict[Hashable, int | None]:
            found = memo.get(x)
            if found is not None:
                return found
            kids = self._children[x]
            if kids is None:
                found = {self._value[x]: 1}
            else:
                lv = self._level[x]
                found = {}
                for v, c in enumerate(kids):
                    factor = _mul(weights[lv][v], skip(lv + 1, self._level[c]))
                    if factor == 0:
                        continue
                    for leaf, n in rec(c).items():
                        found[leaf] = _add(found.get(leaf, 0), _mul(factor, n))
            memo[x] = found
            return found

        out = {}
        head = skip(0, self._level[a])
        for leaf, n in rec(a).items():
            out[leaf] = _mul(head, n)
        return {k: v for k, v in out.items() if v != 0}

    def paths(self, a: int, accept: Callable[[Hashable], bool]) -> Iterator[dict[int, frozenset[int]]]:
        """Disjoint cubes covering the points that reach accepted leaves (edges to one child merged)."""
        memo_ok: dict[int, bool] = {}

        def ok(x: int) -> bool:
            found = memo_ok.get(x)
            if found is None:
                kids = self._children[x]
                found = accept(self._value[x]) if kids is None else any(ok(c) for c in set(kids))
                memo_ok[x] = found
            return found

        def rec(x: int, cube: dict[int, frozenset[int]]) -> Iterator[dict[int, frozenset[int]]]:
            kids = self._children[x]
            if kids is None:
                if accept(self._value[x]):
                    yield dict(cube)
                return
            lv = self._level[x]
            by_child: dict[int, list[int]] = {}
            for v, c in enumerate(kids):
                by_child.setdefault(c, []).append(v)
            for c, values in by_child.items():
                if ok(c):
                    cube[lv] = frozenset(values)
                    yield from rec(c, cube)
                    del cube[lv]

        if ok(a):
            yield from rec(a, {})

    def size(self, a: int) -> int:
        """Number of nodes (leaves included) reachable from ``a``."""
        stack, seen = [a], {a}
        while stack:
            kids = self._children[stack.pop()]
            for c in kids or ():
                if c not in seen:
                    seen.add(c)
                    stack.append(c)
        return len(seen)


def _mul(a: int | None, b: int | None) -> int | None:
    if a == 0 or b == 0:
        return 0
    return None if a is None or b is None else a * b


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def _sum(values: Sequence[int | None]) -> int | None:
    out: int | None = 0
    for v in values:
        out = _add(out, v)
    return out


__all__ = ["Cube", "Manager"]
