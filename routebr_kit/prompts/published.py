"""The published request protocol: the published prompt file, request payloads and validation messages.

The kit speaks two request protocols (:class:`Protocol`), chosen when a backend is built:

* ``kit`` (the default) — the kit's own prompt texts (:mod:`routebr_kit.prompts`), its repair payload that adds
  ``target_schema`` and restates the schema to the repair model, and its stricter B1/B2 validation;
* ``published`` — what the published runner sent: the stage texts of the artifact's ``experiments/prompts.json``
  (read from the artifact at run time, never copied into the kit), the published repair payloads and their
  validation-error strings, and the published B1/B2 acceptance rules.

This module holds what the published protocol needs below the backend and system layers: the validated prompt
file (:class:`PublishedPrompts`), the published validators as pure functions over the payload the model saw
(:func:`route_errors` for the RouteBR proposal, :func:`direct_errors` for B1/B2), and the published repair payload
(:func:`published_payload`).  Each validator returns :class:`PublishedError` values: the exact published string
(what a repair request carries) next to the kit's typed :class:`~routebr_kit.core.errors.ContractError` view.

Where the published code would raise instead of answering (an unhashable JSON value in a membership test, JSON
nested too deep for the parser), these functions report the value as invalid: a crash is not a decision.
Standard library only.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.errors import ContractError, DataError, ErrorCode, parse_choice, short_repr
from ..core.errors import ContractErrorCode as C
from ..core.hashing import sha256_bytes
from ..core.records import NONE, UNRESOLVED, Stage
from ..store.cases import Language
from ..store.files import decode_text, parse_json, read_bytes

#: The stage texts a published prompt file must hold; a ``REPAIR_<STAGE>`` call uses ``REPAIR``.
_PUBLISHED_KEYS = ("ROUTEBR", "B1_DIRECT", "B2_DIRECT_GUARD", "REPAIR")
#: ``constraint`` of the published RouteBR repair payload (the controller's) and of the B1/B2 one (the runner's).
ROUTEBR_REPAIR_CONSTRAINT = "format-only repair; preserve semantic choice and closed IDs"
DIRECT_REPAIR_CONSTRAINT = "format-only repair"
_TERMINALS = ("DISPATCH", "CLARIFY", "DEFER", "HANDOFF", "REJECT")
_BOUNDARIES = ("ALLOW", "CLARIFY", "DEFER", "HANDOFF", "REJECT")


class Protocol(str, enum.Enum):
    """Which request protocol a backend speaks (see the module docstring)."""

    KIT = "kit"
    PUBLISHED = "published"

    @classmethod
    def parse(cls, value: Protocol | str) -> Protocol:
        return parse_choice(cls, value, field="protocol", expected="a request protocol (kit or published)")


def protocol_of(backend: Any) -> Protocol:
    """The protocol a backend speaks: its ``protocol`` attribute, else ``kit`` (simulated, lexical, replay)."""
    value = getattr(backend, "protocol", Protocol.KIT)
    return value if isinstance(value, Protocol) else Protocol.parse(value)


# --------------------------------------------------------------------------------------------- the prompt file


@dataclass(frozen=True, slots=True)
class PublishedPrompts:
    """The stage texts of a published ``prompts.json``.  ``sha256`` is the hash of the file's bytes."""

    path: str
    texts: Mapping[str, str]
    language: Language
    version: str
    sha256: str

    @property
    def protocol(self) -> Protocol:
        return Protocol.PUBLISHED

    def instruction(self, stage: Stage) -> str:
        """The system message of a stage: its own text; every ``REPAIR_*`` stage gets the ``REPAIR`` text."""
        return self.texts["REPAIR" if stage.is_repair else stage.value]

    def describe(self) -> dict[str, str]:
        return {"protocol": Protocol.PUBLISHED.value, "prompt_id": "published", "version": self.version,
                "language": self.language.value, "path": self.path, "sha256": self.sha256}


