"""Everything that produces a model reply.

Imported here (standard library only): ``ScriptedBackend`` (tests, teaching) and ``ReplayBackend`` (stored
receipts or ledger rows).  Imported on demand, through :func:`routebr_kit.backends.registry.make_backend`:
``openai_compat`` (live OpenAI-compatible profiles), ``simulated`` (``sim:<profile>``) and ``lexical``
(``local:lexical``)."""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "..core.calls": "Backend BackendFailure FailureKind ModelCall ModelReply",
    "cache": "CacheMissError ResponseCache",
    "lexical": "LexicalBackend",
    "profiles": "PROFILE_LABELS Profile load_profile load_profiles missing_api_keys",
    "registry": "DEFAULT_PROFILES LEXICAL SIM_PREFIX make_backend published_prompts_path",
    "replay": "ReplayBackend",
    "scripted": "ScriptExhausted ScriptedBackend",
    "simulated": "SimulatedBackend",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
