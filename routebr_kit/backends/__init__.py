"""Everything that produces a proposal: scripted (tests), replay (stored outputs) and, in later modules,
the OpenAI-compatible adapter, the simulated profiles and the local lexical proposer."""

from .base import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .replay import ReplayBackend
from .scripted import ScriptedBackend, ScriptExhausted

__all__ = ["Backend", "BackendFailure", "FailureKind", "ModelCall", "ModelReply", "ReplayBackend",
           "ScriptedBackend", "ScriptExhausted"]
