"""Any bytes from a server end in a recorded row and a receipt that is written and read back; no secret is written.

Issue 12 items 2 and 7, through the real ``openai`` SDK path (``make_backend`` with a profile pointing at a local
server): a lone surrogate, invalid UTF-8, non-JSON, truncated, huge, deeply nested and wrongly typed bodies;
property tests over arbitrary bytes, arbitrary JSON bodies and arbitrary contents; a seeded fuzz of a few hundred
hostile replies in process and one ``routebr-kit run`` subprocess (the 10,000-reply run is
``benchmarks/fuzz_server.py``); and redaction of the API key (and any configured secret) from receipts, cache
entries, manifests, predictions and error messages.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fuzz_replies import KINDS, HostileResponder, check_run
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, Reply, completion, default_responder, encode_body, valid_answer

import routebr_kit as rk
from routebr_kit.backends.cache import CacheMissError, CacheMode, ResponseCache
from routebr_kit.backends.registry import make_backend
from routebr_kit.backends.replay import ReplayBackend
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.core.strict_json import strict_loads
from routebr_kit.runs.runner import run_cases
from routebr_kit.store import redact
from routebr_kit.store.ledger import PredictionRow, RunLedger, append_prediction, read_predictions, write_json_atomic
from routebr_kit.store.redact import REDACTED, Redactor, encode_json

KEY = "sk-io-test-5b7e0c2d9a41f3e8"
ENV = "ROUTEBR_IO_TEST_KEY"
SELECT = "data/routebr_select_160.csv"
F = rk.FailureKind
R = rk.ReasonCode
#: Any code point, lone surrogates included (hypothesis leaves them out of ``st.text()`` by default).
ANY_CHAR = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, blacklist_categories=())
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                          HealthCheck.too_slow])


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)


@pytest.fixture(scope="module")
def bench(routebr_artifact):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    return assets, rk.load_cases(data / SELECT.split("/")[1])


def write_profiles(directory: Path, base_url: str, **extra) -> Path:
    path = directory / "profiles.json"
    path.write_text(json.dumps({"local": {"base_url": base_url, "api_key_env": ENV, "model": "test-model",
                                          "request_options": {"temperature": 0, "max_tokens": 256},
                                          "retry_backoff_s": 0.001, "max_retry_after_s": 0.01, "max_retries": 1,
                                          "timeout_s": 20, **extra}}), encoding="utf-8")
    return path


class Switchable:
    """A responder a test can swap between examples (one server per module)."""

    def __init__(self) -> None:
        self.answer = default_responder

    def __call__(self, request: dict, number: int):
        return self.answer(request, number)


@pytest.fixture(scope="module")
def served():
    responder = Switchable()
    with OpenAIServer(responder) as server:
        yield server, responder


def run_with(server, responder, answer, bench, out: Path, cases=None, base_url=None, **kwargs) -> rk.runs.RunResult:
    responder.answer = answer if callable(answer) else (lambda request, number: answer)
    assets, all_cases = bench
    chosen = list(cases if cases is not None else all_cases[:2])
    out.mkdir(parents=True, exist_ok=True)
    backend = make_backend("local", cases=chosen, profiles_path=write_profiles(out, base_url or server.base_url),
                           cache=kwargs.pop("cache", None))
    return run_cases(chosen, backend, system="routebr", assets=assets, out_dir=out / "run", progress=False,
                     concurrency=kwargs.pop("concurrency", 2), **kwargs)


def receipts(out: Path) -> list[dict]:
    return [json.loads(p.read_bytes().decode("utf-8")) for p in sorted((out / "run" / "raw").glob("*.json"))]


def assert_recorded(result: rk.runs.RunResult, out: Path, bench, cases=None) -> None:
    """One row per case, every receipt strict JSON, no key anywhere, no bad dispatch, receipts replay the same."""
    assets, all_cases = bench
    chosen = list(cases if cases is not None else all_cases[:2])
    assert [r.case_id for r in result.rows] == [c.case_id for c in chosen]
    assert check_run(out / "run", chosen, assets, secrets=(KEY,)) == []


# --------------------------------------------------------------------------------------------- the writers


def _no_pair(text: str) -> bool:
    """No high surrogate directly followed by a low one (JSON reads such a pair back as one character)."""
    return not any("\ud800" <= a <= "\udbff" and "\udc00" <= b <= "\udfff" for a, b in zip(text, text[1:]))


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(ANY_CHAR, max_size=20).filter(_no_pair),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(ANY_CHAR, max_size=8).filter(_no_pair),
                                                                 inner, max_size=4),
    max_leaves=30)


def _normal(value):
    """What a value reads back as: non-finite floats as their names."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: _normal(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normal(v) for v in value]
    return value


