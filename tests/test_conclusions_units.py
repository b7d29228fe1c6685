"""Unit and property tests of the conclusions of notebooks 01, 02, 07 and 09 (no notebook execution); 01 and 02
state theirs in ``%%conclusion`` templates, checked branch by branch (:mod:`notebook_templates`)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from notebook_templates import flags, render, template, typed_numbers

from routebr_kit.notebook import conclusions

NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")
METHOD = {"95%", "80%"}  # "the 95% seed-level interval", "80% power" name a method


def _stray(c: conclusions.Conclusion) -> list[str]:
    body = "\n".join(line for line in c.markdown.splitlines() if not line.startswith("*Computed from this run"))
    for text in c.texts.values():
        assert text in body, text
    pieces = {p for text in c.texts.values() for p in NUMBER.findall(text)} | METHOD
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", body)) if n not in pieces]


SCREENING = template("02_backend_screening")


@settings(max_examples=60, deadline=None)
@given(st.fixed_dictionaries({flag: st.booleans() for flag in sorted(flags(SCREENING))}))
def test_screening_template_says_what_each_branch_shows(chosen) -> None:
    """Notebook 02's conclusion: no number typed in the words; the in-sample warning comes with every comparison
    to the published rows; the gate sentence follows the false-dispatch count; an empty screening says so."""
    markdown = render(SCREENING, chosen)
    assert not typed_numbers(SCREENING)
    assert ("Nothing was screened" in markdown) == (not chosen["screened"])
    assert ("Against the published rows — **in-sample**" in markdown) == chosen["has_comparison"]
    assert ("still in-sample" in markdown) == chosen["has_sweep"]
    if chosen["has_backends"]:
        assert ("no backend dispatched" in markdown) == chosen["no_false_dispatch"]
        assert "trivial-proposer floor" in markdown  # an exact-match range always stands beside the floor
    assert ("not evidence about any real model" in markdown) == chosen["simulated"]


@pytest.fixture(scope="module")
def flash_main(routebr_artifact):
    from routebr_kit.experiments.replication import replay_artifact
    from routebr_kit.store.artifact import Artifact

    artifact = Artifact(routebr_artifact)
    tasks = [t for t in artifact.tasks(controller_only=True) if t.key == "select/deepseek_v4_flash_efficiency/main"]
    return replay_artifact(artifact, tasks)


def test_failure_story_tells_what_replays(flash_main) -> None:
    decision = next(d for d in flash_main.tasks[0].decisions if d.request_id == "MAIN-0158")
    text = conclusions.failure_story(decision, gold_path="A3_ACCOUNT_ANALYSIS")
    assert "`FAIL_CLOSED_INVALID_OUTPUT`" in text and "`T_CLARIFY`" in text
    assert "`ACTION_OUTSIDE_CATALOG`" in text  # what the contract actually said, not a guess
    assert "repair was attempted" in text and "identical to the first reply" in text
    ok = next(d for d in flash_main.tasks[0].decisions if not d.reason.fail_closed)
    assert "did not fail closed" in conclusions.failure_story(ok)


def test_paper_replay_keeps_the_two_kinds_of_evidence_apart(flash_main) -> None:
    c = conclusions.paper_replay(flash_main, "published artifact", reproduced=(89, 90), differing_tables=0)
    assert c.values["independent"] == [100, 100] and c.values["rebuilt"] == [100, 100]
    assert "**Independent evidence:**" in c.markdown and "by construction" in c.markdown
    assert "not all of them" in c.markdown and "are identical" in c.markdown
    assert not _stray(c)


def test_kit_fallback_report_replays_through_the_same_function(tmp_path: Path) -> None:
    from routebr_kit.notebook.kit_replay import kit_replay_report

    kit = kit_replay_report(tmp_path, profile="deepseek_v4_flash_efficiency", seed=0)
    assert kit.report.ok and kit.report.rows == len(kit.cases)
    assert any(d.reason.fail_closed for d in kit.decisions())  # the fallback still has a failure to study
    c = conclusions.paper_replay(kit.report, "kit", kit_run=True)
    assert "replicates nothing published" in c.markdown


def _differences(pts: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"baseline": f"ablation_{i}", "success_difference": d / 100,
                          "success_difference_ci95": ci / 100, "significant": abs(d) > ci}
                         for i, (d, ci) in enumerate(pts)])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-20, 20), st.floats(0.01, 10)), min_size=1, max_size=5),
       st.integers(2, 500), st.booleans())
def test_metaroute_numbers_are_the_facts(pts, seeds, compared) -> None:
    differences = _differences(pts)
    power = pd.DataFrame([{"mode": m, "seeds": n, "difference_pts": 1.5, "ci95_pts": 3.0 / n ** 0.5,
                           "significant": n > 50} for m in ("exact", "fast") for n in (10, seeds)])
    design = pd.DataFrame({"expected difference (pts)": [1.4], "per-seed sd (pts)": [4.3],
                           "power at 30 seeds": [0.43], "seeds for 80% power": [74]})
    match = {"summary.csv": True, "tasks.csv": compared} if compared else None
    c = conclusions.metaroute_ablations(differences, power, design, seeds=seeds, match=match, source="x")
    assert not _stray(c)
    for i, (d, ci) in enumerate(pts):
        assert c.values[f"ablation_{i}_pts"] == pytest.approx(round(d, 2))
        assert ("includes zero" in c.markdown) == any(abs(d) <= ci for d, ci in pts)
    assert c.values["power_largest_seeds"] == max(10, seeds)
    assert ("published_files_identical" in c.values) == compared


DATASET = template("01_dataset_construction")


@pytest.mark.parametrize("flag", sorted(flags(DATASET)))
def test_dataset_template_reports_a_bug_when_a_check_fails(flag) -> None:
    """Notebook 01's conclusion: each check's failure is said in words (and no number is typed in them)."""
    assert not typed_numbers(DATASET)
    held, broken = render(DATASET), render(DATASET, {flag: False})
    assert "a bug to report" not in held and held != broken
    if flag in ("labels_agree", "boundaries_kept"):
        assert "a bug to report" in broken


def test_parse_count_reads_back_a_formatted_count() -> None:
    """Notebooks 02 and 04 read their Table IV / pair-table cells back with evaluation.tables.parse_count."""
    from routebr_kit.evaluation.metrics import Count
    from routebr_kit.evaluation.tables import fmt_count, parse_count

    assert parse_count(fmt_count(Count(5, 76))) == Count(5, 76) == parse_count("5/76")
    for bad in ("", "5", "5/", "a/76", "97.5"):
        with pytest.raises(ValueError):
            parse_count(bad)
