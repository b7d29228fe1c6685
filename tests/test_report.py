"""routebr-kit report: what the single HTML file holds, checked against the kit's own readers, scorers and diff."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from report_fixtures import HOSTILE, HOSTILE_CASE, loosening_edit, simulated_run
from test_layout import import_graph

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.evaluation.floor import trivial_floor
from routebr_kit.evaluation.metrics import score
from routebr_kit.report import build_report, load_source, render, script_json, task_traces, unpack, write_report
from routebr_kit.report.sources import Producer, SourceKind
from routebr_kit.report.stages import STAGES
from routebr_kit.report.traces import TraceSource
from routebr_kit.review.diff import diff_ledgers
from routebr_kit.review.ledgers import RowDetail, load_ledgers
from routebr_kit.store.assets import assets_beside

FLASH_MAIN = "select/deepseek_v4_flash_efficiency/main"


@pytest.fixture(scope="module")
def published(routebr_artifact):
    source = load_source(routebr_artifact)
    return source, build_report(source, written_utc="2026-01-01T00:00:00+00:00")


@pytest.fixture(scope="module")
def sim_run(routebr_artifact, tmp_path_factory):
    return simulated_run(routebr_artifact, tmp_path_factory.mktemp("sim"), per_split=12)


@pytest.fixture(scope="module")
def shadow_out(routebr_artifact, tmp_path_factory):
    folder = tmp_path_factory.mktemp("shadow")
    candidate = loosening_edit(routebr_artifact, folder / "candidate")
    assert main(["shadow", "--artifact", str(routebr_artifact), "--candidate-assets", str(candidate),
                 "--out", str(folder / "out")]) == 0
    return folder / "out"


def _detail(data, i):
    return unpack(data.chunks[i // 500])[i % 500]


def _row_index(data, task, case_id):
    ex = data.explorer
    tasks, codes = ex["columns"]["task"]["values"], ex["columns"]["task"]["codes"]
    return next(i for i, (c, _) in enumerate(ex["keys"]) if c == case_id and tasks[codes[i]] == task)


def _stage(detail, key):
    return next(s for s in detail["stages"] if s["key"] == key)


def _value(stage, field):
    return next(value for name, _, value in stage["items"] if name == field)


# --------------------------------------------------------------------------------------------- sources


def test_the_published_artifact_gives_every_row_with_its_producer(published):
    source, data = published
    assert source.kind is SourceKind.ARTIFACT and data.rows == 1960 and len(source.tasks) == 27
    assert {o.producer for o in source.origins.values()} == {Producer.PUBLISHED}
    assert not data.header["simulated"]
    flash = source.origins[FLASH_MAIN]
    assert flash.model == "deepseek-v4-flash" and flash.hashes["rules"].startswith("3613d23a")


def test_a_result_folder_inside_the_artifact_gives_only_its_tasks(routebr_artifact):
    source = load_source(routebr_artifact / "experiments" / "results" / "select" / "deepseek_v4_flash_efficiency")
    assert sorted(source.tasks) == [f"select/deepseek_v4_flash_efficiency/{s}" for s in ("entity", "flip", "main")]
    one = load_source(routebr_artifact / "experiments" / "results" / FLASH_MAIN)
    assert list(one.tasks) == [FLASH_MAIN] and one.ledgers.rows == 100


def test_a_folder_that_is_nothing_is_a_located_error(tmp_path):
    with pytest.raises(DataError) as info:
        load_source(tmp_path / "missing")
    assert info.value.code is ErrorCode.FILE_NOT_FOUND
    with pytest.raises(DataError):
        load_source(tmp_path)  # an empty folder: no predictions.csv


def test_a_simulated_run_says_it_is_a_simulation(sim_run):
    run, cases = sim_run
    source = load_source(run, cases=cases)
    data = build_report(source, written_utc="")
    assert source.kind is SourceKind.RUNS and source.simulated
    assert any(line.startswith("SIMULATION") for line in data.header["banner"])
    assert data.header["tasks"][0]["seed"] == 0 and data.header["tasks"][0]["producer"] == "simulated"
    assert "SIMULATION" in render(data)


# --------------------------------------------------------------------------------------------- scorecard


def test_scorecards_are_the_evaluation_scores(published):
    source, data = published
    card = next(c for c in data.scorecard if c["task"] == "confirm/routebr/flip")
    task = source.tasks["confirm/routebr/flip"]
    s = score(task.rows, task.cases)
    assert (card["exact"]["hits"], card["exact"]["n"]) == (s.contract_exact.hits, s.contract_exact.n) == (77, 80)
    assert (card["exact"]["low"], card["exact"]["high"]) == tuple(s.contract_exact.wilson)
    assert (card["false_dispatch"]["hits"], card["false_dispatch"]["n"]) == (0, 40)
    assert (card["flip_pairs"]["hits"], card["flip_pairs"]["n"]) == (37, 40)  # the published Table V values
    flash = next(c for c in data.scorecard if c["task"] == FLASH_MAIN)
    assert flash["exact"]["hits"] == 97 and flash["calls"] == 101 and flash["fail_closed"]["hits"] == 1


def test_every_scorecard_shows_the_floor_of_the_same_cases(published, sim_run):
    source, data = published
    task = source.tasks["confirm/routebr/flip"]
    card = next(c for c in data.scorecard if c["task"] == task.key)
    floor = trivial_floor([task.cases[c] for c in dict.fromkeys(r.case_id for r in task.rows)],
                          assets_beside(task.cases_path).controller())
    assert card["floor"]["action_id"] == floor.action_id
    assert (card["floor"]["exact"]["hits"], card["floor"]["exact"]["n"]) == (floor.exact.hits, floor.exact.n)
    assert floor.exact.n == 80
    assert card["floor"]["false_dispatch"]["n"] == floor.scores.false_dispatch.n
    assert 0 < floor.exact.hits < card["exact"]["hits"]  # far above zero, below the release
    run = load_source(sim_run[0], cases=sim_run[1])
    sim = build_report(run, written_utc="2026-01-01T00:00:00+00:00")
    assert sim.scorecard and all(c["floor"] is not None for c in sim.scorecard)
    page = render(sim)
    assert "floor: best constant proposer" in page and f"always {sim.scorecard[0]['floor']['action_id']}:" in page


# --------------------------------------------------------------------------------------------- traces


def test_main_0158_shows_the_published_fail_closed_path(published):
    _, data = published
    detail = _detail(data, _row_index(data, FLASH_MAIN, "MAIN-0158"))
    assert detail["source"] == TraceSource.REPLAY_ROW.value  # the artifact ships no receipt for it
    assert [s["key"] for s in detail["stages"]] == list(STAGES[2:])
    call = _stage(detail, "model_call")
    assert "raw/MAIN-0158.json" in call["note"] and call["blocks"][0]["json"] == {
        "action_id": "NONE", "object_id": "NONE", "topk": []}
    assert _value(_stage(detail, "repair"), "repair_attempted") == "true"
    assert _value(_stage(detail, "contract"), "error_codes").startswith("ACTION_OUTSIDE_CATALOG, TOPK_LENGTH")
    assert _value(_stage(detail, "state_gate"), "rule_id") == "—"
    terminal = _stage(detail, "terminal")
    assert _value(terminal, "reason") == "FAIL_CLOSED_INVALID_OUTPUT"
    assert _value(terminal, "final_path") == _value(terminal, "pred_final_path") == "T_CLARIFY"
    assert _value(terminal, "legacy_reason_codes") == "FAIL_CLOSED_ROUTEBR"


def test_a_published_receipt_is_shown_as_recorded(published, routebr_artifact):
    _, data = published
    receipt = json.loads((routebr_artifact / "experiments/results/select/deepseek_v4_primary/main/raw/MAIN-0001.json")
                         .read_text(encoding="utf-8"))
    detail = _detail(data, _row_index(data, "select/deepseek_v4_primary/main", "MAIN-0001"))
    assert detail["source"] == TraceSource.REPLAY_RECEIPT.value
    call = _stage(detail, "model_call")
    body = next(b for b in call["blocks"] if b["field"] == "request_body")
    reply = next(b for b in call["blocks"] if b["field"] == "reply")
    assert body["json"] == receipt["calls"][0]["request_body"]
    assert reply["text"] == receipt["responses"][0]["content"]
    assert _value(_stage(detail, "state_gate"), "rule_id") == "R001"


def test_the_replayed_records_agree_with_the_diffs_details(published):
    source, _ = published
    for key in ("confirm/routebr/main", "confirm/a_state/flip", FLASH_MAIN):
        task = source.tasks[key]
        traces = task_traces(task)
        for row_key, detail in task.details.items():
            assert RowDetail.of_dict(traces[row_key].decision) == detail


def test_every_stage_of_a_kit_run_equals_its_receipt(sim_run):
    run, cases = sim_run
    data = build_report(load_source(run, cases=cases), written_utc="")
    for i, (case_id, _) in enumerate(data.explorer["keys"]):
        receipt = json.loads((run / "raw" / f"{case_id}.json").read_text(encoding="utf-8"))
        decision = receipt["summary"]["decision"]
        detail = _detail(data, i)
        assert detail["source"] == TraceSource.RECEIPT.value
        terminal, gate = _stage(detail, "terminal"), _stage(detail, "state_gate")
        assert _value(terminal, "reason") == decision["reason"]
        assert _value(terminal, "final_path") == decision["final_path"]
        rule = decision["rule"]
        assert _value(gate, "rule_id") == (rule["rule_id"] if rule else "—")
        assert _value(_stage(detail, "object_gate"), "object_resolution") == decision["object_resolution"]
        calls = [s for s in detail["stages"] if s["key"] == "model_call"]
        assert len(calls) == len(receipt["calls"])
        for stage, call, reply in zip(calls, receipt["calls"], receipt["responses"]):
            blocks = {b["field"]: b for b in stage["blocks"]}
            assert blocks["request_body"]["json"] == call["request_body"]
            assert blocks["reply"].get("text", blocks["reply"].get("json")) == reply["content"]


# --------------------------------------------------------------------------------------------- diff


def test_without_a_gate_a_replay_is_judged_by_the_default_gate_and_a_re_run_by_the_re_run_gate(shadow_out, sim_run,
                                                                                                routebr_artifact):
    from routebr_kit.review.gate import DEFAULT_GATE, RERUN_GATE, Gate

    replay = build_report(load_source(shadow_out), base=load_source(routebr_artifact), written_utc="")
    # the shadow output's rules differ from the artifact's: the release gate plus the exact verifier's widening
    assert replay.diff["gate"]["source"] == "default gate + widening"
    expected = Gate.parse(DEFAULT_GATE + ", widening <= 0").evaluate(
        diff_ledgers(load_ledgers(routebr_artifact), load_ledgers(shadow_out))).lines()[:-1]
    assert replay.diff["gate"]["lines"][-len(expected) - 1:-1] == expected
    assert any(line.strip().startswith("changed states seen by the recorded traffic:")
               for line in replay.diff["gate"]["lines"])
    run = load_source(sim_run[0], cases=sim_run[1])
    rerun = build_report(run, base=run, written_utc="")  # two runs (here the same folder): proposals were drawn
    assert rerun.diff["gate"]["source"] == "re-run gate"
    assert [line.split(" (")[0] for line in rerun.diff["gate"]["lines"][:-1]] == \
        [f"PASS {c.strip()}" for c in RERUN_GATE.split(",")]


def test_two_live_runs_of_different_rules_are_not_judged_by_the_re_run_gate(sim_run, tmp_path):
    """Issue 31: the manifests' asset hashes choose the gate; a rules change is never a mere re-run, and the
    widening criterion fails when the run folders' releases cannot be resolved (they record only hashes)."""
    import shutil

    from routebr_kit.review.assets import AssetFiles

    cases = Path(sim_run[1])
    folder = tmp_path / "assets"
    shutil.copytree(cases.parent, folder)
    rules = folder / "boundary_rules.csv"
    rules.write_text(rules.read_text(encoding="utf-8").replace("R070,80,A1_ADVISORY|", "R070,80,"), encoding="utf-8")
    sha = AssetFiles.from_dir(folder).load().policy.sha256
    other = tmp_path / "other"
    shutil.copytree(sim_run[0], other)
    for manifest in other.rglob("run_manifest.json"):
        doc = json.loads(manifest.read_text())
        doc["hashes"]["rules"] = sha
        manifest.write_text(json.dumps(doc))
    data = build_report(load_source(other, cases=folder / cases.name), base=load_source(sim_run[0], cases=cases),
                        written_utc="")
    gate = data.diff["gate"]
    assert gate["source"] == "default gate + widening" and not gate["passed"]
    assert "FAIL widening <= 0 (not measured: the releases are not known)" in gate["lines"]


