"""The OpenAI-compatible adapter against a real HTTP server on 127.0.0.1, through the same ``openai`` client path
as production: request shape, retries with Retry-After, persistent errors, timeouts, malformed responses, the
identity check, the repair path, and the sync entry point inside a running loop."""

from __future__ import annotations

import asyncio
import json
import socket

import pytest
from core_fixtures import controller, proposal, request
from openai_server import OpenAIServer, Reply, completion, default_responder

import routebr_kit as rk
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import Profile
from routebr_kit.prompts import load_prompts

KEY = "sk-test-routebr-4f1c0ffee"
ENV = "ROUTEBR_TEST_API_KEY"
R = rk.ReasonCode
F = rk.FailureKind


def make(base_url: str, **settings) -> OpenAICompatBackend:
    options = settings.pop("request_options", {"temperature": 0, "max_tokens": 256,
                                               "thinking": {"type": "disabled"}, "enable_thinking": False})
    settings = {"retry_backoff_s": 0.001, "timeout_s": 5.0, **settings}
    profile = Profile("local", base_url, ENV, "test-model", request_options=options, **settings)
    return OpenAICompatBackend(profile, load_prompts("en"), seed=7)


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)


@pytest.fixture
def server():
    with OpenAIServer() as s:
        yield s


def routebr_call(request_id: str = "T001") -> rk.ModelCall:
    return rk.ModelCall(request_id, rk.Stage.ROUTEBR, controller().proposal_payload(request(request_id)))


def test_happy_path_sends_the_contract_body_and_records_the_reply(server):
    backend = make(server.base_url)
    reply = backend.complete_sync(routebr_call())
    sent = server.requests[0]
    assert sent["response_format"] == {"type": "json_object"} and sent["stream"] is False
    assert (sent["temperature"], sent["max_tokens"], sent["thinking"], sent["enable_thinking"]) == (
        0, 256, {"type": "disabled"}, False)  # SDK parameters and extra_body options both reach the body
    assert "seed" not in sent
    assert [m["role"] for m in sent["messages"]] == ["system", "user"]
    assert json.loads(sent["messages"][1]["content"]) == controller().proposal_payload(request())
    assert sent == reply.extra["request_body"]
    assert server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert reply.ok and reply.model == "test-model" and (reply.prompt_tokens, reply.completion_tokens) == (700, 40)
    assert reply.extra["usage"]["total_tokens"] == 740 and reply.extra["system_fingerprint"] == "fp_test"
    assert reply.retries == () and reply.latency_ms > 0
    assert KEY not in repr(backend) and KEY not in json.dumps(backend.manifest())
    decision = controller().route(request(), backend)
    assert decision.dispatched and decision.reason is R.DISPATCH_OK


def test_seed_is_sent_only_where_the_profile_allows(server):
    make(server.base_url, send_seed=True).complete_sync(routebr_call())
    make(server.base_url).complete_sync(routebr_call())
    assert server.requests[0]["seed"] == 7 and "seed" not in server.requests[1]


@pytest.mark.parametrize("headers, delay", [({"Retry-After": "0.05"}, 0.05), ({"retry-after-ms": "30"}, 0.03)])
def test_429_then_success_honours_retry_after(headers, delay):
    def responder(req, number):
        return Reply(429, {"error": {"message": "slow down"}}, headers) if number == 1 else default_responder(req, 2)

    with OpenAIServer(responder) as s:
        reply = make(s.base_url).complete_sync(routebr_call())
        assert s.count == 2
    assert reply.ok
    assert reply.retries == ({"attempt": 1, "reason": "HTTP_429", "delay_seconds": delay},)


def test_persistent_500_becomes_a_recorded_fail_closed_terminal():
    with OpenAIServer(lambda req, n: Reply(500, {"error": {"message": "boom"}})) as s:
        backend = make(s.base_url, max_retries=2)
        reply = backend.complete_sync(routebr_call())
        assert s.count == 3
        decision = controller().route(request(), backend)
    assert reply.failure.kind is F.HTTP_STATUS and reply.failure.message == "HTTP_500 after 3 attempts"
    assert [r["reason"] for r in reply.retries] == ["HTTP_500", "HTTP_500"]
    assert [r["attempt"] for r in reply.retries] == [1, 2]
    assert decision.terminal is rk.Terminal.CLARIFY and decision.reason is R.FAIL_CLOSED_BACKEND_ERROR
    assert decision.failure.kind is F.HTTP_STATUS


