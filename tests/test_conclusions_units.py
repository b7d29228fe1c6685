"""Unit and property tests of the conclusions of notebooks 01, 02, 07 and 09 (no notebook execution); 01 and 02
state theirs in ``%%conclusion`` templates, checked branch by branch (:mod:`notebook_templates`)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from notebook_templates import flags, render, template, typed_numbers

NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")
METHOD = {"95%", "80%"}  # "the 95% seed-level interval", "80% power" name a method




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








def _differences(pts: list[tuple[float, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"baseline": f"ablation_{i}", "success_difference": d / 100,
                          "success_difference_ci95": ci / 100, "significant": abs(d) > ci}
                         for i, (d, ci) in enumerate(pts)])




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




def _template(notebook: str, variable: str = "facts") -> str:
    """The Markdown template of ``notebook``'s ``%%conclusion <variable>`` cell."""
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / f"{notebook}.ipynb").read_text("utf-8"))
    cell = next("".join(c["source"]) for c in nb["cells"]
                if "".join(c["source"]).startswith(f"%%conclusion {variable}\n"))
    return cell.split("\n", 1)[1]


def test_replay_story_tells_what_replays(flash_main) -> None:
    """Notebook 07's fail-closed story: experiments.replication.replay_story's facts in the notebook's template."""
    from routebr_kit.experiments.replication import replay_story
    from routebr_kit.notebook.display import render_conclusion

    decision = next(d for d in flash_main.tasks[0].decisions if d.request_id == "MAIN-0158")
    story = replay_story(decision, gold_path="A3_ACCOUNT_ANALYSIS")
    assert story["fail_closed"] and story["repair_attempted"] and story["repair_same"] and story["first_rejected"]
    text = render_conclusion(_template("07_paper_replay", "story"), story)
    assert "`FAIL_CLOSED_INVALID_OUTPUT`" in text and "`T_CLARIFY`" in text
    assert "`ACTION_OUTSIDE_CATALOG`" in text  # what the contract actually said, not a guess
    assert "repair was attempted" in text and "identical to the first reply" in text
    ok = next(d for d in flash_main.tasks[0].decisions if not d.reason.fail_closed)
    assert "did not fail closed" in render_conclusion(_template("07_paper_replay", "story"), replay_story(ok))
    assert "No fail-closed case" in render_conclusion(_template("07_paper_replay", "story"), replay_story(None))


def _replay_facts(report, **changes) -> dict:
    """Notebook 07's facts for ``report`` (as its facts cells compute them), with ``changes``."""
    from routebr_kit.experiments.replication import INDEPENDENT, REBUILT

    facts = {"source": "x", "have_artifact": True, "kit_run": False,
             "independent": min(report.agree_total(k) for k in INDEPENDENT), "independent_n": report.rows,
             "rebuilt": min(report.agree_total(k) for k in REBUILT), "rebuilt_n": report.rows,
             "published_reproduced": 89, "published_reproduced_n": 90, "all_reproduced": False,
             "tables_identical": True, "differing_tables": "", "failure_found": False, "failure_case": "",
             "failure_final_path": "", "failure_reason": "", "failure_fail_closed": False, "failure_terminal": "",
             "any_missed": False, "missed_pairs": None, "missed_pair_ids": "", "missed_allowed": False}
    return facts | changes


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.floats(-20, 20), st.floats(0.01, 10)), min_size=4, max_size=4),
       st.integers(2, 500), st.booleans(), st.sampled_from([("exact",), ("fast",), ("exact", "fast")]))
def test_metaroute_ablation_template_says_what_the_facts_say(pts, seeds, compared, modes) -> None:
    """Notebook 09's template: "includes zero" exactly for a non-significant ablation; the modes not studied and an
    absent comparison are left out, not stated as zero."""
    from routebr_kit.notebook.display import render_conclusion

    names = ("adaptive_no_recovery", "adaptive_single_action", "adaptive_no_decompose", "adaptive_no_verify")
    facts = {"source": "x", "seeds": seeds, "largest_ablation": names[0], "compared": compared,
             "published_files_identical": 2 if compared else None,
             "published_files_identical_n": 2 if compared else None,
             "recovery_expected_pts": 1.4, "recovery_sd_pts": 4.3, "power_design_seeds": 30, "recovery_power": 0.43,
             "power_target": 0.8, "recovery_seeds_80": 74, "power_largest_seeds": seeds}
    for name, (d, ci) in zip(names, pts, strict=True):
        facts |= {f"{name}_pts": d, f"{name}_ci_pts": ci, f"{name}_significant": abs(d) > ci}
    for m in ("exact", "fast"):
        facts |= {f"power_{m}_studied": m in modes, f"power_{m}_significant": False,
                  f"power_{m}_pts": 1.5 if m in modes else None, f"power_{m}_ci_pts": 3.0 if m in modes else None}
    text = render_conclusion(_template("09_metaroute_ablations"), facts)
    assert ("includes zero" in text) == any(abs(d) <= ci for d, ci in pts)
    assert all((f"{m} mode" in text) == (m in modes) for m in ("exact", "fast"))
    assert ("byte-identical" in text) == compared
