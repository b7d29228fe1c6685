"""Build a backend from its spec string: ``sim:<profile>``, ``local:lexical``, ``local:learned[:MODEL_DIR]`` or an
OpenAI-compatible profile name.

``constrain`` (``none`` or ``json-schema``, :mod:`~routebr_kit.backends.constrain`) chooses an OpenAI-compatible
profile's ``response_format``.
``protocol`` chooses what an OpenAI-compatible profile sends (:class:`~routebr_kit.prompts.Protocol`): ``kit`` (the
kit's prompt texts for the language, or the kit-format file at ``prompts_path``) or ``published`` (the published
request bodies, with the texts of the published ``prompts.json`` at ``prompts_path``, read at run time).

The simulated and lexical backends are imported on demand (they are standard library + numpy); the
OpenAI-compatible adapter pulls in the ``openai`` SDK only when a profile is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import Catalog
from ..prompts import (
    Language,
    PromptSet,
    Protocol,
    PublishedPrompts,
    detect_language,
    load_prompts,
    load_published_prompts,
)
from ..store.cases import Case
from .cache import ResponseCache
from .constrain import Constrain
from .profiles import load_profile

#: The kit's example profiles (local OpenAI-compatible servers); pass ``profiles_path`` for any other file.
DEFAULT_PROFILES = Path(__file__).resolve().parents[1] / "resources" / "profiles.example.yaml"
SIM_PREFIX = "sim:"
LEXICAL = "local:lexical"
_LEARNED = "local:learned"  # optionally ":MODEL_DIR" (routebr-kit train-proposer); issue 33


def make_backend(spec: str, *, cases: Iterable[Case] | None = None, catalog: Catalog | None = None, seed: int = 0,
                 profiles_path: str | Path | None = None, cache: ResponseCache | None = None,
                 prompts: PromptSet | PublishedPrompts | None = None, language: Language | str = "auto",
                 protocol: Protocol | str = Protocol.KIT, prompts_path: str | Path | None = None,
                 constrain: Constrain | str = Constrain.NONE) -> Any:
    """The backend a spec names (see the module docstring).

    ``cases`` feed the simulator (it applies its error model to each case's gold route) and choose the prompt
    language when it is ``auto``; ``catalog`` feeds the lexical proposer; ``seed`` keys the simulator and is sent
    to profiles that allow a seed; ``cache``, ``prompts``, ``protocol`` and ``prompts_path`` apply to
    OpenAI-compatible profiles (the published protocol shapes HTTP request bodies, so a simulated or lexical spec
    with ``protocol='published'`` is refused rather than silently ignored).
    """
    protocol = Protocol.parse(protocol)
    constrain = Constrain.parse(constrain)
    if constrain is not Constrain.NONE and spec.startswith((SIM_PREFIX, "local:")):
        raise DataError(ErrorCode.INVALID_VALUE, "an OpenAI-compatible profile for --constrain json-schema (it shapes "
                        "the request's response_format; simulated and lexical backends send none)",
                        field="constrain", got=spec)
    if prompts is not None and (prompts.protocol is not protocol or prompts_path is not None):
        raise DataError(ErrorCode.INVALID_VALUE, f"either prompts of the {protocol.value} protocol or prompts_path",
                        field="prompts", got=prompts.protocol.value)
    if protocol is Protocol.PUBLISHED:
        if spec.startswith((SIM_PREFIX, "local:")):
            raise DataError(ErrorCode.INVALID_VALUE, "an OpenAI-compatible profile for the published protocol (it "
                            "shapes HTTP request bodies; simulated and lexical backends send none)",
                            field="protocol", got=spec)
        if prompts is None and prompts_path is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "the published prompts file (ARTIFACT/experiments/prompts.json) "
                            "for the published protocol", field="prompts_path")
    if spec.startswith(SIM_PREFIX):
        from .simulated import SimulatedBackend

        if cases is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "the benchmark cases for a simulated backend", field="cases",
                            got=spec)
        return SimulatedBackend(spec.removeprefix(SIM_PREFIX), list(cases), seed=seed)
    if spec == LEXICAL:
        from .lexical import LexicalBackend

        if catalog is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "the catalog for the lexical proposer", field="catalog", got=spec)
        return LexicalBackend(catalog, language="auto")
    if spec == _LEARNED or spec.startswith(_LEARNED + ":"):
        from .learned import LearnedBackend, require_sklearn

        require_sklearn()
        model_dir = spec.removeprefix(_LEARNED).removeprefix(":") or None
        return LearnedBackend(model_dir=model_dir)
    if spec.startswith("local:"):
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"{LEXICAL}, {_LEARNED}[:MODEL_DIR], sim:<profile> or a profile "
                        "name", got=spec, field="profile")
    from .openai_compat import OpenAICompatBackend

    profile = load_profile(profiles_path or DEFAULT_PROFILES, spec)
    wanted = language.value if isinstance(language, Language) else str(language)
    if prompts is None and protocol is Protocol.PUBLISHED:
        prompts = load_published_prompts(prompts_path)  # type: ignore[arg-type]  # checked above
        if wanted not in ("auto", prompts.language.value):
            raise DataError(ErrorCode.INVALID_VALUE, f"language auto or {prompts.language.value} (the published "
                            "prompt file's language)", field="language", got=wanted, file=prompts.path)
    if prompts is None:
        chosen = profile.prompt_language if profile.prompt_language != "auto" else wanted
        if chosen == "auto":
            chosen = detect_language(c.request.utterance for c in cases or ()).value
        prompts = load_prompts(chosen, path=prompts_path)
    return OpenAICompatBackend(profile, prompts, cache=cache, seed=seed, constrain=constrain)


def published_prompts_path(artifact_dir: str | Path | None) -> Path:
    """``ARTIFACT/experiments/prompts.json``, checked now (a located error before any run starts)."""
    if artifact_dir is None:
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a published artifact (its experiments/prompts.json holds the "
                        "published protocol's texts)", field="artifact_dir")
    path = Path(artifact_dir) / "experiments" / "prompts.json"
    load_published_prompts(path)
    return path


__all__ = ["DEFAULT_PROFILES", "LEXICAL", "SIM_PREFIX", "make_backend", "published_prompts_path"]
