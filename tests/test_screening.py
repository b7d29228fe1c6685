"""Backend screening (RQ4): configuration, the three sources, and notebook 02 in its other offline modes."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import papermill
import pytest

import routebr_kit as rk
from routebr_kit.backends.profiles import PROFILE_LABELS, missing_api_keys
from routebr_kit.experiments.screening import (
    ScreeningConfig,
    compare_with_published,
    held_out_table,
    label,
    published_runs,
    run_backend,
    run_screening,
    screening_cases,
)
from routebr_kit.experiments.sources import Source
from routebr_kit.store.artifact import Artifact

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "02_backend_screening.ipynb"
KEYS = ("APSEC_API_KEY", "DEEPSEEK_API_KEY", "QWENCLOUD_API_KEY")


def config(routebr_artifact, tmp_path, **changes):
    params = dict(source="simulated", profiles=["deepseek_v4_primary", "ohmygpt_gpt52_frontier"], split="MAIN",
                  cases_path=routebr_artifact / "data" / "routebr_select_160.csv", artifact_dir=routebr_artifact,
                  out_dir=tmp_path / "out")
    return ScreeningConfig.from_parameters(**{**params, **changes})


@pytest.mark.parametrize("changes, code, field", [
    ({"source": "cloud"}, rk.ErrorCode.UNKNOWN_ENUM, "source"),
    ({"profiles": ["gpt-9"]}, rk.ErrorCode.UNKNOWN_REFERENCE, "profiles"),
    ({"profiles": []}, rk.ErrorCode.INVALID_VALUE, "profiles"),
    ({"split": "TEST"}, rk.ErrorCode.UNKNOWN_ENUM, "split"),
    ({"seed": 1.5}, rk.ErrorCode.WRONG_TYPE, "seed"),
])
def test_bad_parameters_raise_typed_errors(routebr_artifact, tmp_path, changes, code, field):
    with pytest.raises(rk.DataError) as raised:
        config(routebr_artifact, tmp_path, **changes)
    assert (raised.value.code, raised.value.field) == (code, field)


def test_a_live_screening_without_keys_names_the_variables_and_runs_nothing(routebr_artifact, tmp_path,
                                                                            monkeypatch):
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    cfg = config(routebr_artifact, tmp_path, source="live")
    screening = run_screening(cfg)
    assert not screening.ready and screening.missing_env == ("APSEC_API_KEY", "DEEPSEEK_API_KEY")
    assert screening.table().empty and not (tmp_path / "out" / "runs").exists()
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-a-real-key")
    assert missing_api_keys(cfg.profiles, cfg.live_profiles_path) == ("APSEC_API_KEY",)


def test_the_artifact_source_is_the_published_screening(routebr_artifact, tmp_path):
    cfg = config(routebr_artifact, tmp_path, source="artifact", profiles=list(PROFILE_LABELS), split="ALL")
    screening = run_screening(cfg)
    table = screening.table().set_index("Backend")
    assert list(table.index) == ["DeepSeek V4 Pro", "DeepSeek V4 Flash", "Qwen3.8 Max", "GPT-4o", "Qwen3.7 Plus",
                                 "GPT-5.2"]
    assert list(table["Contract"]) == ["97.5", "97.5", "97.5", "96.9", "96.2", "95.6"]
    assert table.loc["GPT-5.2", "FB"] == "5/76 (6.6)" and table.loc["DeepSeek V4 Pro", "Median latency (ms)"] == "1367"
    same = compare_with_published(screening, published_runs(Artifact(routebr_artifact), cfg.profiles,
                                                            screening.cases))
    assert (same["Δ points"] == 0).all() and same["within tolerance"].all()


def test_a_simulated_screening_runs_every_backend_through_the_runner(routebr_artifact, tmp_path):
    cfg = config(routebr_artifact, tmp_path)
    screening = run_screening(cfg)
    assert list(screening.runs) == [label("deepseek_v4_primary", Source.SIMULATED),
                                    label("ohmygpt_gpt52_frontier", Source.SIMULATED), "local:lexical"]
    assert all(len(rows) == 100 for rows in screening.runs.values())
    manifest = json.loads((screening.run_dirs["GPT-5.2 (simulated)"] / "run_manifest.json").read_text("utf-8"))
    assert manifest["simulated"] is True and manifest["status"] == "complete"
    assert "simulated" in screening.title()
    assert all(b.endswith("(simulated)") or b == "local:lexical" for b in screening.table()["Backend"])
    again = run_screening(cfg)  # an offline run directory is replaced, never resumed or refused
    assert again.runs["GPT-5.2 (simulated)"] == screening.runs["GPT-5.2 (simulated)"]


def test_held_out_table_scores_one_backend_on_named_sets(routebr_artifact, tmp_path):
    artifact = Artifact(routebr_artifact)
    flip = screening_cases(artifact.cases_path("confirm"), "FLIP")
    table = held_out_table("local:lexical", {"CONFIRM FLIP": (flip, artifact.assets)}, tmp_path)
    assert table.to_dict("records") == [{"cases": "CONFIRM FLIP", "n": 80, "Contract": "100.0", "Path F1": "100.0",
                                         "Action": "100.0", "Object": "100.0", "FD": "0/40 (0.0)",
                                         "FB": "0/40 (0.0)"}]
    rows = run_backend("local:lexical", flip, artifact.assets, tmp_path / "confirm-flip")
    assert [r.pred_final_path for r in rows] == [c.gold.final_path for c in flip]


@pytest.mark.parametrize("source", ["artifact", "live"])
def test_the_notebook_runs_in_its_other_modes(tmp_path, monkeypatch, source):
    """nbval checks the committed (simulated) run; the artifact mode and a live mode without keys must also run."""
    for key in KEYS:
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("TQDM_DISABLE", "1")
    out = tmp_path / "nb.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), parameters={"source": source, "out_dir": str(tmp_path)},
                               kernel_name="python3", cwd=str(NOTEBOOK.parent), progress_bar=False)
    text = "".join(o.get("text", "") for cell in nbformat.read(out, as_version=4).cells
                   for o in cell.get("outputs", []))
    if source == "live":
        assert "set these environment variables first: APSEC_API_KEY, DEEPSEEK_API_KEY, QWENCLOUD_API_KEY" in text
    else:
        assert "6 backends x 160 cases" in text
    assert "sk-" not in text
