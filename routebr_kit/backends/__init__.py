"""Everything that produces a model reply.

Imported here (standard library only): ``ScriptedBackend`` (tests, teaching) and ``ReplayBackend`` (stored
receipts or ledger rows).  Imported on demand, through :func:`routebr_kit.backends.registry.make_backend`:
``openai_compat`` (live OpenAI-compatible profiles), ``simulated`` (``sim:<profile>``) and ``lexical``
(``local:lexical``)."""

from .. import lazy_exports
from .base import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .replay import ReplayBackend
from .scripted import ScriptedBackend, ScriptExhausted

#: Loaded on first use (:mod:`.registry` and the live, simulated and local backends need more than the standard
#: library).
_LAZY: dict[str, str] = {
    "DEFAULT_PROFILES": "registry",
    "LEXICAL": "registry",
    "SIM_PREFIX": "registry",
    "make_backend": "registry",
    "published_prompts_path": "registry",
    "PROFILE_LABELS": "profiles",
    "Profile": "profiles",
    "load_profile": "profiles",
    "load_profiles": "profiles",
    "missing_api_keys": "profiles",
    "LexicalBackend": "lexical",
    "SimulatedBackend": "simulated",
    "ResponseCache": "cache",
    "CacheMissError": "cache",
}

__all__ = [*sorted(_LAZY), "Backend", "BackendFailure", "FailureKind", "ModelCall", "ModelReply", "ReplayBackend",
           "ScriptedBackend", "ScriptExhausted"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
