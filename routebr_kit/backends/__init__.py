"""Everything that produces a model reply.

Imported here (standard library only): ``ScriptedBackend`` (tests, teaching) and ``ReplayBackend`` (stored
receipts or ledger rows).  Imported on demand, through :func:`routebr_kit.backends.registry.make_backend`:
``openai_compat`` (live OpenAI-compatible profiles), ``simulated`` (``sim:<profile>``) and ``lexical``
(``local:lexical``)."""

from .base import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .replay import ReplayBackend
from .scripted import ScriptedBackend, ScriptExhausted

__all__ = ["Backend", "BackendFailure", "FailureKind", "ModelCall", "ModelReply", "ReplayBackend",
           "ScriptedBackend", "ScriptExhausted"]
