"""A session and a clock, as inputs of a request (issue 32).

A :class:`~routebr_kit.core.records.RouteRequest` may carry a ``session``: the request's own time (an explicit
input — the controller never reads a clock), the request's own typed attributes (e.g. the ``amount`` of a
transfer) and a bounded history of earlier events::

    {"now": 7200,                                   # integer seconds (any epoch), the request's time
     "attributes": {"amount": 2500},                # optional: the request's own typed attributes
     "events": [                                    # oldest first, at most MAX_EVENTS
       {"at": 6900, "kind": "identity_check", "attributes": {"method": "otp"}},
       {"at": 7000, "kind": "dispatch", "action_id": "A5_PROTECTED_ACTION", "object_id": "ETF_001",
        "terminal": "DISPATCH", "attributes": {"amount": 1000}},
       {"at": 7100, "kind": "non_dispatch", "action_id": "A5_PROTECTED_ACTION", "object_id": "NONE",
        "terminal": "REJECT"}]}

Event kinds (closed): ``dispatch`` and ``non_dispatch`` are decisions the controller made (``action_id`` a
catalog action, ``object_id`` a string, ``terminal`` ``DISPATCH`` resp. one of ``CLARIFY``, ``DEFER``,
``HANDOFF``, ``REJECT``); ``identity_check`` and ``approval`` are external events (``action_id`` optional: the
action an approval is for; ``object_id`` optional; ``terminal`` absent or ``null``).

Attributes (closed, typed): ``amount`` — an integer ≥ 0 in minor units (cents); ``currency``, ``method`` —
strings; ``level`` — an integer ≥ 0.

A session is checked before anything else, like the runtime state (:func:`check_session`): every problem is a
:class:`~routebr_kit.core.state.StateViolation` whose field is a path such as ``session.events[2].at``, and the
controller ends in its fail-closed terminal (``FAIL_CLOSED_INVALID_STATE``).  Checks: a mapping with only the
keys above; ``now`` and every ``at`` integers ≥ 0; at most :data:`MAX_EVENTS` events (``TOO_LONG``); times
non-decreasing and none after ``now`` (``OUT_OF_ORDER``); known kinds; a decision event's action in the catalog
and its terminal consistent with its kind; attributes known and of their type.  A program with a temporal rule
requires a session on every request (``session: MISSING_FIELD``).  A request without a session on a program
without temporal rules is decided exactly as before.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .errors import short_repr
from .state import StateErrorCode as S
from .state import StateViolation

#: The longest history a session may carry.
MAX_EVENTS = 64
#: Event kinds: the controller's decisions, then external events.
_DECISION_KINDS = ("dispatch", "non_dispatch")
EXTERNAL_KINDS = ("identity_check", "approval")
KINDS = _DECISION_KINDS + EXTERNAL_KINDS
BOUNDED_TERMINALS = ("CLARIFY", "DEFER", "HANDOFF", "REJECT")
#: Attribute name -> type ("count": an integer >= 0; "string").
ATTRIBUTE_TYPES = MappingProxyType({"amount": "count", "level": "count", "currency": "string", "method": "string"})
#: The reserved key under which a session rides along with the state values the rules read.
SESSION_KEY = "@session"
_EVENT_KEYS = frozenset({"at", "kind", "action_id", "object_id", "terminal", "attributes"})
_SESSION_KEYS = frozenset({"now", "events", "attributes", "session_id"})


def is_count(value: Any) -> bool:
    return type(value) is int and value >= 0


@dataclass(frozen=True, slots=True)
class Event:
    """One earlier event of a session (validated when a :class:`Session` is built)."""

    at: int
    kind: str
    action_id: str | None = None
    object_id: str | None = None
    terminal: str | None = None
    attributes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"at": self.at, "kind": self.kind}
        for name in ("action_id", "object_id", "terminal"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        return out

    def describe(self) -> str:
        what = self.kind + (f" {self.action_id}" if self.action_id else "") + (
            f"@{self.object_id}" if self.object_id and self.object_id != "NONE" else "")
        if self.terminal and self.kind == "non_dispatch":
            what += f" ({self.terminal})"
        attrs = ", ".join(f"{k}={v}" for k, v in sorted(self.attributes.items()))
        return f"t={self.at} {what}" + (f" [{attrs}]" if attrs else "")


@dataclass(frozen=True, slots=True)
class Session:
    """The request's time, its own attributes and the history before it (oldest first).  Build one from its JSON
    form with :func:`check_session` (which returns the violations)."""

    now: int
    events: tuple[Event, ...] = ()
    attributes: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    session_id: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "events", tuple(self.events))
        object.__setattr__(self, "attributes", MappingProxyType(dict(self.attributes)))

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"now": self.now, "events": [e.as_dict() for e in self.events]}
        if self.attributes:
            out["attributes"] = dict(self.attributes)
        if self.session_id:
            out["session_id"] = self.session_id
        return out

    def with_event(self, event: Event) -> Session:
        """The session with ``event`` appended to its history (the caller keeps times in order)."""
        return Session(self.now, (*self.events, event), self.attributes, self.session_id)


def event_of_decision(decision: Any, at: int, attributes: Mapping[str, Any] | None = None) -> Event:
    """The history event a decision (anything with ``terminal``, ``action_id``, ``object_id``) becomes."""
    terminal = getattr(decision.terminal, "value", decision.terminal)
    kind = "dispatch" if terminal == "DISPATCH" else "non_dispatch"
    return Event(at, kind, decision.action_id, decision.object_id, terminal, attributes or {})


def _attributes(raw: Any, path: str, out: list[StateViolation]) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        out.append(StateViolation(S.WRONG_TYPE, path, short_repr(raw)))
        return {}
    attrs: dict[str, Any] = {}
    for name, value in raw.items():
        kind = ATTRIBUTE_TYPES.get(name) if type(name) is str else None
        if kind is None:
            out.append(StateViolation(S.UNKNOWN_FIELD, f"{path}.{name}"))
        elif (kind == "count" and not is_count(value)) or (kind == "string" and type(value) is not str):
            out.append(StateViolation(S.WRONG_TYPE, f"{path}.{name}", short_repr(value)))
        else:
            attrs[name] = value
    return attrs


def check_session(raw: Any, catalog_ids: Iterable[str] | None = None
                  ) -> tuple[Session | None, tuple[StateViolation, ...]]:
    """``(session, ())`` for a valid session (a :class:`Session` or its JSON form), else ``(None, violations)``.
    Never raises.  ``catalog_ids``: when given, a decision event's ``action_id`` must be one of them."""
    if isinstance(raw, Session):
        return raw, ()
    out: list[StateViolation] = []
    if not isinstance(raw, Mapping):
        return None, (StateViolation(S.WRONG_TYPE, "session", short_repr(raw)),)
    for key in raw:
        if key not in _SESSION_KEYS:
            out.append(StateViolation(S.UNKNOWN_FIELD, f"session.{key}"))
    now = raw.get("now")
    if now is None and "now" not in raw:
        out.append(StateViolation(S.MISSING_FIELD, "session.now"))
    elif not is_count(now):
        out.append(StateViolation(S.WRONG_TYPE, "session.now", short_repr(now)))
        now = None
    session_id = raw.get("session_id", "")
    if type(session_id) is not str:
        out.append(StateViolation(S.WRONG_TYPE, "session.session_id", short_repr(session_id)))
    attributes = _attributes(raw.get("attributes"), "session.attributes", out)
    events_raw = raw.get("events", [])
    if not isinstance(events_raw, (list, tuple)):
        out.append(StateViolation(S.WRONG_TYPE, "session.events", short_repr(events_raw)))
        events_raw = []
    if len(events_raw) > MAX_EVENTS:
        out.append(StateViolation(S.TOO_LONG, "session.events", f"{len(events_raw)} > {MAX_EVENTS}"))
        events_raw = []
    catalog = None if catalog_ids is None else frozenset(catalog_ids)
    events: list[Event] = []
    last = None
    for i, item in enumerate(events_raw):
        path = f"session.events[{i}]"
        event = _check_event(item, path, catalog, out)
        if event is None:
            last = None  # (order is not judged across a garbled event)
            continue
        if last is not None and event.at < last:
            out.append(StateViolation(S.OUT_OF_ORDER, f"{path}.at", f"{event.at} < {last}"))
        if now is not None and event.at > now:
            out.append(StateViolation(S.OUT_OF_ORDER, f"{path}.at", f"{event.at} > now {now}"))
        last = event.at
        events.append(event)
    if out:
        return None, tuple(out)
    return Session(now, tuple(events), attributes, session_id), ()