@SETTINGS
@given(value=JSONISH)
def test_any_value_is_written_as_strict_utf8_json_that_reads_back(value):
    data = encode_json(value)

    def refuse(name):
        raise AssertionError(f"non-standard constant {name}")

    assert json.loads(data.decode("utf-8"), parse_constant=refuse) == _normal(value)
    strict_loads(data.decode("utf-8"))  # no duplicate key, no non-finite number, not too deep
    assert encode_json(value) == data  # byte-identical


def test_the_issue_surrogate_deep_nesting_and_huge_ints_are_written(tmp_path):
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    value = {"content": "\ud800", "\udfff": [1e400, -1e400], "deep": deep, "big": 2**5000, "obj": object()}
    write_json_atomic(tmp_path / "r.json", value)
    back = strict_loads((tmp_path / "r.json").read_text(encoding="utf-8"))  # the kit's strict reader
    assert back["content"] == "\ud800" and back["\udfff"] == ["Infinity", "-Infinity"]
    assert back["big"] == redact.INT_LIMIT and back["obj"].startswith("<object object")
    depth, node = 0, back["deep"]
    while isinstance(node, list):
        node, depth = node[0], depth + 1
    assert node == redact.DEPTH_LIMIT and depth == redact.MAX_DEPTH - 1


def test_a_csv_cell_with_a_lone_surrogate_is_appended_and_read_back(tmp_path):
    row = PredictionRow("C\ud800", "routebr", "NONE", "NONE", "CLARIFY", "T_CLARIFY", ("A\udfff",), False, True)
    append_prediction(tmp_path / "p.csv", row)
    (back,) = read_predictions(tmp_path / "p.csv")
    assert back.case_id == "C\\ud800"  # a plain cell keeps the escape as text
    assert back.topk == ("A\udfff",)  # inside the JSON cell the escape reads back as the surrogate itself


@SETTINGS
@given(before=st.text(ANY_CHAR, max_size=30), after=st.text(ANY_CHAR, max_size=30),
       nested=st.integers(0, 5))
def test_a_registered_secret_is_redacted_wherever_it_occurs(before, after, nested):
    value = {"k": f"{before}{KEY}{after}", f"{KEY}": [KEY], "n": 1}
    for _ in range(nested):
        value = {"x": [value, (KEY,)]}
    redactor = Redactor((KEY, "sk-io-test"))  # longest first: the key is replaced whole
    written = encode_json(Redactor((KEY,)).value(value)).decode("utf-8")
    assert KEY not in repr(json.loads(written)) and REDACTED in written
    assert KEY not in redactor.text(f"{before}{KEY}{after}") and REDACTED in redactor.text(f"{before}{KEY}{after}")
    assert redactor.text(KEY) == REDACTED


def test_keys_that_would_repeat_once_written_are_kept_apart():
    redact.register_secret(KEY)
    written = encode_json({1: "a", "1": "b", KEY: "c", REDACTED: "d", f"{KEY}#2": "e"}).decode("utf-8")
    assert strict_loads(written) == {"1": "a", "1#2": "b", REDACTED: "c", f"{REDACTED}#2": "d",
                                     f"{REDACTED}#2#2": "e"}


def test_a_password_in_the_base_url_is_not_written(served, bench, tmp_path):
    server, responder = served
    url = server.base_url.replace("http://", "http://me:pw-base-url-31415@")
    result = run_with(server, responder, default_responder, bench, tmp_path, base_url=url)
    assert all(not r.fallback_used for r in result.rows)
    for path in (p for p in (tmp_path / "run").rglob("*") if p.is_file()):
        assert b"pw-base-url-31415" not in path.read_bytes(), path


def test_configured_secrets_short_values_and_url_passwords(monkeypatch, tmp_path):
    monkeypatch.setenv("MY_OTHER_TOKEN", "tok-9f8e7d6c5b4a")
    monkeypatch.setenv(redact.SECRET_ENVS, "MY_OTHER_TOKEN, UNSET_NAME")
    redact.register_secret("EMPTY", None, 12345678)  # too short / not text: never treated as secrets
    write_json_atomic(tmp_path / "m.json", {"a": "tok-9f8e7d6c5b4a and EMPTY", "b": 12345678})
    assert json.loads((tmp_path / "m.json").read_text()) == {"a": f"{REDACTED} and EMPTY", "b": 12345678}
    assert redact.url_secrets("https://me:pa55word-xyz@host/v1") == ("pa55word-xyz", "me")
    assert redact.url_secrets("http://127.0.0.1:8000/v1") == ()


