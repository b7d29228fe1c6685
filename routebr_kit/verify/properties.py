"""Properties a release must satisfy for every state and proposal — the ``--assert FILE`` language.

A file (JSON or YAML) holds a list of properties, or ``{"properties": [...]}``::

    - name: the protected action never dispatches without permission
      never: {terminal: DISPATCH, action: A5_PROTECTED_ACTION}
      when: {action_permission: false}
    - name: a safety escalation always hands off
      always: {terminal: HANDOFF}
      when: {safety_escalation_required: true}

* ``never: PATTERN`` — no (state, proposal) in scope matches the pattern; ``always: PATTERN`` — every (state,
  proposal) in scope whose proposal matches the pattern's ``action``/``object`` has an outcome matching its
  ``terminal``/``reason``/``rule``.
* A pattern has any of ``terminal`` (``DISPATCH``, ``CLARIFY``, ``DEFER``, ``HANDOFF``, ``REJECT``), ``action``
  (catalog IDs), ``object`` (``candidate`` — of a type the action permits —, ``other_type``, ``UNRESOLVED``,
  ``NONE``), ``reason`` (reason codes), ``rule`` (rule IDs); each a value or a list of values (any of them).
* ``when`` — a condition in the rule language (literal predicates; cross-field comparisons are analysed inside
  rules only); default: every state.
* ``states`` — ``admitted`` (default: the states the runtime-state schema admits) or ``all`` (also every state that
  breaks it, which the controller ends in its fallback terminal).  ``proposals`` — ``valid`` (default: proposals
  that meet the contract — for an object-bearing action a candidate of a permitted type or ``UNRESOLVED``, for an
  object-free one ``NONE``) or ``all`` (any object class).

Unknown keys, values outside these sets, unknown actions and malformed conditions are typed, located
:class:`~routebr_kit.core.errors.DataError` values.  A property no (state, proposal) falls under is *vacuous*: it
holds, and the report says so.
"""

from __future__ import annotations

import enum
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, UNRESOLVED, Catalog, ReasonCode, Terminal
from ..core.rules import Condition
from ..core.temporal import TemporalPredicate, parse_temporal
from ..store.files import read_document, read_json


class Quantifier(str, enum.Enum):
    NEVER = "never"
    ALWAYS = "always"


class StateScope(str, enum.Enum):
    ADMITTED = "admitted"
    ALL = "all"


class ProposalScope(str, enum.Enum):
    VALID = "valid"
    ALL = "all"


class ObjectKind(str, enum.Enum):
    CANDIDATE = "candidate"  # a candidate of a type the action permits
    OTHER_TYPE = "other_type"  # a candidate of a type it does not permit
    UNRESOLVED = UNRESOLVED
    NONE = NONE


_PATTERN_KEYS = ("terminal", "action", "object", "reason", "rule")
_PROPERTY_KEYS = ("name", "never", "always", "when", "states", "proposals")


@dataclass(frozen=True)
class Pattern:
    terminals: frozenset[Terminal] | None = None
    actions: frozenset[str] | None = None
    objects: frozenset[ObjectKind] | None = None
    reasons: frozenset[ReasonCode] | None = None
    rules: frozenset[str] | None = None

    def proposal_in(self, action: str, kind: ObjectKind) -> bool:
        return (self.actions is None or action in self.actions) and (self.objects is None or kind in self.objects)

    def outcome_in(self, terminal: Terminal, reason: ReasonCode, rule_id: str | None) -> bool:
        return ((self.terminals is None or terminal in self.terminals)
                and (self.reasons is None or reason in self.reasons)
                and (self.rules is None or rule_id in self.rules))

    def describe(self) -> str:
        parts = []
        for name, values in (("terminal", self.terminals), ("action", self.actions), ("object", self.objects),
                             ("reason", self.reasons), ("rule", self.rules)):
            if values is not None:
                shown = sorted(getattr(v, "value", v) for v in values)
                parts.append(f"{name}={shown[0]}" if len(shown) == 1 else f"{name} in {shown}")
        return ", ".join(parts) or "anything"


@dataclass(frozen=True)
class Property:
    name: str
    quantifier: Quantifier
    pattern: Pattern
    when: Condition
    states: StateScope = StateScope.ADMITTED
    proposals: ProposalScope = ProposalScope.VALID

    def describe(self) -> str:
        when = self.when.describe()
        return f"{self.quantifier.value} ({self.pattern.describe()}) when {when}"


