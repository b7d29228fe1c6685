"""The runner and ``routebr-kit run`` against a real OpenAI-compatible server on 127.0.0.1: concurrent requests,
``kill -9`` mid-run then ``--resume`` with no loss or duplicate, a cache hit making zero calls, replay-only misses,
the identity flag, and no credential in any written file or output."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from openai_server import OpenAIServer, completion, default_responder

import routebr_kit as rk
from routebr_kit.backends.cache import CacheMissError, CacheMode, ResponseCache
from routebr_kit.backends.registry import make_backend
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.ledger import drop_torn_tail, read_predictions

KEY = "sk-test-routebr-server-77e1d00d"
ENV = "ROUTEBR_SERVER_TEST_KEY"
SELECT = "data/routebr_select_160.csv"


@pytest.fixture
def env(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    return {**os.environ, ENV: KEY, "TQDM_DISABLE": "1"}


@pytest.fixture(scope="module")
def bench(routebr_artifact):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    return assets, rk.load_cases(data / "routebr_select_160.csv")


def profiles(tmp_path: Path, base_url: str, **extra) -> Path:
    path = tmp_path / "profiles.json"
    path.write_text(json.dumps({"local": {"base_url": base_url, "api_key_env": ENV, "model": "test-model",
                                          "request_options": {"temperature": 0, "max_tokens": 256},
                                          "retry_backoff_s": 0.01, **extra}}), encoding="utf-8")
    return path


#: ``routebr-kit run …`` in a fresh interpreter (the console script's entry point).
KIT = [sys.executable, "-c", "import sys; from routebr_kit.cli import main; sys.exit(main())", "run"]


def cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([*KIT, *args, "--no-progress"], env=env, capture_output=True, text=True, timeout=300)


def assert_no_credential_anywhere(root: Path, *texts: str) -> None:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    assert all(KEY not in text for text in texts)


def test_concurrent_requests_share_the_limit(bench, tmp_path, env):
    assets, cases = bench
    with OpenAIServer(latency_s=0.05) as server:
        backend = make_backend("local", cases=cases, profiles_path=profiles(tmp_path, server.base_url))
        result = run_cases(cases[:48], backend, system="routebr", assets=assets, out_dir=tmp_path / "run",
                           concurrency=8, progress=False)
        assert server.count == 48 and 2 <= server.peak_in_flight <= 8
    assert result.summary["fail_closed"] == 0 and result.summary["reported_models"] == ["test-model"]


def test_kill_9_mid_run_then_resume_loses_nothing_and_duplicates_nothing(routebr_artifact, tmp_path, env):
    out = tmp_path / "run"
    with OpenAIServer(latency_s=0.1) as server:
        args = ["--profile", "local", "--profiles", str(profiles(tmp_path, server.base_url)), "--system", "routebr",
                "--cases", str(routebr_artifact / SELECT), "--split", "MAIN", "--out", str(out),
                "--concurrency", "4"]
        child = subprocess.Popen([*KIT, *args, "--no-progress"], env=env, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE)
        predictions = out / "predictions.csv"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and child.poll() is None:
            if predictions.exists() and predictions.read_text(encoding="utf-8").count("\n") > 12:
                break
            time.sleep(0.02)
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=30)
        assert child.returncode == -signal.SIGKILL
        snapshot = tmp_path / "at_kill.csv"  # what was committed (a kill mid-append leaves a torn line, dropped)
        shutil.copyfile(predictions, snapshot)
        drop_torn_tail(snapshot)
        survived = {r.case_id: r.as_csv_row() for r in read_predictions(snapshot)}
        assert 12 <= len(survived) < 100
        sent_before = server.count
        resumed = cli(*args, "--resume", env=env)
        assert resumed.returncode == 0, resumed.stderr
        resent = server.requests[sent_before:]
    rows = read_predictions(predictions)
    ids = [r.case_id for r in rows]
    assert len(ids) == len(set(ids)) == 100
    assert all(survived[r.case_id] == r.as_csv_row() for r in rows if r.case_id in survived)
    assert len(resent) == 100 - len(survived)  # only the unfinished cases were asked again
    assert all((out / r.raw_output_path).is_file() for r in rows)
    manifest = json.loads((out / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["summary"]["cases"] == 100
    assert_no_credential_anywhere(tmp_path, resumed.stdout, resumed.stderr)


def test_a_cache_hit_makes_zero_calls_and_replay_only_fails_loudly(bench, tmp_path, env, routebr_artifact):
    assets, cases = bench
    chosen = cases[:30]
    with OpenAIServer() as server:
        path = profiles(tmp_path, server.base_url)
        cache = ResponseCache(tmp_path / "cache")
        first = run_cases(chosen, make_backend("local", cases=chosen, profiles_path=path, cache=cache),
                          system="b2", assets=assets, out_dir=tmp_path / "first", concurrency=1, progress=False)
        calls = server.count
        replay = ResponseCache(tmp_path / "cache", mode=CacheMode.REPLAY_ONLY)
        second = run_cases(chosen, make_backend("local", cases=chosen, profiles_path=path, cache=replay),
                           system="b2", assets=assets, out_dir=tmp_path / "second", concurrency=4, progress=False)
        assert server.count == calls == 30  # the identical matrix made zero network calls
        assert (tmp_path / "first/predictions.csv").read_bytes() == (tmp_path / "second/predictions.csv").read_bytes()
        assert second.summary["cache"] == {"hits": 30, "misses": 0}
        assert first.summary["cache"] == {"hits": 0, "misses": 30}
        with pytest.raises(CacheMissError):
            run_cases(cases[30:32], make_backend("local", cases=chosen, profiles_path=path, cache=replay),
                      system="b2", assets=assets, out_dir=tmp_path / "third", progress=False)
        missed = cli("--profile", "local", "--profiles", str(path), "--system", "routebr", "--cases",
                     str(routebr_artifact / SELECT), "--split", "ENTITY", "--out", str(tmp_path / "cli"),
                     "--cache", str(tmp_path / "cache"), "--replay-only", env=env)
        assert server.count == 30
    assert missed.returncode == 2 and "CACHE_MISS" in missed.stderr and "Traceback" not in missed.stderr
    assert not (tmp_path / "third/predictions.csv").exists()
    assert_no_credential_anywhere(tmp_path, missed.stdout, missed.stderr)


def test_a_wrong_model_identity_flags_the_profile(routebr_artifact, tmp_path, env):
    def responder(request, number):
        body = default_responder(request, number)
        return completion(body["choices"][0]["message"]["content"], model="impostor") if number % 7 == 0 else body

    with OpenAIServer(responder) as server:
        done = cli("--profile", "local", "--profiles", str(profiles(tmp_path, server.base_url)), "--system", "b1",
                   "--cases", str(routebr_artifact / SELECT), "--split", "FLIP", "--out", str(tmp_path / "run"),
                   "--concurrency", "1", env=env)
    assert done.returncode == 1 and "MODEL_IDENTITY_MISMATCH" in done.stderr
    manifest = json.loads((tmp_path / "run/run_manifest.json").read_text(encoding="utf-8"))
    flagged = manifest["summary"]["model_identity_failures"]
    assert manifest["summary"]["profile_flags"] == ["MODEL_IDENTITY_MISMATCH"] and len(flagged) == 40 // 7
    rows = {r.case_id: r for r in read_predictions(tmp_path / "run/predictions.csv")}
    assert all(rows[c].fallback_used and rows[c].error_code == "FAIL_CLOSED_B1_DIRECT" for c in flagged)
    receipt = json.loads((tmp_path / "run/raw" / f"{flagged[0]}.json").read_text(encoding="utf-8"))
    assert receipt["reported_models"] == ["impostor"] and receipt["responses"][0]["failure"]["kind"] == "MODEL_IDENTITY"
    assert_no_credential_anywhere(tmp_path, done.stdout, done.stderr)


def test_offline_interventions_through_the_cli(routebr_artifact, tmp_path, env):
    with OpenAIServer() as server:
        common = ["--profile", "local", "--profiles", str(profiles(tmp_path, server.base_url)), "--cases",
                  str(routebr_artifact / SELECT), "--split", "FLIP"]
        assert cli(*common, "--system", "routebr", "--out", str(tmp_path / "routebr"), env=env).returncode == 0
        calls = server.count
        derived = cli(*common, "--system", "a_state", "--from-run", str(tmp_path / "routebr"), "--out",
                      str(tmp_path / "a_state"), env=env)
        missing = cli(*common, "--system", "a_ground", "--out", str(tmp_path / "a_ground"), env=env)
        assert server.count == calls
    assert derived.returncode == 0 and "a_state" in derived.stdout
    assert len(read_predictions(tmp_path / "a_state/predictions.csv")) == 40
    assert missing.returncode == 2 and "--from-run" in missing.stderr
