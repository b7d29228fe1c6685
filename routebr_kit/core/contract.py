"""The proposal contract: ``{action_id, object_id, topk}`` against a closed catalog and a closed entity list.

A model output is first **read once** (:func:`snapshot`): whatever Python value arrives — JSON text, a ``dict``, an
``OrderedDict``, a ``MappingProxyType``, a ``Mapping`` whose values change between reads, ``str`` and ``list``
subclasses such as ``numpy.str_`` — everything after works on one plain copy of it, so no later read can see
something else.  Then validation runs in three phases and returns *every* violation as a :class:`ContractError`
value:

1. **parse** — a mapping passes; a string must be *strict* JSON for one object (a repeated key is
   ``DUPLICATE_KEY``, ``NaN``/``Infinity`` ``NON_FINITE_NUMBER``); anything else is ``NOT_AN_OBJECT``; either way
   nesting deeper than :data:`MAX_DEPTH` is ``NESTING_TOO_DEEP``;
2. **enumerated identifiers** — ``action_id`` in the catalog, ``topk`` a list of one to three catalog IDs,
   ``object_id`` a candidate ID, ``UNRESOLVED`` or ``NONE``;
3. **cross-field relations** — ``topk`` unique and primary-first, the object type permitted by the primary
   action, ``NONE`` exactly for object-free actions.

Any JSON value of any type, size or depth in any field yields errors, never an exception.  Extra keys are ignored
(but count towards the depth bound).  The repair guard (below) holds a repair to the identifiers the first reply
gives, however malformed it is, and lets it add none.
The same building blocks validate the B1/B2 one-call routes (:mod:`routebr_kit.systems.baselines`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ContractError, short_repr
from .errors import ContractErrorCode as C
from .records import NONE, OBJECT_SENTINELS, UNRESOLVED, Catalog, CatalogAction, Entity, Proposal, Stage
from .strict_json import JsonIssue, StrictJsonError, exceeds_depth, strict_loads

_MAX_TOPK = 3
#: Deepest nesting a model output may have (a proposal needs 2: the object and its ``topk`` list).
MAX_DEPTH = 32
_REPAIR_CONSTRAINT = "format-only repair; preserve semantic choice and closed IDs"
#: How much of a value that is not JSON a snapshot keeps, as text (the same bound as a record's ``repr``).
_OPAQUE_CHARS = 1000


# --------------------------------------------------------------------------------------------- one read


@dataclass(frozen=True, slots=True)
class OpaqueValue:
    """What a snapshot holds in place of a value that is not JSON (bytes, a set, an arbitrary object, a mapping with
    a key that is not a string, a mapping that fails to read): its type name and a bounded ``repr``, taken once.
    Never a string, so never an identifier; a record shows it as its text."""

    type_name: str
    text: str

    def __repr__(self) -> str:
        return self.text


def _opaque(value: Any, text: str | None = None) -> OpaqueValue:
    return OpaqueValue(type(value).__name__, text if text is not None else short_repr(value, _OPAQUE_CHARS))


def snapshot(raw: Any) -> Any:
    """One read of a model output, as plain values: what the contract, the repair guard and the record all see.

    * ``str`` (and any ``str`` subclass: ``numpy.str_``, a ``str`` enum) → an exact ``str`` of the same characters
      (read with ``str.__str__``, so no overridden method runs); ``int`` and ``float`` subclasses likewise →
      ``int`` / ``float``; ``None`` and ``bool`` as they are;
    * any ``Mapping`` → a ``dict``, its ``items()`` iterated once, keys in that order; a key that is not a string, or
      two keys that are the same string once made exact, make it an :class:`OpaqueValue` (not a JSON object);
    * ``list``, its subclasses and ``tuple`` → a ``list`` (tuples are what a record writes as JSON arrays);
    * an :class:`OpaqueValue` as it is; anything else → an :class:`OpaqueValue`.

    Each container is read once, however often it occurs (held in two places, or holding itself), and copied down
    to ``MAX_DEPTH + 1`` levels: a container at that level is copied empty, so the copy nests deeper than
    :data:`MAX_DEPTH` exactly when the output does, has no cycle, and nothing below that level — which neither the
    contract nor a record reads — is read.  Idempotent; equal to (not identical with: it is a copy) a plain value
    no deeper than :data:`MAX_DEPTH`.  Never raises.
    """
    kind = type(raw)
    if kind is str or raw is None or kind is bool or kind is int or kind is float or kind is OpaqueValue:
        return raw
    if kind is dict:  # the common case: an exact dict of exact strings and lists of them, read in C
        plain: dict[str, Any] = {}
        for key, value in raw.items():
            value_kind = type(value)
            if type(key) is not str:
                break
            if value_kind is str:
                plain[key] = value
            elif value_kind is list and all(type(item) is str for item in value):
                plain[key] = value.copy()
            else:
                break
        else:
            return plain
    read = _Read()
    root = read.shell(raw, 1)
    while read.pending:
        target, items, level = read.pending.pop()
        if type(target) is dict:
            for key, value in items:
                target[key] = read.shell(value, level)
        else:
            target.extend([read.shell(value, level) for value in items])
    return root


class _Read:
    """The state of one :func:`snapshot`: each source container's items as read (by ``id``; the source is kept
    alive, so its ``id`` cannot be reused meanwhile), its copy per nesting level, and the copies still to fill."""

    __slots__ = ("items", "copies", "pending")

    def __init__(self) -> None:
        self.items: dict[int, tuple[Any, Any]] = {}
        self.copies: dict[tuple[int, int], Any] = {}
        self.pending: list[tuple[Any, list, int]] = []

    def contents(self, value: Any) -> Any:
        """The items of a mapping (``(key, value)`` pairs) or a sequence, read the first time only; an
        :class:`OpaqueValue` when reading fails, a mapping key is not a (unique) string, or ``value`` is neither."""
        found = self.items.get(id(value))
        if found is None:
            is_container = issubclass(type(value), (Mapping, list, tuple))
            found = (value, _contents(value) if is_container else _opaque(value))
            self.items[id(value)] = found
        return found[1]

    def shell(self, value: Any, level: int) -> Any:
        """A plain scalar for ``value``, or a plain container (at nesting ``level``) whose items are queued on
        ``pending`` — empty, with nothing read, at level ``MAX_DEPTH + 1``."""
        kind = type(value)  # (the real type: ``isinstance`` would trust a faked ``__class__``)
        if kind is str or value is None or kind is bool or kind is int or kind is float or kind is OpaqueValue:
            return value
        if issubclass(kind, str):
            return str.__str__(value)
        if issubclass(kind, int):  # (bool cannot be subclassed: this is an int subclass)
            return int.__int__(value)
        if issubclass(kind, float):
            return float.__float__(value)
        if not issubclass(kind, (Mapping, list, tuple)):
            return self.contents(value)  # (an OpaqueValue, taken once)
        copy = self.copies.get((id(value), level))
        if copy is not None:
            return copy
        is_mapping = issubclass(kind, Mapping)
        contents = [] if level > MAX_DEPTH else self.contents(value)
        if type(contents) is OpaqueValue:
            copy = contents
        else:
            copy = {} if is_mapping else []
            if contents:
                self.pending.append((copy, contents, level + 1))
        self.copies[(id(value), level)] = copy
        return copy


def _contents(value: Any) -> Any:
    try:
        if not issubclass(type(value), Mapping):
            return list(value)
        items = [(key, item) for key, item in value.items()]
        keys = [k if type(k) is str else str.__str__(k) if issubclass(type(k), str) else None for k, _ in items]
    except Exception as exc:  # noqa: BLE001 - a hostile container is a value that is not JSON, never a crash
        return _opaque(value, f"<{type(value).__name__} unreadable: {type(exc).__name__}>")
    if None in keys or len(set(keys)) != len(keys):
        return _opaque(value)
    return list(zip(keys, (item for _, item in items)))


# --------------------------------------------------------------------------------------------- the three phases


@dataclass(frozen=True, slots=True)
class ContractResult:
    """Outcome of validating one model output."""

    proposal: Proposal | None
    errors: tuple[ContractError, ...]
    parsed: Mapping[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.proposal is not None

    @property
    def codes(self) -> tuple[C, ...]:
        return tuple(e.code for e in self.errors)

    def as_contract(self) -> ContractResult:
        """Itself: the view the repair guard reads (baseline results convert to it)."""
        return self


_ISSUE_CODE = {JsonIssue.SYNTAX: C.INVALID_JSON, JsonIssue.DUPLICATE_KEY: C.DUPLICATE_KEY,
               JsonIssue.NON_FINITE: C.NON_FINITE_NUMBER, JsonIssue.TOO_DEEP: C.NESTING_TOO_DEEP}


@dataclass(frozen=True, slots=True)
class ReadOutput:
    """One model output, read once: its :func:`snapshot` (``value``: what the record keeps and the repair guard
    scans), the JSON object it is (``obj``: the snapshot itself when it is a mapping, else text that is strict JSON
    for one, whatever its depth; else ``None``) and phase 1's verdict (``errors``; ``()``: ``obj`` is a contract
    object).  The contract, the repair guard and the record all read this one value."""

    value: Any
    obj: dict[str, Any] | None
    errors: tuple[ContractError, ...]

    @property
    def parsed(self) -> dict[str, Any] | None:
        """Phase 1's object (``None`` when phase 1 failed)."""
        return None if self.errors else self.obj