def test_the_diff_is_the_review_diff(shadow_out, routebr_artifact, tmp_path):
    base, cand = load_source(routebr_artifact), load_source(shadow_out)
    data = build_report(cand, base=base, written_utc="")
    expected = diff_ledgers(load_ledgers(routebr_artifact), load_ledgers(shadow_out))
    assert data.diff["changed"] == len(expected.changed) > 0
    assert main(["diff", str(routebr_artifact), str(shadow_out), "--json", str(tmp_path / "d.json")]) in (0, 1)
    assert data.diff["changed"] == len(json.loads((tmp_path / "d.json").read_text())["changed"])
    ex = data.explorer
    change = [ex["columns"]["change"]["values"][c] for c in ex["columns"]["change"]["codes"]]
    assert change[:len(expected.changed)] == [c.change_class.value for c in expected.changed]  # changed first
    assert change[0] == "new_false_dispatch" and set(change[len(expected.changed):]) == {"unchanged"}
    assert not data.diff["gate"]["passed"]  # the default gate refuses new false dispatches
    page = render(data)  # the counts sentence names every change class, the forbidden-dispatch one first
    assert "0 new forbidden dispatch, " in " ".join(page.split()) and page.index("new forbidden dispatch") < \
        page.index("new false block")
    base_detail = unpack(data.base_chunks[0])[ex["numeric"]["base_detail"][0]]
    assert _value(_stage(base_detail, "state_gate"), "rule_id") == "R060"
    assert _value(_stage(_detail(data, 0), "state_gate"), "rule_id") == "R999"
    assert ex["numeric"]["base_detail"][len(expected.changed)] == -1  # unchanged rows carry no base trace


