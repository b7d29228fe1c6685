"""The runtime-state schema: which state fields a request must carry, of which JSON type, with which values.

A rule that tests a missing or mistyped field simply does not match (``"action_permission": "false"`` is not
``false``), so without a schema the explicit default ``ALLOW`` would dispatch a protected action on a broken
state.  The schema closes that gap: the controller checks the state against it before anything else and, on a
violation, ends in its fail-closed terminal (``FAIL_CLOSED_INVALID_STATE``) without asking the rule engine.

**Derived schema** (the default, built by :class:`~routebr_kit.core.rules.PolicyEngine`): every field a rule
tests is *required*, unless some rule tests it with ``exists`` (then it is optional); its type is the JSON type of
the literals it is compared with (``null`` may join one other type; two other types are a start-up error), or
any scalar type when it is only compared with another field or tested for presence.  Fields no rule tests are
allowed and unchecked.

**Schema file** (``--state-schema FILE``), JSON, strict (no duplicate keys, no NaN)::

    {
      "schema": "routebr-state-schema/v1",
      "additional_fields": true,
      "fields": {
        "action_permission": {"type": "boolean"},
        "risk_score": {"type": ["number", "null"], "required": false},
        "channel": {"type": "string", "allowed": ["app", "web"]}
      }
    }

``type`` is one of ``boolean``, ``number``, ``string``, ``null`` or a list of them; ``required`` defaults to
``true``; ``allowed`` (optional) lists the permitted literals; ``additional_fields: false`` rejects fields the
schema does not declare.  A file *overrides* the derived entries field by field: fields it does not declare keep
their derived definition, so every field a rule tests is always checked.  The rules are then validated against
the result: a rule comparing a field with a literal of a type (or, for equality and set tests, a value) the schema
does not allow is rejected when the rules load.

Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from operator import itemgetter
from sys import intern
from typing import Any

from .errors import DataError, ErrorCode, short_repr
from .hashing import sha256_json
from .strict_json import is_finite_number

_SCHEMA_TAG = "routebr-state-schema/v1"
_MISSING = object()


class StateType(str, enum.Enum):
    """JSON scalar types a state field may hold (``number``: an int or a finite float, never a boolean)."""

    BOOLEAN = "boolean"
    NUMBER = "number"
    STRING = "string"
    NULL = "null"


SCALAR_TYPES = frozenset(StateType)
_PYTHON_TYPES = {StateType.BOOLEAN: (bool,), StateType.NUMBER: (int, float), StateType.STRING: (str,),
                 StateType.NULL: (type(None),)}


def state_type_of(value: Any) -> StateType | None:
    """The :class:`StateType` of a Python value, or ``None`` for anything that is not a finite JSON scalar."""
    kind = type(value)
    if kind is bool:
        return StateType.BOOLEAN
    if kind is str:
        return StateType.STRING
    if value is None:
        return StateType.NULL
    if is_finite_number(value):
        return StateType.NUMBER
    return None


class StateErrorCode(str, enum.Enum):
    MISSING_FIELD = "MISSING_FIELD"
    WRONG_TYPE = "WRONG_TYPE"
    VALUE_NOT_ALLOWED = "VALUE_NOT_ALLOWED"
    UNKNOWN_FIELD = "UNKNOWN_FIELD"
    # a request's session (routebr_kit.core.session): a history over its length cap, times out of order
    TOO_LONG = "TOO_LONG"
    OUT_OF_ORDER = "OUT_OF_ORDER"


@dataclass(frozen=True, slots=True)
class StateViolation:
    """One way a runtime state breaks its schema."""

    code: StateErrorCode
    field: str
    got: str = ""  # a bounded repr of the offending value ("" when missing)

    def describe(self) -> str:
        return f"{self.field}: {self.code.value}" + (f" (got {self.got})" if self.got else "")

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "field": self.field, "got": self.got}


@dataclass(frozen=True, slots=True)
class StateField:
    """One declared state field."""

    name: str
    types: frozenset[StateType] = SCALAR_TYPES
    required: bool = True
    allowed: tuple[Any, ...] | None = None  # permitted literals (type-strict), or None for any value of `types`

    def admits(self, value: Any) -> bool:
        """Whether a literal of a rule (or a state value) is of a permitted type and, if listed, value."""
        kind = state_type_of(value)
        if kind is None or kind not in self.types:
            return False
        return self.allowed is None or (kind, value) in _keyed(self.allowed)

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": sorted(t.value for t in self.types), "required": self.required}
        if self.allowed is not None:
            out["allowed"] = list(self.allowed)
        return out


def _values_getter(names: tuple[str, ...]) -> Callable[[Mapping[str, Any]], tuple]:
    """A function of a mapping returning the tuple of its values for ``names`` (``KeyError`` if one is missing).
    The names are interned, like a runtime state's (:class:`~routebr_kit.core.records.RuntimeState`)."""
    names = tuple(intern(n) if type(n) is str else n for n in names)
    if len(names) == 1:
        name = names[0]
        return lambda values: (values[name],)
    return itemgetter(*names) if names else (lambda values: ())