def read_output(raw: Any) -> ReadOutput:
    """Phase 1 on one read of ``raw``: :func:`snapshot` once, then, for text, one strict-JSON parse.  A
    :class:`ReadOutput` is returned as it is (a read value is never read again).  Never raises.

    Text must be strict JSON (:mod:`routebr_kit.core.strict_json`): a repeated key, ``NaN``/``Infinity`` or nesting
    deeper than :data:`MAX_DEPTH` is a contract error like any other syntax error.  An already-parsed mapping is
    held to the same depth bound (a self-containing one exceeds it)."""
    if type(raw) is ReadOutput:
        return raw
    value = snapshot(raw)
    if type(value) is dict:
        if _nests_deeper(value, MAX_DEPTH):
            return ReadOutput(value, value, (ContractError(C.NESTING_TOO_DEEP, "output", f"deeper than {MAX_DEPTH}"),))
        return ReadOutput(value, value, ())
    loaded = value
    if type(value) is str:
        try:
            loaded = strict_loads(value, max_depth=MAX_DEPTH)
        except StrictJsonError as exc:
            return ReadOutput(value, None, (ContractError(_ISSUE_CODE[exc.issue], exc.key or "output",
                                                          exc.detail[:160]),))
        if type(loaded) is dict:
            return ReadOutput(value, loaded, ())
    return ReadOutput(value, None, (ContractError(C.NOT_AN_OBJECT, "output", short_repr(loaded)),))