def load_published_prompts(path: str | Path) -> PublishedPrompts:
    """Read and check a published prompt file (``ARTIFACT/experiments/prompts.json``).

    It must be a JSON object with a ``metadata.language`` (``zh-CN``, ``zh`` or ``en…``) and a non-empty string for
    each of ``ROUTEBR``, ``B1_DIRECT``, ``B2_DIRECT_GUARD`` and ``REPAIR``; anything else is a located
    :class:`~routebr_kit.core.errors.DataError` (file, line where the key sits, field).  The file is read by the
    kit's strict reader (:mod:`routebr_kit.store.files`), so a stage text given twice, ``NaN`` or a lone surrogate
    (which no request body could carry) fails here, before any request is sent.
    """
    name = str(path)
    data = read_bytes(path, "a published prompt file (ARTIFACT/experiments/prompts.json)")
    text = decode_text(data, file=name, expected="a published prompt file")
    doc = parse_json(text, "a JSON object of stage texts", kind=dict, file=name)  # duplicates, NaN, surrogates
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise DataError(ErrorCode.WRONG_TYPE if "metadata" in doc else ErrorCode.EMPTY_VALUE,
                        "a metadata object with the prompt language", file=name, line=_line_of(text, "metadata"),
                        field="metadata", got=None if meta is None else type(meta).__name__)
    language = _language(meta.get("language"), name, _line_of(text, "language"))
    texts = {}
    for key in _PUBLISHED_KEYS:
        value = doc.get(key)
        if not isinstance(value, str) or not value.strip():
            code = ErrorCode.EMPTY_VALUE if value is None or value == "" else ErrorCode.WRONG_TYPE
            raise DataError(code, f"the {key} stage text (a non-empty string)", file=name,
                            line=_line_of(text, key), field=key,
                            got=None if value is None else type(value).__name__)
        texts[key] = value
    return PublishedPrompts(name, MappingProxyType(texts), language, str(meta.get("version", "")),
                            sha256_bytes(data))


def _language(value: Any, file: str, line: int | None) -> Language:
    if not isinstance(value, str) or not value:
        raise DataError(ErrorCode.EMPTY_VALUE, "metadata.language (e.g. zh-CN)", file=file, line=line,
                        field="metadata.language", got=value)
    base = value.split("-")[0].split("_")[0].lower()
    try:
        return Language(base)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "metadata.language zh-CN, zh or en", file=file, line=line,
                        field="metadata.language", got=value) from None


def _line_of(text: str, key: str) -> int | None:
    match = re.search(rf'^\s*"{re.escape(key)}"\s*:', text, re.MULTILINE)
    return text.count("\n", 0, match.start()) + 1 if match else None


# --------------------------------------------------------------------------------------------- validators


@dataclass(frozen=True, slots=True)
class PublishedError:
    """One published validation error: the exact published string and the kit's typed view of it."""

    message: str
    error: ContractError


def _err(message: str, code: C, field: str, value: Any = None) -> PublishedError:
    return PublishedError(message, ContractError(code, field, "" if value is None else short_repr(value)))


def _member(value: Any, allowed: Iterable[Any]) -> bool:
    """``value in allowed`` for any JSON value (an unhashable value is simply not a member)."""
    try:
        return value in allowed
    except TypeError:
        return False


def parse(raw: Any) -> tuple[Mapping[str, Any] | None, tuple[PublishedError, ...]]:
    """The published parse: a mapping passes; a string must decode to one JSON object."""
    if isinstance(raw, Mapping):
        return raw, ()
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return None, (PublishedError(f"invalid JSON: {exc.msg}", ContractError(C.INVALID_JSON, "output",
                                                                                   exc.msg)),)
        except RecursionError:
            return None, (PublishedError("invalid JSON: nesting too deep",
                                         ContractError(C.INVALID_JSON, "output", "nesting too deep")),)
        if isinstance(value, dict):
            return value, ()
    return None, (_err("output must be one JSON object", C.NOT_AN_OBJECT, "output", raw),)


