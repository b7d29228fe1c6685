"""Constrained decoding: the JSON Schema of the one answer a call may give, sent as the server's ``response_format``.

``--constrain json-schema`` builds, **per request**, a schema from exactly what the call's payload shows the model
(a repair: its original payload): an ``anyOf`` with one branch per catalog action (``action_id`` a ``const``;
``topk`` an ``enum`` of the explicit lists starting with that action, so no grammar has to honour ``uniqueItems``;
``object_id`` the candidates of an accepted type plus ``UNRESOLVED``, or only ``NONE``), crossed for B1/B2 with the
allowed ``(terminal, boundary)`` pairs, B2 adding one rule ID; for the composite stages (contract
``routebr-composite/1``, :func:`composite_answer_schema`) ``{"items": [...]}``, one to three single-item branches
without ``topk``; ``additionalProperties`` false everywhere.

Every instance passes :func:`~routebr_kit.core.contract.check_proposal` (B1/B2:
:func:`~routebr_kit.systems.baselines.check_direct`) and every answer those accept is an instance (property-tested);
:func:`check_grammar` refuses a schema llama-cpp-python would silently fall back from.  Meaning is not guaranteed,
and the state and rules are not in the schema: the controller still validates and decides (``docs/proposers.md``).

Two wire forms (profile key ``json_schema_style``): ``openai`` (default; ``{"type": "json_schema", "json_schema":
{"name", "schema", "strict": true}}``: OpenAI, vLLM, SGLang, ``llama-server``, Ollama 0.5+) and ``inline``
(``{"type": "json_object", "schema": ...}``: llama-cpp-python's server, which ``routebr-kit serve-model`` runs).
Standard library only (:func:`check_grammar` imports llama-cpp-python when asked).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.composite import MAX_ITEMS
from ..core.errors import DataError, ErrorCode, parse_choice
from ..core.records import NONE, OBJECT_FREE_TYPE, OBJECT_SENTINELS, UNRESOLVED, Boundary, Stage, Terminal

_TOPK_MAX = 3


class Constrain(str, enum.Enum):
    """Whether a call's ``response_format`` carries the schema of its answer."""

    NONE = "none"  # response_format {"type": "json_object"}: any JSON object
    JSON_SCHEMA = "json-schema"

    @classmethod
    def parse(cls, value: Constrain | str) -> Constrain:
        return parse_choice(cls, value, field="constrain", expected="none or json-schema")


class SchemaStyle(str, enum.Enum):
    """How the schema travels in ``response_format`` (see the module docstring for which servers take which)."""

    OPENAI = "openai"
    INLINE = "inline"


SCHEMA_STYLES = tuple(s.value for s in SchemaStyle)

_SCHEMA_NAME = {Stage.ROUTEBR: "routebr_proposal", Stage.B1_DIRECT: "b1_direct_route",
                Stage.B2_DIRECT_GUARD: "b2_direct_guard_route", Stage.ROUTEBR_COMPOSITE: "routebr_composite",
                Stage.B1_DIRECT_COMPOSITE: "b1_direct_composite", Stage.B2_DIRECT_GUARD_COMPOSITE:
                "b2_direct_guard_composite"}


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


#: The (terminal, boundary) pairs a B1/B2 answer may give: any terminal with ALLOW, else the terminal is the
#: boundary (so DISPATCH only with ALLOW).
TERMINAL_BOUNDARY_PAIRS: tuple[tuple[str, str], ...] = (
    *((t.value, Boundary.ALLOW.value) for t in Terminal),
    *((b.value, b.value) for b in Boundary if b is not Boundary.ALLOW and b.value in {t.value for t in Terminal}),
)


