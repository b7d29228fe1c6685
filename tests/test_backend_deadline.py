"""A wall-clock deadline on every model call (issue 20, item 2), against real servers on 127.0.0.1.

``timeout_s`` bounds each read, so a server that drips one byte every 0.1 s, sends a chunked body that never ends,
or accepts a connection and never answers, kept a case open for ever.  Here every such call ends within its
deadline (plus a small slack for the event loop and thread scheduling on a loaded machine) as a ``DEADLINE``
failure — reason ``FAIL_CLOSED_BACKEND_TIMEOUT``, retries recorded — and a run goes on to the next case with every
row committed.  The deadline covers retries and their backoff; it is a profile field (``deadline_s``) and a run
option (``--deadline-s``), recorded in the manifest.  A body sent as fast as the link allows stops at the byte
bound (``MAX_RESPONSE_BYTES``) instead of filling memory until the deadline.  The response envelope is read by the
strict JSON rules.

Every test guards itself with an outer ``asyncio.wait_for`` (or a subprocess timeout), so on code without the
deadline it fails instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from core_fixtures import controller, request
from openai_server import OpenAIServer, Reply, completion, default_responder, valid_answer

import routebr_kit as rk
from routebr_kit.backends import openai_compat
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import DEFAULT_DEADLINE_S, Profile, load_profiles
from routebr_kit.backends.registry import make_backend
from routebr_kit.cli.app import main
from routebr_kit.core.controller import failure_reason
from routebr_kit.prompts import load_prompts
from routebr_kit.runs.runner import arun_cases
from routebr_kit.store.ledger import read_predictions

KEY = "sk-test-deadline-3c9e1b7a"
ENV = "ROUTEBR_DEADLINE_TEST_KEY"
F = rk.FailureKind
R = rk.ReasonCode
#: Allowed lateness past a deadline: loop scheduling, thread hand-off and a loaded 2-core machine.
SLACK_S = 1.0
#: The outer guard: a call that has not ended by then has no deadline.
GUARD_S = 15.0


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)


def make(base_url: str, *, deadline_s: float, **settings) -> OpenAICompatBackend:
    settings = {"retry_backoff_s": 0.01, "timeout_s": 5.0, "max_retries": 0, **settings}
    profile = Profile("local", base_url, ENV, "test-model", deadline_s=deadline_s, **settings)
    return OpenAICompatBackend(profile, load_prompts("en"), seed=7)


def call(request_id: str = "T001") -> rk.ModelCall:
    return rk.ModelCall(request_id, rk.Stage.ROUTEBR, controller().proposal_payload(request(request_id)))


def timed(backend: OpenAICompatBackend, guard_s: float = GUARD_S) -> tuple[rk.ModelReply, float]:
    """One call under an outer guard; (reply, seconds)."""

    async def go() -> rk.ModelReply:
        try:
            return await asyncio.wait_for(backend.complete(call()), guard_s)
        finally:
            await backend.aclose()

    started = time.monotonic()
    reply = asyncio.run(go())
    return reply, time.monotonic() - started


def drip(request: dict, number: int) -> Reply:
    """A valid answer, one byte every 0.1 s: each read succeeds well inside ``timeout_s``; the body takes ~60 s."""
    return Reply(body=completion(valid_answer(request), model=request.get("model")), drip_s=0.1)


def endless(request: dict, number: int) -> Reply:
    """Headers, then a chunked body that never ends (a chunk every 0.05 s)."""
    return Reply(endless_chunk_s=0.05)


class SilentListener:
    """Accepts connections, reads the request, never answers (the headers never come)."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.conns: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(conn)

    def __enter__(self) -> SilentListener:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sock.close()
        for conn in self.conns:
            conn.close()


# --------------------------------------------------------------------------------------------- one call