def test_not_comparable_ledgers_exit_2_with_one_line(routebr_artifact, sim_run, tmp_path, capsys):
    run, cases = sim_run
    code = main(["report", str(run), "--cases", str(cases), "--base", str(routebr_artifact),
                 "--out", str(tmp_path / "r.html")])
    err = capsys.readouterr().err
    assert code == 2 and "not comparable" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()


# --------------------------------------------------------------------------------------------- the file


def test_script_json_cannot_close_the_element():
    text = script_json({"u": HOSTILE})
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert json.loads(text) == {"u": HOSTILE}


def test_a_hostile_case_text_does_not_break_the_page(sim_run, tmp_path):
    run, cases = sim_run
    written = write_report(run, tmp_path / "r.html", cases=cases)
    html = written.path.read_text(encoding="utf-8")
    scripts = len(re.findall(r"<script[ >]", html))
    assert html.count("</script>") == scripts == 5  # four data elements and the explorer's script
    assert "</script><script>window.__pwned" not in html and HOSTILE not in html
    data = json.loads(re.search(r'<script type="application/json" id="rk-data">(.*?)</script>', html, re.S)[1])
    assert [c for c in data["explorer"]["cases"] if c[0] == HOSTILE_CASE][0][2] == HOSTILE


def test_the_report_is_self_contained_and_deterministic(sim_run, tmp_path, monkeypatch):
    run, cases = sim_run
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    a = write_report(run, tmp_path / "a.html", cases=cases).path.read_bytes()
    b = write_report(run, tmp_path / "b.html", cases=cases).path.read_bytes()
    assert a == b and b"2026-01-01T00:00:00+00:00" in a
    text = a.decode("utf-8")
    assert "default-src 'none'" in text
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", text)  # nothing to fetch
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "soon")
    with pytest.raises(DataError):
        write_report(run, tmp_path / "c.html", cases=cases)