def _topk_lists(action_id: str, action_ids: Sequence[str]) -> list[list[str]]:
    """Every ``topk`` the contract accepts for ``action_id``: it first, then up to ``TOPK_MAX - 1`` other catalog
    actions, each once, in catalog order of enumeration."""
    others = [a for a in action_ids if a != action_id]
    lists: list[list[str]] = [[action_id]]
    frontier: list[list[str]] = [[action_id]]
    for _ in range(min(_TOPK_MAX, len(action_ids)) - 1):
        frontier = [[*head, o] for head in frontier for o in others if o not in head]
        lists += frontier
    return lists


def _action_views(items: Sequence[Any]) -> list[tuple[str, tuple[str, ...]]]:
    out: dict[str, tuple[str, ...]] = {}
    for item in items:
        if isinstance(item, Mapping):
            out.setdefault(str(item["action_id"]), tuple(map(str, item.get("required_object_types") or ())))
        else:  # a bare action ID: object-free unless stated
            out.setdefault(str(item), ())
    return list(out.items())


def _entity_views(items: Sequence[Any]) -> list[tuple[str, str | None]]:
    out: dict[str, str | None] = {}
    for item in items:
        if isinstance(item, Mapping):
            out.setdefault(str(item["object_id"]), item.get("object_type"))
        else:
            out.setdefault(str(item), None)
    return list(out.items())


def _object_choices(required_types: Sequence[str], entities: Sequence[tuple[str, str | None]]) -> list[str]:
    """The ``object_id`` values the contract accepts for an action of these ``required_object_types``."""
    if not required_types or OBJECT_FREE_TYPE in required_types:
        return [NONE]
    return _unique([*(oid for oid, otype in entities if otype in required_types and oid not in OBJECT_SENTINELS),
                    UNRESOLVED])


