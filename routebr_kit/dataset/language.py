"""Language packs: the phrase banks the realizer draws customer messages from.

A pack is data only (``templates_en.py``, ``templates_zh.py``).  Templates mark the cue evidence with ``[[…]]`` —
the realizer removes the brackets and records the span as a gold cue — and use ``{obj}`` for the object reference
and ``{name}`` placeholders for the pack's ``slot_values``.  Templates never start with ``{obj}`` in English (no
re-capitalisation of names such as "iShares").
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from ..store.cases import Language


class CueFamily(str, enum.Enum):
    """Families of ``gold_cues_json`` (the published vocabulary)."""

    ADVISORY = "ADVISORY"
    INFORMATION = "INFORMATION"
    ACCOUNT_CONTEXT = "ACCOUNT_CONTEXT"
    ACTION_SENSITIVE = "ACTION_SENSITIVE"
    SUPPORT_SENSITIVE = "SUPPORT_SENSITIVE"
    AMBIGUITY = "AMBIGUITY"


@dataclass(frozen=True, slots=True)
class LanguagePack:
    """Everything language-specific the realizer needs."""

    language: Language
    joiner: str  # between sentences
    primary: Mapping[str, tuple[str, ...]]  # action_id -> templates (one [[cue]] each)
    secondary: Mapping[CueFamily, tuple[str, ...]]  # distractor sentences (one [[cue]] each)
    fillers: tuple[str, ...]  # cue-free context sentences
    slot_values: Mapping[str, tuple[str, ...]]
    name_forms: tuple[str, ...]  # "{name}", "the {name}" ...
    code_forms: tuple[str, ...]  # "{code}", "ticker {code}" ...
    anaphors: tuple[str, ...]  # noun phrases pointing back to the history
    conflict_forms: tuple[str, ...]  # "{a} or {b}" ...
    vague_by_group: Mapping[str, tuple[str, ...]]  # asset_group -> noun phrases naming no candidate
    vague_by_issuer: tuple[str, ...]  # "{issuer}" placeholder
    vague_generic: tuple[str, ...]
    history_mentions: tuple[str, ...]  # "{ref}" placeholder
    history_neutral: tuple[str, ...]
    ref_forms: tuple[str, ...]  # how the history names the object: "{name}", "{name} ({code})" ...


_CUE = re.compile(r"\[\[(.+?)\]\]")


def strip_cue(text: str) -> tuple[str, str]:
    """``"Is it [[a good fit]]?"`` -> ``("Is it a good fit?", "a good fit")``; exactly one marked span."""
    spans = _CUE.findall(text)
    if len(spans) != 1:
        raise ValueError(f"template needs exactly one [[cue]]: {text!r}")
    return _CUE.sub(r"\1", text), spans[0]


def placeholders(template: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", template))