def _nests_deeper(value: dict[str, Any], limit: int) -> bool:
    """:func:`~routebr_kit.core.strict_json.exceeds_depth` for a snapshot (exact ``dict`` and ``list`` containers,
    no cycles): the common proposal — strings and a list of strings — is answered in one pass over its values."""
    for item in value.values():
        kind = type(item)
        if kind is dict or (kind is list and any(type(x) is dict or type(x) is list for x in item)):
            return exceeds_depth(value, limit)
    return limit < 2 if any(type(item) is list for item in value.values()) else limit < 1


def parse_output(raw: Any) -> tuple[dict[str, Any] | None, tuple[ContractError, ...]]:
    """Phase 1: one strict-JSON object no deeper than :data:`MAX_DEPTH`, or an error (:func:`read_output`; ``raw``
    may be a :class:`ReadOutput` already).  Never raises."""
    read = read_output(raw)
    return read.parsed, read.errors


def check_action(parsed: Mapping[str, Any], catalog: Catalog, errors: list[ContractError]) -> CatalogAction | None:
    """``action_id`` must be a catalog ID; returns the catalog entry or ``None``."""
    value = parsed.get("action_id")
    action = catalog.index.get(value) if type(value) is str else None
    if action is None:
        errors.append(ContractError(C.ACTION_OUTSIDE_CATALOG, "action_id", short_repr(value)))
    return action


def check_topk(parsed: Mapping[str, Any], catalog: Catalog, action_id: str | None,
               errors: list[ContractError]) -> tuple[str, ...] | None:
    """``topk``: one to three unique catalog IDs, the first equal to the primary action."""
    topk = parsed.get("topk")
    if type(topk) is not list or not 1 <= len(topk) <= _MAX_TOPK:
        errors.append(ContractError(C.TOPK_LENGTH, "topk", short_repr(topk)))
        return None
    ids = [t for t in topk if type(t) is str]
    valid = True
    if len(ids) != len(topk) or any(t not in catalog.index for t in ids):
        errors.append(ContractError(C.TOPK_OUTSIDE_CATALOG, "topk", short_repr(topk)))
        valid = False
    if len(set(ids)) != len(ids):
        errors.append(ContractError(C.TOPK_NOT_UNIQUE, "topk", short_repr(topk)))
        valid = False
    if action_id is not None and topk[0] != action_id:
        errors.append(ContractError(C.TOPK_NOT_PRIMARY_FIRST, "topk", short_repr(topk)))
        valid = False
    return tuple(ids) if valid else None


