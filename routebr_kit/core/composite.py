"""The composite contract (issue 32, item 3): one model call proposes an ordered list of one to three items.

Contract version :data:`COMPOSITE_CONTRACT_VERSION` (``routebr-composite/1``); the published single-item contract
(``routebr/1``, :mod:`routebr_kit.core.contract`) stays the default, and nothing here changes it.
An answer is one JSON object::

    {"items": [{"action_id": "A2_ACCOUNT_LOOKUP", "object_id": "NONE"},
               {"action_id": "A5_PROTECTED_ACTION", "object_id": "ETF_001"}]}

Each item is what the single-item contract validates for the stage (RouteBR: ``{action_id, object_id}``; B1/B2:
``{terminal, action_id, object_id, boundary[, rule_ids]}``); its ``topk`` is optional (``[action_id]`` when
absent) and, when given, checked as in the single-item contract (diagnostic only).  Validation, every violation
collected as a :class:`~routebr_kit.core.errors.ContractError`:

1. **parse** — the single-item contract's phase 1 (strict JSON, one object, bounded depth);
2. **the list** — ``items`` a list (``ITEMS_NOT_A_LIST``), not empty (``ITEMS_EMPTY``), at most
   :data:`MAX_ITEMS` long (``ITEMS_TOO_LONG``), each item an object (``ITEM_NOT_AN_OBJECT``), no two items with
   the same ``(action_id, object_id)`` (``ITEMS_DUPLICATE``);
3. **each item** — by the stage's own single-item check, its errors' fields prefixed ``items[i].``.

**Repair.**  One format-only repair, held item by item to the single-item repair rule: the first reply must be a
JSON object whose ``items`` is a list of one to three objects without duplicates (otherwise no format-only repair
can keep its choice: ``REPAIR_UNANCHORED`` on ``items``, no repair call), each item must anchor as a single-item
reply does, and the repair must keep the number of items and each item's identifiers.  Otherwise the decision
fails closed with the single-item reason codes.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .contract import HeldIdentifiers, anchor_errors, guard_repair, held_identifiers, read_output
from .errors import ContractError, parse_choice, short_repr
from .errors import ContractErrorCode as C

#: The composite contract of this module.
COMPOSITE_CONTRACT_VERSION = "routebr-composite/1"
MAX_ITEMS = 3
#: The contract flags sent with a composite proposal payload (in place of the single-item flags).
COMPOSITE_FLAGS: Mapping[str, Any] = {
    "contract_version": COMPOSITE_CONTRACT_VERSION,
    "ordered_items": True,
    "max_items": MAX_ITEMS,
    "unique_items": True,
    "lower_ranked_candidates_are_diagnostic_only": True,
    "object_ids_are_closed_list": True,
}


class CompositeMode(str, enum.Enum):
    """What a composite request declares: ``atomic`` — every item dispatches or none (the first non-dispatch item's
    terminal wins); ``independent`` — each item ends in its own terminal."""

    ATOMIC = "atomic"
    INDEPENDENT = "independent"

    @classmethod
    def parse(cls, value: CompositeMode | str) -> CompositeMode:
        return parse_choice(cls, value, field="mode", expected="atomic or independent")


def prefixed(errors: tuple[ContractError, ...], index: int) -> tuple[ContractError, ...]:
    """An item's errors, their fields under ``items[index].``."""
    return tuple(ContractError(e.code, f"items[{index}].{e.field}", e.got) for e in errors)


@dataclass(frozen=True, slots=True)
class CompositeResult:
    """Outcome of validating one composite output: the accepted item results (each the stage's single-item result)
    and the item outputs they were checked from, or every error."""

    results: tuple[Any, ...] | None
    errors: tuple[ContractError, ...]
    parsed: Mapping[str, Any] | None
    outputs: tuple[dict[str, Any], ...] = ()

    @property
    def ok(self) -> bool:
        return self.results is not None