@pytest.mark.parametrize("responder", [drip, endless], ids=["slow-drip", "endless-chunked"])
def test_a_body_that_never_finishes_ends_at_the_deadline(responder):
    with OpenAIServer(responder) as server:
        reply, took = timed(make(server.base_url, deadline_s=1.0, timeout_s=2.0))
    assert reply.failure is not None and reply.failure.kind is F.DEADLINE, reply.failure
    assert reply.failure.message.startswith("DEADLINE_EXCEEDED") and "1 s" in reply.failure.message
    assert 1.0 <= took <= 1.0 + SLACK_S, took
    assert failure_reason(reply.failure) is R.FAIL_CLOSED_BACKEND_TIMEOUT


def test_headers_that_never_come_end_at_the_deadline_not_the_read_timeout():
    with SilentListener() as listener:
        reply, took = timed(make(listener.base_url, deadline_s=1.0, timeout_s=30.0))
    assert reply.failure.kind is F.DEADLINE and 1.0 <= took <= 1.0 + SLACK_S, (reply.failure, took)


def test_the_deadline_covers_retries_and_their_backoff():
    """503 (Retry-After 0.3 s), then a drip: one deadline over both attempts and the wait, the retry recorded."""

    def answer(request: dict, number: int) -> Reply:
        return Reply(503, {"error": {"message": "busy"}}, headers={"Retry-After": "0.3"}) if number == 1 \
            else drip(request, number)

    with OpenAIServer(answer) as server:
        reply, took = timed(make(server.base_url, deadline_s=1.5, max_retries=3, timeout_s=2.0))
        assert server.count == 2
    assert reply.failure.kind is F.DEADLINE and "attempt 2" in reply.failure.message
    assert [r["reason"] for r in reply.retries] == ["HTTP_503"]
    assert 1.5 <= took <= 1.5 + SLACK_S, took


def test_a_retry_whose_wait_ends_past_the_deadline_fails_at_once():
    busy = Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "30"})
    with OpenAIServer(lambda r, n: busy) as server:
        reply, took = timed(make(server.base_url, deadline_s=5.0, max_retries=3, max_retry_after_s=60.0))
        assert server.count == 1
    assert reply.failure.kind is F.DEADLINE and "HTTP_429" in reply.failure.message
    assert reply.retries == ({"attempt": 1, "reason": "HTTP_429", "delay_seconds": 30.0},)
    assert took < 2.0, took


def test_each_attempt_of_a_retried_timeout_is_inside_the_one_deadline():
    """Per-read timeouts retried: without the deadline, 4 attempts × 0.6 s; with it, 1 s in all."""
    with SilentListener() as listener:
        reply, took = timed(make(listener.base_url, deadline_s=1.0, timeout_s=0.6, max_retries=3,
                                 retry_backoff_s=0.01))
    assert reply.failure.kind is F.DEADLINE and [r["reason"] for r in reply.retries] == ["APITimeoutError"]
    assert 1.0 <= took <= 1.0 + SLACK_S, took


def test_a_cut_off_connection_is_not_reused():
    """Call 1 drips and is cut off at its deadline; call 2, on the same client and loop, gets a clean answer (the
    half-read connection was closed, not put back into the pool with the rest of the drip still coming)."""

    def answer(request: dict, number: int):
        return drip(request, number) if number == 1 else default_responder(request, number)

    async def both(backend: OpenAICompatBackend) -> tuple[rk.ModelReply, rk.ModelReply]:
        try:
            first = await asyncio.wait_for(backend.complete(call("T001")), GUARD_S)
            second = await asyncio.wait_for(backend.complete(call("T002")), GUARD_S)
            return first, second
        finally:
            await backend.aclose()

    with OpenAIServer(answer) as server:
        first, second = asyncio.run(both(make(server.base_url, deadline_s=0.8, timeout_s=2.0)))
        assert server.count == 2
    assert first.failure.kind is F.DEADLINE
    assert second.ok and json.loads(second.content)["topk"], second


def test_a_reply_inside_the_deadline_is_untouched():
    with OpenAIServer(latency_s=0.05) as server:
        reply, took = timed(make(server.base_url, deadline_s=2.0))
    assert reply.ok and reply.model == "test-model" and took < 2.0