def check_object(parsed: Mapping[str, Any], action: CatalogAction | None, candidates: Mapping[str, Entity],
                 errors: list[ContractError], *, type_checked: bool = True) -> str | None:
    """``object_id``: a candidate, ``UNRESOLVED`` or ``NONE``; related to the primary action's contract."""
    value = parsed.get("object_id")
    if type(value) is not str:
        errors.append(ContractError(C.OBJECT_OUTSIDE_REGISTRY, "object_id", short_repr(value)))
        return None
    entity = candidates.get(value)
    if entity is None and value != UNRESOLVED and value != NONE:
        errors.append(ContractError(C.OBJECT_OUTSIDE_REGISTRY, "object_id", short_repr(value)))
        return None
    if action is None or not type_checked:
        return value
    if action.requires_object:
        if value == NONE:
            errors.append(ContractError(C.OBJECT_REQUIRED, "object_id", value))
            return None
        if entity is not None and entity.object_type not in action.required_object_types:
            errors.append(ContractError(C.OBJECT_TYPE_MISMATCH, "object_id", f"{value} ({entity.object_type})"))
            return None
    elif value != NONE:
        errors.append(ContractError(C.OBJECT_FREE_REQUIRES_NONE, "object_id", short_repr(value)))
        return None
    return value


def check_proposal(raw: Any, catalog: Catalog, candidates: Mapping[str, Entity]) -> ContractResult:
    """Validate one RouteBR proposal (raw, or its :class:`ReadOutput`): the three phases one by one, every error
    collected."""
    parsed, parse_errors = parse_output(raw)
    if parsed is None:
        return ContractResult(None, parse_errors, None)
    errors: list[ContractError] = []
    action = check_action(parsed, catalog, errors)
    topk = check_topk(parsed, catalog, action.action_id if action else None, errors)
    object_id = check_object(parsed, action, candidates, errors)
    if errors:
        return ContractResult(None, tuple(errors), parsed)
    return ContractResult(Proposal(action.action_id, object_id, topk), (), parsed)  # type: ignore[union-attr,arg-type]


# --------------------------------------------------------------------------------------------- repair guard
#
# The rule (kit, stricter than the published code, which checked nothing): a format-only repair keeps the
# identifiers the *first* reply gives, however malformed that reply is, and adds none.
#
# 1. Recovery.  If the first reply is one JSON object (a mapping, or text that is strict JSON for an object), each
#    top-level ``action_id`` / ``object_id`` key it has is what it gives for that field: a non-blank string is held;
#    an empty or whitespace-only string, ``null`` or any other value is "none given".  For a field the object lacks,
#    and for every other reply (markdown fences, prose around JSON, truncated text, single quotes, arrays,
#    double-encoded strings, several objects, repeated keys), the text is scanned for ``action_id`` / ``object_id``
#    followed by ``:`` or ``=`` and a quoted value (double or single quotes, backslash-escaped quotes included);
#    every non-blank such value counts, and none found is "none given".
# 2. Anchoring (before any repair call).  The first reply must give exactly one distinct ``action_id`` and at most
#    one distinct ``object_id``; otherwise no format-only repair can be held to it, no repair call is made, and the
#    decision ends in the fail-closed terminal with ``FAIL_CLOSED_REPAIR_UNANCHORED``.
# 3. Guard (after the repair).  The accepted repair's ``action_id`` must equal the held action exactly
#    (``REPAIR_CHANGED_ACTION``); its ``object_id`` must equal the held object exactly when one was given
#    (``REPAIR_CHANGED_OBJECT``), and be ``UNRESOLVED`` or ``NONE`` — the contract's "no object" — when none was
#    (``REPAIR_ADDED_OBJECT``: a repair may not fill an identifier the first reply left empty or never stated).
#    Either way the decision ends with ``FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL``.

_HELD_FIELDS = ("action_id", "object_id")
_ID_PAIR = re.compile(r"""(?<![\w])(\\*["']?)(action_id|object_id)\1\s*[:=]\s*(\\*["'])([^"'\\\r\n]{1,256})\3""")


@dataclass(frozen=True, slots=True)
class HeldIdentifiers:
    """The distinct identifiers a first reply gives, in order of appearance (empty: none given)."""

    action_ids: tuple[str, ...] = ()
    object_ids: tuple[str, ...] = ()

    @property
    def action_id(self) -> str | None:
        return self.action_ids[0] if len(self.action_ids) == 1 else None

    @property
    def object_id(self) -> str | None:
        return self.object_ids[0] if len(self.object_ids) == 1 else None


