"""Build a backend from its spec string: ``sim:<profile>``, ``local:lexical`` or an OpenAI-compatible profile name.

The simulated and lexical backends are imported on demand (they are standard library + numpy); the
OpenAI-compatible adapter pulls in the ``openai`` SDK only when a profile is asked for.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import Catalog
from ..prompts import Language, PromptSet, detect_language, load_prompts
from ..store.cases import Case
from .cache import ResponseCache
from .profiles import load_profile

#: The kit's example profiles (local OpenAI-compatible servers); pass ``profiles_path`` for any other file.
DEFAULT_PROFILES = Path(__file__).resolve().parents[1] / "resources" / "profiles.example.yaml"
SIM_PREFIX = "sim:"
LEXICAL = "local:lexical"


def make_backend(spec: str, *, cases: Iterable[Case] | None = None, catalog: Catalog | None = None, seed: int = 0,
                 profiles_path: str | Path | None = None, cache: ResponseCache | None = None,
                 prompts: PromptSet | None = None, language: Language | str = "auto") -> Any:
    """The backend a spec names (see the module docstring).

    ``cases`` feed the simulator (it applies its error model to each case's gold route) and choose the prompt
    language when it is ``auto``; ``catalog`` feeds the lexical proposer; ``seed`` keys the simulator and is sent
    to profiles that allow a seed; ``cache`` and ``prompts`` apply to OpenAI-compatible profiles.
    """
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
    if spec.startswith("local:"):
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"{LEXICAL}, sim:<profile> or a profile name", got=spec,
                        field="profile")
    from .openai_compat import OpenAICompatBackend

    profile = load_profile(profiles_path or DEFAULT_PROFILES, spec)
    if prompts is None:
        chosen = profile.prompt_language if profile.prompt_language != "auto" else str(
            language.value if isinstance(language, Language) else language)
        if chosen == "auto":
            chosen = detect_language(c.request.utterance for c in cases or ()).value
        prompts = load_prompts(chosen)
    return OpenAICompatBackend(profile, prompts, cache=cache, seed=seed)


__all__ = ["DEFAULT_PROFILES", "LEXICAL", "SIM_PREFIX", "make_backend"]
