"""The papermill pipeline behind `make reproduce`: parameter files, templating, manifests, the outputs index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

import routebr_kit as rk
from routebr_kit.cli import main
from routebr_kit.notebook.pipeline import REPO, NotebookJob, RunPlan, listed_outputs, run

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


def test_ci_run_writes_notebooks_tables_figures_manifest_and_index(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["reproduce", "--params", str(PARAMS / "ci.yaml"), "--out", str(out), "--no-progress"]) == 0
    assert "finished" in capsys.readouterr().out
    manifest = json.loads((out / "manifest.json").read_text(encoding="utf-8"))
    status = {n["name"]: n["status"] for n in manifest["notebooks"]}
    assert status == {"00_quickstart": "ok", "01_dataset_construction": "ok", "03_rq1_routing_correctness": "ok",
                      "06_ablations": "ok", "07_paper_replay": "skipped"}
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