def held_identifiers(raw: Any) -> HeldIdentifiers:
    """Step 1 of the repair rule: the identifiers a first reply gives (its one read, :func:`read_output`; ``raw``
    may be a :class:`ReadOutput` already).  Never raises."""
    read = read_output(raw)
    raw, parsed = read.value, read.obj
    found: dict[str, list[str]] = {"action_id": [], "object_id": []}
    text: str | None = raw if type(raw) is str else None
    scan = []
    for name in _HELD_FIELDS:
        if type(parsed) is dict and name in parsed:  # the object states the field: that value is what it gives
            value = parsed[name]
            if type(value) is str and value.strip():
                found[name].append(value)
        else:
            scan.append(name)
    if scan and text is None:  # not text, or a mapping lacking a top-level identifier: scan its (bounded) JSON form
        text = _dump_or_repr(raw)
    if scan and text:
        for match in _ID_PAIR.finditer(text):
            name, value = match.group(2), match.group(4)
            if name in scan and value.strip() and value not in found[name]:
                found[name].append(value)
    return HeldIdentifiers(tuple(found["action_id"]), tuple(found["object_id"]))


def anchor_errors(held: HeldIdentifiers) -> tuple[ContractError, ...]:
    """Step 2: why no repair can be held to a first reply (``()`` when a repair may be asked for)."""
    errors = []
    if len(held.action_ids) != 1:
        errors.append(ContractError(C.REPAIR_UNANCHORED, "action_id",
                                    "none given" if not held.action_ids else short_repr(list(held.action_ids))))
    if len(held.object_ids) > 1:
        errors.append(ContractError(C.REPAIR_UNANCHORED, "object_id", short_repr(list(held.object_ids))))
    return tuple(errors)


def guard_repair(first: Any, repaired: ContractResult) -> tuple[ContractError, ...]:
    """Step 3: the repaired proposal against the identifiers of the first reply (its raw output, or a
    :class:`HeldIdentifiers`).  Unanchored first replies are refused before the repair (:func:`anchor_errors`);
    here they fail as a changed action."""
    if repaired.proposal is None:
        return ()
    held = first if isinstance(first, HeldIdentifiers) else held_identifiers(first)
    action_id, object_id = repaired.proposal.action_id, repaired.proposal.object_id
    errors = []
    if held.action_id != action_id:
        errors.append(ContractError(C.REPAIR_CHANGED_ACTION, "action_id",
                                    f"{short_repr(held.action_id or list(held.action_ids))} -> {action_id!r}"))
    if held.object_ids:
        if held.object_id != object_id:
            errors.append(ContractError(C.REPAIR_CHANGED_OBJECT, "object_id",
                                        f"{short_repr(held.object_id or list(held.object_ids))} -> {object_id!r}"))
    elif object_id not in OBJECT_SENTINELS:  # none given: the repair may not supply one
        errors.append(ContractError(C.REPAIR_ADDED_OBJECT, "object_id", f"none given -> {object_id!r}"))
    return tuple(errors)


def repair_payload(stage: Stage, raw: Any, errors: tuple[ContractError, ...],
                   original_payload: Mapping[str, Any], target_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Payload of the single format-only repair call (the published shape plus the target schema)."""
    invalid = raw if isinstance(raw, str) else _dump_or_repr(raw)
    return {
        "invalid_output": invalid,
        "validation_errors": [e.message for e in errors],
        "constraint": _REPAIR_CONSTRAINT,
        "original_stage": stage.value,
        "target_schema": dict(target_schema),
        "original_payload": dict(original_payload),
    }


def _dump_or_repr(raw: Any) -> str:
    """JSON text of a parsed output (``repr`` for what JSON cannot hold); never raises."""
    if isinstance(raw, (Mapping, list, tuple)) and exceeds_depth(raw, MAX_DEPTH):
        return short_repr(raw)
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return short_repr(raw, 1 << 20)


#: The RouteBR proposal schema, restated to the repair model.
PROPOSAL_SCHEMA: Mapping[str, Any] = {
    "action_id": "one catalog action_id",
    "object_id": "one entities object_id, or UNRESOLVED, or NONE (object-free action)",
    "topk": "list of 1-3 unique catalog action_ids, topk[0] == action_id",
}
