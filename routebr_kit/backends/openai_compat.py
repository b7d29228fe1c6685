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
* **Deadline**: every call has a wall-clock deadline (``deadline_s``: the profile's, or the run's
  ``--deadline-s``) over connect, request, headers and body of every attempt, retries and their backoff
  included; past it the call is a ``DEADLINE`` failure (reason ``FAIL_CLOSED_BACKEND_TIMEOUT``) with the retries
  made so far, and the run goes on.  ``timeout_s`` alone cannot do this (see :meth:`OpenAICompatBackend._send`).
* **Bounded body**: a response body past :data:`MAX_RESPONSE_BYTES` (as received) is a ``MALFORMED_RESPONSE``
  failure, through a transport of the SDK's own HTTP library that counts the bytes of every body.
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
import importlib
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
from ..core.strict_json import JsonIssue, StrictJsonError, strict_loads
from ..prompts import PromptSet, Protocol, PublishedPrompts
from ..prompts.published import published_payload, wire_bytes
from ..store.redact import escape_surrogates, redact_text, register_secret, url_secrets
from .cache import ResponseCache
from .constrain import Constrain, SchemaStyle, response_format
from .profiles import Profile, check_deadline

#: Statuses worth another attempt (the SDK's own list): timeouts, conflicts, rate limits, server errors.
_RETRYABLE_STATUS = frozenset({408, 409, 429})
#: What the SDK sends as the key to a loopback server whose profile names no key variable (it requires a value).
_NO_KEY = "no-key"
_MAX_BACKOFF_S = 30.0
#: The most body bytes one response may carry, as received (before any content decoding); a longer body — an
#: endless chunked one sent as fast as the link allows — is a malformed response, not memory the call fills
#: until its deadline (measured on 127.0.0.1: ~450 MiB in 3 s without the bound).
MAX_RESPONSE_BYTES = 64 * 2**20


class ResponseTooLarge(Exception):
    """A response body past :data:`MAX_RESPONSE_BYTES` (raised by the bounded transport, mapped to a failure)."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"response body exceeds {limit} bytes")


def _http_library() -> Any:
    """The httpx flavour the SDK is built on (``httpx``, or ``httpx2`` in recent SDKs), found from the SDK's public
    client class, so the bounded transport is always of the SDK's own kind."""
    for cls in openai.DefaultAsyncHttpxClient.__mro__[1:]:
        if cls.__name__ == "AsyncClient":
            return importlib.import_module(cls.__module__.partition(".")[0])
    raise ImportError("the openai SDK's HTTP client library")  # pragma: no cover - every SDK release has one


_HTTP = _http_library()


