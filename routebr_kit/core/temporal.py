"""Temporal predicates over a request's session (issue 32): ``within``, ``count``, ``sum``, ``before``.

In a rule's ``condition_json`` a temporal predicate is a key ``@within``, ``@count``, ``@sum`` or ``@before``
whose value is one object (or a non-empty list of objects, ANDed).  It composes with the state predicates of the
same condition (AND) and with the rest of the program (first match, by priority)::

    {"@within": {"kind": "identity_check", "s": 600, "negate": true}}          # no identity check in 10 min
    {"@count": {"kind": "dispatch", "action": "A5_PROTECTED_ACTION", "window_s": 3600, "gte": 2}}
    {"@sum": {"attribute": "amount", "kind": "dispatch", "window_s": 86400, "gt": 100000}}
    {"@before": {"kind": "approval", "action": "A5_PROTECTED_ACTION"}}

Semantics, for a request at time ``now`` with history ``H`` (events oldest first, every ``at <= now``):

* **filter** — ``kind``, ``action``, ``object``, ``terminal``: each a string or a non-empty list of strings; an
  event matches when, for every key given, its ``kind`` / ``action_id`` / ``object_id`` / ``terminal`` is one of
  them (an event without that field never matches a filter on it).  No key: every event matches.
  ``M`` = the matching events of ``H``.
* **window** — ``window_s`` (``count``, ``sum``; optional): ``W`` = the events ``e`` of ``M`` with
  ``now - e.at <= window_s`` (closed: an event exactly ``window_s`` seconds old is in it); no ``window_s``:
  ``W = M``.
* ``within`` — ``s``: holds iff ``M`` is non-empty and ``now - max(e.at for e in M) <= s``.
* ``count`` — bounds ``gt``, ``gte``, ``lt``, ``lte``, ``eq`` (at least one, integers ≥ 0, ANDed): holds iff
  ``|W|`` meets every bound.
* ``sum`` — ``attribute`` (``amount`` or ``level``), bounds as for ``count``, ``include_current`` (default
  ``true``): ``total = Σ e.attributes.get(attribute, 0) for e in W``, plus the request's own
  ``session.attributes.get(attribute, 0)`` when ``include_current``; holds iff ``total`` meets every bound.
* ``before`` — holds iff ``M`` is non-empty.
* ``negate: true`` — the predicate's value inverted.
* A request with no session: every temporal predicate is false (the controller fails closed before: a program
  with a temporal rule requires a session).

Every number is an integer (times in seconds, amounts in minor units); a loader error names the rule.  Each
predicate reports the events that decided it (:meth:`TemporalPredicate.evaluate`), shown in the decision trace.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import DataError, ErrorCode
from .session import ATTRIBUTE_TYPES, BOUNDED_TERMINALS, KINDS, SESSION_KEY, Event, Session, is_count

OPS = ("within", "count", "sum", "before")
BOUNDS = ("gt", "gte", "lt", "lte", "eq")
#: Filter key -> the event field it tests.
_FILTER_FIELDS = {"kind": "kind", "action": "action_id", "object": "object_id", "terminal": "terminal"}
_COMMON = frozenset(_FILTER_FIELDS) | {"negate"}
_KEYS = {"within": _COMMON | {"s"}, "count": _COMMON | {"window_s", *BOUNDS},
         "sum": _COMMON | {"window_s", "attribute", "include_current", *BOUNDS}, "before": _COMMON}
_SYMBOL = {"gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "eq": "=="}
_TERMINALS = ("DISPATCH", *BOUNDED_TERMINALS)


def compare(op: str, value: int, bound: int) -> bool:
    if op == "gt":
        return value > bound
    if op == "gte":
        return value >= bound
    if op == "lt":
        return value < bound
    if op == "lte":
        return value <= bound
    return value == bound


@dataclass(frozen=True, slots=True)
class TemporalPredicate:
    """One temporal test (see the module docstring for its semantics)."""

    op: str
    filter: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (event field, accepted values), sorted
    seconds: int | None = None  # within: s
    window_s: int | None = None  # count, sum
    bounds: tuple[tuple[str, int], ...] = ()  # count, sum
    attribute: str | None = None  # sum
    include_current: bool = True  # sum
    negate: bool = False

    # ------------------------------------------------------------------ evaluation
    def matches(self, event: Event) -> bool:
        return all(getattr(event, name) in accepted for name, accepted in self.filter)

    def evaluate(self, session: Session | None) -> tuple[bool, tuple[int, ...]]:
        """``(value, evidence)``: the predicate's value on ``session`` and the indices of the history events that
        decided it (the latest match for ``within``, the window for ``count``/``sum``, the first match for
        ``before``)."""
        if session is None:
            return False, ()
        measured, evidence = self._measured(session)
        if self.op == "within":
            value = measured is not None and measured <= self.seconds  # type: ignore[operator]
        elif self.op == "before":
            value = bool(measured)
        else:
            value = all(compare(op, measured, bound) for op, bound in self.bounds)  # type: ignore[arg-type]
        return value is not self.negate, evidence

    def measure(self, session: Session) -> int | None:
        """The quantity compared (``count``: ``|W|``; ``sum``: the total; ``within``: the age of the latest match
        or ``None``; ``before``: ``|M|``); for display."""
        return self._measured(session)[0]

    def _measured(self, session: Session) -> tuple[int | None, tuple[int, ...]]:
        now, events = session.now, session.events
        matching = [i for i, e in enumerate(events) if self.matches(e)]
        if self.op == "within":
            return (now - events[matching[-1]].at if matching else None), tuple(matching[-1:])
        if self.op == "before":
            return len(matching), tuple(matching[:1])
        window = tuple(i for i in matching if self.window_s is None or now - events[i].at <= self.window_s)
        if self.op == "count":
            return len(window), window
        total = sum(events[i].attributes.get(self.attribute, 0) for i in window)  # type: ignore[arg-type]
        return total + (session.attributes.get(self.attribute, 0) if self.include_current else 0), window  # type: ignore[arg-type]

    def holds(self, values: Mapping[str, Any]) -> bool:
        """The value on the session riding in ``values`` under :data:`SESSION_KEY` (none: false)."""
        session = values.get(SESSION_KEY)
        return self.evaluate(session if isinstance(session, Session) else None)[0]

    # ------------------------------------------------------------------ display
    def describe(self) -> str:
        flt = ", ".join(f"{name}={'|'.join(vals)}" for name, vals in self.filter) or "any event"
        if self.op == "within":
            text = f"within({flt}; {self.seconds}s)"
        elif self.op == "before":
            text = f"before({flt})"
        else:
            window = f"; {self.window_s}s" if self.window_s is not None else ""
            what = "count" if self.op == "count" else f"sum[{self.attribute}" + (
                "+current]" if self.include_current else "]")
            text = f"{what}({flt}{window}) " + " and ".join(f"{_SYMBOL[o]} {b}" for o, b in self.bounds)
        return ("NOT " if self.negate else "") + text

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        reverse = {v: k for k, v in _FILTER_FIELDS.items()}
        for name, vals in self.filter:
            out[reverse[name]] = vals[0] if len(vals) == 1 else list(vals)
        if self.seconds is not None:
            out["s"] = self.seconds
        if self.window_s is not None:
            out["window_s"] = self.window_s
        if self.attribute is not None:
            out["attribute"] = self.attribute
            out["include_current"] = self.include_current
        out.update(dict(self.bounds))
        if self.negate:
            out["negate"] = True
        return out


def parse_temporal(op: str, spec: Any, *, where: str = "condition_json",
                   catalog_ids: frozenset[str] | None = None) -> list[TemporalPredicate]:
    """Parse one ``@op`` value (an object or a non-empty list of objects); :class:`DataError` otherwise."""
    def bad(code: ErrorCode, expected: str, got: Any) -> DataError:
        return DataError(code, expected, got=got, field=where, detail=f"temporal predicate {op!r}")

    if op not in OPS:
        raise bad(ErrorCode.UNKNOWN_OPERATOR, "one of @" + ", @".join(OPS), op)
    specs = spec if isinstance(spec, list) else [spec]
    if not specs:
        raise bad(ErrorCode.INVALID_CONDITION, "an object or a non-empty list of objects", spec)
    out = []
    for one in specs:
        if not isinstance(one, Mapping):
            raise bad(ErrorCode.INVALID_CONDITION, "an object of filter and operand keys", one)
        unknown = sorted(str(k) for k in one if k not in _KEYS[op])
        if unknown:
            raise bad(ErrorCode.UNKNOWN_OPERATOR, f"only the keys {', '.join(sorted(_KEYS[op]))}", unknown[0])
        out.append(_parse_one(op, one, bad, catalog_ids))
    return out


def _parse_one(op: str, spec: Mapping[str, Any], bad: Callable[..., DataError],
               catalog_ids: frozenset[str] | None) -> TemporalPredicate:
    flt = []
    for key, name in _FILTER_FIELDS.items():
        if key not in spec:
            continue
        raw = spec[key]
        values = [raw] if type(raw) is str else raw
        if not isinstance(values, list) or not values or any(type(v) is not str or not v for v in values):
            raise bad(ErrorCode.INVALID_OPERAND, f"{key}: a string or a non-empty list of strings", raw)
        allowed = {"kind": KINDS, "terminal": _TERMINALS}.get(key)
        if key == "action" and catalog_ids is not None:
            allowed = tuple(catalog_ids)
        wrong = [v for v in values if allowed is not None and v not in allowed]
        if wrong:
            raise bad(ErrorCode.INVALID_OPERAND, f"{key}: one of {', '.join(sorted(allowed))}", wrong[0])  # type: ignore[arg-type]
        flt.append((name, tuple(sorted(set(values)))))
    negate = spec.get("negate", False)
    if type(negate) is not bool:
        raise bad(ErrorCode.INVALID_OPERAND, "negate: true or false", negate)
    kwargs: dict[str, Any] = {}
    if op == "within":
        if not is_count(spec.get("s")):
            raise bad(ErrorCode.INVALID_OPERAND, "s: an integer number of seconds >= 0", spec.get("s"))
        kwargs["seconds"] = spec["s"]
    if op in ("count", "sum"):
        if "window_s" in spec:
            if not is_count(spec["window_s"]):
                raise bad(ErrorCode.INVALID_OPERAND, "window_s: an integer number of seconds >= 0", spec["window_s"])
            kwargs["window_s"] = spec["window_s"]
        bounds = tuple((b, spec[b]) for b in BOUNDS if b in spec)
        if not bounds:
            raise bad(ErrorCode.INVALID_CONDITION, f"at least one bound of {', '.join(BOUNDS)}", dict(spec))
        wrong = [v for _, v in bounds if not is_count(v)]
        if wrong:
            raise bad(ErrorCode.INVALID_OPERAND, "bounds: integers >= 0", wrong[0])
        kwargs["bounds"] = bounds
    if op == "sum":
        attribute = spec.get("attribute")
        if ATTRIBUTE_TYPES.get(attribute) != "count":  # type: ignore[arg-type]
            names = sorted(k for k, v in ATTRIBUTE_TYPES.items() if v == "count")
            raise bad(ErrorCode.INVALID_OPERAND, f"attribute: one of {', '.join(names)}", attribute)
        include = spec.get("include_current", True)
        if type(include) is not bool:
            raise bad(ErrorCode.INVALID_OPERAND, "include_current: true or false", include)
        kwargs.update(attribute=attribute, include_current=include)
    return TemporalPredicate(op, tuple(sorted(flt)), negate=negate, **kwargs)


def explain(predicates: tuple[TemporalPredicate, ...], session: Session | None) -> list[tuple[str, str]]:
    """``(outcome, detail)`` per predicate: its description, value, measured quantity and deciding events."""
    rows = []
    for p in predicates:
        value, evidence = p.evaluate(session)
        measured = None if session is None else p.measure(session)
        events = "; ".join(f"#{i} {session.events[i].describe()}" for i in evidence) if session else ""
        detail = f"now={session.now if session else '-'}; measured {measured}; events: {events or 'none'}"
        rows.append((f"{p.describe()} -> {str(value).lower()}", detail))
    return rows


__all__ = ["BOUNDS", "OPS", "TemporalPredicate", "compare", "explain", "parse_temporal"]
