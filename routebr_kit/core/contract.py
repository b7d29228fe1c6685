"""The proposal contract: ``{action_id, object_id, topk}`` against a closed catalog and a closed entity list.

Validation runs in three phases and returns *every* violation as a :class:`ContractError` value:

1. **parse** — a mapping passes; a string must be *strict* JSON for one object (a repeated key is
   ``DUPLICATE_KEY``, ``NaN``/``Infinity`` ``NON_FINITE_NUMBER``); anything else is ``NOT_AN_OBJECT``; either way
   nesting deeper than :data:`MAX_DEPTH` is ``NESTING_TOO_DEEP``;
2. **enumerated identifiers** — ``action_id`` in the catalog, ``topk`` a list of one to three catalog IDs,
   ``object_id`` a candidate ID, ``UNRESOLVED`` or ``NONE``;
3. **cross-field relations** — ``topk`` unique and primary-first, the object type permitted by the primary
   action, ``NONE`` exactly for object-free actions.

Any JSON value of any type, size or depth in any field yields errors, never an exception.  Extra keys are ignored
(but count towards the depth bound).  The repair guard (below) holds a repair to the identifiers the first reply
exposes, however malformed it is.
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
from .records import NONE, UNRESOLVED, Catalog, CatalogAction, Entity, Proposal, Stage, new_proposal
from .strict_json import JsonIssue, StrictJsonError, exceeds_depth, strict_loads

MAX_TOPK = 3  # (clean_proposal spells out the checks for three)
#: Deepest nesting a model output may have (a proposal needs 2: the object and its ``topk`` list).
MAX_DEPTH = 32
REPAIR_CONSTRAINT = "format-only repair; preserve semantic choice and closed IDs"


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


def parse_output(raw: Any) -> tuple[Mapping[str, Any] | None, tuple[ContractError, ...]]:
    """Phase 1: one strict-JSON object no deeper than :data:`MAX_DEPTH`, or an error.  Never raises.

    Text must be strict JSON (:mod:`routebr_kit.core.strict_json`): a repeated key, ``NaN``/``Infinity`` or
    nesting deeper than :data:`MAX_DEPTH` is a contract error like any other syntax error.  An already-parsed
    mapping is held to the same depth bound (a self-containing one exceeds it).
    """
    if isinstance(raw, Mapping):
        if exceeds_depth(raw, MAX_DEPTH):
            return None, (ContractError(C.NESTING_TOO_DEEP, "output", f"deeper than {MAX_DEPTH}"),)
        return raw, ()
    if isinstance(raw, str):
        try:
            value = strict_loads(raw, max_depth=MAX_DEPTH)
        except StrictJsonError as exc:
            return None, (ContractError(_ISSUE_CODE[exc.issue], exc.key or "output", exc.detail[:160]),)
        if isinstance(value, dict):
            return value, ()
        return None, (ContractError(C.NOT_AN_OBJECT, "output", short_repr(value)),)
    return None, (ContractError(C.NOT_AN_OBJECT, "output", short_repr(raw)),)


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
    if type(topk) is not list or not 1 <= len(topk) <= MAX_TOPK:
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
    """Validate one RouteBR proposal (all phases, all errors)."""
    if type(raw) is dict:
        proposal = clean_proposal(raw, catalog, candidates)
        if proposal is not None:
            return ContractResult(proposal, (), raw)
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


def clean_proposal(parsed: dict, catalog: Catalog, candidates: Mapping[str, Entity]) -> Proposal | None:
    """The common case in a few lookups: a fully valid proposal, or ``None`` to take the error-collecting path.

    Accepts exactly what the three phases accept when the output has exactly the three contract keys
    (property-tested against them), so it changes speed only; an output with extra keys (which count towards the
    depth bound) or missing ones always takes the phases.  The one clean-case test: :meth:`check_proposal` and
    the controller's stored-output path (:meth:`~routebr_kit.core.controller.Controller.decide`) both use it.
    """
    if len(parsed) != 3:
        return None
    try:
        action_id = parsed["action_id"]
        topk = parsed["topk"]
        object_id = parsed["object_id"]
    except KeyError:  # three keys, but not these three
        return None
    if type(action_id) is not str or type(topk) is not list or type(object_id) is not str:
        return None
    contracts = catalog._contracts
    contract = contracts.get(action_id)
    size = len(topk)
    if contract is None or size == 0 or size > MAX_TOPK or topk[0] != action_id:
        return None
    if size > 1:  # the lower-ranked IDs (MAX_TOPK is 3): catalog strings, distinct from those before them
        second = topk[1]
        if type(second) is not str or second not in contracts or second == action_id:
            return None
        if size == 3:
            third = topk[2]
            if type(third) is not str or third not in contracts or third == action_id or third == second:
                return None
    if contract.requires_object:
        if object_id != UNRESOLVED:
            entity = candidates.get(object_id)
            if entity is None or entity.object_type not in contract.object_types:
                return None
    elif object_id != NONE:
        return None
    return new_proposal(action_id, object_id, tuple(topk))


# --------------------------------------------------------------------------------------------- repair guard
#
# The rule (kit, stricter than the published code, which checked nothing): a repair is held to the identifiers
# the *first* reply exposes, however malformed that reply is.
#
# 1. Recovery.  If the first reply is one JSON object (a mapping, or text that is strict JSON for an object), its
#    top-level string ``action_id`` / ``object_id`` are the held identifiers.  For any field not found that way,
#    and for every other reply (markdown fences, prose around JSON, truncated text, single quotes, arrays,
#    double-encoded strings, several objects, repeated keys), the text is scanned for ``action_id`` / ``object_id``
#    followed by ``:`` or ``=`` and a non-empty quoted value (double or single quotes, backslash-escaped quotes
#    included); every such value counts.
# 2. Anchoring (before any repair call).  The first reply must expose exactly one distinct ``action_id`` and at
#    most one distinct ``object_id``; otherwise no format-only repair can be held to it, no repair call is made,
#    and the decision ends in the fail-closed terminal with ``FAIL_CLOSED_REPAIR_UNANCHORED``.
# 3. Guard (after the repair).  The accepted repair's ``action_id`` must equal the held action exactly, and its
#    ``object_id`` the held object exactly when one was exposed (a repair may supply an object the first reply
#    never reached, e.g. when it was truncated; the contract and the object gate still apply to it); otherwise
#    ``FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL``.

_HELD_FIELDS = ("action_id", "object_id")
_ID_PAIR = re.compile(r"""(?<![\w])(\\*["']?)(action_id|object_id)\1\s*[:=]\s*(\\*["'])([^"'\\\r\n]{1,256})\3""")


@dataclass(frozen=True, slots=True)
class HeldIdentifiers:
    """The distinct identifiers recovered from a first reply, in order of appearance."""

    action_ids: tuple[str, ...] = ()
    object_ids: tuple[str, ...] = ()

    @property
    def action_id(self) -> str | None:
        return self.action_ids[0] if len(self.action_ids) == 1 else None

    @property
    def object_id(self) -> str | None:
        return self.object_ids[0] if len(self.object_ids) == 1 else None


def held_identifiers(raw: Any) -> HeldIdentifiers:
    """Step 1 of the repair rule: the identifiers a first reply exposes.  Never raises."""
    found: dict[str, list[str]] = {"action_id": [], "object_id": []}
    parsed: Any = raw if isinstance(raw, Mapping) else None
    text: str | None = raw if isinstance(raw, str) else None
    if text is not None:
        try:
            parsed = strict_loads(text, max_depth=MAX_DEPTH)
        except StrictJsonError:
            parsed = None
    elif not isinstance(raw, Mapping):
        text = _dump_or_repr(raw)
    missing = []
    for name in _HELD_FIELDS:
        value = parsed.get(name) if isinstance(parsed, Mapping) else None
        if type(value) is str and value.strip():
            found[name].append(value)
        else:
            missing.append(name)
    if missing and text is None:  # a mapping lacking a top-level identifier: scan its (bounded) JSON form
        text = _dump_or_repr(raw)
    if missing and text:
        for match in _ID_PAIR.finditer(text):
            name, value = match.group(2), match.group(4)
            if name in missing and value.strip() and value not in found[name]:
                found[name].append(value)
    return HeldIdentifiers(tuple(found["action_id"]), tuple(found["object_id"]))


def anchor_errors(held: HeldIdentifiers) -> tuple[ContractError, ...]:
    """Step 2: why no repair can be held to a first reply (``()`` when a repair may be asked for)."""
    errors = []
    if len(held.action_ids) != 1:
        errors.append(ContractError(C.REPAIR_UNANCHORED, "action_id",
                                    "none exposed" if not held.action_ids else short_repr(list(held.action_ids))))
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
    errors = []
    if held.action_id != repaired.proposal.action_id:
        errors.append(ContractError(C.REPAIR_CHANGED_ACTION, "action_id",
                                    f"{short_repr(held.action_id or list(held.action_ids))} -> "
                                    f"{repaired.proposal.action_id!r}"))
    if held.object_ids and held.object_id != repaired.proposal.object_id:
        errors.append(ContractError(C.REPAIR_CHANGED_OBJECT, "object_id",
                                    f"{short_repr(held.object_id or list(held.object_ids))} -> "
                                    f"{repaired.proposal.object_id!r}"))
    return tuple(errors)


def repair_payload(stage: Stage, raw: Any, errors: tuple[ContractError, ...],
                   original_payload: Mapping[str, Any], target_schema: Mapping[str, Any]) -> dict[str, Any]:
    """Payload of the single format-only repair call (the published shape plus the target schema)."""
    invalid = raw if isinstance(raw, str) else _dump_or_repr(raw)
    return {
        "invalid_output": invalid,
        "validation_errors": [e.message for e in errors],
        "constraint": REPAIR_CONSTRAINT,
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