def _values(raw: Any, where: str, kind: type | None, allowed: Collection[str], expected: str) -> frozenset:
    """The pattern values of one key: each one of ``allowed`` (parsed by ``kind``), a value or a non-empty list."""
    items = raw if isinstance(raw, list) else [raw]
    if not items:
        raise DataError(ErrorCode.EMPTY_VALUE, expected, field=where, got=raw)
    for item in items:
        if type(item) is not str or item not in allowed:
            raise DataError(ErrorCode.UNKNOWN_ENUM, expected, field=where, got=item)
    return frozenset(kind(v) if kind is not None else v for v in items)


def _pattern(raw: Any, where: str, catalog: Catalog, rule_ids: Iterable[str]) -> Pattern:
    if not isinstance(raw, Mapping) or not raw:
        raise DataError(ErrorCode.WRONG_TYPE, f"an object with some of {', '.join(_PATTERN_KEYS)}", field=where,
                        got=raw)
    unknown = sorted(set(map(str, raw)) - set(_PATTERN_KEYS))
    if unknown:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(_PATTERN_KEYS), field=f"{where}.{unknown[0]}",
                        got=unknown[0])
    terminals, kinds = [t.value for t in Terminal], [k.value for k in ObjectKind]
    choices = {"terminal": (Terminal, terminals, "terminals (" + ", ".join(terminals) + ")"),
               "action": (None, catalog.ids, "catalog action IDs (" + ", ".join(catalog.ids) + ")"),
               "object": (ObjectKind, kinds, "object classes (" + ", ".join(kinds) + ")"),
               "reason": (ReasonCode, {r.value for r in ReasonCode}, "reason codes"),
               "rule": (None, set(rule_ids), "rule IDs of the program")}  # (in the order of _PATTERN_KEYS)
    return Pattern(*(_values(raw[key], f"{where}.{key}", *choices[key]) if key in raw else None
                     for key in _PATTERN_KEYS))


def parse_properties(doc: Any, catalog: Catalog, rule_ids: Iterable[str], *, file: str | None = None
                     ) -> tuple[Property, ...]:
    """Validate a parsed assertion document (see the module docstring)."""
    rule_ids = tuple(rule_ids)
    if isinstance(doc, Mapping) and set(doc) == {"properties"}:
        doc = doc["properties"]
    if not isinstance(doc, list) or not doc:
        raise DataError(ErrorCode.WRONG_TYPE, "a non-empty list of properties (or {properties: [...]})", file=file,
                        got=doc)
    out: list[Property] = []
    names: set[str] = set()
    for i, item in enumerate(doc):
        where = f"properties[{i}]"
        try:
            if not isinstance(item, Mapping):
                raise DataError(ErrorCode.WRONG_TYPE, "a property object", field=where, got=item)
            unknown = sorted(set(map(str, item)) - set(_PROPERTY_KEYS))
            if unknown:
                raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(_PROPERTY_KEYS),
                                field=f"{where}.{unknown[0]}", got=unknown[0])
            kinds = [q for q in Quantifier if q.value in item]
            if len(kinds) != 1:
                raise DataError(ErrorCode.INVALID_VALUE, "exactly one of never, always", field=where,
                                got=sorted(map(str, item)))
            quantifier = kinds[0]
            pattern = _pattern(item[quantifier.value], f"{where}.{quantifier.value}", catalog, rule_ids)
            try:
                when = Condition.parse(item.get("when", {}))
            except DataError as exc:
                raise DataError(exc.code, exc.expected, field=f"{where}.when", got=exc.got, detail=exc.detail) \
                    from None
            if any(p.other_field is not None for p in when.predicates):
                raise DataError(ErrorCode.INVALID_OPERAND, "literal predicates in when (cross-field comparisons are "
                                "analysed inside rules only)", field=f"{where}.when", got=dict(when.source))
            states = _scope(item, "states", StateScope, where)
            proposals = _scope(item, "proposals", ProposalScope, where)
            name = item.get("name", f"property {i + 1}")
            if type(name) is not str or not name.strip():
                raise DataError(ErrorCode.WRONG_TYPE, "a non-empty name", field=f"{where}.name", got=name)
            if name in names:
                raise DataError(ErrorCode.DUPLICATE_ID, "unique property names", field=f"{where}.name", got=name)
            names.add(name)
            out.append(Property(name, quantifier, pattern, when, states, proposals))
        except DataError as exc:
            raise exc.at(file=file) from None
    return tuple(out)


