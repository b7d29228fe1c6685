"""The CONFIRM study behind notebooks 03-06 (artifact and simulated sources) and its case-level analyses."""

from __future__ import annotations

import pytest

import routebr_kit as rk
from routebr_kit.evaluation import analysis
from routebr_kit.evaluation.metrics import score
from routebr_kit.experiments.sources import Source
from routebr_kit.experiments.study import RUNS, StudyConfig, load_study


@pytest.fixture(scope="module")
def published(routebr_artifact):
    return load_study(StudyConfig.from_parameters(source="artifact", artifact_dir=str(routebr_artifact)))


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    out = tmp_path_factory.mktemp("study")
    return load_study(StudyConfig.from_parameters(source="simulated", out_dir=str(out), seed=1))


def test_artifact_study_has_every_published_run(published):
    assert list(published.runs) == list(RUNS)
    sizes = {(s.value, sp.value): len(rows) for (s, sp), rows in published.runs.items()}
    assert sizes[("routebr", "MAIN")] == 200 and sizes[("a_state", "FLIP")] == 80
    assert sizes[("a_ground", "ENTITY")] == 40 and len(published.cases) == 320
    assert score(published.rows("routebr", "MAIN"), published.cases).contract_exact.hits == 195


def test_simulated_study_runs_derives_and_resumes(simulated, tmp_path):
    assert list(simulated.runs) == list(RUNS) and simulated.config.source is Source.SIMULATED
    routebr = simulated.rows("routebr", "FLIP")
    a_state = simulated.rows("a_state", "FLIP")
    assert [r.case_id for r in routebr] == [r.case_id for r in a_state]
    assert all(r.calls is not None for r in routebr)
    again = load_study(simulated.config)  # resumed: the same ledgers, no new work
    assert again.runs == simulated.runs
    assert (simulated.config.runs_dir / "benchmarks" / "en-1" / "routebr_confirm_320.csv").exists()


def test_lexical_study_runs_only_the_controller_systems(tmp_path):
    study = load_study(StudyConfig.from_parameters(source="simulated", profile="local:lexical", out_dir=str(tmp_path)))
    assert {s for s, _ in study.runs} == {rk.System.ROUTEBR, rk.System.A_STATE, rk.System.A_GROUND}


@pytest.mark.parametrize("kwargs, code, field", [
    ({"source": "oracle"}, rk.ErrorCode.UNKNOWN_ENUM, "source"),
    ({"source": "artifact", "artifact_dir": "/no/such/artifact"}, rk.ErrorCode.FILE_NOT_FOUND, "artifact_dir"),
    ({"source": "artifact", "cases_path": "x.csv"}, rk.ErrorCode.INVALID_VALUE, "cases_path"),
    ({"source": "simulated", "profile": "gpt-x"}, rk.ErrorCode.INVALID_VALUE, "profile"),
    ({"source": "simulated", "seed": "0"}, rk.ErrorCode.WRONG_TYPE, "seed"),
    ({"source": "simulated", "language": "fr"}, rk.ErrorCode.UNKNOWN_ENUM, "language"),
])
def test_invalid_parameters(kwargs, code, field):
    with pytest.raises(rk.DataError) as err:
        StudyConfig.from_parameters(**kwargs)
    assert (err.value.code, err.value.field) == (code, field)


def test_live_without_keys_names_the_missing_variables(tmp_path, monkeypatch, routebr_artifact):
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    config = StudyConfig.from_parameters(
        source="live", profile="deepseek_v4_primary", out_dir=str(tmp_path),
        profiles_path=str(routebr_artifact / "experiments" / "api_profiles.json"))
    study = load_study(config)
    assert not study.ready and study.missing_env == ("DEEPSEEK_API_KEY",)


def test_unknown_run_is_a_typed_error(published):
    with pytest.raises(rk.DataError):
        published.rows("b1_direct", "ENTITY")


# ---------------------------------------------------------------------------------------- analyses


def test_confusion_counts_every_row(published):
    rows = published.rows("b1_direct", "MAIN")
    matrix = analysis.confusion(rows, published.cases)
    assert int(matrix.to_numpy().sum()) == 200
    assert int(sum(matrix.loc[g, g] for g in matrix.index)) == 82  # B1's published exact matches


def test_errors_lists_exactly_the_wrong_paths(published):
    wrong = analysis.errors(published.rows("routebr", "MAIN"), published.cases)
    assert len(wrong) == 5 and (wrong["gold_path"] != wrong["pred_path"]).all()


def test_pair_anatomy_finds_one_flipped_predicate_per_pair(published):
    anatomy = analysis.pair_anatomy(published.labelled("FLIP"), published.cases)
    assert len(anatomy) == 80 and anatomy.groupby("pair_id")["flipped"].nunique().eq(1).all()
    assert not anatomy["flipped"].str.contains(",").any()
    missed = analysis.missed_pairs(anatomy, "RouteBR")
    assert sorted(missed["pair_id"].unique()) == ["PAIR-028", "PAIR-029", "PAIR-032"]


def test_scores_by_difficulty_partitions_the_slice(published):
    rows = published.rows("a_ground", "ENTITY")
    table = analysis.scores_by(rows, published.cases, lambda c: c.gold.object_difficulty.value, label="difficulty")
    assert table["n"].sum() == 40
    assert set(table["difficulty"]) == {"ANAPHORA", "CODE_ONLY", "CONFLICTING", "UNDERSPECIFIED"}


def test_summary_gap_between_action_and_path(published):
    table = analysis.summary(published.labelled("MAIN"), published.cases).set_index("system")
    assert table.loc["B1 Direct", "action"] == 0.94 and table.loc["B1 Direct", "exact"] == 0.41
    assert table.loc["B1 Direct", "action_minus_exact"] == 0.53
    assert table.loc["RouteBR", "exact_lo"] < 0.975 < table.loc["RouteBR", "exact_hi"]


def test_routebr_decisions_replay_with_traces(published):
    decisions = published.routebr_decisions("MAIN", ["MAIN-0124"])
    assert len(decisions) == 1 and decisions[0].final_path == "A2_INFO_LOOKUP"
    assert decisions[0].trace()[-1].outcome.startswith("DISPATCH(A2_INFO_LOOKUP")
