"""The run engine without a network: ledger files, determinism under concurrency, the concurrency bound, resume
after an interruption or a torn line, input checks on resume, replay misses, the rate limiter, B2's citation
summary, and A-state / A-ground derived offline from stored RouteBR runs."""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from pathlib import Path

import pytest
from openai_server import valid_answer

import routebr_kit as rk
from routebr_kit.backends import ReplayBackend
from routebr_kit.backends.cache import CacheMissError
from routebr_kit.runs.runner import RateLimiter, derive_interventions, run_cases
from routebr_kit.store.ledger import read_predictions

F = rk.FailureKind
SHA = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(scope="module")
def bench(routebr_artifact):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    return assets, rk.load_cases(data / "routebr_select_160.csv")


def _unit(*parts) -> float:
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF


class PayloadBackend:
    """Answers from the payload alone, with keyed delays (completion order differs from case order), keyed
    first-pass format failures and keyed timeouts; records the calls it receives and the peak in flight."""

    def __init__(self, name: str = "payload", *, broken: float = 0.0, timeouts: float = 0.0, crash_at: int = 0):
        self.name, self.broken, self.timeouts, self.crash_at = name, broken, timeouts, crash_at
        self.calls: list[rk.ModelCall] = []
        self.in_flight = self.peak = 0

    async def complete(self, call: rk.ModelCall) -> rk.ModelReply:
        self.calls.append(call)
        if self.crash_at and len(self.calls) == self.crash_at:
            raise Crash("process killed")
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        try:
            await asyncio.sleep(0.004 * _unit(call.request_id, "delay"))
        finally:
            self.in_flight -= 1
        if _unit(call.request_id, "timeout") < self.timeouts:
            return rk.ModelReply.failed(F.TIMEOUT, "simulated timeout", latency_ms=60000.0)
        content = valid_answer({"messages": [{"content": json.dumps(call.payload)}]})
        if call.stage is rk.Stage.ROUTEBR and _unit(call.request_id, "broken") < self.broken:
            content = "```json\n" + content + "\n```"
        return rk.ModelReply(content, model="payload-model", prompt_tokens=500 + len(call.request_id),
                             completion_tokens=30, latency_ms=100.0 + 1000 * _unit(call.request_id, "latency"))


class Crash(BaseException):
    """Stands in for a kill: not an Exception, so nothing converts it into a fail-closed row."""


def run(bench, out, backend=None, system="routebr", **kwargs):
    assets, cases = bench
    return run_cases(kwargs.pop("cases", cases), backend or PayloadBackend(), system=system, assets=assets,
                     out_dir=out, progress=False, **kwargs)


