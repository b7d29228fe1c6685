"""Everything that produces a model reply.

Imported here (standard library only): ``ScriptedBackend`` (tests, teaching) and ``ReplayBackend`` (stored
receipts or ledger rows).  Imported on demand, through :func:`routebr_kit.backends.registry.make_backend`:
``openai_compat`` (live OpenAI-compatible profiles), ``simulated`` (``sim:<profile>``) and ``lexical``
(``local:lexical``)."""

from .. import lazy_exports
from ..core.calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .replay import ReplayBackend
from .scripted import ScriptedBackend, ScriptExhausted

#: Loaded on first use (:mod:`.registry` and the live, simulated and local backends need more than the standard
#: library).
_LAZY: dict[str, str] = {name: module for module, names in {
    "registry": "DEFAULT_PROFILES LEXICAL SIM_PREFIX make_backend published_prompts_path",
    "profiles": "PROFILE_LABELS Profile load_profile load_profiles missing_api_keys",
    "lexical": "LexicalBackend",
    "simulated": "SimulatedBackend",
    "cache": "ResponseCache CacheMissError",
}.items() for name in names.split()}

__all__ = [*sorted(_LAZY), "Backend", "BackendFailure", "FailureKind", "ModelCall", "ModelReply", "ReplayBackend",
           "ScriptedBackend", "ScriptExhausted"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
