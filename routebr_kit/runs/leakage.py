"""Did any request body carry gold? — computed from the bodies actually sent, never asserted as a constant.

A run manifest's ``gold_fields_passed_to_model`` is the result of :func:`gold_leaks` over every request body the
run's receipts recorded.  A body leaks when, anywhere in it (JSON strings that hold JSON — the chat messages'
``content`` — are searched too):

* a **key** names a reference field: it starts with ``gold`` or contains ``annotator``, ``scenario_cell``,
  ``pair_id`` or ``object_difficulty``;
* a **value** equals a gold-only value of that case: its ``scenario_cell``, its ``pair_id``, its gold object
  difficulty (except ``NONE``, which is also the contract's object sentinel) or a ``T_<TERMINAL>`` gold final path.

What this does not establish: gold *actions*, *objects*, *boundaries* and *rule IDs* are catalog, registry and
rule vocabulary that the prompts legitimately contain (B2 sees the rules and the runtime state by design), so their
presence is not a leak and is not searched for; nor can a scan see information that reached a model by other means.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ..store.cases import Case

_REFERENCE_KEY_PARTS = ("annotator", "scenario_cell", "pair_id", "object_difficulty")
#: How deep a body is searched (request bodies are shallow; this only bounds hostile input).
MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class Leak:
    """One finding: the case, where in the body, and what was found."""

    case_id: str
    stage: str
    where: str
    found: str


def gold_only_values(case: Case) -> frozenset[str]:
    """The values of ``case`` that exist only in its reference labels."""
    values = {case.scenario_cell, case.pair_id}
    if case.gold.object_difficulty.value != "NONE":
        values.add(case.gold.object_difficulty.value)
    if case.gold.final_path.startswith("T_"):
        values.add(case.gold.final_path)
    return frozenset(v for v in values if v)


def _walk(value: Any, where: str, depth: int = 0) -> Iterator[tuple[str, str, str]]:
    """``(kind, where, text)`` for every key and string value, decoding JSON held in strings."""
    if depth > MAX_DEPTH:
        return
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield "key", f"{where}.{key}", str(key)
            yield from _walk(item, f"{where}.{key}", depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _walk(item, f"{where}[{i}]", depth + 1)
    elif isinstance(value, str):
        yield "value", where, value
        text = value.strip()
        if text[:1] in "{[":
            try:
                inner = json.loads(text)
            except ValueError:
                return
            yield from _walk(inner, where + "<json>", depth + 1)


def gold_leaks(case: Case, stage: str, body: Any) -> list[Leak]:
    """Every reference key or gold-only value of ``case`` found in one request ``body``."""
    gold = gold_only_values(case)
    found = []
    for kind, where, text in _walk(body, "body"):
        if kind == "key":
            lowered = text.lower()
            if lowered.startswith("gold") or any(part in lowered for part in _REFERENCE_KEY_PARTS):
                found.append(Leak(case.case_id, stage, where, f"key {text!r}"))
        elif kind == "value" and text in gold:
            found.append(Leak(case.case_id, stage, where, f"gold-only value {text!r}"))
    return found


def receipt_leaks(case: Case, receipt: Mapping[str, Any]) -> list[Leak]:
    """Every leak in the request bodies one receipt recorded (``calls[].request_body``)."""
    return [leak for call in receipt.get("calls", [])
            for leak in gold_leaks(case, str(call.get("stage", "")), call.get("request_body"))]


def leak_summary(pairs: Iterable[tuple[Case, Mapping[str, Any]]]) -> dict[str, Any]:
    """The manifest's record: bodies checked, leaks found (first 20) and the computed verdict."""
    bodies = 0
    leaks: list[Leak] = []
    for case, receipt in pairs:
        bodies += len(receipt.get("calls", []))
        leaks += receipt_leaks(case, receipt)
    return {"passed_to_model": bool(leaks), "request_bodies_checked": bodies, "leaks": len(leaks),
            "examples": [asdict(leak) for leak in leaks[:20]], "method": "routebr_kit.runs.leakage"}


__all__ = ["Leak", "gold_leaks", "gold_only_values", "leak_summary", "receipt_leaks"]