def test_a_run_writes_rows_receipts_and_a_hashed_manifest(bench, tmp_path):
    result = run(bench, tmp_path / "run", PayloadBackend(broken=0.1))
    rows = read_predictions(tmp_path / "run" / "predictions.csv")
    assert [r.case_id for r in rows] == [c.case_id for c in bench[1]] == [r.case_id for r in result.rows]
    assert result.executed == 160 and result.resumed == 0 and result.system is rk.System.ROUTEBR
    manifest = json.loads((tmp_path / "run" / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["kit_version"] == rk.__version__
    for name in ("cases", "catalog", "rules", "registry", "controller"):
        assert SHA.fullmatch(manifest["hashes"][name]), name
    assert manifest["hashes"]["catalog"].startswith("f82606a3") and manifest["hashes"]["rules"].startswith("3613d23a")
    repaired = [r for r in rows if r.repair_count]
    assert repaired and all(r.calls == 2 and not r.first_pass_valid and r.valid_json for r in repaired)
    assert manifest["summary"]["repairs"] == len(repaired) and manifest["summary"]["calls"] == 160 + len(repaired)
    receipt = json.loads((tmp_path / "run" / repaired[0].raw_output_path).read_text(encoding="utf-8"))
    assert [c["stage"] for c in receipt["calls"]] == ["ROUTEBR", "REPAIR_ROUTEBR"] == [
        r["stage"] for r in receipt["responses"]]
    assert receipt["summary"]["pred_final_path"] == repaired[0].pred_final_path
    assert receipt["summary"]["decision"]["repair_attempted"] is True
    assert repaired[0].input_tokens == sum(r["usage"]["prompt_tokens"] for r in receipt["responses"])
    # the receipts are exact: replaying them through the controller reproduces every row
    replay = ReplayBackend.from_receipts(sorted((tmp_path / "run" / "raw").glob("*.json")))
    again = run(bench, tmp_path / "replayed", replay)
    assert [r.pred_final_path for r in again.rows] == [r.pred_final_path for r in rows]


def test_identical_inputs_give_byte_identical_files_whatever_the_completion_order(bench, tmp_path):
    run(bench, tmp_path / "one", concurrency=1)
    run(bench, tmp_path / "many", concurrency=16)
    for name in ["predictions.csv", *(f"raw/{c.case_id}.json" for c in bench[1])]:
        assert (tmp_path / "one" / name).read_bytes() == (tmp_path / "many" / name).read_bytes(), name
    one, many = (json.loads((tmp_path / d / "run_manifest.json").read_text(encoding="utf-8")) for d in ("one", "many"))
    assert one.pop("execution") != many.pop("execution") and one == many


def test_concurrency_is_bounded(bench, tmp_path):
    backend = PayloadBackend()
    run(bench, tmp_path / "run", backend, concurrency=5, cases=bench[1][:40])
    assert backend.peak == 5


def test_an_interrupted_run_resumes_with_no_loss_and_no_duplicate(bench, tmp_path):
    with pytest.raises(Crash):
        run(bench, tmp_path / "run", PayloadBackend(crash_at=60), concurrency=8)
    before = {r.case_id: r.as_csv_row() for r in read_predictions(tmp_path / "run" / "predictions.csv")}
    assert 0 < len(before) < 160
    fresh = PayloadBackend()
    result = run(bench, tmp_path / "run", fresh, resume=True, concurrency=8)
    after = read_predictions(tmp_path / "run" / "predictions.csv")
    assert [r.case_id for r in after] == [c.case_id for c in bench[1]]
    assert all(before[r.case_id] == r.as_csv_row() for r in after if r.case_id in before)
    assert len(fresh.calls) == 160 - len(before) == result.executed and result.resumed == len(before)
    assert {c.request_id for c in fresh.calls}.isdisjoint(before)
    assert len(list((tmp_path / "run" / "raw").glob("*.json"))) == 160


def test_a_torn_last_line_is_dropped_and_its_case_rerun(bench, tmp_path):
    out = tmp_path / "run"
    run(bench, out)
    lines = (out / "predictions.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (out / "predictions.csv").write_text("".join(lines[:-3]) + lines[-3][:25], encoding="utf-8")
    result = run(bench, out, resume=True)
    assert result.executed == 3 and (out / "predictions.csv").read_text(encoding="utf-8").splitlines(True) == lines


def test_an_existing_run_needs_resume_and_the_same_inputs(bench, tmp_path, routebr_artifact):
    out = tmp_path / "run"
    run(bench, out, cases=bench[1][:10])
    with pytest.raises(rk.DataError) as err:
        run(bench, out, cases=bench[1][:10])
    assert err.value.code is rk.ErrorCode.INVALID_VALUE
    with pytest.raises(rk.DataError) as err:
        run(bench, out, system="b1", cases=bench[1][:10], resume=True)
    assert (err.value.code, err.value.field) == (rk.ErrorCode.INCONSISTENT_ASSETS, "system")
    with pytest.raises(rk.DataError) as err:
        run(bench, out, cases=bench[1][:11], resume=True)
    assert err.value.field == "case_ids"
    data = routebr_artifact / "data"
    changed_rules = tmp_path / "rules.csv"
    changed_rules.write_text((data / "boundary_rules.csv").read_text(encoding="utf-8").replace(
        "R070,80", "R070,85"), encoding="utf-8")
    other = rk.load_assets(data / "catalog.csv", changed_rules, data / "entity_catalog.csv")
    with pytest.raises(rk.DataError) as err:
        run((other, bench[1]), out, cases=bench[1][:10], resume=True)
    assert err.value.field == "hashes.rules"
    assert run(bench, out, cases=bench[1][:10], resume=True).executed == 0


def test_keep_stale_keeps_a_run_made_under_other_inputs_and_runs_beside_it(bench, tmp_path, routebr_artifact):
    """A notebook re-run after the kit or its assets changed: the old run stays byte-identical, the new one goes to
    ``<out>@<key of its inputs>`` and says so; the same inputs later resume that folder, the old ones the old."""
    out, cases = tmp_path / "run", bench[1][:10]
    run(bench, out, cases=cases)
    files = lambda folder: {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}  # noqa: E731
    before = files(out)
    data = routebr_artifact / "data"
    changed_rules = tmp_path / "rules.csv"
    changed_rules.write_text((data / "boundary_rules.csv").read_text(encoding="utf-8").replace(
        "R070,80", "R070,85"), encoding="utf-8")
    other = (rk.load_assets(data / "catalog.csv", changed_rules, data / "entity_catalog.csv"), bench[1])
    fresh = run(other, out, cases=cases, resume=True, keep_stale=True)
    assert fresh.stale is not None and fresh.stale.kept == out and fresh.stale.changed == ("hashes.rules",)
    assert fresh.out_dir.parent == out.parent and fresh.out_dir.name.startswith("run@") and fresh.executed == 10
    assert files(out) == before
    note = fresh.stale_note
    assert f"`{out}`" in note and "hashes.rules" in note and f"`{fresh.out_dir}`" in note
    again = run(other, out, cases=cases, resume=True, keep_stale=True)
    assert (again.out_dir, again.executed, again.resumed) == (fresh.out_dir, 0, 10)
    kept = run(bench, out, cases=cases, resume=True, keep_stale=True)
    assert (kept.out_dir, kept.stale, kept.stale_note, kept.executed) == (out, None, "", 0)
    with pytest.raises(rk.DataError) as err:  # without keep_stale a mismatch is still refused
        run(other, out, cases=cases, resume=True)
    assert (err.value.code, err.value.field) == (rk.ErrorCode.INCONSISTENT_ASSETS, "hashes.rules")


def test_a_replay_miss_stops_the_run_and_writes_no_row_for_it(bench, tmp_path):
    first = run(bench, tmp_path / "full", cases=bench[1][:20])
    partial = ReplayBackend.from_predictions([r for r in first.rows if r.case_id != "MAIN-0009"])
    with pytest.raises(CacheMissError) as err:
        run(bench, tmp_path / "replay", partial, cases=bench[1][:20], concurrency=1)
    assert err.value.case_id == "MAIN-0009" and "CACHE_MISS" in str(err.value)
    written = read_predictions(tmp_path / "replay" / "predictions.csv")
    assert "MAIN-0009" not in {r.case_id for r in written} and not any(r.fallback_used for r in written)


def test_the_rate_limiter_spaces_request_starts():
    now, slept = [0.0], []

    async def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    limiter = RateLimiter(120, clock=lambda: now[0], sleep=sleep)

    async def burst():
        for _ in range(4):
            await limiter.acquire()

    asyncio.run(burst())
    assert slept == [0.5, 0.5, 0.5] and limiter.interval == 0.5
    with pytest.raises(rk.DataError):
        RateLimiter(0)


def test_rpm_applies_to_plain_backends(bench, tmp_path):
    result = run(bench, tmp_path / "run", cases=bench[1][:4], rpm=60000)
    assert result.manifest["execution"] == {"concurrency": 8, "rpm": 60000} and len(result.rows) == 4


def test_b2_runs_report_rule_citation_accuracy(bench, tmp_path):
    assets, cases = bench
    result = run(bench, tmp_path / "b2", system="b2")
    truth = sum(assets.policy.evaluate(r.pred_action, c.request.state.values).rule_id == "R999"
                for r, c in zip(result.rows, cases))
    assert result.summary["rule_citation"] == {"cited": 160, "correct": truth, "accuracy": round(truth / 160, 6)}
    assert 0 < truth < 160 and {r.system_id for r in result.rows} == {"b2_direct_guard"}
    assert result.manifest["hashes"]["baselines"] is not None


def test_simulated_backends_are_labelled(bench, tmp_path):
    result = run(bench, tmp_path / "sim", PayloadBackend(name="sim:fake"), cases=bench[1][:3])
    assert result.manifest["simulated"] is True and result.manifest["backend"] == "sim:fake"


@pytest.mark.parametrize("system", ["a_state", "a_ground"])
def test_offline_interventions_equal_live_reruns_on_the_same_outputs(bench, tmp_path, system):
    backend = dict(broken=0.15, timeouts=0.05)
    run(bench, tmp_path / "routebr", PayloadBackend(**backend))
    derived = derive_interventions(tmp_path / "routebr", bench[1], bench[0], tmp_path / system, system=system,
                                   progress=False)
    live = run(bench, tmp_path / f"{system}_live", PayloadBackend(**backend), system=system)
    assert [r.as_csv_row() for r in derived.rows] == [r.as_csv_row() for r in live.rows]
    assert any(r.fallback_used for r in derived.rows) and derived.summary["reasons"]["FAIL_CLOSED_BACKEND_TIMEOUT"]
    assert derived.manifest["execution"]["live_calls"] == 0 and derived.manifest["backend"].startswith("derived:")


@pytest.mark.parametrize("source, published, agree", [("routebr/flip", "a_state/flip", 80),
                                                      ("routebr/entity", "a_ground/entity", 40)])
def test_offline_interventions_from_the_published_runs(routebr_artifact, tmp_path, source, published, agree):
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    cases = rk.load_cases(data / "routebr_confirm_320.csv")
    results = routebr_artifact / "experiments/results/confirm"
    system = published.split("/")[0]
    derived = derive_interventions(results / source, cases, assets, tmp_path / system, system=system, progress=False)
    recorded = {r.case_id: r for r in read_predictions(results / published / "predictions.csv")}
    same = sum(recorded[r.case_id].pred_final_path == r.pred_final_path for r in derived.rows)
    assert (len(derived.rows), same) == (agree, agree)


def test_the_sync_entry_point_works_inside_a_running_loop(bench, tmp_path):
    async def notebook_cell():
        return run(bench, tmp_path / "run", cases=bench[1][:5])

    assert len(asyncio.run(notebook_cell()).rows) == 5


def test_bad_arguments_are_data_errors(bench, tmp_path):
    with pytest.raises(rk.DataError) as err:
        run(bench, tmp_path / "a", concurrency=0)
    assert err.value.field == "concurrency"
    with pytest.raises(rk.DataError) as err:
        run(bench, tmp_path / "b", system="b3")
    assert err.value.code is rk.ErrorCode.UNKNOWN_ENUM
    with pytest.raises(rk.DataError) as err:
        run(bench, tmp_path / "c", cases=[*bench[1][:2], bench[1][0]])
    assert err.value.code is rk.ErrorCode.DUPLICATE_ID
    assert not Path(tmp_path / "c").exists()