def test_with_deadline_overrides_the_profile_and_keeps_it():
    backend = make("http://127.0.0.1:9/v1", deadline_s=7.0)
    other = backend.with_deadline(2.5)
    assert (backend.deadline_s, other.deadline_s) == (7.0, 2.5)
    assert other.profile == backend.profile and other.profile.sha256 == backend.profile.sha256
    assert other.manifest()["deadline_s"] == 2.5 and backend.manifest()["profile"]["deadline_s"] == 7.0
    assert other.with_rate_limiter(object()).deadline_s == 2.5
    with pytest.raises(rk.DataError) as caught:
        backend.with_deadline(0)
    assert caught.value.code is rk.ErrorCode.INVALID_VALUE


# --------------------------------------------------------------------------------------------- the profile field


def test_profile_deadline_default_and_field(tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"a": {"base_url": "http://x/v1", "api_key_env": ENV, "model": "m"},
                                "b": {"base_url": "http://x/v1", "api_key_env": ENV, "model": "m",
                                      "deadline_s": 12}}), encoding="utf-8")
    loaded = load_profiles(path)
    assert loaded["a"].deadline_s == DEFAULT_DEADLINE_S == 300.0 and loaded["b"].deadline_s == 12.0
    assert loaded["b"].as_dict()["deadline_s"] == 12.0 and loaded["a"].sha256 != loaded["b"].sha256


@pytest.mark.parametrize("text", ["deadline_s: 0", "deadline_s: -1", "deadline_s: .inf", "deadline_s: .nan",
                                  "deadline_s: true", "deadline_s: '10'", "deadline_s: [1]"])
def test_a_bad_profile_deadline_is_a_located_typed_error(tmp_path, text):
    path = tmp_path / "p.yaml"
    path.write_text(f"a:\n  base_url: http://x/v1\n  api_key_env: {ENV}\n  model: m\n  {text}\n", encoding="utf-8")
    with pytest.raises(rk.DataError) as caught:
        load_profiles(path)
    error = caught.value
    assert error.code in (rk.ErrorCode.INVALID_VALUE, rk.ErrorCode.WRONG_TYPE) and error.field == "a.deadline_s"
    assert error.file == str(path)  # .inf and .nan are refused by the strict YAML reader itself


@pytest.mark.parametrize("bad", [0, -1.0, math.inf, math.nan, True])
def test_a_profile_built_in_code_checks_its_deadline(bad):
    with pytest.raises(rk.DataError):
        Profile("p", "http://x/v1", ENV, "m", deadline_s=bad)


# --------------------------------------------------------------------------------------------- a run goes on


@pytest.fixture(scope="module")
def bench(routebr_artifact):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    return assets, rk.load_cases(data / "routebr_select_160.csv")


def profiles_file(directory: Path, base_url: str, **extra) -> Path:
    path = directory / "profiles.json"
    path.write_text(json.dumps({"local": {"base_url": base_url, "api_key_env": ENV, "model": "test-model",
                                          "timeout_s": 1, "max_retries": 1, "retry_backoff_s": 0.01, **extra}}),
                    encoding="utf-8")
    return path