def route_errors(output: Mapping[str, Any], catalog: Iterable[Mapping[str, Any]],
                 entities: Iterable[Mapping[str, Any]]) -> tuple[PublishedError, ...]:
    """The published RouteBR proposal validator, over the catalog and entities views the model was sent."""
    actions = {a["action_id"]: tuple(a.get("required_object_types") or ()) for a in catalog}
    types = {e["object_id"]: e.get("object_type") for e in entities}
    errors: list[PublishedError] = []
    action_id = output.get("action_id")
    known_action = _member(action_id, actions)
    if not known_action:
        errors.append(_err("action_id is outside the closed catalog", C.ACTION_OUTSIDE_CATALOG, "action_id",
                           action_id))
    topk = output.get("topk")
    if not isinstance(topk, list) or not 1 <= len(topk) <= 3:
        errors.append(_err("topk must contain one to three action IDs", C.TOPK_LENGTH, "topk", topk))
    elif (not _unique(topk) or not all(_member(t, actions) for t in topk)
          or (known_action and topk[0] != action_id)):
        errors.append(_err("topk must be unique, closed-list, and primary-first", _topk_code(topk, actions),
                           "topk", topk))
    if known_action:
        required = actions[action_id]
        object_id = output.get("object_id")
        if required and NONE not in required:
            if not (_member(object_id, types) or object_id == UNRESOLVED):
                errors.append(_err("object_id is outside the closed entity list", C.OBJECT_OUTSIDE_REGISTRY,
                                   "object_id", object_id))
            elif _member(object_id, types) and types[object_id] not in required:
                errors.append(_err("object type violates the primary action contract", C.OBJECT_TYPE_MISMATCH,
                                   "object_id", object_id))
        elif object_id != NONE:
            errors.append(_err("object-free primary action must use NONE", C.OBJECT_FREE_REQUIRES_NONE,
                               "object_id", object_id))
    return tuple(errors)


def direct_errors(output: Mapping[str, Any], action_ids: Iterable[str], object_ids: Iterable[str],
                  rule_ids: Iterable[str] | None) -> tuple[PublishedError, ...]:
    """The published B1/B2 validator (``rule_ids=None`` for B1): no object-type or NONE-for-object-free check."""
    actions, objects = frozenset(action_ids), frozenset(object_ids) | {NONE, UNRESOLVED}
    errors: list[PublishedError] = []
    terminal, boundary = output.get("terminal"), output.get("boundary")
    if not _member(terminal, _TERMINALS):
        errors.append(_err("invalid terminal", C.TERMINAL_INVALID, "terminal", terminal))
    if not _member(boundary, _BOUNDARIES):
        errors.append(_err("invalid boundary", C.BOUNDARY_INVALID, "boundary", boundary))
    action_id = output.get("action_id")
    if not _member(action_id, actions):
        errors.append(_err("action_id is outside the catalog", C.ACTION_OUTSIDE_CATALOG, "action_id", action_id))
    object_id = output.get("object_id")
    if not _member(object_id, objects):
        errors.append(_err("object_id is outside the entity list", C.OBJECT_OUTSIDE_REGISTRY, "object_id",
                           object_id))
    topk = output.get("topk")
    if not isinstance(topk, list) or not 1 <= len(topk) <= 3:
        errors.append(_err("topk must contain one to three action IDs", C.TOPK_LENGTH, "topk", topk))
    elif not _unique(topk) or not all(_member(t, actions) for t in topk):
        errors.append(_err("topk contains duplicate or unknown IDs", _topk_code(topk, actions), "topk", topk))
    elif action_id != topk[0]:
        errors.append(_err("action_id must equal topk[0]", C.TOPK_NOT_PRIMARY_FIRST, "topk", topk))
    if terminal == "DISPATCH" and boundary != "ALLOW":
        errors.append(_err("DISPATCH requires ALLOW", C.DISPATCH_REQUIRES_ALLOW, "terminal", terminal))
    if boundary != "ALLOW" and terminal != boundary:
        errors.append(_err("non-ALLOW terminal must equal boundary", C.TERMINAL_BOUNDARY_MISMATCH, "terminal",
                           terminal))
    if rule_ids is not None:
        known = frozenset(rule_ids)
        cited = output.get("rule_ids")
        if not isinstance(cited, list) or not cited or not all(_member(r, known) for r in cited):
            errors.append(_err("rule_ids must cite known rules", C.RULE_IDS_UNKNOWN, "rule_ids", cited))
    return tuple(errors)


