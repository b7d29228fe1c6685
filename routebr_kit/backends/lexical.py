"""``local:lexical`` — a real, deterministic proposer that needs no model and no key.

It reads only what the RouteBR proposal payload carries — the request, the history, the catalog and the closed
entity list (never the runtime state, the rules or any gold label) — and returns the proposal contract's JSON.

**Primary action.**  A cue lexicon per language (``resources/lexicon_{zh,en}.json``) maps phrases to action
families, listed in priority order (operation > account > information > advisory > support).  Cues are found by
longest match (a cue inside a longer matched cue does not count again).  A cue after a negator in the same clause
(``别…下单``, ``don't place an order``) counts zero; a cue after a *side-remark* marker in the same sentence — a
conditional, deferred, hedged or reported remark (``如果后续要操作``, ``I might sell some later``, ``I read that it
suits…``) — is weighted by ``side_remark_weight``.  The primary action is the first family, in priority order,
whose cue weight reaches ``threshold``; failing that the family with the most weight; failing that the lexicon's
default family.  ``topk`` is the primary action followed by the other cued families by weight.

**Object.**  Closed-list resolution by exact match only: an entity counts as mentioned when its ``object_id``,
one of its ``aliases`` (codes must stand alone: a 6-digit code inside a longer digit run is not a mention) or its
``display_name`` occurs in the request, longest match first (``医药ETF`` inside ``医药ETF广发`` is not a
mention).  Exactly one mentioned entity → that entity; several → ``UNRESOLVED``; none → a unique antecedent in
the history (the same matching over every history turn), else ``UNRESOLVED``.  An object-free primary action
gets ``NONE``; a resolved entity whose type the action does not accept gets ``UNRESOLVED``.

The lexicons were tuned on DEV splits only — Chinese on the published 600-case file's and the kit's generated
Chinese benchmark's (seed 0), English on the kit's generated English benchmark's (seed 0) — and are evaluated on
SELECT/CONFIRM like any other backend.  Latency is the measured processing time of the call; no tokens are
consumed.  Standard library only.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.calls import FailureKind, ModelCall, ModelReply
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_json
from ..core.records import NONE, OBJECT_FREE_TYPE, UNRESOLVED, Catalog, Stage
from ..store.files import parse_json, read_json

LANGUAGES = ("zh", "en")
_CJK = re.compile(r"[\u3400-\u9fff\uf900-\ufaff]")


@dataclass(frozen=True, slots=True)
class CueFamily:
    """Cue phrases (with weights) that point to one catalog action."""

    family: str
    action_id: str
    cues: Mapping[str, float]


@dataclass(frozen=True, slots=True)
class Lexicon:
    """One language's cue lexicon and matching conventions (loaded from a JSON resource)."""

    language: str
    version: str
    families: tuple[CueFamily, ...]
    default_family: str
    threshold: float
    negators: tuple[str, ...]
    negator_exceptions: tuple[str, ...]
    side_remarks: tuple[str, ...]
    side_remark_weight: float
    sentence_delimiters: str
    clause_delimiters: str
    word_boundaries: bool
    sha256: str = ""
    _patterns: tuple[tuple[re.Pattern[str], str, float], ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def load(cls, source: str | Path | None = None, *, language: str = "zh") -> Lexicon:
        """A lexicon file (default: the packaged ``resources/lexicon_<language>.json``)."""
        if source is None:
            if language not in LANGUAGES:
                raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(LANGUAGES), got=language,
                                field="language")
            ref = resources.files("routebr_kit") / "resources" / f"lexicon_{language}.json"
            name = f"routebr_kit/resources/lexicon_{language}.json"
            data = parse_json(ref.read_text(encoding="utf-8"), "a JSON lexicon", file=name)
        else:
            name = str(source)
            data = read_json(source, "a JSON lexicon", kind=None)
        return cls.from_dict(data, file=name)

    @classmethod
    def from_dict(cls, data: Any, *, file: str = "<lexicon>") -> Lexicon:
        def need(key: str, kind: type | tuple[type, ...]) -> Any:
            value = data.get(key) if isinstance(data, Mapping) else None
            if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
                raise DataError(ErrorCode.WRONG_TYPE, f"{key!r} of type {getattr(kind, '__name__', kind)}",
                                file=file, field=key, got=value)
            return value

        families = []
        for i, entry in enumerate(need("families", list)):
            where = f"families[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("family"), str) or \
                    not isinstance(entry.get("action_id"), str) or not isinstance(entry.get("cues"), Mapping):
                raise DataError(ErrorCode.WRONG_TYPE, "an object with family, action_id and cues", file=file,
                                field=where, got=entry)
            cues = entry["cues"]
            bad = {k: v for k, v in cues.items() if not k.strip() or type(v) not in (int, float) or v <= 0}
            if bad or not cues:
                raise DataError(ErrorCode.INVALID_VALUE, "non-empty cue phrases with positive weights", file=file,
                                field=f"{where}.cues", got=bad or cues)
            families.append(CueFamily(entry["family"], entry["action_id"], MappingProxyType(dict(cues))))
        names = [f.family for f in families]
        if not families or len(set(names)) != len(names):
            raise DataError(ErrorCode.DUPLICATE_ID, "at least one family, each named once", file=file,
                            field="families", got=names)
        default = need("default_family", str)
        if default not in names:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a family of this lexicon", file=file,
                            field="default_family", got=default)
        lexicon = cls(
            language=need("language", str), version=need("version", str), families=tuple(families),
            default_family=default, threshold=float(need("threshold", (int, float))),
            negators=tuple(need("negators", list)),
            negator_exceptions=tuple(data.get("negator_exceptions") or ()),
            side_remarks=tuple(need("side_remarks", list)),
            side_remark_weight=float(need("side_remark_weight", (int, float))),
            sentence_delimiters=need("sentence_delimiters", str), clause_delimiters=need("clause_delimiters", str),
            word_boundaries=need("word_boundaries", bool), sha256=sha256_json(data),
        )
        object.__setattr__(lexicon, "_patterns", lexicon._compile())
        return lexicon

    def _compile(self) -> tuple[tuple[re.Pattern[str], str, float], ...]:
        return tuple((_phrase_pattern(phrase, self.word_boundaries), fam.family, float(weight))
                     for fam in self.families for phrase, weight in fam.cues.items())

    def family(self, name: str) -> CueFamily:
        return next(f for f in self.families if f.family == name)


