"""The OpenAI-compatible adapter, on the ``openai`` SDK's async client.

One call = a system message (the stage's instruction from a versioned :class:`~routebr_kit.prompts.PromptSet`)
and a user message (the stage payload as compact JSON, non-ASCII kept), ``response_format`` ``json_object`` — or,
with ``constrain="json-schema"``, the JSON Schema of this call's answer (:mod:`routebr_kit.backends.constrain`) —
the profile's request options (``temperature`` included, and provider fields such as ``thinking`` or
``enable_thinking``) and ``seed`` where the profile allows it.  The body is posted as built, through the SDK
client's documented ``post`` for custom requests — the SDK still owns authentication, the base URL, the
connection pool, timeouts and the error classes — so a receipt records exactly what was sent, and no per-call
re-typing of the messages costs CPU at high concurrency (``benchmarks/bench_runner.py``).

* **Retries** are the adapter's own (the SDK's are switched off) so each one is recorded: connection errors,
  timeouts and HTTP 408/409/429/5xx are retried up to ``max_retries`` times with exponential backoff and jitter
  from an RNG keyed by (request ID, stage, attempt) — reproducible — or after ``Retry-After`` /
  ``retry-after-ms`` when the server sends one (capped at ``max_retry_after_s``).  Every retry is an event
  ``{attempt, reason, delay_seconds}`` with a reason such as ``HTTP_429`` or ``APITimeoutError``.
* **Failures are values**: a persistent failure, a non-retryable status or a malformed response becomes
  ``ModelReply.failed(...)``, which the controller turns into the recorded fail-closed terminal.
* **Identity**: a response whose reported model is missing or outside ``accepted_reported_models`` is a
  ``MODEL_IDENTITY`` failure (``FAIL_CLOSED_MODEL_IDENTITY``); the run summary flags the profile.
* **Credentials**: the key is read from the profile's environment variable when a client is built and lives only
  in that client; request bodies, receipts, cache entries, manifests and ``repr`` never contain it.
* **Protocol**: the prompt set chooses it.  With the kit's :class:`~routebr_kit.prompts.PromptSet` the body is the
  kit's (its texts, its repair payload with ``target_schema``), serialised by the SDK.  With
  :class:`~routebr_kit.prompts.PublishedPrompts` (``ARTIFACT/experiments/prompts.json``) every stage, repair
  included, sends the published body — published texts, the published repair payload
  (:func:`~routebr_kit.prompts.published.published_payload`) — posted as the published transport serialised it
  (:func:`~routebr_kit.prompts.published.wire_bytes`).
* **Cache**: with a :class:`~routebr_kit.backends.cache.ResponseCache`, identical requests are answered from disk
  (zero network calls); in replay-only mode a miss answers ``CACHE_MISS`` without touching the network.
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import json
import os
import random
import time
from collections.abc import Mapping
from typing import Any

import openai

from ..core.aio import run_sync
from ..core.calls import FailureKind, ModelCall, ModelReply
from ..core.errors import DataError, ErrorCode
from ..prompts import PromptSet, Protocol, PublishedPrompts
from ..prompts.published import published_payload, wire_bytes
from ..store.redact import escape_surrogates, redact_text, register_secret, url_secrets
from .cache import ResponseCache
from .constrain import Constrain, SchemaStyle, response_format
from .profiles import Profile

#: Statuses worth another attempt (the SDK's own list): timeouts, conflicts, rate limits, server errors.
RETRYABLE_STATUS = frozenset({408, 409, 429})
#: What the SDK sends as the key to a loopback server whose profile names no key variable (it requires a value).
NO_KEY = "no-key"
MAX_BACKOFF_S = 30.0


class OpenAICompatBackend:
    """An OpenAI-compatible chat-completions backend for one profile and one prompt set."""

    def __init__(self, profile: Profile, prompts: PromptSet | PublishedPrompts, *, cache: ResponseCache | None = None,
                 seed: int | None = None, rate_limiter: Any = None,
                 constrain: Constrain | str = Constrain.NONE) -> None:
        self.profile = profile
        self.constrain = Constrain.parse(constrain)  # --constrain: the response_format of every body (.constrain)
        self.prompts = prompts
        self.cache = cache
        self.seed = seed
        self.rate_limiter = rate_limiter
        # a published-protocol run is a different backend: its name differs, so resuming across protocols is refused
        suffix = "" if prompts.protocol is Protocol.KIT else f"@{prompts.protocol.value}"
        # so is a constrained run (resume refuses to mix response formats in one run)
        suffix += "" if self.constrain is Constrain.NONE else f"+{self.constrain.value}"
        self.name = f"openai:{profile.name}{suffix}"
        self._client: openai.AsyncOpenAI | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None
        if profile.api_key_env and not (cache is not None and cache.replay_only) \
                and not os.environ.get(profile.api_key_env):
            raise DataError(ErrorCode.EMPTY_VALUE, f"the API key in environment variable {profile.api_key_env}",
                            field="api_key_env", detail=f"profile {profile.name}")
        register_secret(*self.secrets())  # redacted from everything the kit writes (routebr_kit.store.redact)

    @property
    def protocol(self) -> Protocol:
        """The request protocol (``kit`` or ``published``), fixed by the prompt set at construction."""
        return self.prompts.protocol

    # ------------------------------------------------------------------------------------------ requests
    def request_body(self, call: ModelCall) -> dict[str, Any]:
        """The exact JSON body sent for a call (what receipts record and the cache key hashes).

        The one place a request body is built, for both protocols: only the user-message payload differs (a
        published repair carries the published repair payload) besides the system text the prompt set gives.
        """
        payload = call.payload if self.protocol is Protocol.KIT else published_payload(call.stage, call.payload)
        body: dict[str, Any] = {
            "model": self.profile.model,
            "messages": [
                {"role": "system", "content": self.prompts.instruction(call.stage)},
                # a lone surrogate (a reply echoed into a repair payload) as its JSON escape: same value, sendable
                {"role": "user", "content": escape_surrogates(json.dumps(payload, ensure_ascii=False,
                                                                         separators=(",", ":")))},
            ],
            "stream": False,
            "response_format": response_format(self.constrain, SchemaStyle(self.profile.json_schema_style),
                                               call.stage, call.payload),
            **self.profile.request_options,
        }
        if self.profile.send_seed and self.seed is not None:
            body["seed"] = self.seed
        return body

    async def complete(self, call: ModelCall) -> ModelReply:
        body = self.request_body(call)
        extra = {"request_body": body, "requested_model": self.profile.model}
        key = ResponseCache.key(self.profile.base_url, body) if self.cache is not None else None
        if self.cache is not None:
            cached = self.cache.get(key)
            if cached is not None:
                return self._reply(cached.response, cached.latency_ms, (), {**extra, "cache": "hit"})
            if self.cache.replay_only:
                return ModelReply.failed(FailureKind.CACHE_MISS, f"replay-only cache has no entry {key[:16]}",
                                         extra={**extra, "cache": "miss"})
            extra["cache"] = "miss"
        started = time.perf_counter()
        response, failure, retries = await self._send(call, body)
        latency_ms = (time.perf_counter() - started) * 1000
        if failure is not None:
            return ModelReply.failed(failure[0], failure[1], latency_ms=latency_ms, retries=retries, extra=extra)
        if self.cache is not None and _content(response) is not None:
            self.cache.put(key, self.profile.base_url, body, response, latency_ms)
        return self._reply(response, latency_ms, retries, extra)

    def complete_sync(self, call: ModelCall) -> ModelReply:
        """Synchronous :meth:`complete` (safe inside a running event loop, e.g. Jupyter)."""
        return run_sync(self.complete(call))

    async def _send(self, call: ModelCall, body: Mapping[str, Any]
                    ) -> tuple[Mapping[str, Any] | None, tuple[FailureKind, str] | None, tuple[dict, ...]]:
        """POST with the retry policy: (response JSON, None, retries) or (None, (kind, message), retries)."""
        client = self._client_for_loop()
        retries: list[dict[str, Any]] = []
        attempts = self.profile.max_retries + 1
        for attempt in range(1, attempts + 1):
            if self.rate_limiter is not None:
                await self.rate_limiter.acquire()
            retry_after = None
            try:
                if self.protocol is Protocol.PUBLISHED:  # the published transport's exact bytes
                    text = await client.post("/chat/completions", content=wire_bytes(body), cast_to=str)
                else:
                    text = await client.post("/chat/completions", body=body, cast_to=str)
                response, failure = _parse_json(redact_text(text))  # an echoed key never gets past here
                return response, failure, tuple(retries)
            except UnicodeError as exc:  # the SDK decodes the body with its declared charset (e.g. utf-16, no BOM)
                return None, (FailureKind.MALFORMED_RESPONSE,
                              f"response body does not decode as its declared charset ({exc})"), tuple(retries)
            except openai.APIStatusError as exc:
                status = exc.status_code
                kind, reason = FailureKind.HTTP_STATUS, f"HTTP_{status}"
                retryable = status in RETRYABLE_STATUS or status >= 500
                retry_after = _retry_after(exc.response.headers)
            except openai.APITimeoutError as exc:
                kind, reason, retryable = FailureKind.TIMEOUT, type(exc).__name__, True
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                kind, reason, retryable = FailureKind.TRANSPORT, type(cause).__name__, True
            if not retryable or attempt == attempts:
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                return None, (kind, f"{reason}{tried}"), tuple(retries)
            delay = (min(retry_after, self.profile.max_retry_after_s) if retry_after is not None
                     else self.backoff(call, attempt))
            retries.append({"attempt": attempt, "reason": reason, "delay_seconds": round(delay, 3)})
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def backoff(self, call: ModelCall, attempt: int) -> float:
        """``retry_backoff_s · 2^(attempt-1)``, capped, times a jitter in [0.5, 1) keyed by the call and attempt."""
        seed = hashlib.sha256(f"{call.request_id}|{call.stage.value}|{attempt}".encode()).digest()
        jitter = 0.5 + 0.5 * random.Random(seed).random()
        return min(MAX_BACKOFF_S, self.profile.retry_backoff_s * 2 ** (attempt - 1)) * jitter

    def _reply(self, response: Mapping[str, Any] | None, latency_ms: float, retries: tuple[dict, ...],
               extra: dict[str, Any]) -> ModelReply:
        """Check the response's shape and reported model; tokens and latency are kept either way."""
        usage = response.get("usage") if isinstance(response, Mapping) else None
        usage = usage if isinstance(usage, Mapping) else {}
        reported = response.get("model") if isinstance(response, Mapping) else None
        details = {
            "latency_ms": latency_ms, "retries": retries,
            "prompt_tokens": _count(usage, "prompt_tokens", "input_tokens"),
            "completion_tokens": _count(usage, "completion_tokens", "output_tokens"),
            "model": reported if isinstance(reported, str) else None,
            "extra": {**extra, "usage": dict(usage), **_fingerprint(response)},
        }
        content = _content(response)
        if content is None:
            return ModelReply.failed(FailureKind.MALFORMED_RESPONSE,
                                     "response lacks a string choices[0].message.content", **details)
        accepted = self.profile.accepted_reported_models
        if details["model"] not in accepted:
            return ModelReply.failed(FailureKind.MODEL_IDENTITY,
                                     f"reported model {reported!r} is not one of {list(accepted)}",
                                     content=content, **details)
        return ModelReply(content=content, **details)

    # ------------------------------------------------------------------------------------------ clients
    def _client_for_loop(self) -> openai.AsyncOpenAI:
        """One client per event loop (an async HTTP pool cannot cross loops; ``run_sync`` may start new ones)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = openai.AsyncOpenAI(base_url=self.profile.base_url,
                                              api_key=(os.environ.get(self.profile.api_key_env, "")
                                                       if self.profile.api_key_env else NO_KEY),
                                              max_retries=0, timeout=self.profile.timeout_s)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the current loop's client (a later call builds a new one)."""
        client, self._client, self._client_loop = self._client, None, None
        if client is not None:
            await client.close()

    def with_rate_limiter(self, limiter: Any) -> OpenAICompatBackend:
        """The same backend whose network attempts (not cache hits) wait for ``limiter``."""
        return OpenAICompatBackend(self.profile, self.prompts, cache=self.cache, seed=self.seed, rate_limiter=limiter,
                                   constrain=self.constrain)

    def secrets(self) -> tuple[str, ...]:
        """The values to redact from everything written: the API key and any password in the base URL."""
        key = os.environ.get(self.profile.api_key_env, "") if self.profile.api_key_env else ""
        return tuple(v for v in (key, *url_secrets(self.profile.base_url)) if v)

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records: profile (with its hash), protocol, prompt set (with the file's hash), seed,
        cache mode — no credential."""
        return {"name": self.name, "kind": "openai_compatible", "profile": {**self.profile.as_dict(),
                                                                            "sha256": self.profile.sha256},
                "protocol": self.protocol.value, "prompts": self.prompts.describe(),
                "seed": self.seed if self.profile.send_seed else None, "constrain": self.constrain.value,
                "cache": None if self.cache is None else self.cache.mode.value}

    def __repr__(self) -> str:
        return (f"OpenAICompatBackend(profile={self.profile.name!r}, model={self.profile.model!r}, "
                f"base_url={self.profile.base_url!r}, protocol={self.protocol.value}, "
                f"prompts={self.prompts.language.value})")


def _parse_json(text: str) -> tuple[Mapping[str, Any] | None, tuple[FailureKind, str] | None]:
    try:
        value = json.loads(text)
    except RecursionError:
        return None, (FailureKind.MALFORMED_RESPONSE, "response body is JSON nested too deeply to parse")
    except ValueError:
        return None, (FailureKind.MALFORMED_RESPONSE, f"response body is not JSON: {text[:80]!r}")
    if not isinstance(value, dict):
        return None, (FailureKind.MALFORMED_RESPONSE, "response body is not a JSON object")
    return value, None


def _content(response: Any) -> str | None:
    try:
        content = response["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        return None
    return content if isinstance(content, str) else None


def _count(usage: Mapping[str, Any], name: str, fallback: str) -> int:
    value = usage.get(name, usage.get(fallback, 0))
    return value if type(value) is int and value >= 0 else 0


def _fingerprint(response: Any) -> dict[str, Any]:
    if not isinstance(response, Mapping):
        return {}
    out = {"system_fingerprint": response.get("system_fingerprint")}
    try:
        out["finish_reason"] = response["choices"][0].get("finish_reason")
    except (KeyError, IndexError, TypeError, AttributeError):
        pass
    return out


def _retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date); ``None`` if absent or bad."""
    try:
        if headers.get("retry-after-ms"):
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if not value:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError, OverflowError):
        return None


__all__ = ["OpenAICompatBackend", "RETRYABLE_STATUS"]