def _scope(item: Mapping[str, Any], key: str, kind: type[enum.Enum], where: str) -> Any:
    raw = item.get(key, list(kind)[0].value)
    try:
        return kind(raw)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(k.value for k in kind), field=f"{where}.{key}",
                        got=raw) from None


def load_properties(path: str | Path, catalog: Catalog, rule_ids: Sequence[str]) -> tuple[Property, ...]:
    """Read an assertion file: ``.json`` (strict JSON) or ``.yaml``/``.yml``."""
    if Path(path).suffix.lower() not in (".json", ".yaml", ".yml"):
        raise DataError(ErrorCode.INVALID_VALUE, "a .json, .yaml or .yml assertion file", file=str(path))
    return parse_properties(read_document(path, "an assertion file"), catalog, rule_ids, file=str(path))


# --------------------------------------------------------------------------------------------- over sessions


@dataclass(frozen=True, slots=True)
class SessionAssertion:
    """``never: {dispatch: ACTION | [ACTIONS] | "*", <temporal op>: {...}}`` (``verify --horizon``; the semantics
    are in ``docs/sessions.md``)."""

    name: str
    dispatch: tuple[str, ...]  # ("*",) for any action
    predicates: tuple[TemporalPredicate, ...]
    source: Mapping[str, Any] = field(default_factory=dict)

    def applies(self, action_id: str) -> bool:
        return self.dispatch == ("*",) or action_id in self.dispatch

    def describe(self) -> str:
        return f"never: dispatch {'|'.join(self.dispatch)} while " + " AND ".join(p.describe() for p in self.predicates)


def parse_assertions(data: Any, catalog: Catalog, *, file: str | None = None) -> tuple[SessionAssertion, ...]:
    """Validate a session-assertions document; :class:`DataError` naming the assertion."""
    items = data.get("assertions") if isinstance(data, Mapping) else None
    if not isinstance(items, list) or not items:
        raise DataError(ErrorCode.INVALID_VALUE, '{"assertions": [...]} with at least one assertion', file=file,
                        got=data)
    out = []
    for i, item in enumerate(items):
        where = f"assertions[{i}]"
        if not isinstance(item, Mapping) or set(item) - {"name", "never", "note"} or "never" not in item:
            raise DataError(ErrorCode.INVALID_VALUE, "an object with name and never", file=file, field=where, got=item)
        never = item["never"]
        if not isinstance(never, Mapping) or "dispatch" not in never:
            raise DataError(ErrorCode.INVALID_VALUE, "never: {dispatch: ..., <temporal op>: {...}}", file=file,
                            field=f"{where}.never", got=never)
        dispatch = never["dispatch"]
        dispatch = (dispatch,) if isinstance(dispatch, str) else tuple(dispatch) if isinstance(dispatch, list) else ()
        if not dispatch or ("*" in dispatch and len(dispatch) > 1) or any(a != "*" and a not in catalog
                                                                           for a in dispatch):
            raise DataError(ErrorCode.UNKNOWN_ACTION, "a catalog action, a list of them, or '*'", file=file,
                            field=f"{where}.never.dispatch", got=never["dispatch"])
        predicates = [t for op, spec in never.items() if op != "dispatch"
                      for t in parse_temporal(op, spec, where=f"{where}.never", catalog_ids=frozenset(catalog.ids))]
        out.append(SessionAssertion(str(item.get("name", where)), dispatch, tuple(predicates), dict(item)))
    return tuple(out)


def load_assertions(path: str | Path, catalog: Catalog) -> tuple[SessionAssertion, ...]:
    return parse_assertions(read_json(path, "a session-assertions JSON object"), catalog, file=str(path))


__all__ = ["ObjectKind", "Pattern", "Property", "ProposalScope", "Quantifier", "SessionAssertion", "StateScope",
           "load_assertions", "load_properties", "parse_assertions", "parse_properties"]
