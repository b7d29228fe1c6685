"""The content-addressed response cache: stable keys over the canonical request, hits without network calls or
rate-limit waits, replay-only misses that never reach the network, damaged entries re-recorded, no credential."""

from __future__ import annotations

import json

import pytest
from core_fixtures import controller, request
from openai_server import OpenAIServer

import routebr_kit as rk
from routebr_kit.backends.cache import CacheMode, ResponseCache
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import Profile
from routebr_kit.prompts import load_prompts

KEY = "sk-test-cache-0a1b2c3d"
ENV = "ROUTEBR_CACHE_TEST_KEY"
BODY = {"model": "m", "messages": [{"role": "user", "content": "买入 510300"}], "temperature": 0}


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)


def backend(base_url: str, cache: ResponseCache, **profile) -> OpenAICompatBackend:
    return OpenAICompatBackend(Profile("local", base_url, ENV, "test-model", **profile), load_prompts("en"),
                               cache=cache, seed=3)


def call(request_id: str = "T001") -> rk.ModelCall:
    return rk.ModelCall(request_id, rk.Stage.ROUTEBR, controller().proposal_payload(request(request_id)))


def test_keys_hash_the_canonical_request():
    key = ResponseCache.key("http://h/v1/", BODY)
    assert key == ResponseCache.key("http://h/v1", dict(reversed(list(BODY.items()))))  # order and slash free
    assert key != ResponseCache.key("http://other/v1", BODY)
    assert key != ResponseCache.key("http://h/v1", {**BODY, "seed": 1})
    assert key != ResponseCache.key("http://h/v1", {**BODY, "temperature": 0.2})


class CountingLimiter:
    acquired = 0

    async def acquire(self):
        self.acquired += 1


def test_a_hit_makes_no_call_and_waits_for_no_rate_limit(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    limiter = CountingLimiter()
    with OpenAIServer() as server:
        limited = backend(server.base_url, cache).with_rate_limiter(limiter)
        first = limited.complete_sync(call())
        second = limited.complete_sync(call())
        other = limited.complete_sync(call("T002"))  # a different request (another request ID is the same body)
        assert server.count == 1 and limiter.acquired == 1
    assert (first.extra["cache"], second.extra["cache"], other.extra["cache"]) == ("miss", "hit", "hit")
    assert second.content == first.content and second.latency_ms == pytest.approx(first.latency_ms, abs=1e-3)
    assert (cache.hits, cache.misses, len(cache)) == (2, 1, 1)
    entry = json.loads(next((tmp_path / "cache").glob("*/*.json")).read_text(encoding="utf-8"))
    assert entry["request_body"] == first.extra["request_body"] and entry["response"]["model"] == "test-model"
    assert KEY not in json.dumps(entry)


def test_replay_only_never_touches_the_network_and_needs_no_key(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV)
    replay = ResponseCache(tmp_path / "cache", mode=CacheMode.REPLAY_ONLY)
    with OpenAIServer() as server:
        reply = backend(server.base_url, replay).complete_sync(call())
        assert server.count == 0
    assert reply.failure.kind is rk.FailureKind.CACHE_MISS and reply.extra["cache"] == "miss"


def test_a_damaged_entry_is_a_miss_and_is_recorded_again(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    with OpenAIServer() as server:
        b = backend(server.base_url, cache)
        b.complete_sync(call())
        entry = next((tmp_path / "cache").glob("*/*.json"))
        entry.write_text('{"response": ', encoding="utf-8")
        again = b.complete_sync(call())
        assert server.count == 2 and again.ok and again.extra["cache"] == "miss"
    assert json.loads(entry.read_text(encoding="utf-8"))["response"]["choices"]