def test_a_run_with_stalling_cases_commits_every_row_and_goes_on(bench, tmp_path):
    """4 cases, the 1st and 3rd request drip, the 4th is an endless body: every row committed, two fail-closed
    on the deadline with the typed reason, the others answered; no case past its deadline."""
    assets, cases = bench
    chosen = cases[:4]
    stall = {c.request.utterance: how for c, how in ((chosen[0], drip), (chosen[2], endless))}

    def answer(request: dict, number: int):  # the request carries no case ID: stall by utterance
        sent = request["messages"][-1]["content"]
        how = next((how for utterance, how in stall.items() if utterance in sent), default_responder)
        return how(request, number)

    with OpenAIServer(answer) as server:
        backend = make_backend("local", cases=chosen, profiles_path=profiles_file(tmp_path, server.base_url,
                                                                                    deadline_s=1.5))
        started = time.monotonic()
        result = asyncio.run(asyncio.wait_for(
            arun_cases(chosen, backend, system="routebr", assets=assets, out_dir=tmp_path / "run",
                       concurrency=2, progress=False), 4 * GUARD_S))
        took = time.monotonic() - started
    assert [r.case_id for r in result.rows] == [c.case_id for c in chosen]
    raw = tmp_path / "run" / "raw"
    reasons = {c.case_id: json.loads((raw / f"{c.case_id}.json").read_text(encoding="utf-8"))["summary"]["reason"]
               for c in chosen}
    assert reasons[chosen[0].case_id] == reasons[chosen[2].case_id] == R.FAIL_CLOSED_BACKEND_TIMEOUT.value
    assert not R(reasons[chosen[1].case_id]).fail_closed and not R(reasons[chosen[3].case_id]).fail_closed
    assert took <= 2 * (1.5 + SLACK_S), took  # two stalled cases in parallel, each bounded
    receipt = json.loads((raw / f"{chosen[0].case_id}.json").read_text(encoding="utf-8"))
    assert '"kind": "DEADLINE"' in json.dumps(receipt)
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["execution"]["call_deadline_s"] == 1.5
    assert manifest["backend_detail"]["deadline_s"] == 1.5
    assert manifest["backend_detail"]["profile"]["deadline_s"] == 1.5


def _cases_dir(routebr_artifact: Path, directory: Path, rows: int) -> Path:
    data = routebr_artifact / "data"
    lines = (data / "routebr_select_160.csv").read_text(encoding="utf-8").splitlines(True)
    cases = directory / "cases.csv"
    cases.write_text("".join(lines[: rows + 1]), encoding="utf-8")
    for name in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        (directory / name).symlink_to(data / name)
    return cases


@pytest.mark.parametrize("responder, fresh", [(drip, True), (endless, False)],
                         ids=["slow-drip-fresh-interpreter", "endless-chunked-in-process"])
def test_run_deadline_option(routebr_artifact, tmp_path, monkeypatch, responder, fresh):
    """``routebr-kit run --deadline-s 1`` (the profile says 300 s) against a server that never finishes: the
    command ends, exit 0, 4 of 4 rows committed as deadline fail-closed rows (before: killed at 30 s, 0 rows)."""
    cases = _cases_dir(routebr_artifact, tmp_path, 4)
    out = tmp_path / "run"
    with OpenAIServer(responder) as server:
        argv = ["run", "--profile", "local", "--profiles", str(profiles_file(tmp_path, server.base_url)),
                "--system", "routebr", "--cases", str(cases), "--split", "ALL", "--out", str(out), "--no-progress",
                "--concurrency", "4", "--deadline-s", "1"]
        if fresh:
            done = subprocess.run([sys.executable, "-m", "routebr_kit", *argv], capture_output=True, text=True,
                                  timeout=60, env={**os.environ, ENV: KEY, "TQDM_DISABLE": "1"})
            assert done.returncode == 0, done.stderr
        else:
            monkeypatch.setenv("TQDM_DISABLE", "1")
            assert main(argv) == 0
    rows = sorted((out / "raw").glob("*.json"))
    ledger = read_predictions(out / "predictions.csv")
    assert len(rows) == 4 and len(ledger) == 4
    assert all(1000 <= row.latency_ms <= 1000 * (1 + SLACK_S) for row in ledger), [r.latency_ms for r in ledger]
    assert all(json.loads(p.read_text(encoding="utf-8"))["summary"]["reason"] == R.FAIL_CLOSED_BACKEND_TIMEOUT.value
               for p in rows)
    manifest = json.loads((out / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["execution"]["call_deadline_s"] == 1.0 and manifest["backend_detail"]["profile"][
        "deadline_s"] == DEFAULT_DEADLINE_S


@pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "abc"])
def test_a_bad_run_deadline_is_one_typed_line(routebr_artifact, tmp_path, capsys, value):
    cases = _cases_dir(routebr_artifact, tmp_path, 2)
    try:  # a value argparse cannot read as a number is its usage error (SystemExit 2, one line)
        status = main(["run", "--profile", "local", "--profiles",
                       str(profiles_file(tmp_path, "http://127.0.0.1:9/v1")), "--system", "routebr", "--cases",
                       str(cases), "--split", "ALL", "--out", str(tmp_path / "out"), "--no-progress",
                       f"--deadline-s={value}"])
    except SystemExit as exc:
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "deadline" in err and not (tmp_path / "out").exists()


