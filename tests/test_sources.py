"""source="auto" never fails: the artifact when found (explicit, $ROUTEBR_ARTIFACT, conventional folder, sibling),
else the simulation — always with a banner that says which and how to switch; "artifact" fails loud."""

from __future__ import annotations

import pytest

import routebr_kit as rk
from routebr_kit.experiments import sources
from routebr_kit.experiments.screening import ScreeningConfig
from routebr_kit.experiments.sources import Source, resolve_source
from routebr_kit.experiments.study import StudyConfig
from routebr_kit.store import artifact as artifact_module


@pytest.fixture
def nowhere(monkeypatch, tmp_path):
    """No artifact anywhere: every discovery candidate points at an empty folder."""
    monkeypatch.delenv(artifact_module.ARTIFACT_ENV, raising=False)
    monkeypatch.setattr(artifact_module, "CONVENTIONAL_DIR", tmp_path / "conventional")
    monkeypatch.setattr(artifact_module, "SIBLING_DIR", tmp_path / "sibling")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_auto_uses_an_explicit_artifact(routebr_artifact) -> None:
    chosen, found, banner = resolve_source("auto", routebr_artifact)
    assert chosen is Source.ARTIFACT and found == routebr_artifact.resolve()
    assert "published artifact" in banner and "explicit path" in banner and 'source = "simulated"' in banner


def test_auto_finds_the_artifact_through_the_environment(nowhere, monkeypatch, routebr_artifact) -> None:
    monkeypatch.setenv(artifact_module.ARTIFACT_ENV, str(routebr_artifact))
    chosen, found, banner = resolve_source("auto")
    assert chosen is Source.ARTIFACT and found == routebr_artifact.resolve() and "$ROUTEBR_ARTIFACT" in banner


def test_auto_falls_back_to_the_simulation_with_a_banner(nowhere) -> None:
    chosen, found, banner = resolve_source("auto")
    assert chosen is Source.SIMULATED and found is None
    assert "not evidence" in banner and "No published artifact was found" in banner
    assert artifact_module.PUBLISHED_REPOSITORY in banner and "ROUTEBR_ARTIFACT" in banner


def test_auto_reports_a_bad_explicit_path_and_falls_back(tmp_path, routebr_artifact) -> None:
    chosen, found, banner = resolve_source("auto", tmp_path / "missing")
    assert chosen is Source.SIMULATED and found is None  # the sibling artifact is NOT silently used instead
    assert str(tmp_path / "missing") in banner and "not an artifact directory" in banner


def test_artifact_fails_loud_when_none_is_found(nowhere) -> None:
    with pytest.raises(rk.DataError) as err:
        resolve_source("artifact")
    assert err.value.code is rk.ErrorCode.FILE_NOT_FOUND and 'source = \\"auto\\"' in str(err.value).replace('"', '\\"')


def test_simulated_still_finds_the_artifact_for_comparisons(routebr_artifact) -> None:
    chosen, found, banner = resolve_source("simulated", routebr_artifact)
    assert chosen is Source.SIMULATED and found == routebr_artifact.resolve() and "for comparisons" in banner


def test_unknown_source_is_a_typed_error() -> None:
    with pytest.raises(rk.DataError) as err:
        resolve_source("oracle")
    assert (err.value.code, err.value.field) == (rk.ErrorCode.UNKNOWN_ENUM, "source")
    assert "auto" in str(err.value)


def test_configs_accept_auto(nowhere, tmp_path) -> None:
    study = StudyConfig.from_parameters(source="auto", out_dir=str(tmp_path))
    assert study.source is Source.SIMULATED and study.artifact_dir is None and study.banner
    screening = ScreeningConfig.from_parameters(source="auto", profiles=["deepseek_v4_primary"], split="ALL",
                                                out_dir=tmp_path / "s")
    assert screening.source is Source.SIMULATED and screening.artifact_dir is None
    assert screening.cases_path == tmp_path / "s" / "benchmarks" / "en-0" / "routebr_select_160.csv"
    assert screening.cases_path.exists()


def test_auto_with_own_cases_runs_the_simulation(routebr_artifact, tmp_path) -> None:
    config = StudyConfig.from_parameters(source="auto", artifact_dir=str(routebr_artifact),
                                         cases_path=str(routebr_artifact / "data" / "routebr_confirm_320.csv"))
    assert config.source is Source.SIMULATED and config.artifact_dir == routebr_artifact.resolve()


def test_how_to_get_names_the_pinned_commit() -> None:
    assert artifact_module.PUBLISHED_COMMIT[:12] in sources.HOW_TO_GET
