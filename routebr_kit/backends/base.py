"""The backend seam (re-exported from the stdlib core so every backend module imports it from one place)."""

from ..core.calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply

__all__ = ["Backend", "BackendFailure", "FailureKind", "ModelCall", "ModelReply"]
