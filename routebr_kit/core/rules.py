"""The rule engine: prioritised, versioned boundary rules evaluated first-match on runtime state.

Semantics (validated when the engine is built, never discovered mid-request):

* rules are ordered by ``(priority, rule_id)``; the first rule that applies to the action and whose condition
  holds decides;
* ``applies_to`` is ``("*",)`` or a tuple of catalog action IDs;
* a condition is an AND of predicates; the empty condition always holds;
* an explicit unconditional default rule for ``*`` must exist, so evaluation can never fall through.

Condition language (a JSON object, the published ``condition_json`` column).  Each key names a state field::

    {"entity_resolved": false}                      # equality (a plain literal) — the published form
    {"risk_score": {"gte": 0.8}}                    # range: lt, lte, gt, gte (numbers with numbers, text with text)
    {"channel": {"in": ["app", "web"]}}             # set membership: in, not_in (a list of literals)
    {"region": {"ne": "EU"}}                        # negation
    {"kyc_level": {"exists": true}}                 # presence
    {"order_amount": {"lte": {"field": "limit"}}}   # cross-field comparison (eq, ne, lt, lte, gt, gte)
    {"score": {"gte": 3, "lt": 7}}                  # several operators on one field are ANDed

Equality is type-strict (``true`` never equals ``1``; ``1`` equals ``1.0``).  A missing field never satisfies a
predicate, except ``{"exists": false}``; a cross-field predicate whose other field is missing does not hold either.

Keys starting with ``@`` are temporal predicates over the request's session (``@within``, ``@count``, ``@sum``,
``@before``; :mod:`routebr_kit.core.temporal`), ANDed with the state predicates.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .errors import DataError, ErrorCode
from .hashing import sha256_json
from .records import Boundary
from .state import SCALAR_TYPES, StateField, StateSchema, StateType, describe_types, state_type_of
from .temporal import TemporalPredicate, parse_temporal

_WILDCARD = "*"
_MISSING = object()


class Operator(str, enum.Enum):
    EQ = "eq"
    NE = "ne"
    LT = "lt"
    LTE = "lte"
    GT = "gt"
    GTE = "gte"
    IN = "in"
    NOT_IN = "not_in"
    EXISTS = "exists"


_SYMBOLS = {Operator.EQ: "==", Operator.NE: "!=", Operator.LT: "<", Operator.LTE: "<=", Operator.GT: ">",
            Operator.GTE: ">=", Operator.IN: "in", Operator.NOT_IN: "not in"}
_ORDERING = (Operator.LT, Operator.LTE, Operator.GT, Operator.GTE)
_CROSS_FIELD_OK = (Operator.EQ, Operator.NE, *_ORDERING)


def _jtype(value: Any) -> str:
    """JSON type class: booleans are not numbers, ints and floats are one number type."""
    kind = type(value)
    if kind is bool:
        return "boolean"
    if kind is int or kind is float:
        return "number"
    if kind is str:
        return "string"
    if value is None:
        return "null"
    if kind is list or kind is tuple:
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return kind.__name__


def _strict_equal(a: Any, b: Any) -> bool:
    return _jtype(a) == _jtype(b) and a == b


def _ordered(op: Operator, a: Any, b: Any) -> bool:
    ta = _jtype(a)
    if ta not in ("number", "string") or ta != _jtype(b):
        return False
    if op is Operator.LT:
        return a < b
    if op is Operator.LTE:
        return a <= b
    if op is Operator.GT:
        return a > b
    return a >= b


@dataclass(frozen=True, slots=True)
class Predicate:
    """One test on one state field.  ``other_field`` is set for a cross-field comparison."""

    key: str
    op: Operator
    operand: Any = None
    other_field: str | None = None

    def holds(self, values: Mapping[str, Any]) -> bool:
        value = values.get(self.key, _MISSING)
        op = self.op
        if op is Operator.EXISTS:
            return (value is not _MISSING) is self.operand
        if value is _MISSING:
            return False
        if self.other_field is not None:
            operand = values.get(self.other_field, _MISSING)
            if operand is _MISSING:
                return False
        else:
            operand = self.operand
        if op is Operator.EQ:
            return _strict_equal(value, operand)
        if op is Operator.NE:
            return not _strict_equal(value, operand)
        if op is Operator.IN:
            return any(_strict_equal(value, item) for item in operand)
        if op is Operator.NOT_IN:
            return not any(_strict_equal(value, item) for item in operand)
        return _ordered(op, value, operand)

    def describe(self) -> str:
        """E.g. ``action_permission == false``, ``amount <= field limit``, ``channel in ["app", "web"]``."""
        if self.op is Operator.EXISTS:
            return f"{self.key} {'exists' if self.operand else 'is missing'}"
        rhs = f"field {self.other_field}" if self.other_field else json.dumps(
            list(self.operand) if isinstance(self.operand, tuple) else self.operand, ensure_ascii=False)
        return f"{self.key} {_SYMBOLS[self.op]} {rhs}"


def _identity_pair(predicate: Predicate) -> tuple[str, Any] | None:
    """``(key, literal)`` when the predicate is literal equality to true/false/null: an identity test suffices."""
    operand = predicate.operand
    if predicate.op is Operator.EQ and predicate.other_field is None and (
            operand is True or operand is False or operand is None):  # not `in (True, ...)`: 1 == True
        return predicate.key, operand
    return None


@dataclass(frozen=True, slots=True)
class Condition:
    """An AND of predicates, plus the JSON it was parsed from (for display and hashing)."""

    predicates: tuple[Predicate, ...]
    source: Mapping[str, Any]
    temporal: tuple[TemporalPredicate, ...] = ()  # over the request's session (keys starting with "@")

    @classmethod
    def parse(cls, source: Any) -> Condition:
        """Parse and validate a ``condition_json`` value; raises :class:`DataError` (field ``condition_json``)."""
        if not isinstance(source, Mapping):
            raise DataError(ErrorCode.INVALID_CONDITION, "a JSON object of state predicates", got=source,
                            field="condition_json")
        predicates: list[Predicate] = []
        temporal: list[TemporalPredicate] = []
        for key, spec in source.items():
            if not isinstance(key, str) or not key:
                raise DataError(ErrorCode.INVALID_CONDITION, "non-empty state field names", got=key,
                                field="condition_json")
            if key.startswith("@"):
                temporal.extend(parse_temporal(key[1:], spec))
                continue
            predicates.extend(_parse_spec(key, spec))
        return cls(tuple(predicates), dict(source), tuple(temporal))

    @property
    def unconditional(self) -> bool:
        return not self.predicates and not self.temporal

    def holds(self, values: Mapping[str, Any]) -> bool:
        return all(p.holds(values) for p in self.predicates) and all(t.holds(values) for t in self.temporal)

    def compiled(self) -> tuple[tuple[tuple[str, Any], ...], tuple[Callable[[Mapping[str, Any]], bool], ...]]:
        """``(identity pairs, other tests)``: the same AND, split so the common case needs no function call."""
        pairs = [pair for pair in map(_identity_pair, self.predicates) if pair is not None]
        tests = [p.holds for p in self.predicates if _identity_pair(p) is None]
        tests += [t.holds for t in self.temporal]
        return tuple(pairs), tuple(tests)

    def describe(self) -> str:
        parts = [p.describe() for p in self.predicates] + [t.describe() for t in self.temporal]
        return " AND ".join(parts) or "(always)"


def _parse_spec(key: str, spec: Any) -> list[Predicate]:
    def bad(code: ErrorCode, expected: str, got: Any) -> DataError:
        return DataError(code, expected, got=got, field="condition_json", detail=f"state field {key!r}")

    kind = _jtype(spec)
    if kind in ("boolean", "number", "string", "null"):
        return [Predicate(key, Operator.EQ, spec)]
    if kind == "array":
        raise bad(ErrorCode.INVALID_CONDITION, 'a literal or an operator object (for sets write {"in": [...]})', spec)
    if kind != "object":
        raise bad(ErrorCode.INVALID_CONDITION, "a JSON literal or an operator object", spec)
    if not spec:
        raise bad(ErrorCode.INVALID_CONDITION, "at least one operator", spec)
    predicates = []
    for name, operand in spec.items():
        try:
            op = Operator(name)
        except ValueError:
            raise bad(ErrorCode.UNKNOWN_OPERATOR, "one of " + ", ".join(o.value for o in Operator), name) from None
        predicates.append(_parse_operand(key, op, operand, bad))
    return predicates


def _parse_operand(key: str, op: Operator, operand: Any, bad: Callable[..., DataError]) -> Predicate:
    kind = _jtype(operand)
    if op is Operator.EXISTS:
        if kind != "boolean":
            raise bad(ErrorCode.INVALID_OPERAND, "exists takes true or false", operand)
        return Predicate(key, op, operand)
    if op in (Operator.IN, Operator.NOT_IN):
        if kind != "array" or not operand:
            raise bad(ErrorCode.INVALID_OPERAND, f"{op.value} takes a non-empty list of literals", operand)
        if any(_jtype(item) not in ("boolean", "number", "string", "null") for item in operand):
            raise bad(ErrorCode.INVALID_OPERAND, f"{op.value} takes literals only", operand)
        return Predicate(key, op, tuple(operand))
    if kind == "object":
        other = operand.get("field") if len(operand) == 1 else None
        if not isinstance(other, str) or not other:
            raise bad(ErrorCode.INVALID_OPERAND, 'a literal or {"field": "<other state field>"}', operand)
        if op not in _CROSS_FIELD_OK:
            raise bad(ErrorCode.INVALID_OPERAND, f"{op.value} does not take a field reference", operand)
        return Predicate(key, op, None, other)
    if op in _ORDERING and kind not in ("number", "string"):
        raise bad(ErrorCode.INVALID_OPERAND, f"{op.value} takes a number or a string", operand)
    if kind not in ("boolean", "number", "string", "null"):
        raise bad(ErrorCode.INVALID_OPERAND, f"{op.value} takes a JSON literal", operand)
    return Predicate(key, op, operand)


@dataclass(frozen=True, slots=True)
class Rule:
    """A versioned boundary rule."""

    rule_id: str
    priority: int
    applies_to: tuple[str, ...]
    condition: Condition
    decision: Boundary
    version: str = "v1"
    explanation: str = ""

    @property
    def wildcard(self) -> bool:
        return _WILDCARD in self.applies_to

    @property
    def is_default(self) -> bool:
        """Unconditional and for every action: the explicit default."""
        return self.wildcard and self.condition.unconditional

    def applies(self, action_id: str) -> bool:
        return self.wildcard or action_id in self.applies_to

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule_id": self.rule_id,
            "priority": self.priority,
            "applies_to": list(self.applies_to),
            "condition": dict(self.condition.source),
            "decision": self.decision.value,
            "version": self.version,
        }


def rule(rule_id: str, priority: int, applies_to: Iterable[str] | str, condition: Mapping[str, Any],
         decision: Boundary | str, version: str = "v1", explanation: str = "") -> Rule:
    """Build a rule from plain values (validating the condition and decision)."""
    targets = (applies_to,) if isinstance(applies_to, str) else tuple(applies_to)
    try:
        boundary = Boundary(decision)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(b.value for b in Boundary), got=decision,
                        field="decision") from None
    if type(priority) is not int:
        raise DataError(ErrorCode.INVALID_INTEGER, "an integer priority", got=priority, field="priority")
    return Rule(rule_id, priority, targets, Condition.parse(condition), boundary, version, explanation)


#: One action's compiled rules: ``(identity pairs, other tests, rule)`` per rule, in evaluation order, the last
#: one unconditional (see :meth:`Condition.compiled`).
_RuleChain = tuple[tuple[tuple[tuple[str, Any], ...], tuple[Callable[[Mapping[str, Any]], bool], ...], Rule], ...]


def first_match(chain: _RuleChain, state: Mapping[str, Any]) -> Rule:
    """First-match evaluation: the first rule of ``chain`` whose condition holds on ``state``."""
    get = state.get
    for pairs, tests, r in chain:
        for key, literal in pairs:
            if get(key, _MISSING) is not literal:
                break
        else:
            for test in tests:
                if not test(state):
                    break
            else:
                return r
    raise AssertionError("unreachable: every chain ends in an unconditional rule")  # pragma: no cover


class PolicyEngine:
    """First-match evaluation of a validated rule program against one catalog."""

    __slots__ = ("rules", "sha256", "_by_action", "catalog_ids", "state_schema")

    def __init__(self, rules: Iterable[Rule], catalog_ids: Iterable[str], *, sha256: str | None = None,
                 state_schema: StateSchema | None = None) -> None:
        """``state_schema`` overrides the schema derived from the rules field by field (see
        :mod:`routebr_kit.core.state`); the rules are validated against the result."""
        rules = list(rules)
        catalog_ids = tuple(catalog_ids)
        if not rules:
            raise DataError(ErrorCode.NO_RULES, "at least one boundary rule")
        seen: set[str] = set()
        for r in rules:
            if not isinstance(r, Rule):
                raise DataError(ErrorCode.WRONG_TYPE, "Rule records", got=r)
            if r.rule_id in seen:
                raise DataError(ErrorCode.DUPLICATE_ID, "unique rule IDs", got=r.rule_id, field="rule_id")
            seen.add(r.rule_id)
            if not isinstance(r.decision, Boundary):
                raise DataError(ErrorCode.UNKNOWN_ENUM, "a Boundary decision", got=r.decision, field="decision",
                                detail=f"rule {r.rule_id}")
            if not r.applies_to:
                raise DataError(ErrorCode.INVALID_VALUE, "'*' or at least one catalog action", got=r.applies_to,
                                field="applies_to", detail=f"rule {r.rule_id}")
            unknown = [a for a in r.applies_to if a != _WILDCARD and a not in catalog_ids]
            if unknown or (r.wildcard and len(r.applies_to) > 1):
                raise DataError(ErrorCode.UNKNOWN_ACTION, "'*' alone or catalog action IDs",
                                got=unknown or list(r.applies_to), field="applies_to", detail=f"rule {r.rule_id}")
            for t in r.condition.temporal:  # a temporal filter names catalog actions only
                wrong = [a for name, values in t.filter if name == "action_id" for a in values if a not in catalog_ids]
                if wrong:
                    raise DataError(ErrorCode.UNKNOWN_ACTION, "catalog action IDs in a temporal filter", got=wrong[0],
                                    field="condition_json", detail=f"rule {r.rule_id}")
        if not any(r.is_default for r in rules):
            raise DataError(ErrorCode.NO_DEFAULT_RULE, "an explicit unconditional default rule for '*'",
                            field="condition_json")
        self.rules: tuple[Rule, ...] = tuple(sorted(rules, key=lambda r: (r.priority, r.rule_id)))
        self.catalog_ids = catalog_ids
        # Each action's rules up to and including the first unconditional one: evaluation never falls through.
        by_action: dict[str, _RuleChain] = {}
        for action in catalog_ids:
            chain = []
            for r in self.rules:
                if r.applies(action):
                    chain.append((*r.condition.compiled(), r))
                    if r.condition.unconditional:
                        break
            by_action[action] = tuple(chain)
        self._by_action = by_action
        self.sha256 = sha256 or sha256_json([r.as_dict() for r in self.rules])
        if state_schema is not None and not isinstance(state_schema, StateSchema):
            raise DataError(ErrorCode.WRONG_TYPE, "a StateSchema", got=state_schema, field="state_schema")
        self.state_schema = derive_state_schema(self.rules, state_schema)

    def covers(self, action_ids: Iterable[str]) -> bool:
        """Whether the program was validated against (at least) these catalog actions."""
        return all(a in self._by_action for a in action_ids)

    def evaluate(self, action_id: str, state: Mapping[str, Any]) -> Rule:
        """The first rule that applies to ``action_id`` and holds on ``state`` (a mapping of state fields)."""
        return first_match(self.chain(action_id), state)

    def chain(self, action_id: str) -> _RuleChain:
        """The action's candidate rules in evaluation order, compiled, ending in an unconditional rule (what
        :func:`first_match` walks)."""
        chain = self._by_action.get(action_id) if type(action_id) is str else None
        if chain is None:
            raise DataError(ErrorCode.UNKNOWN_ACTION, "a catalog action", got=action_id, field="action_id")
        return chain

    def matching(self, action_id: str, state: Mapping[str, Any]) -> tuple[Rule, ...]:
        """Every rule that applies and holds, in evaluation order (the first one wins)."""
        return tuple(r for r in self.rules if r.applies(action_id) and r.condition.holds(state))

    @property
    def temporal(self) -> bool:
        """Whether some rule has a temporal predicate (then every request needs a session)."""
        return any(r.condition.temporal for r in self.rules)

    def __repr__(self) -> str:
        return f"PolicyEngine({len(self.rules)} rules, sha256={self.sha256[:12]})"


# --------------------------------------------------------------------------------------------- state schema


def _literals(p: Predicate) -> tuple[Any, ...]:
    if p.op is Operator.EXISTS or p.other_field is not None:
        return ()
    return tuple(p.operand) if p.op in (Operator.IN, Operator.NOT_IN) else (p.operand,)


def derive_state_schema(rules: Iterable[Rule], overrides: StateSchema | None = None) -> StateSchema:
    """The runtime-state schema of a rule program (see :mod:`routebr_kit.core.state`), with ``overrides``' fields
    replacing the derived ones; every rule is then checked against the result.  Raises a :class:`DataError`
    (``detail`` = ``rule <id>``, field ``condition_json``) for a field compared with literals of two non-null
    types (unless ``overrides`` declares it) or with a literal the schema does not admit."""
    rules = tuple(rules)
    declared = overrides.index if overrides is not None else {}
    types: dict[str, set[StateType]] = {}
    optional: set[str] = set()
    for r in rules:
        for p in r.condition.predicates:
            for name in (p.key, p.other_field):
                if name is not None:
                    types.setdefault(name, set())
            if p.op is Operator.EXISTS:
                optional.add(p.key)
            for literal in _literals(p):
                kinds = types[p.key]
                kinds.add(state_type_of(literal))  # rule literals are JSON scalars: never None here
                if p.key not in declared and len(kinds - {StateType.NULL}) > 1:
                    raise DataError(ErrorCode.INVALID_OPERAND,
                                    "one JSON type per state field across the rule program (or a state-schema "
                                    "file declaring several)", got=literal, field="condition_json",
                                    detail=f"rule {r.rule_id}")
    derived = StateSchema(tuple(StateField(name, frozenset(kinds) or SCALAR_TYPES, name not in optional)
                                for name, kinds in sorted(types.items()) if name not in declared))
    schema = derived if overrides is None else derived.merged(overrides)
    index = schema.index
    for r in rules:
        for p in r.condition.predicates:
            spec = index[p.key]
            if p.other_field is not None:
                other = index[p.other_field]
                if not spec.types & other.types:
                    raise DataError(ErrorCode.INVALID_OPERAND, f"a field sharing a type with {p.key!r} "
                                    f"({describe_types(spec.types)})", got=p.other_field, field="condition_json",
                                    detail=f"rule {r.rule_id}")
                continue
            for literal in _literals(p):
                ordering = p.op in _ORDERING
                ok = (state_type_of(literal) in spec.types) if ordering else spec.admits(literal)
                if not ok:
                    allowed = "" if spec.allowed is None else f" among {list(spec.allowed)}"
                    raise DataError(ErrorCode.INVALID_OPERAND,
                                    f"a literal the state schema admits for {p.key!r} "
                                    f"({describe_types(spec.types)}{allowed})", got=literal,
                                    field="condition_json", detail=f"rule {r.rule_id}")
    return schema