def _phrase_pattern(phrase: str, word_boundaries: bool) -> re.Pattern[str]:
    body = re.escape(phrase.casefold() if word_boundaries else phrase)
    return re.compile(rf"(?<![\w-]){body}(?![\w-])" if word_boundaries else body)


@dataclass(frozen=True, slots=True)
class CueHit:
    """One counted cue occurrence."""

    family: str
    phrase: str
    start: int
    weight: float  # after the negation / side-remark discount


@dataclass(frozen=True, slots=True)
class LexicalProposal:
    """A proposal and why: the cues found, the family weights and how the object was resolved."""

    action_id: str
    object_id: str
    topk: tuple[str, ...]
    language: str
    cues: tuple[CueHit, ...]
    weights: Mapping[str, float]
    object_rule: str  # NOT_REQUIRED | REQUEST_EXACT | HISTORY_ANTECEDENT | AMBIGUOUS | NOT_FOUND | TYPE_MISMATCH
    mentions: tuple[str, ...]

    def output(self) -> dict[str, Any]:
        """The proposal contract's JSON object."""
        return {"action_id": self.action_id, "object_id": self.object_id, "topk": list(self.topk)}

    def explanation(self) -> dict[str, Any]:
        return {"language": self.language, "object_rule": self.object_rule, "mentions": list(self.mentions),
                "weights": dict(self.weights),
                "cues": [{"family": c.family, "phrase": c.phrase, "weight": c.weight} for c in self.cues]}


def _longest_matches(spans: Iterable[tuple[int, int, Any]]) -> list[tuple[int, int, Any]]:
    """Drop every span strictly inside a longer one (longest match wins; equal spans are all kept)."""
    spans = sorted(set(spans), key=lambda s: (s[0], -(s[1] - s[0])))
    return [s for s in spans if not any(o[0] <= s[0] and s[1] <= o[1] and (o[1] - o[0]) > (s[1] - s[0])
                                        for o in spans)]