def test_the_cli_writes_the_report_and_says_so(sim_run, tmp_path, capsys):
    run, cases = sim_run
    out = tmp_path / "x" / "report.html"
    assert main(["report", str(run), "--cases", str(cases), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert out.is_file() and f"wrote {out}" in printed and "36 rows" in printed


def test_a_reproduce_output_links_each_notebook_and_embeds_its_figures(sim_run, tmp_path):
    run, cases = sim_run
    folder = tmp_path / "repro"
    (folder / "runs").mkdir(parents=True)
    import shutil

    shutil.copytree(run, folder / "runs" / "sim" / "routebr")
    shutil.copytree(cases.parent, folder / "01_dataset_construction" / "benchmark")
    nb = folder / "03_rq1"
    (nb / "figures").mkdir(parents=True)
    png = Path(__file__).resolve().parents[1] / "routebr_kit"
    figure = next(png.rglob("*.png"), None)
    (nb / "figures" / "fig.png").write_bytes(figure.read_bytes() if figure else b"\x89PNG\r\n\x1a\n")
    (nb / "captions.json").write_text(json.dumps([{"kind": "figure", "name": "fig", "caption": "A caption",
                                                   "files": ["figures/fig.png"], "notebook": "03_rq1"}]))
    (folder / "manifest.json").write_text(json.dumps({"params_name": "default", "artifact": None, "notebooks": [
        {"name": "03_rq1", "status": "ok", "seconds": 1.5, "parameters": {}},
        {"name": "07_paper_replay", "status": "skipped", "seconds": 0, "parameters": {}}]}))
    source = load_source(folder)
    assert source.kind is SourceKind.REPRODUCE and list(source.tasks) == ["runs/sim/routebr"]
    html = write_report(folder).path.read_text(encoding="utf-8")
    assert 'id="nb-03_rq1"' in html and 'href="#nb-07_paper_replay"' in html
    assert 'href="03_rq1/03_rq1.ipynb"' in html and "A caption" in html and "data:image/png;base64," in html


def test_only_the_cli_and_the_notebook_pipeline_import_the_report_package():
    importers = sorted(m for m, targets in import_graph().items()
                       if any(t == "routebr_kit.report" or t.startswith("routebr_kit.report.") for t in targets)
                       and not m.startswith("routebr_kit.report"))
    assert importers == ["routebr_kit.cli.report", "routebr_kit.notebook.pipeline"]


def test_the_templates_ship_as_package_data():
    from importlib import resources

    names = sorted(p.name for p in resources.files("routebr_kit.report").joinpath("templates").iterdir())
    assert names == ["report.css", "report.html.j2", "report.js"]
