"""Which closed-list entities a text names — exact matching only, as the object contract demands.

An entity is *mentioned* when its display name or one of its aliases occurs in the text (case-folded), not glued
to a letter or digit on either side (so ``510300`` is not found in ``1510300`` and ``DIA`` not in ``media``), and
not inside a longer matched term of another entity (``医药ETF`` inside ``医药ETF广发`` names only the latter).
The generator checks its own output with this; the audit checks every reference cell with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from functools import lru_cache

from ..core.records import Entity


@lru_cache(maxsize=4096)
def _pattern(term: str) -> re.Pattern[str]:
    return re.compile(r"(?<![0-9a-z])" + re.escape(term.casefold()) + r"(?![0-9a-z])")


def terms(entity: Entity) -> tuple[str, ...]:
    """The strings that name an entity: display name and aliases (non-empty, de-duplicated)."""
    return tuple(dict.fromkeys(t for t in (entity.display_name, *entity.aliases) if t.strip()))


def mentioned(text: str, candidates: Sequence[Entity]) -> tuple[Entity, ...]:
    """The candidates ``text`` names, in candidate order (longest match first; overlaps go to the longer term)."""
    folded = text.casefold()
    hits = []
    for index, entity in enumerate(candidates):
        for term in terms(entity):
            hits.extend((m.start(), m.end(), index) for m in _pattern(term).finditer(folded))
    hits.sort(key=lambda h: (h[0] - h[1], h[0]))  # longest first
    taken: list[tuple[int, int]] = []
    found: set[int] = set()
    for start, end, index in hits:
        if any(start < e and s < end for s, e in taken):
            continue
        taken.append((start, end))
        found.add(index)
    return tuple(candidates[i] for i in sorted(found))


def mentioned_in_any(texts: Iterable[str], candidates: Sequence[Entity]) -> tuple[Entity, ...]:
    found = {e.object_id for text in texts for e in mentioned(text, candidates)}
    return tuple(e for e in candidates if e.object_id in found)


def normalise(text: str) -> str:
    """Whitespace removed, case-folded: the published duplicate-request key."""
    return re.sub(r"\s+", "", text).casefold()


def code_of(object_id: str) -> str:
    """The security code an object ID carries (``SSE:510300`` -> ``510300``, ``NASDAQ:QQQ`` -> ``QQQ``)."""
    return object_id.rpartition(":")[2]


def overlapping_names(entities: Sequence[Entity]) -> list[tuple[str, str, str, str]]:
    """``(object_id, term, longer_term, other_id)`` for every name or alias found inside another entity's name.

    Such a term can never be matched on its own where the longer name is written, and a grounder with plain
    substring matching would see two candidates — a registry ambiguity worth a warning.
    """
    found = []
    for entity in entities:
        for term in terms(entity):
            for other in entities:
                if other.object_id == entity.object_id:
                    continue
                for longer in terms(other):
                    if len(longer) > len(term) and _pattern(term).search(longer.casefold()):
                        found.append((entity.object_id, term, longer, other.object_id))
    return found