def answer_schema(stage: Stage, catalog: Sequence[Any], entities: Sequence[Any],
                  rule_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON Schema of an answer of ``stage`` (a repair stage: the stage it repairs).

    ``catalog`` is the payload's catalog view (``action_id`` and ``required_object_types`` per action),
    ``entities`` its entity view (``object_id`` and ``object_type``); ``rule_ids`` are needed for B2 only.  An empty
    catalog (or, for B2, an empty rule table) cannot be constrained: a located error.
    """
    answering = _answering(stage)
    if answering.is_composite:
        return _composite_answer_schema(answer_schema(answering.single, catalog, entities, rule_ids))
    actions = _action_views(catalog)
    if not actions:
        raise DataError(ErrorCode.EMPTY_CATALOG, "at least one catalog action to constrain to", field="catalog")
    objects = _entity_views(entities)
    action_ids = [a for a, _ in actions]
    rules = _unique([str(r) for r in rule_ids])
    if answering is Stage.B2_DIRECT_GUARD and not rules:
        raise DataError(ErrorCode.NO_RULES, "the rule table's rule IDs to constrain B2's rule_ids to", field="rules")
    pairs = [(None, None)] if answering is Stage.ROUTEBR else list(TERMINAL_BOUNDARY_PAIRS)
    branches = []
    for action_id, types in actions:
        for terminal, boundary in pairs:
            properties: dict[str, Any] = {}
            if terminal is not None:
                properties["terminal"] = {"type": "string", "const": terminal}
            properties["action_id"] = {"type": "string", "const": action_id}
            properties["object_id"] = {"type": "string", "enum": _object_choices(types, objects)}
            if boundary is not None:
                properties["boundary"] = {"type": "string", "const": boundary}
            properties["topk"] = {"type": "array", "enum": _topk_lists(action_id, action_ids)}
            if answering is Stage.B2_DIRECT_GUARD:
                properties["rule_ids"] = {"type": "array", "items": {"type": "string", "enum": rules},
                                          "minItems": 1, "maxItems": 1}
            branches.append({"type": "object", "properties": properties, "required": list(properties),
                             "additionalProperties": False})
    return {"anyOf": branches}


def _composite_answer_schema(single: Mapping[str, Any]) -> dict[str, Any]:
    """The composite contract's schema (issue 32) around a single-item ``anyOf`` schema: ``{"items": [...]}``, one
    to three items, each one of the single-item branches without ``topk`` (optional in an item), so each item's
    object is tied to its action as in a single answer.  ``uniqueItems`` states that no item repeats; a grammar
    may not enforce it (nor, for B1/B2 items, that two items differing only in terminal or boundary are duplicates),
    and the contract refuses duplicates whatever the schema let through (``ITEMS_DUPLICATE``)."""
    branches = []
    for branch in single["anyOf"]:
        properties = {k: v for k, v in branch["properties"].items() if k != "topk"}
        branches.append({**branch, "properties": properties, "required": [k for k in branch["required"]
                                                                          if k != "topk"]})
    items = {"type": "array", "items": {"anyOf": branches}, "minItems": 1, "maxItems": MAX_ITEMS,
             "uniqueItems": True}
    return {"type": "object", "properties": {"items": items}, "required": ["items"], "additionalProperties": False}


def schema_for_call(stage: Stage, payload: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`answer_schema` from what the call shows the model: the payload's ``catalog``, ``entities`` and (B2)
    ``rules`` — a repair's ``original_payload`` for a repair stage."""
    shown = payload.get("original_payload") if stage.is_repair else payload
    if not isinstance(shown, Mapping):
        raise DataError(ErrorCode.WRONG_TYPE, "a repair payload carrying its original payload",
                        field="original_payload", got=type(shown).__name__)
    _ids(shown, "catalog", "action_id")
    _ids(shown, "entities", "object_id")
    return answer_schema(stage, shown["catalog"], shown["entities"],
                         _ids(shown, "rules", "rule_id") if "rules" in shown else ())


def check_grammar(schema: Mapping[str, Any]) -> str:
    """The GBNF grammar llama.cpp's converter (llama-cpp-python's own) makes of ``schema`` — a located error when it
    fails, where llama-cpp-python would silently fall back to "any JSON".  Needs the extra ``[local]``."""
    import json

    try:
        from llama_cpp.llama_grammar import json_schema_to_gbnf
    except ImportError as exc:
        from .local_server import INSTALL_HINT

        raise DataError(ErrorCode.MISSING_EXTRA, "llama-cpp-python to check a schema's grammar (the extra [local]; "
                        f"install it with: {INSTALL_HINT})", field="constrain") from exc
    try:
        return json_schema_to_gbnf(json.dumps(dict(schema)))
    except Exception as exc:  # noqa: BLE001 - any converter failure is the silent fallback we refuse
        raise DataError(ErrorCode.INVALID_VALUE, "a schema llama.cpp converts to a grammar", field="constrain",
                        got=f"{type(exc).__name__}: {exc}"[:200]) from exc


def response_format(constrain: Constrain, style: SchemaStyle, stage: Stage,
                    payload: Mapping[str, Any]) -> dict[str, Any]:
    """The ``response_format`` of one request body."""
    if constrain is Constrain.NONE:
        return {"type": "json_object"}
    schema = schema_for_call(stage, payload)
    if style is SchemaStyle.INLINE:
        return {"type": "json_object", "schema": schema}
    return {"type": "json_schema",
            "json_schema": {"name": _SCHEMA_NAME[_answering(stage)], "schema": schema, "strict": True}}


def _answering(stage: Stage) -> Stage:
    return Stage(stage.value.removeprefix("REPAIR_")) if stage.is_repair else stage


def _ids(shown: Mapping[str, Any], key: str, field: str) -> list[str]:
    items = shown.get(key)
    if not isinstance(items, list) or not all(isinstance(i, Mapping) and isinstance(i.get(field), str)
                                              for i in items):
        raise DataError(ErrorCode.WRONG_TYPE, f"a payload list '{key}' of objects with a string '{field}'",
                        field=key, got=type(items).__name__)
    return [i[field] for i in items]


__all__ = ["Constrain", "SCHEMA_STYLES", "SchemaStyle", "TERMINAL_BOUNDARY_PAIRS", "answer_schema", "check_grammar",
           "response_format", "schema_for_call"]