def test_a_cache_miss_message_is_redacted():
    redact.register_secret(KEY)
    assert KEY not in str(CacheMissError("C1", "ROUTEBR", f"echo {KEY}"))


# --------------------------------------------------------------------------------------------- the issue, exactly


def test_a_lone_surrogate_reply_is_a_recorded_row_and_resume_works(served, bench, tmp_path):
    """Issue 12.2: the run used to die writing the receipt, and every resume died again."""
    server, responder = served
    sent = server.count
    result = run_with(server, responder, completion("\ud800"), bench, tmp_path)
    assert_recorded(result, tmp_path, bench)
    assert all(r.fallback_used and r.error_code for r in result.rows)
    first = receipts(tmp_path)[0]["responses"]
    assert first[0]["content"] == "\ud800" and first[0]["failure"] is None
    assert server.count - sent >= 2
    again = run_with(server, responder, completion("\ud800"), bench, tmp_path, resume=True)
    assert (again.executed, again.resumed) == (0, 2) and again.rows == result.rows


# --------------------------------------------------------------------------------------------- the SDK path


def test_a_payload_holding_a_lone_surrogate_is_sent_as_its_escape(served, bench, tmp_path):
    """A repair payload echoes the invalid output; a surrogate in it used to fail encoding before being sent."""
    server, responder = served
    responder.answer = lambda request, number: completion("{}")
    backend = make_backend("local", cases=bench[1][:1], profiles_path=write_profiles(tmp_path, server.base_url))
    payload = {"invalid_output": "\ud800 \udfff", "original_payload": {"catalog": [], "entities": []}}
    sent = server.count
    reply = backend.complete_sync(rk.ModelCall("C1", rk.Stage.REPAIR_ROUTEBR, payload))
    assert reply.ok and server.count == sent + 1
    assert json.loads(server.requests[-1]["messages"][1]["content"]) == payload


