"""Constrained decoding: the JSON Schema of the one answer a call may give, sent as the server's ``response_format``.

``--constrain json-schema`` builds, **per request**, a schema from exactly what the model is shown in that call's
payload: ``action_id`` and every ``topk`` item are enums of the catalog's action IDs, ``object_id`` is an enum of
the case's candidate object IDs plus ``NONE`` and ``UNRESOLVED``, ``topk`` holds 1–3 unique items; B1 and B2 add
the ``terminal`` and ``boundary`` enums, B2 a ``rule_ids`` list of the rule table's IDs.  A repair call gets the
schema of the stage it repairs (built from the original payload it carries).  ``additionalProperties`` is false.

What a schema can and cannot do — the controller still validates everything:

* it removes *format* errors: unparseable JSON, a missing field, an identifier outside the catalog or the case's
  candidates, a topk of the wrong length, an unknown terminal, boundary or rule;
* it cannot express ``topk[0] == action_id``, an object whose type the action does not take, ``NONE`` only for
  object-free actions, ``DISPATCH`` only with ``ALLOW``, nor whether a rule is the *first* winning one — and a
  grammar built from it may ignore ``uniqueItems`` (llama.cpp's conversion does);
* it never touches the runtime state or the rules: a valid-looking forbidden action is still blocked by them.

Two wire forms (profile key ``json_schema_style``):

* ``openai`` (default) — ``{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}``: the
  OpenAI API, vLLM, SGLang, llama.cpp's ``llama-server`` and Ollama (0.5+) accept it;
* ``inline`` — ``{"type": "json_object", "schema": ...}``: llama-cpp-python's server (``python -m
  llama_cpp.server``, what ``routebr-kit serve-model`` runs), which rejects the ``json_schema`` type; llama.cpp's
  ``llama-server`` accepts this form too.

Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, UNRESOLVED, Boundary, Stage, Terminal

TOPK_MAX = 3


class Constrain(str, enum.Enum):
    """Whether a call's ``response_format`` carries the schema of its answer."""

    NONE = "none"  # response_format {"type": "json_object"}: any JSON object
    JSON_SCHEMA = "json-schema"

    @classmethod
    def parse(cls, value: Constrain | str) -> Constrain:
        if isinstance(value, Constrain):
            return value
        try:
            return cls(str(value))
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "none or json-schema", field="constrain", got=value) from None


class SchemaStyle(str, enum.Enum):
    """How the schema travels in ``response_format`` (see the module docstring for which servers take which)."""

    OPENAI = "openai"
    INLINE = "inline"


SCHEMA_STYLES = tuple(s.value for s in SchemaStyle)

_SCHEMA_NAME = {Stage.ROUTEBR: "routebr_proposal", Stage.B1_DIRECT: "b1_direct_route",
                Stage.B2_DIRECT_GUARD: "b2_direct_guard_route"}


def _unique(values: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(values))


def answer_schema(stage: Stage, action_ids: Sequence[str], object_ids: Sequence[str],
                  rule_ids: Sequence[str] = ()) -> dict[str, Any]:
    """The JSON Schema of an answer of ``stage`` (a repair stage: the stage it repairs) over these identifiers.

    ``object_ids`` are the case's candidates; ``NONE`` and ``UNRESOLVED`` are added.  ``rule_ids`` are needed for
    B2 only.  An empty catalog (or, for B2, an empty rule table) cannot be constrained: a located error.
    """
    answering = _answering(stage)
    actions = _unique([str(a) for a in action_ids])
    if not actions:
        raise DataError(ErrorCode.EMPTY_CATALOG, "at least one catalog action to constrain to", field="catalog")
    action = {"type": "string", "enum": actions}
    properties: dict[str, Any] = {}
    if answering is not Stage.ROUTEBR:
        properties["terminal"] = {"type": "string", "enum": [t.value for t in Terminal]}
    properties["action_id"] = action
    properties["object_id"] = {"type": "string", "enum": _unique([*map(str, object_ids), NONE, UNRESOLVED])}
    if answering is not Stage.ROUTEBR:
        properties["boundary"] = {"type": "string", "enum": [b.value for b in Boundary]}
    properties["topk"] = {"type": "array", "items": dict(action), "minItems": 1,
                          "maxItems": min(TOPK_MAX, len(actions)), "uniqueItems": True}
    if answering is Stage.B2_DIRECT_GUARD:
        rules = _unique([str(r) for r in rule_ids])
        if not rules:
            raise DataError(ErrorCode.NO_RULES, "the rule table's rule IDs to constrain B2's rule_ids to",
                            field="rules")
        properties["rule_ids"] = {"type": "array", "items": {"type": "string", "enum": rules}, "minItems": 1,
                                  "maxItems": 1}
    return {"type": "object", "properties": properties, "required": list(properties),
            "additionalProperties": False}


def schema_for_call(stage: Stage, payload: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`answer_schema` from what the call shows the model: the payload's ``catalog``, ``entities`` and (B2)
    ``rules`` — a repair's ``original_payload`` for a repair stage."""
    shown = payload.get("original_payload") if stage.is_repair else payload
    if not isinstance(shown, Mapping):
        raise DataError(ErrorCode.WRONG_TYPE, "a repair payload carrying its original payload",
                        field="original_payload", got=type(shown).__name__)
    return answer_schema(stage, _ids(shown, "catalog", "action_id"), _ids(shown, "entities", "object_id"),
                         _ids(shown, "rules", "rule_id") if "rules" in shown else ())


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


__all__ = ["Constrain", "SCHEMA_STYLES", "SchemaStyle", "TOPK_MAX", "answer_schema", "response_format",
           "schema_for_call"]