def _scopes(text: str, delimiters: str) -> list[tuple[int, int]]:
    """``[start, end)`` of each segment between delimiter characters."""
    bounds, start = [], 0
    for i, ch in enumerate(text):
        if ch in delimiters:
            bounds.append((start, i))
            start = i + 1
    bounds.append((start, len(text)))
    return bounds


def find_cues(text: str, lexicon: Lexicon) -> tuple[CueHit, ...]:
    """Every counted cue of ``text`` with its discounted weight."""
    folded = text.casefold() if lexicon.word_boundaries else text
    raw = [(m.start(), m.end(), (family, weight)) for pattern, family, weight in lexicon._patterns
           for m in pattern.finditer(folded)]
    sentences = _scopes(folded, lexicon.sentence_delimiters)
    clauses = _scopes(folded, lexicon.sentence_delimiters + lexicon.clause_delimiters)
    negations = _occurrences(folded, lexicon.negators, lexicon, exceptions=lexicon.negator_exceptions)
    remarks = _occurrences(folded, lexicon.side_remarks, lexicon)
    hits = []
    for start, end, (family, weight) in _longest_matches(raw):
        clause = next(c for c in clauses if c[0] <= start <= c[1])
        sentence = next(s for s in sentences if s[0] <= start <= s[1])
        if any(clause[0] <= n < start for n in negations):
            weight = 0.0
        elif any(sentence[0] <= r < start for r in remarks):
            weight *= lexicon.side_remark_weight
        hits.append(CueHit(family, folded[start:end], start, weight))
    return tuple(hits)


def _occurrences(text: str, phrases: Iterable[str], lexicon: Lexicon, *, exceptions: Iterable[str] = ()) -> list[int]:
    """Start offsets of ``phrases`` in ``text``, except inside a longer exception word (``别`` in ``特别``)."""
    spans = [(m.start(), m.end(), False) for p in phrases
             for m in _phrase_pattern(p, lexicon.word_boundaries).finditer(text)]
    spans += [(m.start(), m.end(), True) for p in exceptions
              for m in _phrase_pattern(p, lexicon.word_boundaries).finditer(text)]
    return [start for start, _, exception in _longest_matches(spans) if not exception]


def _mentions(text: str, entities: Sequence[Mapping[str, Any]], *, casefold: bool) -> list[str]:
    """Entity IDs mentioned in ``text`` by exact ID, alias or display name (longest match; codes stand alone)."""
    haystack = text.casefold() if casefold else text
    spans = []
    for entity in entities:
        object_id = entity["object_id"]
        forms = {object_id, entity.get("display_name") or ""} | set(entity.get("aliases") or ())
        for form in filter(None, forms):
            needle = form.casefold() if casefold else form
            if needle.isdigit():
                pattern = rf"(?<!\d){re.escape(needle)}(?!\d)"
            elif casefold:
                pattern = rf"(?<![\w]){re.escape(needle)}(?![\w])"
            else:
                pattern = re.escape(needle)
            spans += [(m.start(), m.end(), object_id) for m in re.finditer(pattern, haystack)]
    return list(dict.fromkeys(object_id for _, _, object_id in _longest_matches(spans)))