ENVELOPE = json.dumps(completion('{"action_id":"X","object_id":"NONE","topk":["X"]}')).encode()
CASES = {
    "invalid utf-8 in content": (Reply(200, ENVELOPE.replace(b'"X"', b'"\xff\xfe"', 1)), None),
    "invalid utf-8 body": (Reply(200, b"\xff\xfe\xfa\x80" * 50), F.MALFORMED_RESPONSE),
    "non-JSON body": (Reply(200, "<html>teapot</html>", content_type="text/html"), F.MALFORMED_RESPONSE),
    "empty body": (Reply(200, b""), F.MALFORMED_RESPONSE),
    "JSON array body": (Reply(200, [completion("{}")]), F.MALFORMED_RESPONSE),
    "truncated body": (Reply(200, ENVELOPE, truncate_to=len(ENVELOPE) // 2), F.TRANSPORT),
    "truncated to nothing": (Reply(200, ENVELOPE, truncate_to=0), F.TRANSPORT),
    "utf-16 declared, utf-8 sent": (Reply(200, ENVELOPE, content_type="application/json; charset=utf-16"),
                                    F.MALFORMED_RESPONSE),
    "no content type": (Reply(200, ENVELOPE, content_type=None), None),
    "event-stream type": (Reply(200, ENVELOPE, content_type="text/event-stream"), None),
    "deeply nested body": (Reply(200, b"[" * 100_000 + b"]" * 100_000), F.MALFORMED_RESPONSE),
    # the envelope is read by the strict JSON rules (issue 20): too deep, NaN or a repeated key is malformed
    "deeply nested usage": (Reply(200, ENVELOPE[:-1] + b',"usage":' + b"[" * 900 + b"]" * 900 + b"}"),
                            F.MALFORMED_RESPONSE),
    "NaN usage": (Reply(200, ENVELOPE[:-1] + b',"usage":{"prompt_tokens":NaN}}'), F.MALFORMED_RESPONSE),
    "huge content": (Reply(200, completion("x" * 8_000_000)), None),
    "content not a string": (Reply(200, completion(None) | {"choices": [{"message": {"content": [1]}}]}),
                             F.MALFORMED_RESPONSE),
    "HTTP 204": (Reply(204, ENVELOPE), F.MALFORMED_RESPONSE),
    "HTTP 500, bad Retry-After": (Reply(500, b"oops", {"Retry-After": "1e309"}), F.HTTP_STATUS),
}


@pytest.mark.parametrize("name", list(CASES))
def test_any_body_ends_in_a_recorded_fail_closed_row(served, bench, tmp_path, name):
    reply, kind = CASES[name]
    result = run_with(served[0], served[1], reply, bench, tmp_path)
    assert_recorded(result, tmp_path, bench)
    failures = [e["failure"] for r in receipts(tmp_path) for e in r["responses"]]
    assert all(f is None or f["kind"] != F.EXCEPTION.value for f in failures), failures  # nothing *raised*
    assert all(row.fallback_used for row in result.rows)
    if kind is not None:
        assert all(f is not None and f["kind"] == kind.value for f in failures), failures
    else:
        assert any(f is None for f in failures)


@settings(SETTINGS, max_examples=40)
@given(body=st.binary(max_size=3000), content_type=st.sampled_from(["application/json", "text/plain", None]))
def test_arbitrary_bytes_always_yield_one_row_per_case(served, bench, tmp_path_factory, body, content_type):
    out = tmp_path_factory.mktemp("bytes")
    result = run_with(served[0], served[1], Reply(200, body, content_type=content_type), bench, out)
    assert_recorded(result, out, bench)


@settings(SETTINGS, max_examples=40)
@given(body=JSONISH, ascii_only=st.booleans())
def test_arbitrary_json_bodies_always_yield_one_row_per_case(served, bench, tmp_path_factory, body, ascii_only):
    out = tmp_path_factory.mktemp("json")
    sent = json.dumps(body, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    result = run_with(served[0], served[1], Reply(200, sent), bench, out)
    assert_recorded(result, out, bench)


@settings(SETTINGS, max_examples=40)
@given(content=JSONISH | st.text(ANY_CHAR, max_size=200), as_text=st.booleans(), model=st.booleans())
def test_arbitrary_contents_always_yield_one_row_per_case(served, bench, tmp_path_factory, content, as_text,
                                                           model):
    out = tmp_path_factory.mktemp("content")
    body = completion(content if as_text or isinstance(content, str) else json.dumps(content),
                      model="test-model" if model else KEY)
    result = run_with(served[0], served[1], Reply(200, encode_body(body)), bench, out)
    assert_recorded(result, out, bench)


# --------------------------------------------------------------------------------------------- seeded fuzz


def test_a_seeded_fuzz_of_hostile_replies_keeps_every_invariant(served, bench, tmp_path):
    server, responder = served
    assets, cases = bench
    hostile = HostileResponder(12, secrets=(KEY,), huge_bytes=200_000)
    sent = server.count
    for k, start in enumerate(range(0, 160, 40)):
        chosen = cases[start:start + 40]
        result = run_with(server, responder, hostile, bench, tmp_path / f"r{k}", cases=chosen, concurrency=4)
        assert check_run(tmp_path / f"r{k}" / "run", chosen, assets, secrets=(KEY,)) == []
        assert len(result.rows) == len(chosen)
    assert server.count - sent >= 180 and set(hostile.kinds) == set(KINDS)
    everything = [r for k in range(4) for r in receipts(tmp_path / f"r{k}")]
    reasons = {r["summary"]["reason"] for r in everything}
    assert R.DISPATCH_OK.value in reasons and R.BOUNDARY_TERMINAL.value in reasons  # the gates were exercised
    assert any(REDACTED in json.dumps(r) for r in everything)  # echoed keys were met, and redacted


def test_routebr_kit_run_subprocess_survives_hostile_replies_and_resumes(routebr_artifact, bench, tmp_path):
    hostile = HostileResponder(3, secrets=(KEY,), huge_bytes=100_000)
    env = {**os.environ, ENV: KEY, "TQDM_DISABLE": "1"}
    args = [sys.executable, "-c", "import sys; from routebr_kit.cli import main; sys.exit(main())", "run",
            "--profile", "local", "--system", "routebr", "--cases", str(routebr_artifact / SELECT),
            "--split", "MAIN", "--out", str(tmp_path / "run"), "--concurrency", "4", "--no-progress"]
    with OpenAIServer(hostile) as server:
        args += ["--profiles", str(write_profiles(tmp_path, server.base_url))]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
        again = subprocess.run([*args, "--resume"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr  # 1: the profile is flagged (impostor models were sent)
    assert "Traceback" not in done.stderr + again.stderr and again.returncode == done.returncode
    cases = [c for c in bench[1] if c.split is rk.Split.MAIN]
    assert check_run(tmp_path / "run", cases, bench[0], secrets=(KEY,)) == []
    assert all(KEY not in text for text in (done.stdout, done.stderr, again.stdout, again.stderr))
    assert " 0 " in again.stdout.splitlines()[2]  # run_now 0: everything was committed by the first run


# --------------------------------------------------------------------------------------------- secrets


def echo_key(request: dict, number: int):
    where = number % 4
    if where == 0:
        return completion(f"the key is {KEY} " + valid_answer(request))
    if where == 1:
        return completion(valid_answer(request), model=KEY)
    if where == 2:
        return Reply(200, "x" * 70 + KEY + " trailing", content_type="text/plain")  # straddles 80 chars
    escaped = "".join(f"\\u{ord(c):04x}" for c in KEY)
    return Reply(200, '{"model":"test-model","choices":[{"message":{"content":"' + escaped + '"}}],'
                      '"usage":{"note":"' + escaped + '"}}')


def test_an_echoed_key_is_redacted_from_receipts_cache_manifest_and_rows(served, bench, tmp_path):
    server, responder = served
    cases = bench[1][:8]
    cache = ResponseCache(tmp_path / "cache")
    first = run_with(server, responder, echo_key, bench, tmp_path / "a", cases=cases, cache=cache, concurrency=1)
    assert_recorded(first, tmp_path / "a", bench, cases)
    written = [p.read_bytes() for root in (tmp_path / "a", tmp_path / "cache") for p in root.rglob("*") if p.is_file()]
    assert len(cache) > 0 and all(KEY.encode() not in data for data in written)
    assert all(KEY[:10].encode() not in data for data in written)  # not even the part a truncated message keeps
    assert all(KEY not in repr(d.as_dict()) for d in first.decisions.values())  # redacted before the controller
    assert sum(REDACTED.encode() in data for data in written) >= 4
    # the cache replays the redacted replies into the same decisions (redaction happens before the controller)
    sent = server.count
    replay = ResponseCache(tmp_path / "cache", mode=CacheMode.REPLAY_ONLY)
    try:
        second = run_with(server, responder, echo_key, bench, tmp_path / "b", cases=cases, cache=replay,
                          concurrency=1)
    except CacheMissError as exc:  # only non-content failures are uncached; the message carries no key
        assert KEY not in str(exc)
    else:
        assert server.count == sent
        assert [r.strict_path for r in second.rows] == [r.strict_path for r in first.rows]


def test_the_ledger_redacts_every_file_it_writes(tmp_path):
    redact.register_secret(KEY)
    ledger = RunLedger(tmp_path)
    ledger.prepare()
    row = PredictionRow("C1", "routebr", "NONE", "NONE", "CLARIFY", "T_CLARIFY", (KEY,), False, True,
                           error_code=KEY)
    ledger.commit({"case_id": "C1", "echo": KEY, KEY: 1}, row)
    ledger.write_manifest({"note": f"k={KEY}"})
    ledger.finalize([row])
    for path in (p for p in tmp_path.rglob("*") if p.is_file()):
        assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("text, code", [
    ('{"case_id":"C1","case_id":"C2","responses":[]}', ErrorCode.DUPLICATE_ID),
    ('{"case_id":"C1","responses":[{"stage":"ROUTEBR","content":NaN}]}', ErrorCode.INVALID_JSON),
    ('{"case_id":"C1","responses":[{"stage":"NOPE","content":"x"}]}', ErrorCode.INVALID_VALUE),
])
def test_replay_reads_receipts_strictly_and_fails_loud(tmp_path, text, code):
    path = tmp_path / "C1.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(DataError) as raised:
        ReplayBackend.from_receipts([path])
    assert raised.value.code is code and str(path) in str(raised.value)


def test_a_receipt_the_writer_makes_of_any_reply_replays(tmp_path):
    reply = {"case_id": "C1", "responses": [{"stage": "ROUTEBR", "content": "\ud800{", "reported_model": "m",
                                             "usage": {"x": float("nan")}, "failure": None}]}
    write_json_atomic(tmp_path / "C1.json", reply, indent=None)
    (served,) = ReplayBackend.from_receipts([tmp_path / "C1.json"]).recorded("C1")[rk.Stage.ROUTEBR]
    assert served.content == "\ud800{" and served.model == "m"
