"""The kit's own prompt sets: one versioned JSON file per language beside this module (see the package's
docstring for the file format).  Standard library only."""


from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.composite import COMPOSITE_CONTRACT_VERSION
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_bytes
from ..core.records import Stage
from ..store.cases import Language
from ..store.files import decode_text, parse_json, read_bytes
from .published import Protocol

PROMPT_DIR = Path(__file__).resolve().parent
PROMPT_KEYS = ("ROUTEBR", "B1_DIRECT", "B2_DIRECT_GUARD", "REPAIR")
ANSWERING_STAGES = ("ROUTEBR", "B1_DIRECT", "B2_DIRECT_GUARD")
DEFAULT_VERSION = "1"
_SCHEMA_SLOT = "{output_schema}"
#: The composite contract's instruction (issue 32), appended to a single-item stage's text; the kit's own, not a
#: published text, so the prompt files (and their hashes) stay as they are.
COMPOSITE_ADDENDUM = (
    "Composite contract {version}: the request may ask for up to three things. Answer one JSON object "
    '{"items": [...]} listing one to three items in the order the customer asked for them; each item is one object '
    "answering as above for that part of the request (topk optional). Never repeat an item.")



@dataclass(frozen=True, slots=True)
class PromptSet:
    """The instructions of one prompt file.  ``sha256`` is the hash of the file's bytes."""

    prompt_id: str
    version: str
    language: Language
    texts: Mapping[str, str]
    output_schemas: Mapping[str, str]
    repair_target: str
    sha256: str

    @property
    def protocol(self) -> Protocol:
        """The kit's own texts belong to the kit protocol (the published texts: :class:`PublishedPrompts`)."""
        return Protocol.KIT

    def instruction(self, stage: Stage) -> str:
        """The system message of a stage; a ``REPAIR_<STAGE>`` gets the repair text plus its target schema; a
        composite stage (``<STAGE>_COMPOSITE``) the text of its single-item stage, with the composite schema
        (:func:`composite_output_schema`), plus :data:`COMPOSITE_ADDENDUM`."""
        if stage.is_composite and not stage.is_repair:
            single = stage.value.removesuffix("_COMPOSITE")
            return (self.texts[single].replace(_SCHEMA_SLOT, self.output_schemas[stage.value]) + "\n\n"
                    + COMPOSITE_ADDENDUM.replace("{version}", COMPOSITE_CONTRACT_VERSION))
        if stage.is_repair:
            target = stage.value.removeprefix("REPAIR_")
            line = self.repair_target.replace("{stage}", target).replace(_SCHEMA_SLOT, self.output_schemas[target])
            return self.texts["REPAIR"] + "\n\n" + line
        return self.texts[stage.value].replace(_SCHEMA_SLOT, self.output_schemas[stage.value])

    def describe(self) -> dict[str, str]:
        return {"prompt_id": self.prompt_id, "version": self.version, "language": self.language.value,
                "sha256": self.sha256}


def prompt_path(language: Language | str, version: str = DEFAULT_VERSION) -> Path:
    return PROMPT_DIR / f"routebr-prompts-v{version}.{Language(language).value}.json"


def load_prompts(language: Language | str = Language.EN, version: str = DEFAULT_VERSION, *,
                 path: str | Path | None = None) -> PromptSet:
    """Load and check one prompt file (the kit's own by language and version, or any file by ``path``)."""
    try:
        language = Language(language)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "a prompt language (en or zh)", got=language,
                        field="language") from None
    file = Path(path) if path is not None else prompt_path(language, version)
    name = str(file)
    data = read_bytes(file, "a prompt file")
    doc = parse_json(decode_text(data, file=name, expected="a prompt file"), "a JSON prompt file", kind=dict,
                     file=name)
    meta = _object(doc, "metadata", name)
    stages = _object(doc, "stages", name)
    schemas = _object(doc, "output_schemas", name)
    texts = {key: _lines(stages, key, name) for key in PROMPT_KEYS}
    for key in ANSWERING_STAGES:
        if not isinstance(schemas.get(key), str) or not schemas[key]:
            raise DataError(ErrorCode.EMPTY_VALUE, "a JSON output schema string", file=name,
                            field=f"output_schemas.{key}")
        if _SCHEMA_SLOT not in texts[key]:
            raise DataError(ErrorCode.INVALID_VALUE, f"a text containing {_SCHEMA_SLOT}", file=name,
                            field=f"stages.{key}")
    repair_target = doc.get("repair_target")
    if not isinstance(repair_target, str) or _SCHEMA_SLOT not in repair_target:
        raise DataError(ErrorCode.INVALID_VALUE, f"a repair_target line containing {_SCHEMA_SLOT}", file=name,
                        field="repair_target")
    declared = meta.get("language")
    if declared != language.value:
        raise DataError(ErrorCode.INVALID_VALUE, f"metadata.language {language.value!r}", file=name,
                        field="metadata.language", got=declared)
    output_schemas = {k: schemas[k] for k in ANSWERING_STAGES}
    output_schemas.update({f"{k}_COMPOSITE": composite_output_schema(schemas[k]) for k in ANSWERING_STAGES})
    return PromptSet(str(meta.get("prompt_id", "")), str(meta.get("version", "")), language, texts,
                     output_schemas, repair_target, sha256_bytes(data))


def composite_output_schema(single: str) -> str:
    """The output schema of a composite stage (issue 32), derived from its single-item stage's: an ``items`` list
    of one to three such objects (``topk`` optional in an item).  Derived, never read from a prompt file."""
    return '{"items": [' + single + ", ... 1-3 items, topk optional]}"


def detect_language(texts: Iterable[str]) -> Language:
    """``zh`` when most texts contain CJK ideographs, else ``en``."""
    texts = list(texts)
    cjk = sum(any(unicodedata.name(ch, "").startswith("CJK UNIFIED") for ch in text) for text in texts)
    return Language.ZH if texts and cjk * 2 >= len(texts) else Language.EN


def _object(doc: Any, key: str, file: str) -> Mapping[str, Any]:
    value = doc.get(key) if isinstance(doc, dict) else None
    if not isinstance(value, dict):
        raise DataError(ErrorCode.WRONG_TYPE, "a JSON object", file=file, field=key, got=value)
    return value


def _lines(stages: Mapping[str, Any], key: str, file: str) -> str:
    lines = stages.get(key)
    if not isinstance(lines, list) or not lines or not all(isinstance(line, str) for line in lines):
        raise DataError(ErrorCode.WRONG_TYPE, "a non-empty list of text lines", file=file, field=f"stages.{key}",
                        got=lines)
    return "\n".join(lines)