def _unique(items: list[Any]) -> bool:
    try:
        return len(set(items)) == len(items)
    except TypeError:  # an unhashable item is not a catalog ID anyway
        return False


def _topk_code(topk: list[Any], actions: Iterable[Any]) -> C:
    return C.TOPK_OUTSIDE_CATALOG if not all(_member(t, actions) for t in topk) else (
        C.TOPK_NOT_UNIQUE if not _unique(topk) else C.TOPK_NOT_PRIMARY_FIRST)


def stage_errors(stage: Stage, raw: Any, payload: Mapping[str, Any]) -> tuple[PublishedError, ...]:
    """Every published validation error of ``raw`` answered to an answering ``stage`` sent ``payload``."""
    parsed, errors = parse(raw)
    if parsed is None:
        return errors
    if stage is Stage.ROUTEBR:
        return route_errors(parsed, payload["catalog"], payload["entities"])
    if stage in (Stage.B1_DIRECT, Stage.B2_DIRECT_GUARD):
        rules = [r["rule_id"] for r in payload["rules"]] if stage is Stage.B2_DIRECT_GUARD else None
        return direct_errors(parsed, [a["action_id"] for a in payload["catalog"]],
                             [e["object_id"] for e in payload["entities"]], rules)
    raise DataError(ErrorCode.INVALID_VALUE, "an answering stage (ROUTEBR, B1_DIRECT, B2_DIRECT_GUARD)",
                    got=stage.value, field="stage")


# --------------------------------------------------------------------------------------------- payloads


def published_payload(stage: Stage, payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """The user-message payload the published code sends for a call the kit describes as (``stage``, ``payload``).

    Answering stages carry the same payload in both protocols.  A repair call's kit payload holds the invalid
    output and the original payload; the published one is rebuilt from those two: ``invalid_output``,
    ``validation_errors`` (the published strings, recomputed here by the published validator of the stage),
    ``constraint``, ``original_stage`` (RouteBR only) and ``original_payload`` — no ``target_schema``.
    """
    if not stage.is_repair:
        return payload
    original = Stage(stage.value.removeprefix("REPAIR_"))
    try:
        invalid, source = payload["invalid_output"], payload["original_payload"]
    except KeyError as exc:
        raise DataError(ErrorCode.EMPTY_VALUE, "a repair payload with invalid_output and original_payload",
                        field=str(exc.args[0]), got=sorted(payload)) from None
    errors = [e.message for e in stage_errors(original, invalid, source)]
    if not errors:
        # the published code repairs only what its validator rejects: this call cannot be a published request
        raise DataError(ErrorCode.INCONSISTENT_ASSETS,
                        "a repair of an output the published validator rejects (use the published acceptance rules "
                        "with the published protocol)", field="invalid_output", got=short_repr(invalid))
    if original is Stage.ROUTEBR:
        return {"invalid_output": invalid, "validation_errors": errors, "constraint": ROUTEBR_REPAIR_CONSTRAINT,
                "original_stage": original.value, "original_payload": source}
    return {"invalid_output": invalid, "validation_errors": errors, "constraint": DIRECT_REPAIR_CONSTRAINT,
            "original_payload": source}


def wire_bytes(body: Mapping[str, Any]) -> bytes:
    """The published transport's serialisation of a request body: UTF-8 JSON, non-ASCII kept, default separators."""
    return json.dumps(body, ensure_ascii=False).encode("utf-8")


__all__ = ["DIRECT_REPAIR_CONSTRAINT", "ROUTEBR_REPAIR_CONSTRAINT", "Protocol", "PublishedError", "PublishedPrompts",
           "direct_errors", "load_published_prompts", "parse", "protocol_of", "published_payload", "route_errors",
           "stage_errors", "wire_bytes"]