def _keyed(values: Iterable[Any]) -> frozenset[tuple[StateType | None, Any]]:
    """Type-strict membership keys: ``True`` and ``1`` differ, ``1`` and ``1.0`` do not (as in the rules)."""
    return frozenset((state_type_of(v), v) for v in values)


@dataclass(frozen=True, slots=True)
class StateSchema:
    """The declared runtime-state fields, precompiled for a check of a few lookups per field."""

    fields: tuple[StateField, ...]
    additional_fields: bool = True
    source: str = "derived"  # "derived", or the file it was read from
    sha256: str = ""  # of the file's content; "" for a derived schema (a function of the rules)
    _plan: tuple[tuple[str, tuple[type, ...], bool, frozenset | None], ...] = field(
        init=False, repr=False, compare=False)
    _names: frozenset[str] = field(init=False, repr=False, compare=False)
    _fast: tuple[Callable[[Mapping[str, Any]], tuple], list[type]] | None = field(
        init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        plan = tuple((f.name, tuple(t for s in f.types for t in _PYTHON_TYPES[s]), f.required,
                      None if f.allowed is None else _keyed(f.allowed)) for f in self.fields)
        object.__setattr__(self, "_plan", plan)
        object.__setattr__(self, "_names", frozenset(f.name for f in self.fields))
        # Fast path when every field is required, of one non-null, non-numeric type, with any value, and other
        # fields are allowed (the published program: eight required booleans): one C-level pass comparing the tuple
        # of value types.
        simple = self.additional_fields and all(
            f.required and f.allowed is None and len(f.types) == 1 and
            next(iter(f.types)) in (StateType.BOOLEAN, StateType.STRING) for f in self.fields)
        fast = (_values_getter(tuple(f.name for f in self.fields)),
                [_PYTHON_TYPES[next(iter(f.types))][0] for f in self.fields]) if simple else None
        object.__setattr__(self, "_fast", fast)

    @property
    def index(self) -> dict[str, StateField]:
        return {f.name: f for f in self.fields}

    def check(self, values: Mapping[str, Any]) -> tuple[StateViolation, ...]:
        """Every violation of ``values`` (a state mapping), in schema order; ``()`` for a valid state."""
        fast = self._fast
        if fast is not None:  # one C-level pass: every declared field present, each of its one type
            try:
                if [*map(type, fast[0](values))] == fast[1]:
                    return ()
            except KeyError:  # a missing field: the full check names it
                pass
        found: list[StateViolation] | None = None
        get = values.get
        for name, types, required, allowed in self._plan:
            value = get(name, _MISSING)
            if value is _MISSING:
                if required:
                    found = found or []
                    found.append(StateViolation(StateErrorCode.MISSING_FIELD, name))
                continue
            kind = type(value)
            if kind not in types or (kind is float and not is_finite_number(value)):
                found = found or []
                found.append(StateViolation(StateErrorCode.WRONG_TYPE, name, short_repr(value)))
            elif allowed is not None and (state_type_of(value), value) not in allowed:
                found = found or []
                found.append(StateViolation(StateErrorCode.VALUE_NOT_ALLOWED, name, short_repr(value)))
        if not self.additional_fields:
            for name in values:
                if name not in self._names:
                    found = found or []
                    found.append(StateViolation(StateErrorCode.UNKNOWN_FIELD, str(name)))
        return tuple(found) if found else ()

    def merged(self, overrides: StateSchema) -> StateSchema:
        """This schema with ``overrides``' fields replacing (or adding to) its own, and its other settings."""
        mine = self.index
        mine.update(overrides.index)
        return StateSchema(tuple(mine[name] for name in sorted(mine)), overrides.additional_fields,
                           overrides.source, overrides.sha256)

    def as_dict(self) -> dict[str, Any]:
        return {"schema": _SCHEMA_TAG, "additional_fields": self.additional_fields,
                "fields": {f.name: f.as_dict() for f in self.fields}}

    @classmethod
    def from_dict(cls, data: Any, *, file: str | None = None) -> StateSchema:
        """Validate a parsed schema document; every problem is a :class:`DataError` naming the field path."""
        def bad(path: str, expected: str, got: Any) -> DataError:
            return DataError(ErrorCode.INVALID_VALUE, expected, file=file, field=path, got=got)

        if not isinstance(data, Mapping):
            raise DataError(ErrorCode.WRONG_TYPE, "a JSON object", file=file, got=data)
        unknown = sorted(set(data) - {"schema", "additional_fields", "fields"})
        if unknown:
            raise bad(unknown[0], "only the keys schema, additional_fields, fields", unknown[0])
        if data.get("schema", _SCHEMA_TAG) != _SCHEMA_TAG:
            raise bad("schema", repr(_SCHEMA_TAG), data.get("schema"))
        additional = data.get("additional_fields", True)
        if type(additional) is not bool:
            raise bad("additional_fields", "true or false", additional)
        declared = data.get("fields")
        if not isinstance(declared, Mapping):
            raise bad("fields", "an object of field name -> declaration", declared)
        fields = []
        for name, spec in declared.items():
            path = f"fields.{name}"
            if not isinstance(name, str) or not name:
                raise bad(path, "a non-empty field name", name)
            if not isinstance(spec, Mapping):
                raise bad(path, 'an object such as {"type": "boolean"}', spec)
            extra = sorted(set(spec) - {"type", "required", "allowed"})
            if extra:
                raise bad(f"{path}.{extra[0]}", "only type, required, allowed", extra[0])
            raw_types = spec.get("type")
            raw_types = [raw_types] if isinstance(raw_types, str) else raw_types
            if not isinstance(raw_types, list) or not raw_types or \
                    any(t not in StateType._value2member_map_ for t in raw_types):
                raise bad(f"{path}.type", "one of boolean, number, string, null, or a non-empty list of them",
                          spec.get("type"))
            types = frozenset(StateType(t) for t in raw_types)
            required = spec.get("required", True)
            if type(required) is not bool:
                raise bad(f"{path}.required", "true or false", required)
            allowed = spec.get("allowed")
            if allowed is not None:
                if not isinstance(allowed, list) or not allowed:
                    raise bad(f"{path}.allowed", "a non-empty list of literals", allowed)
                wrong = [v for v in allowed if state_type_of(v) not in types]
                if wrong:
                    raise bad(f"{path}.allowed", f"literals of type {'|'.join(sorted(t.value for t in types))}",
                              wrong[0])
                allowed = tuple(allowed)
            fields.append(StateField(name, types, required, allowed))
        return cls(tuple(fields), additional, file or "inline", sha256_json(data))


def describe_types(types: Iterable[StateType]) -> str:
    return "|".join(sorted(t.value for t in types))


__all__ = ["SCALAR_TYPES", "StateErrorCode", "StateField", "StateSchema", "StateType", "StateViolation",
           "describe_types", "state_type_of"]
