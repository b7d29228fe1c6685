"""The papermill pipeline behind `make reproduce`: parameter files, templating, manifests, the outputs index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import routebr_kit as rk
from routebr_kit.cli import main
from routebr_kit.notebook.pipeline import (
    EXTRAS,
    REPO,
    NotebookJob,
    RunPlan,
    choose_artifact,
    declared_parameters,
    listed_outputs,
    prepare,
    run,
    skip_reason,
)

PARAMS = REPO / "params"


def _plan(tmp_path: Path, content: dict) -> RunPlan:
    path = tmp_path / "plan.yaml"
    path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return RunPlan.load(path)


@pytest.mark.parametrize("name", ["default.yaml", "ci.yaml", "live.example.yaml"])
def test_shipped_parameter_files_load(name):
    plan = RunPlan.load(PARAMS / name)
    assert plan.jobs and all(job.path.is_file() for job in plan.jobs)


def test_default_plan_covers_every_notebook():
    plan = RunPlan.load(PARAMS / "default.yaml")
    assert {job.name for job in plan.jobs} == {p.stem for p in (REPO / "notebooks").glob("*.ipynb")}


@pytest.mark.parametrize("content, code", [
    ({"notebooks": []}, rk.ErrorCode.EMPTY_VALUE),
    ({"notebooks": ["99_missing"]}, rk.ErrorCode.UNKNOWN_REFERENCE),
    ({"notebooks": [{"parameters": {}}]}, rk.ErrorCode.WRONG_TYPE),
    ({"notebooks": ["00_quickstart"], "cell_timeout": "soon"}, rk.ErrorCode.INVALID_INTEGER),
    ({"notebooks": ["00_quickstart"], "extra": 1}, rk.ErrorCode.INVALID_VALUE),
])
def test_invalid_plans_are_rejected(tmp_path, content, code):
    with pytest.raises(rk.DataError) as err:
        _plan(tmp_path, content)
    assert err.value.code is code and err.value.file.endswith("plan.yaml")


def test_missing_plan_file(tmp_path):
    with pytest.raises(rk.DataError) as err:
        RunPlan.load(tmp_path / "nope.yaml")
    assert err.value.code is rk.ErrorCode.FILE_NOT_FOUND


def test_parameters_globals_overlays_and_templates(tmp_path):
    plan = _plan(tmp_path, {
        "globals": {"seed": 3, "language": "zh", "runs_dir": "{run}/runs"},
        "notebooks": [{"name": "03_rq1_routing_correctness", "parameters": {"source": "simulated"}}],
        "with_artifact": {"globals": {"source": "artifact"},
                          "notebooks": {"03_rq1_routing_correctness": {"cases_path": "{artifact}/data/x.csv"}}},
    })
    job = plan.jobs[0]
    declared = ["source", "cases_path", "artifact_dir", "seed", "language", "runs_dir", "out_dir"]
    offline = plan.parameters_for(job, declared, None, Path("/runs/r1"))
    assert offline == {"seed": 3, "language": "zh", "runs_dir": "/runs/r1/runs", "source": "simulated",
                       "out_dir": "/runs/r1/03_rq1_routing_correctness"}
    paper = plan.parameters_for(job, declared, "/art", Path("/runs/r1"))
    assert paper["source"] == "artifact" and paper["artifact_dir"] == "/art"
    assert paper["cases_path"] == "/art/data/x.csv"
    bare = NotebookJob("03_rq1_routing_correctness")  # globals reach only the notebooks that declare them
    assert "language" not in plan.parameters_for(bare, ["seed", "out_dir", "runs_dir"], None, Path("/r"))


def test_a_parameter_the_notebook_does_not_declare_is_an_error(tmp_path):
    plan = _plan(tmp_path, {"notebooks": [{"name": "00_quickstart", "parameters": {"sed": 1}}]})
    with pytest.raises(rk.DataError) as err:
        plan.parameters_for(plan.jobs[0], ["data_dir", "out_dir"], None, Path("/r"))
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE and err.value.got == ["sed"]


def test_ci_run_writes_notebooks_tables_figures_manifest_and_index(tmp_path, capfd):
    out = tmp_path / "run"
    assert main(["reproduce", "--params", str(PARAMS / "ci.yaml"), "--out", str(out), "--no-progress",
                 "--no-artifact"]) == 0
    printed = capfd.readouterr()  # file-descriptor level: the kernels' own stderr would land here
    assert "finished" in printed.out and "artifact: not used: --no-artifact" in printed.out
    for noise in ("KeyboardInterrupt caught in kernel", "running over TCP"):
        assert noise not in printed.out + printed.err
    assert "running over TCP" in (out / "kernel.log").read_text(encoding="utf-8")  # kept, not lost
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["status"] == "complete" and manifest["artifact"] is None
    assert manifest["artifact_found_by"] == "not used: --no-artifact"
    status = {n["name"]: n["status"] for n in manifest["notebooks"]}
    assert list(status) == [job.name for job in RunPlan.load(PARAMS / "ci.yaml").jobs]
    assert status.pop("07_paper_replay") == "skipped"  # needs the artifact, and this run has none
    real = status.pop("13_real_proposers")  # needs the optional extra [learned]: run only where it is installed
    assert real == ("skipped" if EXTRAS["learned"]() else "ok")
    assert {"00_quickstart", "01_dataset_construction", "03_rq1_routing_correctness", "06_ablations"} <= set(status)
    assert set(status.values()) == {"ok"}
    assert manifest["input_hashes"]["params/ci.yaml"] and manifest["kit_version"] == rk.__version__
    assert len(manifest["git_commit"]) in (40, 7) or manifest["git_commit"] == "unknown"
    files = listed_outputs(out)
    assert files and all(f.exists() for f in files)
    assert any(f.suffix == ".png" for f in files) and any(f.suffix == ".pdf" for f in files)
    readme = (out / "README.md").read_text(encoding="utf-8")
    for f in files:
        assert str(f.relative_to(out)) in readme
    executed = out / "03_rq1_routing_correctness" / "03_rq1_routing_correctness.ipynb"
    assert "simulated: sim:deepseek_v4_primary" in executed.read_text(encoding="utf-8")
    assert (out / "runs").is_dir()  # the RQ notebooks shared one runs folder


def test_a_failing_notebook_stops_the_run_and_keeps_its_partial_output(tmp_path):
    plan = _plan(tmp_path, {"notebooks": [
        {"name": "03_rq1_routing_correctness", "parameters": {"source": "telepathy"}}, "00_quickstart"]})
    out = tmp_path / "run"
    assert run(plan, out, progress=False) == 1
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert [(n["name"], n["status"]) for n in manifest["notebooks"]] == [("03_rq1_routing_correctness", "failed")]
    assert "PapermillExecutionError" in manifest["notebooks"][0]["error"]
    partial = out / "03_rq1_routing_correctness" / "03_rq1_routing_correctness.ipynb"
    assert partial.exists() and "UNKNOWN_ENUM" in partial.read_text(encoding="utf-8")
    assert "failed" in (out / "README.md").read_text(encoding="utf-8")


def test_jobs_point_at_notebooks():
    assert NotebookJob("00_quickstart").path == REPO / "notebooks" / "00_quickstart.ipynb"


# --------------------------------------------------------------------------------------------- issue 13, item 2


def test_an_existing_run_folder_is_refused_without_resume(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "notes.txt").write_text("someone else's run", encoding="utf-8")
    assert main(["reproduce", "--params", str(PARAMS / "ci.yaml"), "--out", str(out), "--no-progress",
                 "--no-artifact"]) == 2
    err = capsys.readouterr().err
    assert f"[INVALID_VALUE] {out}, field '--out'" in err and "--resume" in err and err.count("\n") == 1
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]  # nothing written into it


def test_a_wrong_artifact_fails_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "run"
    wrong = tmp_path / "not-an-artifact"
    wrong.mkdir()
    assert main(["reproduce", "--params", str(PARAMS / "default.yaml"), "--out", str(out), "--no-progress",
                 "--artifact", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert f"[FILE_NOT_FOUND] {wrong}" in err and err.count("\n") == 1
    assert not out.exists()


def test_every_input_path_is_checked_before_the_first_notebook(tmp_path):
    plan = _plan(tmp_path, {"notebooks": ["00_quickstart", {"name": "03_rq1_routing_correctness",
                                                             "parameters": {"source": "simulated",
                                                                            "cases_path": "../nowhere/cases.csv"}}]})
    out = tmp_path / "run"
    with pytest.raises(rk.DataError) as err:
        prepare(plan, out, artifact=choose_artifact(discover=False))
    assert err.value.code is rk.ErrorCode.FILE_NOT_FOUND and err.value.field == "cases_path"
    assert err.value.file == str(REPO / "nowhere" / "cases.csv")  # relative to notebooks/, like the kernels
    assert not out.exists()


def test_a_path_inside_the_run_must_come_from_an_earlier_notebook(tmp_path):
    later = {"name": "03_rq1_routing_correctness",
             "parameters": {"source": "simulated", "cases_path": "{run}/01_dataset_construction/benchmark/x.csv"}}
    plan = _plan(tmp_path, {"notebooks": [later, "01_dataset_construction"]})
    with pytest.raises(rk.DataError) as err:
        prepare(plan, tmp_path / "run", artifact=choose_artifact(discover=False))
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE
    assert err.value.field == "03_rq1_routing_correctness.cases_path"
    in_order = _plan(tmp_path, {"notebooks": ["01_dataset_construction", later]})
    assert prepare(in_order, tmp_path / "run", artifact=choose_artifact(discover=False)).jobs[1][1]


def test_an_unknown_template_is_a_typed_error(tmp_path):
    plan = _plan(tmp_path, {"notebooks": [{"name": "00_quickstart", "parameters": {"data_dir": "{artefact}/d"}}]})
    with pytest.raises(rk.DataError) as err:
        prepare(plan, tmp_path / "run", artifact=choose_artifact(discover=False))
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE and err.value.field == "00_quickstart.data_dir"


def test_the_artifact_is_used_whenever_it_is_found(routebr_artifact, tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTEBR_ARTIFACT", str(routebr_artifact))
    found = choose_artifact()
    assert found.path == routebr_artifact.resolve() and found.how == "$ROUTEBR_ARTIFACT"
    assert choose_artifact(routebr_artifact).how == "explicit path, --artifact"
    assert choose_artifact(discover=False).path is None
    prepared = prepare(RunPlan.load(PARAMS / "default.yaml"), tmp_path / "run", artifact=found)
    parameters = {job.name: p for job, p in prepared.jobs}
    assert parameters["07_paper_replay"]["artifact_dir"] == str(routebr_artifact.resolve())
    assert parameters["03_rq1_routing_correctness"]["source"] == "artifact"
    metaroute = routebr_artifact.resolve().parent / "metaroute_artifact"
    assert parameters["08_metaroute_bench"]["metaroute_artifact_dir"] == (str(metaroute) if metaroute.is_dir()
                                                                          else "")
    offline = prepare(RunPlan.load(PARAMS / "default.yaml"), tmp_path / "run", artifact=choose_artifact(
        discover=False))
    assert dict((job.name, p) for job, p in offline.jobs)["07_paper_replay"] is None
    assert dict((job.name, p) for job, p in offline.jobs)["03_rq1_routing_correctness"]["source"] == "simulated"


def test_a_misspelt_environment_variable_is_an_error_not_a_simulation(tmp_path, monkeypatch):
    monkeypatch.setenv("ROUTEBR_ARTIFACT", str(tmp_path / "typo"))
    with pytest.raises(rk.DataError) as err:
        choose_artifact()
    assert err.value.code is rk.ErrorCode.FILE_NOT_FOUND and err.value.field == "$ROUTEBR_ARTIFACT"


def test_declared_parameters_are_read_without_papermill():
    import papermill as pm

    for job in RunPlan.load(PARAMS / "default.yaml").jobs:
        assert declared_parameters(job.path) == list(pm.inspect_notebook(str(job.path)))


def test_resume_keeps_what_succeeded_and_runs_the_rest(tmp_path, capsys):
    plan_file = tmp_path / "plan.yaml"
    plan_file.write_text(yaml.safe_dump({"name": "tiny", "notebooks": ["00_quickstart"]}), encoding="utf-8")
    out = tmp_path / "run"
    argv = ["reproduce", "--params", str(plan_file), "--out", str(out), "--no-progress", "--no-artifact"]
    assert main(argv) == 0
    executed = out / "00_quickstart" / "00_quickstart.ipynb"
    first = executed.read_bytes()
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    manifest["status"] = "running"  # as a killed run leaves it
    (out / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    capsys.readouterr()

    assert main([*argv, "--resume"]) == 0
    assert "resuming" in capsys.readouterr().out and executed.read_bytes() == first  # not executed again
    resumed = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    assert resumed["status"] == "complete" and resumed["resumed"] is True
    assert resumed["notebooks"][0]["status"] == "ok" and resumed["notebooks"][0]["resumed"] is True

    other = tmp_path / "other.yaml"
    other.write_text(yaml.safe_dump({"name": "other", "notebooks": ["00_quickstart"]}), encoding="utf-8")
    assert main(["reproduce", "--params", str(other), "--out", str(out), "--no-artifact", "--resume"]) == 2
    assert "[INCONSISTENT_ASSETS]" in capsys.readouterr().err


def test_resume_needs_a_run_folder(tmp_path, capsys):
    out = tmp_path / "run"
    out.mkdir()
    (out / "x.txt").write_text("x", encoding="utf-8")
    assert main(["reproduce", "--params", str(PARAMS / "ci.yaml"), "--out", str(out), "--no-artifact",
                 "--resume"]) == 2
    assert f"[FILE_NOT_FOUND] {out / 'manifest.json'}" in capsys.readouterr().err


@pytest.mark.parametrize("missing", [("llama_cpp",), ()])
def test_a_notebook_needing_an_optional_extra_runs_only_where_it_is_installed(tmp_path, monkeypatch, missing):
    monkeypatch.setitem(EXTRAS, "local", lambda: missing)
    plan = _plan(tmp_path, {"notebooks": ["00_quickstart", {"name": "13_real_proposers",
                                                             "requires_extra": "local"}]})
    job = plan.jobs[1]
    assert job.requires_extra == "local"
    prepared = prepare(plan, tmp_path / "out", artifact=choose_artifact(discover=False))
    parameters = prepared.jobs[1][1]
    if missing:
        assert parameters is None and "make local-model" in skip_reason(job, None)
    else:
        assert parameters is not None and parameters["out_dir"].endswith("13_real_proposers")
        assert skip_reason(job, None) is None


def test_an_unknown_extra_is_a_typed_error(tmp_path):
    with pytest.raises(rk.DataError) as err:
        _plan(tmp_path, {"notebooks": [{"name": "13_real_proposers", "requires_extra": "gpu"}]})
    assert err.value.code is rk.ErrorCode.UNKNOWN_ENUM and err.value.field == "notebooks[0].requires_extra"


def test_the_shipped_plans_gate_notebook_13_on_the_learned_extra():
    for name in ("default.yaml", "ci.yaml"):
        jobs = {job.name: job for job in RunPlan.load(PARAMS / name).jobs}
        assert jobs["13_real_proposers"].requires_extra == "learned"