def _item_list(obj: Mapping[str, Any] | None) -> tuple[list[dict[str, Any]] | None, tuple[ContractError, ...]]:
    """Phase 2: the ``items`` of a parsed output — a list of 1 to :data:`MAX_ITEMS` objects, no two with the same
    ``(action_id, object_id)`` — or its errors."""
    items = None if obj is None else obj.get("items")
    if type(items) is not list:
        return None, (ContractError(C.ITEMS_NOT_A_LIST, "items", short_repr(items)),)
    if not items:
        return None, (ContractError(C.ITEMS_EMPTY, "items", "[]"),)
    if len(items) > MAX_ITEMS:
        return None, (ContractError(C.ITEMS_TOO_LONG, "items", f"{len(items)} > {MAX_ITEMS}"),)
    errors = [ContractError(C.ITEM_NOT_AN_OBJECT, f"items[{i}]", short_repr(item))
              for i, item in enumerate(items) if type(item) is not dict]
    seen: dict[tuple[str, str], int] = {}
    for i, item in enumerate(items):
        key = (item.get("action_id"), item.get("object_id")) if type(item) is dict else None
        if key is None or type(key[0]) is not str or type(key[1]) is not str:
            continue
        if key in seen:
            errors.append(ContractError(C.ITEMS_DUPLICATE, f"items[{i}]", f"same as items[{seen[key]}]: {key}"))
        seen.setdefault(key, i)
    return (None, tuple(errors)) if errors else (items, ())


def _item_output(item: dict[str, Any]) -> dict[str, Any]:
    """The single-item output an item is decided from: the item, with ``topk`` ``[action_id]`` when it has none."""
    if "topk" in item or type(item.get("action_id")) is not str:
        return item
    return {**item, "topk": [item["action_id"]]}


def check_composite(raw: Any, check_item: Callable[[dict[str, Any]], Any]) -> CompositeResult:
    """Validate one composite output (raw, or its read); ``check_item`` is the stage's single-item check (a result
    with ``ok`` and ``errors``).  Every error collected; never raises."""
    read = read_output(raw)
    if read.errors:
        return CompositeResult(None, read.errors, None)
    items, errors = _item_list(read.obj)
    if items is None:
        return CompositeResult(None, errors, read.obj)
    outputs = tuple(_item_output(item) for item in items)
    results = tuple(check_item(output) for output in outputs)
    item_errors = tuple(e for i, r in enumerate(results) for e in prefixed(tuple(r.errors), i))
    if item_errors:
        return CompositeResult(None, item_errors, read.obj)
    return CompositeResult(results, (), read.obj, outputs)


# --------------------------------------------------------------------------------------------- repair guard, per item


@dataclass(frozen=True, slots=True)
class HeldItems:
    """What a composite first reply holds: each item's identifiers, or why none can be held (``refused``)."""

    items: tuple[HeldIdentifiers, ...] = ()
    refused: tuple[ContractError, ...] = ()


def hold_items(raw: Any) -> HeldItems:
    """The identifiers of each item a composite first reply states as JSON (its one read).  Never raises."""
    read = read_output(raw)
    if read.obj is None:
        return HeldItems((), (ContractError(C.REPAIR_UNANCHORED, "items", "not one JSON object"),))
    items, errors = _item_list(read.obj)
    if items is None:
        codes = ", ".join(dict.fromkeys(e.code.value for e in errors))
        return HeldItems((), (ContractError(C.REPAIR_UNANCHORED, "items", codes),))
    return HeldItems(tuple(held_identifiers(item) for item in items))


def anchor_items(held: HeldItems) -> tuple[ContractError, ...]:
    """Why no repair can be held to a composite first reply (``()``: each item anchors)."""
    if held.refused:
        return held.refused
    return tuple(e for i, item in enumerate(held.items) for e in prefixed(anchor_errors(item), i))


def guard_items(held: HeldItems, repaired: CompositeResult) -> tuple[ContractError, ...]:
    """The repaired items against the held ones: the same number, each held to the single-item guard."""
    if repaired.results is None:
        return ()
    if len(repaired.results) != len(held.items):
        return (ContractError(C.REPAIR_CHANGED_ACTION, "items", f"{len(held.items)} -> {len(repaired.results)} items"),)
    return tuple(e for i, (h, r) in enumerate(zip(held.items, repaired.results))
                 for e in prefixed(guard_repair(h, r.as_contract()), i))


def composite_schema(item_schema: Mapping[str, Any]) -> dict[str, Any]:
    """The target schema restated to a composite repair model: the list around the single-item schema."""
    item = "{" + ", ".join(f"{k}: {v}" for k, v in item_schema.items() if k != "topk") + "}"
    return {"items": f"items: ordered list of 1-3 unique items, each {item}; topk optional"}


__all__ = ["COMPOSITE_CONTRACT_VERSION", "COMPOSITE_FLAGS", "CompositeMode", "CompositeResult", "HeldItems",
           "MAX_ITEMS", "anchor_items", "check_composite", "composite_schema", "guard_items", "hold_items", "prefixed"]