def test_non_retryable_status_fails_at_once():
    with OpenAIServer(lambda req, n: Reply(400, {"error": {"message": "bad request"}})) as s:
        reply = make(s.base_url).complete_sync(routebr_call())
        assert s.count == 1
    assert reply.failure.kind is F.HTTP_STATUS and reply.retries == ()


def test_timeout_is_retried_then_fails_closed_with_the_timeout_reason():
    with OpenAIServer(lambda req, n: Reply(body=completion("{}"), delay_s=1.5)) as s:
        backend = make(s.base_url, timeout_s=0.2, max_retries=1)
        decision = controller().route(request(), backend)
    assert decision.reason is R.FAIL_CLOSED_BACKEND_TIMEOUT and decision.failure.kind is F.TIMEOUT


def test_connection_refused_is_a_transport_failure():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        reply = make(f"http://127.0.0.1:{port}/v1", max_retries=1).complete_sync(routebr_call())
    assert reply.failure.kind is F.TRANSPORT and len(reply.retries) == 1
    assert reply.retries[0]["reason"] in ("ConnectError", "ConnectionRefusedError")


def test_malformed_content_takes_the_repair_path_with_the_target_schema():
    answers = iter(["Sure! Here is the route: " + json.dumps(proposal()), json.dumps(proposal())])

    with OpenAIServer(lambda req, n: completion(next(answers))) as s:
        decision = controller().route(request(), make(s.base_url))
        repair = s.requests[1]
    assert decision.dispatched and decision.repair_attempted and decision.calls == 2
    assert decision.first_errors[0].code is rk.ContractErrorCode.INVALID_JSON
    system, user = repair["messages"][0]["content"], json.loads(repair["messages"][1]["content"])
    assert "Target stage: ROUTEBR" in system and '"topk":["<catalog action_id>"]' in system
    assert user["original_stage"] == "ROUTEBR" and set(user["target_schema"]) == {"action_id", "object_id", "topk"}


@pytest.mark.parametrize("body", [{"foo": 1}, "<html>gateway</html>", completion(None)])
def test_malformed_response_fails_closed(body):
    with OpenAIServer(lambda req, n: Reply(200, body)) as s:
        decision = controller().route(request(), make(s.base_url))
    assert decision.failure.kind is F.MALFORMED_RESPONSE and decision.reason is R.FAIL_CLOSED_BACKEND_ERROR


@pytest.mark.parametrize("reported", ["other-model", None])
def test_wrong_or_missing_model_identity_fails_closed_in_the_adapter(reported):
    def responder(req, n):
        body = completion(json.dumps(proposal()), model=reported)
        if reported is None:
            del body["model"]
        return body

    with OpenAIServer(responder) as s:
        backend = make(s.base_url)
        reply = backend.complete_sync(routebr_call())
        decision = controller().route(request(), backend)
    assert reply.failure.kind is F.MODEL_IDENTITY and reply.model == reported and reply.content is not None
    assert decision.reason is R.FAIL_CLOSED_MODEL_IDENTITY and not decision.dispatched


def test_accepted_reported_aliases_pass():
    with OpenAIServer(lambda req, n: completion(json.dumps(proposal()), model="test-model-2026-01-01")) as s:
        backend = make(s.base_url, accepted_reported_models=("test-model", "test-model-2026-01-01"))
        assert controller().route(request(), backend).dispatched


def test_backoff_is_reproducible_and_bounded():
    a, b = make("http://127.0.0.1:9/v1", retry_backoff_s=1.0), make("http://127.0.0.1:9/v1", retry_backoff_s=1.0)
    delays = [a.backoff(routebr_call("X1"), attempt) for attempt in (1, 2, 3)]
    assert delays == [b.backoff(routebr_call("X1"), attempt) for attempt in (1, 2, 3)]
    assert delays != [a.backoff(routebr_call("X2"), attempt) for attempt in (1, 2, 3)]
    for attempt, delay in enumerate(delays, start=1):
        assert 0.5 * 2 ** (attempt - 1) <= delay < 2 ** (attempt - 1)


def test_missing_key_is_a_data_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv(ENV)
    with pytest.raises(rk.DataError) as err:
        make("http://127.0.0.1:9/v1")
    assert err.value.code is rk.ErrorCode.EMPTY_VALUE and ENV in str(err.value)


def test_sync_entry_point_works_inside_a_running_event_loop(server):
    backend = make(server.base_url)

    async def notebook_cell():
        asyncio.get_running_loop()  # as in Jupyter: a loop is already running
        first = backend.complete_sync(routebr_call())
        second = await backend.complete(routebr_call())  # the awaitable path on this loop
        return first, second

    first, second = asyncio.run(notebook_cell())
    assert first.ok and second.ok and server.count == 2
