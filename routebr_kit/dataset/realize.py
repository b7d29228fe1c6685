"""Turn a planned slot into the request side of a case: utterance, history, candidates, gold object and cues.

Objects come from one seeded stream that deals the registry like a deck (every ETF is used about equally);
wording comes from a stream keyed by the case, and is drawn again (next attempt key) only when the normalised
utterance already exists — so no two requests of the benchmark coincide after whitespace/case normalisation.
Every request is checked against its object difficulty with exact closed-list matching
(:mod:`~routebr_kit.dataset.references`): EXPLICIT_NAME and CODE_ONLY name exactly the gold object, ANAPHORA
names nothing in the request and exactly the gold object in the history, CONFLICTING names two candidates,
UNDERSPECIFIED names none.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, UNRESOLVED, Entity, Registry
from ..store.cases import ObjectDifficulty
from .composition import A1, A2, A3, A4, A5, Slot
from .language import CueFamily, LanguagePack, placeholders, strip_cue
from .references import code_of, mentioned, mentioned_in_any, normalise

#: The cue family that marks each action's primary intent, and the families its mixed-service language uses.
_PRIMARY_FAMILY: Mapping[str, CueFamily] = {
    A1: CueFamily.ADVISORY, A2: CueFamily.INFORMATION, A3: CueFamily.ACCOUNT_CONTEXT,
    A4: CueFamily.SUPPORT_SENSITIVE, A5: CueFamily.ACTION_SENSITIVE,
}
_SECONDARY_FAMILIES: Mapping[str, tuple[CueFamily, CueFamily]] = {
    A1: (CueFamily.ACTION_SENSITIVE, CueFamily.SUPPORT_SENSITIVE),
    A2: (CueFamily.ADVISORY, CueFamily.SUPPORT_SENSITIVE),
    A3: (CueFamily.ACTION_SENSITIVE, CueFamily.SUPPORT_SENSITIVE),
    A4: (CueFamily.ACTION_SENSITIVE, CueFamily.AMBIGUITY),
    A5: (CueFamily.ADVISORY, CueFamily.SUPPORT_SENSITIVE),
}
_MAX_ATTEMPTS = 64
#: Candidate JSON fields beyond the four a model sees (the published candidate schema).
CANDIDATE_ATTRIBUTES = ("exchange", "security_code", "asset_group", "source_url", "source_effective_date",
                        "verified_on")


@dataclass(frozen=True, slots=True)
class Cue:
    family: CueFamily
    evidence: str
    confidence: str  # HIGH for the primary intent, MEDIUM for mixed-service language
    source: str = "REQUEST"

    def as_dict(self) -> dict[str, str]:
        return {"family": self.family.value, "evidence": self.evidence, "source": self.source,
                "confidence": self.confidence}


@dataclass(frozen=True, slots=True)
class RequestSide:
    """Everything a FLIP pair shares, and what the gold object is."""

    utterance: str
    history: tuple[str, ...]
    candidates: tuple[Entity, ...]
    object_id: str
    cues: tuple[Cue, ...]


@dataclass(frozen=True, slots=True)
class _Objects:
    """Which entities a request involves (drawn once per slot, kept across wording attempts)."""

    candidates: tuple[Entity, ...] = ()
    gold: Entity | None = None
    named: tuple[Entity, ...] = ()  # CONFLICTING: the two names
    vague: tuple[str, ...] = ()  # UNDERSPECIFIED: noun phrases that fit several candidates


class Realizer:
    """Writes requests for one benchmark (one seed, one language, one registry)."""

    def __init__(self, pack: LanguagePack, registry: Registry, seed: int) -> None:
        self.pack = pack
        self.registry = registry
        self.seed = seed
        self._entities = random.Random(f"{seed}:{pack.language.value}:entities")
        self._deck: list[Entity] = []
        self._seen: set[str] = set()
        self._groups: dict[str, list[Entity]] = {}
        self._issuers: dict[str, list[Entity]] = {}
        if len(registry) < 3:
            raise DataError(ErrorCode.INVALID_VALUE, "a registry with at least three entities", got=len(registry),
                            field="object_id")
        for e in registry:
            self._groups.setdefault(e.attributes.get("asset_group", ""), []).append(e)
            self._issuers.setdefault(e.attributes.get("issuer", ""), []).append(e)

    # ------------------------------------------------------------------------------------------ objects
    def _deal(self, exclude: tuple[Entity, ...] = ()) -> Entity:
        """The next entity off the shuffled deck that is not in ``exclude`` (a fresh deck goes underneath)."""
        for i in range(len(self._deck) - 1, -1, -1):
            if self._deck[i] not in exclude:
                return self._deck.pop(i)
        fresh = list(self.registry)
        self._entities.shuffle(fresh)
        self._deck = fresh + self._deck
        return self._deal(exclude)

    def _peer(self, pool: list[Entity], exclude: tuple[Entity, ...]) -> Entity:
        choices = [e for e in pool if e not in exclude]
        return self._entities.choice(choices) if choices else self._deal(exclude)

    def _objects(self, slot: Slot) -> _Objects:
        d = slot.difficulty
        if d is ObjectDifficulty.NONE:
            return _Objects()
        first = self._deal()
        group = self._groups[first.attributes.get("asset_group", "")]
        if d is ObjectDifficulty.UNDERSPECIFIED:
            vague, second = self._vague(first)
            third = self._deal((first, second))
            return _Objects(self._shuffled(first, second, third), vague=vague)
        second = self._peer(group, (first,))
        third = self._deal((first, second))
        if d is ObjectDifficulty.CONFLICTING:
            return _Objects(self._shuffled(first, second, third), named=(first, second))
        return _Objects(self._shuffled(first, second, third), gold=first)

    def _vague(self, first: Entity) -> tuple[tuple[str, ...], Entity]:
        """Noun phrases that fit ``first`` and one more candidate (same asset group or issuer), or any ETF."""
        pack = self.pack
        issuer = first.attributes.get("issuer", "")
        peers = [e for e in self._issuers.get(issuer, []) if e != first]
        mode = self._entities.choice(("group", "issuer", "generic"))
        if mode == "issuer" and peers and issuer:
            return tuple(f.format(issuer=issuer) for f in pack.vague_by_issuer), self._entities.choice(peers)
        group = first.attributes.get("asset_group", "")
        if mode != "generic" and group in pack.vague_by_group:
            return pack.vague_by_group[group], self._peer(self._groups[group], (first,))
        return pack.vague_generic, self._deal((first,))

    def _shuffled(self, *entities: Entity) -> tuple[Entity, ...]:
        items = list(entities)
        self._entities.shuffle(items)
        return tuple(items)

    # ------------------------------------------------------------------------------------------ wording
    def request(self, slot: Slot, key: str) -> RequestSide:
        """The request side for ``slot``; ``key`` names the case (or FLIP pair) in the wording stream."""
        objects = self._objects(slot)
        for attempt in range(_MAX_ATTEMPTS):
            rng = random.Random(f"{self.seed}:{self.pack.language.value}:text:{key}:{attempt}")
            side = self._compose(slot, objects, rng)
            norm = normalise(side.utterance)
            if norm not in self._seen:
                self._seen.add(norm)
                _check_references(slot, side, key)
                return side
        raise DataError(ErrorCode.INVALID_VALUE, "enough phrase variety for unique requests",
                        field="utterance", detail=f"{key}: {_MAX_ATTEMPTS} attempts all repeated earlier requests")

    def _compose(self, slot: Slot, objects: _Objects, rng: random.Random) -> RequestSide:
        pack = self.pack
        obj, history, object_id = self._reference(slot.difficulty, objects, rng)
        sentences = [self._sentence(rng.choice(pack.primary[slot.action]), obj, rng)]
        families = list(_SECONDARY_FAMILIES[slot.action])
        rng.shuffle(families)
        sentences += [self._sentence(rng.choice(pack.secondary[f]), obj, rng) for f in families[: slot.cues - 1]]
        labelled = [(_PRIMARY_FAMILY[slot.action], "HIGH")] + [(f, "MEDIUM") for f in families[: slot.cues - 1]]
        order = list(range(len(sentences)))
        if len(order) > 1 and rng.random() < 0.4:  # sometimes the mixed-service remark comes first
            order.insert(rng.randrange(1, len(order)), order.pop(0))
        texts = [sentences[i][0] for i in order]
        if rng.random() < 0.5:
            filler = rng.choice(pack.fillers)
            texts.insert(0 if rng.random() < 0.5 else len(texts), filler)
        utterance = pack.joiner.join(texts)
        cues = sorted((Cue(family, sentences[i][1], confidence) for i, (family, confidence) in enumerate(labelled)),
                      key=lambda c: utterance.find(c.evidence))
        return RequestSide(utterance, history, objects.candidates, object_id, tuple(cues))

    def _sentence(self, template: str, obj: str, rng: random.Random) -> tuple[str, str]:
        values: dict[str, Any] = {"obj": obj}
        for name in sorted(placeholders(template) - {"obj"}):
            values[name] = rng.choice(self.pack.slot_values[name])
        return strip_cue(template.format(**values))

    def _reference(self, difficulty: ObjectDifficulty, objects: _Objects,
                   rng: random.Random) -> tuple[str, tuple[str, ...], str]:
        """The object noun phrase, the history, and the gold object ID."""
        pack = self.pack
        if difficulty is ObjectDifficulty.NONE:
            return "", (), NONE
        if difficulty is ObjectDifficulty.CONFLICTING:
            a, b = (self._naming(e, rng) for e in objects.named)
            return rng.choice(pack.conflict_forms).format(a=a, b=b), (), UNRESOLVED
        if difficulty is ObjectDifficulty.UNDERSPECIFIED:
            return rng.choice(objects.vague), (), UNRESOLVED
        gold = objects.gold
        assert gold is not None
        if difficulty is ObjectDifficulty.CODE_ONLY:
            return rng.choice(pack.code_forms).format(code=code_of(gold.object_id)), (), gold.object_id
        if difficulty is ObjectDifficulty.EXPLICIT_NAME:
            return rng.choice(pack.name_forms).format(name=rng.choice(_names(gold))), (), gold.object_id
        ref = rng.choice(pack.ref_forms).format(name=rng.choice(_names(gold)), code=code_of(gold.object_id))
        history = [rng.choice(pack.history_mentions).format(ref=ref)]
        if rng.random() < 0.5:
            history.insert(rng.randrange(2), rng.choice(pack.history_neutral))
        return rng.choice(pack.anaphors), tuple(history), gold.object_id

    def _naming(self, entity: Entity, rng: random.Random) -> str:
        if rng.random() < 0.3:
            return code_of(entity.object_id)
        return rng.choice(_names(entity))


def _names(entity: Entity) -> tuple[str, ...]:
    """Display name and the aliases that are names, not codes."""
    code = code_of(entity.object_id)
    return (entity.display_name, *(a for a in entity.aliases if a != code))


def _check_references(slot: Slot, side: RequestSide, key: str) -> None:
    """The difficulty contract, checked with exact closed-list matching."""
    in_request = {e.object_id for e in mentioned(side.utterance, side.candidates)}
    in_history = {e.object_id for e in mentioned_in_any(side.history, side.candidates)}
    d = slot.difficulty
    ok = {
        ObjectDifficulty.NONE: not side.candidates,
        ObjectDifficulty.EXPLICIT_NAME: in_request == {side.object_id} and not side.history,
        ObjectDifficulty.CODE_ONLY: in_request == {side.object_id} and code_of(side.object_id) in side.utterance,
        ObjectDifficulty.ANAPHORA: not in_request and in_history == {side.object_id},
        ObjectDifficulty.CONFLICTING: len(in_request) >= 2 and not in_history,
        ObjectDifficulty.UNDERSPECIFIED: not in_request and not in_history,
    }[d]
    if not ok:
        raise DataError(ErrorCode.INVALID_VALUE, f"a request that fits {d.value}", field="utterance",
                        got=side.utterance, detail=f"{key}: names {sorted(in_request)}, history {sorted(in_history)}"
                        " — registry names may overlap")