class _BoundedStream(_HTTP.AsyncByteStream):  # type: ignore[misc,name-defined]
    """A response body that raises :class:`ResponseTooLarge` once more than ``limit`` bytes have arrived."""

    def __init__(self, inner: Any, limit: int) -> None:
        self._inner, self._limit = inner, limit

    async def __aiter__(self) -> Any:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._limit:
                raise ResponseTooLarge(self._limit)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class _BoundedTransport(_HTTP.AsyncBaseTransport):  # type: ignore[misc,name-defined]
    """The SDK's HTTP transport (its connection limits) with every response body bounded in bytes."""

    def __init__(self, limit: int) -> None:
        self._inner = _HTTP.AsyncHTTPTransport(limits=_HTTP.Limits(max_connections=1000,
                                                                   max_keepalive_connections=100))
        self._limit = limit

    async def handle_async_request(self, request: Any) -> Any:
        response = await self._inner.handle_async_request(request)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._limit:  # refused before a byte of it is read
            await response.aclose()
            raise ResponseTooLarge(self._limit)
        response.stream = _BoundedStream(response.stream, self._limit)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class OpenAICompatBackend:
    """An OpenAI-compatible chat-completions backend for one profile and one prompt set."""

    def __init__(self, profile: Profile, prompts: PromptSet | PublishedPrompts, *, cache: ResponseCache | None = None,
                 seed: int | None = None, rate_limiter: Any = None, deadline_s: float | None = None,
                 constrain: Constrain | str = Constrain.NONE) -> None:
        self.profile = profile
        #: the wall-clock deadline of one call in seconds (the profile's unless given)
        self.deadline_s = check_deadline(profile.deadline_s if deadline_s is None else deadline_s)
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
        """POST with the retry policy under the call's deadline: (response JSON, None, retries) or
        (None, (kind, message), retries).

        **How the deadline is enforced, and why this way.**  The SDK's ``timeout`` (``timeout_s``) is an httpx
        timeout: it bounds each connect, each write and each *read* separately, never the whole exchange, so a
        server that sends one byte every 0.2 s, or a chunked body that never ends, trips none of them and holds the
        call open for ever.  The call therefore runs inside :func:`asyncio.timeout_at` at ``now + deadline_s``.
        Every wait of the exchange — connecting, sending, waiting for headers, each body read, the backoff sleep
        between attempts, the rate limiter's wait before a retry — is an ``await`` on this event loop, so at the
        deadline the loop cancels the task wherever it is suspended, within one loop iteration, whatever the server
        does next; the SDK's connection pool closes a connection whose request was cancelled (it never goes back to
        the pool with a half-read body; ``tests/test_backend_deadline.py`` checks the next call gets a clean one).
        The alternatives bound less: a watchdog thread cannot interrupt a coroutine (it could only close the socket
        under the pool's feet), and a transport that checks a monotonic deadline on each received chunk never runs
        while a server sends nothing (a silent stall, or a slow connect).  What the
        deadline cannot pre-empt is CPU work that does not yield — parsing a body already received, bounded by its
        size.  A retry whose backoff would end past the deadline is not waited for: the call fails at once.
        The wait for the first rate-limiter permit is queueing before the call starts, outside the deadline.
        """
        client = self._client_for_loop()
        retries: list[dict[str, Any]] = []
        if self.rate_limiter is not None:
            await self.rate_limiter.acquire()
        loop = asyncio.get_running_loop()
        until = loop.time() + self.deadline_s
        scope = asyncio.timeout_at(until)
        try:
            async with scope:
                return await self._attempts(client, call, body, retries, until)
        except TimeoutError:
            if not scope.expired():
                raise
        attempt = len(retries) + 1
        return None, (FailureKind.DEADLINE, f"DEADLINE_EXCEEDED: no complete response within the call deadline of "
                                            f"{self.deadline_s:g} s (cut off during attempt {attempt})"), tuple(retries)

    async def _attempts(self, client: openai.AsyncOpenAI, call: ModelCall, body: Mapping[str, Any],
                        retries: list[dict[str, Any]], until: float
                        ) -> tuple[Mapping[str, Any] | None, tuple[FailureKind, str] | None, tuple[dict, ...]]:
        """The attempts of one call (:meth:`_send` holds the deadline; ``until`` is it on the loop's clock)."""
        attempts = self.profile.max_retries + 1
        for attempt in range(1, attempts + 1):
            if self.rate_limiter is not None and attempt > 1:
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
                retryable = status in _RETRYABLE_STATUS or status >= 500
                retry_after = _retry_after(exc.response.headers)
            except openai.APITimeoutError as exc:
                kind, reason, retryable = FailureKind.TIMEOUT, type(exc).__name__, True
            except ResponseTooLarge as exc:  # raised while the SDK reads a body (an error body included)
                return None, (FailureKind.MALFORMED_RESPONSE, str(exc)), tuple(retries)
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                if isinstance(cause, ResponseTooLarge):  # the same, wrapped by the SDK
                    return None, (FailureKind.MALFORMED_RESPONSE, str(cause)), tuple(retries)
                kind, reason, retryable = FailureKind.TRANSPORT, type(cause).__name__, True
            if not retryable or attempt == attempts:
                tried = f" after {attempt} attempts" if attempt > 1 else ""
                return None, (kind, f"{reason}{tried}"), tuple(retries)
            delay = (min(retry_after, self.profile.max_retry_after_s) if retry_after is not None
                     else self.backoff(call, attempt))
            retries.append({"attempt": attempt, "reason": reason, "delay_seconds": round(delay, 3)})
            if asyncio.get_running_loop().time() + delay >= until:  # the retry could not start before the deadline
                return None, (FailureKind.DEADLINE, f"DEADLINE_EXCEEDED: {reason} on attempt {attempt}, and the "
                              f"retry's wait of {delay:.3g} s ends past the call deadline of {self.deadline_s:g} s"
                              ), tuple(retries)
            await asyncio.sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def backoff(self, call: ModelCall, attempt: int) -> float:
        """``retry_backoff_s · 2^(attempt-1)``, capped, times a jitter in [0.5, 1) keyed by the call and attempt."""
        seed = hashlib.sha256(f"{call.request_id}|{call.stage.value}|{attempt}".encode()).digest()
        jitter = 0.5 + 0.5 * random.Random(seed).random()
        return min(_MAX_BACKOFF_S, self.profile.retry_backoff_s * 2 ** (attempt - 1)) * jitter

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

    def _client_for_loop(self) -> openai.AsyncOpenAI:
        """One client per event loop (an async HTTP pool cannot cross loops; ``run_sync`` may start new ones)."""
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            http = openai.DefaultAsyncHttpxClient(transport=_BoundedTransport(MAX_RESPONSE_BYTES),
                                                  timeout=self.profile.timeout_s)
            self._client = openai.AsyncOpenAI(base_url=self.profile.base_url,
                                              api_key=(os.environ.get(self.profile.api_key_env, "")
                                                       if self.profile.api_key_env else _NO_KEY),
                                              max_retries=0, timeout=self.profile.timeout_s, http_client=http)
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
                                   deadline_s=self.deadline_s, constrain=self.constrain)

    def with_deadline(self, seconds: float) -> OpenAICompatBackend:
        """The same backend with another call deadline (``run --deadline-s``); the profile is unchanged."""
        return OpenAICompatBackend(self.profile, self.prompts, cache=self.cache, seed=self.seed,
                                   rate_limiter=self.rate_limiter, deadline_s=seconds, constrain=self.constrain)

    def secrets(self) -> tuple[str, ...]:
        """The values to redact from everything written: the API key and any password in the base URL."""
        key = os.environ.get(self.profile.api_key_env, "") if self.profile.api_key_env else ""
        return tuple(v for v in (key, *url_secrets(self.profile.base_url)) if v)

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records: profile (with its hash), protocol, prompt set (with the file's hash), seed,
        cache mode, the call deadline in force — no credential."""
        return {"name": self.name, "kind": "openai_compatible", "profile": {**self.profile.as_dict(),
                                                                            "sha256": self.profile.sha256},
                "protocol": self.protocol.value, "prompts": self.prompts.describe(),
                "seed": self.seed if self.profile.send_seed else None, "constrain": self.constrain.value,
                "cache": None if self.cache is None else self.cache.mode.value, "deadline_s": self.deadline_s}

    def __repr__(self) -> str:
        return (f"OpenAICompatBackend(profile={self.profile.name!r}, model={self.profile.model!r}, "
                f"base_url={self.profile.base_url!r}, protocol={self.protocol.value}, "
                f"prompts={self.prompts.language.value})")


#: Nesting bound of a response envelope (``choices[0].message.content`` is depth 4; providers add a little more).
_MAX_ENVELOPE_DEPTH = 64


def _parse_json(text: str) -> tuple[Mapping[str, Any] | None, tuple[FailureKind, str] | None]:
    """The response envelope by the kit's strict JSON rules (:func:`~routebr_kit.core.strict_json.strict_loads`):
    a repeated key, ``NaN``/``Infinity`` or nesting past :data:`MAX_ENVELOPE_DEPTH` is a malformed response (the
    recorded fail-closed backend error), never a last-key-wins or non-finite value read into the record.  A lone
    surrogate *escape* is kept: it is what the server sent, and the writer records it escaped."""
    try:
        value = strict_loads(text, max_depth=_MAX_ENVELOPE_DEPTH)
    except StrictJsonError as exc:
        if exc.issue is JsonIssue.TOO_DEEP:
            return None, (FailureKind.MALFORMED_RESPONSE, "response body is JSON nested too deeply to parse")
        if exc.issue is JsonIssue.SYNTAX:
            return None, (FailureKind.MALFORMED_RESPONSE, f"response body is not JSON: {text[:80]!r}")
        return None, (FailureKind.MALFORMED_RESPONSE, f"response body is not strict JSON ({exc.issue.value}: "
                                                      f"{exc.detail[:120]})")
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


__all__ = ["MAX_RESPONSE_BYTES", "OpenAICompatBackend", "ResponseTooLarge"]
