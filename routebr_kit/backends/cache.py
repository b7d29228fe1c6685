"""A content-addressed response cache for the OpenAI-compatible adapter.

The key is the SHA-256 of the canonical request: the normalised base URL and the full request body (model,
messages, response_format, request options, seed).  An entry holds the request body, the server's JSON response
and the latency of the call that produced it — never a credential (the body has none; headers are not stored; the
entry is written through :mod:`routebr_kit.store.redact`, so a key a server echoes in its reply is redacted).

A re-run of an identical matrix is answered entirely from the cache (zero network calls).  In replay-only mode a
miss is not sent to the network: the adapter answers ``CACHE_MISS`` and the runner stops with
:class:`CacheMissError` (a missing recording is not a model outcome).  Note that two cases whose request bodies
are identical — the two halves of a FLIP pair under RouteBR, whose model never sees the runtime state — share
one cached response, which is the temperature-0 reading of "the same request".  Standard library only.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import KitError
from ..core.hashing import sha256_json
from ..store.files import read_json
from ..store.ledger import write_json_atomic
from ..store.redact import redact_text


class CacheMode(str, enum.Enum):
    READ_WRITE = "read_write"  # answer hits, record misses
    REPLAY_ONLY = "replay_only"  # answer hits, fail loudly on a miss


class CacheMissError(KitError, LookupError):
    """A replay found no recorded response for a request."""

    def __init__(self, case_id: str, stage: str, detail: str = "") -> None:
        self.case_id, self.stage = case_id, stage
        super().__init__(redact_text(f"[CACHE_MISS] no recorded response for case {case_id} at stage {stage}"
                                     + (f" ({detail})" if detail else "") + "; run without replay-only to record it"))


@dataclass(frozen=True, slots=True)
class CachedResponse:
    key: str
    response: Mapping[str, Any]
    latency_ms: float


class ResponseCache:
    """Responses on disk under ``root/<key[:2]>/<key>.json``; safe for concurrent writers (atomic renames)."""

    def __init__(self, root: str | Path, *, mode: CacheMode | str = CacheMode.READ_WRITE) -> None:
        self.root = Path(root)
        self.mode = CacheMode(mode)
        self.hits = 0
        self.misses = 0

    @property
    def replay_only(self) -> bool:
        return self.mode is CacheMode.REPLAY_ONLY

    @staticmethod
    def key(base_url: str, body: Mapping[str, Any]) -> str:
        return sha256_json({"base_url": base_url.rstrip("/"), "body": body})

    def path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedResponse | None:
        """The recorded response, or ``None`` (an unreadable entry counts as a miss and is re-recorded)."""
        try:
            entry = read_json(self.path(key), "a cache entry", record=True)
            found = CachedResponse(key, entry["response"], float(entry["latency_ms"]))
        except (OSError, ValueError, KeyError, TypeError):
            self.misses += 1
            return None
        self.hits += 1
        return found

    def put(self, key: str, base_url: str, body: Mapping[str, Any], response: Mapping[str, Any],
            latency_ms: float) -> None:
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(path, {"key": key, "base_url": base_url.rstrip("/"), "request_body": body,
                                 "response": response, "latency_ms": round(latency_ms, 3)}, indent=None)

    def __len__(self) -> int:
        return sum(1 for _ in self.root.glob("*/*.json")) if self.root.is_dir() else 0

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.root)!r}, mode={self.mode.value})"
