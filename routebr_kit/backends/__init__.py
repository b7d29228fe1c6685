"""Everything that produces a model reply.

Imported here (standard library only): ``ScriptedBackend`` (tests, teaching) and ``ReplayBackend`` (stored
receipts or ledger rows).  Imported on demand, through :func:`routebr_kit.backends.registry.make_backend`:
``openai_compat`` (live OpenAI-compatible profiles), ``simulated`` (``sim:<profile>``) and ``lexical``
(``local:lexical``)."""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "learned": "LearnedBackend train",
    "lexical": "LexicalBackend",
    "local_server": "INSTALL_HINT SMOLLM2 missing_modules",
    "profiles": "PROFILE_LABELS missing_api_keys",
    "registry": "DEFAULT_PROFILES make_backend",
    "replay": "ReplayBackend",
    "scripted": "ScriptedBackend",
    "simulated": "SimulatedBackend profile_table",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