@pytest.mark.parametrize("how", [["--profile", "sim:deepseek_v4_primary", "--system", "routebr"],
                                 ["--profile", "sim:deepseek_v4_primary", "--system", "a_state", "--from-run", "x"]],
                         ids=["simulated", "derived-from-a-run"])
def test_a_run_deadline_where_no_model_is_called_is_refused(routebr_artifact, tmp_path, capsys, how):
    cases = _cases_dir(routebr_artifact, tmp_path, 2)
    status = main(["run", *how, "--cases", str(cases), "--split", "ALL", "--out", str(tmp_path / "out"),
                   "--no-progress", "--deadline-s", "5"])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "[INVALID_VALUE]" in err and "--deadline-s" in err, err
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------------------------- bounded body


def test_an_endless_body_at_full_speed_stops_at_the_byte_bound_not_the_deadline(monkeypatch):
    """Without a byte bound the call would fill memory until its deadline (~450 MiB in 3 s on 127.0.0.1)."""
    monkeypatch.setattr(openai_compat, "MAX_RESPONSE_BYTES", 2**20)
    flood = Reply(endless_chunk_s=0, chunk_bytes=65536)
    with OpenAIServer(lambda r, n: flood) as server:
        reply, took = timed(make(server.base_url, deadline_s=10.0))
    assert reply.failure.kind is F.MALFORMED_RESPONSE and reply.failure.message == "response body exceeds " \
        f"{2**20} bytes", reply.failure
    assert took < 5.0, took
    assert failure_reason(reply.failure) is R.FAIL_CLOSED_BACKEND_ERROR


@pytest.mark.parametrize("status", [200, 500])
def test_a_declared_or_sent_body_past_the_bound_is_malformed(monkeypatch, status):
    monkeypatch.setattr(openai_compat, "MAX_RESPONSE_BYTES", 4096)
    big = Reply(status, completion("x" * 10_000))
    with OpenAIServer(lambda r, n: big) as server:
        reply, _ = timed(make(server.base_url, deadline_s=10.0, max_retries=2))
        assert server.count == 1  # not retried: the same server would send the same body
    assert reply.failure.kind is F.MALFORMED_RESPONSE and "exceeds 4096 bytes" in reply.failure.message
    small = Reply(200, completion("x" * 1000))
    with OpenAIServer(lambda r, n: small) as server:
        assert timed(make(server.base_url, deadline_s=10.0))[0].ok  # under the bound: untouched


# --------------------------------------------------------------------------------------------- strict envelope


ENVELOPE = json.dumps(completion(json.dumps({"action_id": "A1", "object_id": "NONE", "topk": ["A1"]})))


@pytest.mark.parametrize("body, issue", [
    ('{"model": "other-model", ' + ENVELOPE[1:], "DUPLICATE_KEY"),
    (ENVELOPE[:-1] + ', "choices": []}', "DUPLICATE_KEY"),
    (ENVELOPE.replace('"prompt_tokens": 700', '"prompt_tokens": NaN'), "NON_FINITE"),
    (ENVELOPE.replace('"created": 0', '"created": Infinity'), "NON_FINITE"),
    (ENVELOPE.replace('"created": 0', '"created": 1e999'), "NON_FINITE"),
], ids=["dup-model", "dup-choices", "nan", "infinity", "overflow"])
def test_the_response_envelope_is_read_strictly(body, issue):
    with OpenAIServer(lambda r, n: Reply(body=body)) as server:
        reply, _ = timed(make(server.base_url, deadline_s=5.0))
    assert reply.failure is not None and reply.failure.kind is F.MALFORMED_RESPONSE, reply
    assert issue in reply.failure.message
    assert failure_reason(reply.failure) is R.FAIL_CLOSED_BACKEND_ERROR