class LexicalBackend:
    """``local:lexical``: the cue-lexicon proposer (answers ``ROUTEBR`` and ``REPAIR_ROUTEBR``).

    ``language`` is ``"zh"``, ``"en"`` or ``"auto"`` (per request: Chinese if it contains CJK characters).
    ``lexicons`` overrides the packaged lexicon files (a mapping from language to :class:`Lexicon`).
    """

    name = "local:lexical"

    def __init__(self, catalog: Catalog, language: str = "auto", *,
                 lexicons: Mapping[str, Lexicon] | None = None) -> None:
        if not isinstance(catalog, Catalog) or len(catalog) == 0:
            raise DataError(ErrorCode.EMPTY_CATALOG, "a non-empty Catalog", got=catalog, field="catalog")
        if language not in ("auto", *LANGUAGES):
            raise DataError(ErrorCode.UNKNOWN_ENUM, "auto, zh or en", got=language, field="language")
        self.catalog = catalog
        self.language = language
        wanted = LANGUAGES if language == "auto" else (language,)
        given = dict(lexicons or {})
        self.lexicons: Mapping[str, Lexicon] = MappingProxyType(
            {lang: given.get(lang) or Lexicon.load(language=lang) for lang in wanted})
        for lexicon in self.lexicons.values():
            for fam in lexicon.families:
                if fam.action_id not in catalog:
                    raise DataError(ErrorCode.UNKNOWN_REFERENCE, "lexicon actions that are catalog actions",
                                    field=f"{lexicon.language}:{fam.family}", got=fam.action_id)

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records about this backend (lexicon versions and content hashes)."""
        lexicons = {lang: {"version": lx.version, "sha256": lx.sha256} for lang, lx in self.lexicons.items()}
        return {"name": self.name, "kind": "local", "language": self.language, "lexicons": lexicons,
                "profile": {"sha256": sha256_json(lexicons)}}

    async def complete(self, call: ModelCall) -> ModelReply:
        started = time.perf_counter()
        if call.stage is Stage.ROUTEBR:
            payload = call.payload
        elif call.stage is Stage.REPAIR_ROUTEBR:  # deterministic: the repair re-proposes from the original payload
            payload = call.payload.get("original_payload") or {}
        else:
            return ModelReply.failed(FailureKind.EXCEPTION,
                                     f"{self.name} answers ROUTEBR and REPAIR_ROUTEBR only, not {call.stage.value}")
        proposal = self.propose(payload)
        content = json.dumps(proposal.output(), ensure_ascii=False)
        elapsed = (time.perf_counter() - started) * 1000.0
        return ModelReply(content=content, model=self.name, latency_ms=elapsed,
                          extra={"explanation": proposal.explanation()})

    def propose(self, payload: Mapping[str, Any]) -> LexicalProposal:
        """Propose from a ROUTEBR payload (``request``, ``history``, ``catalog``, ``entities``)."""
        request = str(payload.get("request") or "")
        history = [str(h) for h in payload.get("history") or ()]
        entities = [e for e in payload.get("entities") or () if isinstance(e, Mapping) and "object_id" in e]
        lexicon = self._lexicon_for(request)
        hits = find_cues(request, lexicon)
        weights = {fam.family: 0.0 for fam in lexicon.families}
        for hit in hits:
            weights[hit.family] += hit.weight
        order = [fam.family for fam in lexicon.families]
        primary = next((f for f in order if weights[f] >= lexicon.threshold), None)
        if primary is None:
            best = max(weights.values())
            primary = next(f for f in order if weights[f] == best) if best > 0 else lexicon.default_family
        rest = sorted((f for f in order if f != primary and weights[f] > 0),
                      key=lambda f: (-weights[f], order.index(f)))
        topk = tuple(dict.fromkeys(lexicon.family(f).action_id for f in [primary, *rest]))[:3]
        action_id = topk[0]
        object_id, rule, mentions = resolve_object(self.catalog[action_id].required_object_types, request, history,
                                                   entities, casefold=lexicon.word_boundaries)
        return LexicalProposal(action_id, object_id, topk, lexicon.language, hits,
                               MappingProxyType(weights), rule, tuple(mentions))

    def _lexicon_for(self, text: str) -> Lexicon:
        if self.language != "auto":
            return self.lexicons[self.language]
        return self.lexicons["zh" if _CJK.search(text) else "en"]


def resolve_object(types: Sequence[str], request: str, history: Sequence[str], entities: Sequence[Mapping[str, Any]],
                   *, casefold: bool) -> tuple[str, str, list[str]]:
    """Exact closed-list matching (the module docstring's **Object**; ``local:learned`` uses it too):
    ``(object_id, rule, mentions)`` for an action taking ``types``."""
    if not types or OBJECT_FREE_TYPE in types:
        return NONE, "NOT_REQUIRED", []
    mentioned = _mentions(request, entities, casefold=casefold)
    rule = "REQUEST_EXACT"
    if not mentioned:
        rule = "HISTORY_ANTECEDENT"
        mentioned = list(dict.fromkeys(m for turn in history for m in _mentions(turn, entities, casefold=casefold)))
    if len(mentioned) != 1:
        return UNRESOLVED, "AMBIGUOUS" if mentioned else "NOT_FOUND", mentioned
    entity = next(e for e in entities if e["object_id"] == mentioned[0])
    if entity.get("object_type") not in types:
        return UNRESOLVED, "TYPE_MISMATCH", mentioned
    return mentioned[0], rule, mentioned
