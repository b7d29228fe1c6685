"""What crosses the seam between the controller and a model backend.

A backend receives a :class:`ModelCall` and returns a :class:`ModelReply`.  It reports failure as a value
(``reply.failure``) instead of raising; the controller also converts any exception a backend does raise into a
:class:`BackendFailure`, so a backend problem always ends in the recorded fail-closed terminal.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from .records import Stage


class FailureKind(str, enum.Enum):
    TRANSPORT = "TRANSPORT"  # connection refused, reset, DNS ...
    TIMEOUT = "TIMEOUT"  # one connect/read/write exceeded its timeout
    DEADLINE = "DEADLINE"  # the whole call (every attempt, retries and backoff included) exceeded its deadline
    HTTP_STATUS = "HTTP_STATUS"  # a non-retryable status, or retries exhausted
    MALFORMED_RESPONSE = "MALFORMED_RESPONSE"  # no choices[0].message.content
    MODEL_IDENTITY = "MODEL_IDENTITY"  # reported model outside the profile's accepted list
    CACHE_MISS = "CACHE_MISS"  # replay mode asked for a response nobody recorded
    EXCEPTION = "EXCEPTION"  # the backend raised


@dataclass(frozen=True, slots=True)
class BackendFailure:
    kind: FailureKind
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind.value, "message": self.message}


@dataclass(frozen=True, slots=True)
class ModelCall:
    """One request to a model: the stage selects the instruction, the payload is the user-message data."""

    request_id: str
    stage: Stage
    payload: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One response (or failure).  ``content`` is the message content, unparsed."""

    content: Any = None
    model: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_ms: float = 0.0
    failure: BackendFailure | None = None
    retries: tuple[Mapping[str, Any], ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def failed(cls, kind: FailureKind, message: str, **kwargs: Any) -> ModelReply:
        return cls(failure=BackendFailure(kind, message), **kwargs)

    @property
    def ok(self) -> bool:
        return self.failure is None


@runtime_checkable
class Backend(Protocol):
    """Anything that answers model calls.  ``name`` identifies it in ledgers and manifests."""

    name: str

    async def complete(self, call: ModelCall) -> ModelReply:  # pragma: no cover - protocol
        ...
