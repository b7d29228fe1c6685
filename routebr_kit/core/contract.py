"""The proposal contract: ``{action_id, object_id, topk}`` against a closed catalog and a closed entity list.

Validation runs in three phases and returns *every* violation as a :class:`ContractError` value:

1. **parse** — a dict passes; a string must be JSON for one object; anything else is ``NOT_AN_OBJECT``;
2. **enumerated identifiers** — ``action_id`` in the catalog, ``topk`` a list of one to three catalog IDs,
   ``object_id`` a candidate ID, ``UNRESOLVED`` or ``NONE``;
3. **cross-field relations** — ``topk`` unique and primary-first, the object type permitted by the primary
   action, ``NONE`` exactly for object-free actions.

Any JSON value of any type or size in any field yields errors, never an exception.  Extra keys are ignored.
The same building blocks validate the B1/B2 one-call routes (:mod:`routebr_kit.systems.baselines`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .errors import ContractError, short_repr
from .errors import ContractErrorCode as C
from .records import NONE, UNRESOLVED, Catalog, CatalogAction, Entity, Proposal, Stage

MAX_TOPK = 3
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


def parse_output(raw: Any) -> tuple[Mapping[str, Any] | None, tuple[ContractError, ...]]:
    """Phase 1: one JSON object, or an error.  Never raises."""
    if isinstance(raw, Mapping):
        return raw, ()
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError as exc:  # JSONDecodeError is a ValueError
            return None, (ContractError(C.INVALID_JSON, "output", str(exc)[:160]),)
        except RecursionError:
            return None, (ContractError(C.INVALID_JSON, "output", "nesting too deep"),)
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

    Accepts exactly what the three phases accept (property-tested against them), so it changes speed only.
    """
    index = catalog.index
    action_id = parsed.get("action_id")
    topk = parsed.get("topk")
    object_id = parsed.get("object_id")
    if type(action_id) is not str or type(topk) is not list or type(object_id) is not str:
        return None
    action = index.get(action_id)
    size = len(topk)
    if action is None or size == 0 or size > MAX_TOPK or topk[0] != action_id:
        return None
    if size > 1:  # (a one-element topk is the primary action, already checked)
        for item in topk:
            if type(item) is not str or item not in index:
                return None
        if len(set(topk)) != size:
            return None
    if action.requires_object:
        if object_id != UNRESOLVED:
            entity = candidates.get(object_id)
            if entity is None or entity.object_type not in action.required_object_types:
                return None
    elif object_id != NONE:
        return None
    return Proposal(action_id, object_id, tuple(topk))


def guard_repair(first: ContractResult, repaired: ContractResult) -> tuple[ContractError, ...]:
    """The paper's repair rule: identifiers that parsed in the first pass must survive the repair unchanged."""
    if first.parsed is None or repaired.proposal is None:
        return ()
    errors = []
    before = first.parsed.get("action_id")
    if type(before) is str and before != repaired.proposal.action_id:
        errors.append(ContractError(C.REPAIR_CHANGED_ACTION, "action_id",
                                    f"{short_repr(before)} -> {repaired.proposal.action_id!r}"))
    before = first.parsed.get("object_id")
    if type(before) is str and before != repaired.proposal.object_id:
        errors.append(ContractError(C.REPAIR_CHANGED_OBJECT, "object_id",
                                    f"{short_repr(before)} -> {repaired.proposal.object_id!r}"))
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
    try:
        return json.dumps(raw, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(raw)


#: The RouteBR proposal schema, restated to the repair model.
PROPOSAL_SCHEMA: Mapping[str, Any] = {
    "action_id": "one catalog action_id",
    "object_id": "one entities object_id, or UNRESOLVED, or NONE (object-free action)",
    "topk": "list of 1-3 unique catalog action_ids, topk[0] == action_id",
}