def _check_event(item: Any, path: str, catalog: frozenset[str] | None,
                 out: list[StateViolation]) -> Event | None:
    before = len(out)
    if not isinstance(item, Mapping):
        out.append(StateViolation(S.WRONG_TYPE, path, short_repr(item)))
        return None
    for key in item:
        if key not in _EVENT_KEYS:
            out.append(StateViolation(S.UNKNOWN_FIELD, f"{path}.{key}"))
    at = item.get("at")
    if "at" not in item:
        out.append(StateViolation(S.MISSING_FIELD, f"{path}.at"))
    elif not is_count(at):
        out.append(StateViolation(S.WRONG_TYPE, f"{path}.at", short_repr(at)))
    kind = item.get("kind")
    if kind not in KINDS:
        code = S.MISSING_FIELD if "kind" not in item else S.VALUE_NOT_ALLOWED
        out.append(StateViolation(code, f"{path}.kind", "" if "kind" not in item else short_repr(kind)))
    action_id, object_id, terminal = item.get("action_id"), item.get("object_id"), item.get("terminal")
    for name, value in (("action_id", action_id), ("object_id", object_id), ("terminal", terminal)):
        if value is not None and type(value) is not str:
            out.append(StateViolation(S.WRONG_TYPE, f"{path}.{name}", short_repr(value)))
    if kind in _DECISION_KINDS:
        if action_id is None:
            out.append(StateViolation(S.MISSING_FIELD, f"{path}.action_id"))
        elif catalog is not None and action_id not in catalog:
            out.append(StateViolation(S.VALUE_NOT_ALLOWED, f"{path}.action_id", short_repr(action_id)))
        if object_id is None:
            out.append(StateViolation(S.MISSING_FIELD, f"{path}.object_id"))
        expected = ("DISPATCH",) if kind == "dispatch" else BOUNDED_TERMINALS
        if terminal not in expected:
            out.append(StateViolation(S.VALUE_NOT_ALLOWED, f"{path}.terminal", short_repr(terminal)))
    elif kind in EXTERNAL_KINDS:
        if terminal is not None:
            out.append(StateViolation(S.VALUE_NOT_ALLOWED, f"{path}.terminal", short_repr(terminal)))
        if action_id is not None and catalog is not None and action_id not in catalog:
            out.append(StateViolation(S.VALUE_NOT_ALLOWED, f"{path}.action_id", short_repr(action_id)))
    attributes = _attributes(item.get("attributes"), f"{path}.attributes", out)
    if len(out) > before:
        return None
    return Event(at, kind, action_id, object_id, terminal, attributes)


class SessionValues(Mapping):
    """The runtime state's values with the session under :data:`SESSION_KEY`: what the rules read for a request
    with a session (state predicates see the state, temporal predicates the session)."""

    __slots__ = ("_values", "session")

    def __init__(self, values: Mapping[str, Any], session: Session | None) -> None:
        self._values = values
        self.session = session

    def __getitem__(self, key: str) -> Any:
        if key == SESSION_KEY:
            if self.session is None:
                raise KeyError(key)
            return self.session
        return self._values[key]

    def __iter__(self) -> Iterator[str]:
        yield from self._values
        if self.session is not None:
            yield SESSION_KEY

    def __len__(self) -> int:
        return len(self._values) + (self.session is not None)


__all__ = ["ATTRIBUTE_TYPES", "BOUNDED_TERMINALS", "EXTERNAL_KINDS", "Event", "KINDS", "MAX_EVENTS", "SESSION_KEY",
           "Session", "SessionValues", "check_session", "event_of_decision", "is_count"]
