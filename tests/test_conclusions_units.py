"""Unit and property tests of the conclusions of notebooks 01 and 02, and of the templates of notebooks 07 and 09
(their facts and %%conclusion templates, rendered without executing the notebooks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.notebook import conclusions

NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")
METHOD = {"95%", "80%"}  # "the 95% seed-level interval", "80% power" name a method


def _stray(c: conclusions.Conclusion) -> list[str]:
    body = "\n".join(line for line in c.markdown.splitlines() if not line.startswith("*Computed from this run"))
    for text in c.texts.values():
        assert text in body, text
    pieces = {p for text in c.texts.values() for p in NUMBER.findall(text)} | METHOD
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", body)) if n not in pieces]


def _table(rows):
    return pd.DataFrame([{"Backend": b, "Contract": c, "FD": fd, "FB": fb, "Median latency (ms)": ms}
                         for b, c, fd, fb, ms in rows])


@st.composite
def screenings(draw):
    n = draw(st.integers(1, 6))
    rows = []
    for i in range(n):
        fd, fb = draw(st.integers(0, 84)), draw(st.integers(0, 76))
        rows.append((f"B{i} (simulated)", round(draw(st.floats(50, 100)), 1), f"{fd}/84 ({100 * fd / 84:.1f})",
                     f"{fb}/76 ({100 * fb / 76:.1f})", draw(st.integers(100, 5000))))
    seeds = draw(st.integers(1, 5))
    spread = pd.DataFrame([{"backend": r[0], "seed": s, "contract % (sim)": round(draw(st.floats(50, 100)), 1)}
                           for r in rows for s in range(seeds)])
    within = draw(st.lists(st.booleans(), min_size=n, max_size=n))
    comparison = pd.DataFrame({"backend": [r[0] for r in rows], "within tolerance": within})
    return _table(rows), comparison, spread


@settings(max_examples=60, deadline=None)
@given(screenings())
def test_screening_numbers_are_the_facts(case) -> None:
    table, comparison, spread = case
    c = conclusions.screening(table, comparison, spread, pd.DataFrame(), "simulated")
    assert not _stray(c)
    fd = sum(int(v.split("/")[0]) for v in table["FD"])
    assert c.values["fd_total"] == fd
    assert c.values["within_tolerance"] == [int(comparison["within tolerance"].sum()), len(table)]
    width = spread.groupby("backend")["contract % (sim)"].agg(lambda x: x.max() - x.min()).max()
    assert c.values["spread_width_pts"] == pytest.approx(round(width, 2))
    assert c.values["spread_seeds"] == spread["seed"].nunique()
    assert ("no backend dispatched" in c.markdown) == (fd == 0)


def test_screening_without_runs_says_so() -> None:
    c = conclusions.screening(pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), "live runs")
    assert "Nothing was screened" in c.markdown and "fd_total" not in c.values


def test_screening_names_the_comparison_in_sample() -> None:
    table = _table([("A (simulated)", 97.5, "0/84 (0.0)", "1/76 (1.3)", 1000)])
    c = conclusions.screening(table, pd.DataFrame({"within tolerance": [True]}), pd.DataFrame(), pd.DataFrame(),
                              "simulated")
    assert "in-sample" in c.markdown and "calibrated" in c.markdown
    without = conclusions.screening(table, pd.DataFrame(), pd.DataFrame(), pd.DataFrame(), "published runs")
    assert "in-sample" not in without.markdown and "within_tolerance" not in without.values


@pytest.fixture(scope="module")
def flash_main(routebr_artifact):
    from routebr_kit.experiments.replication import replay_artifact
    from routebr_kit.store.artifact import Artifact

    artifact = Artifact(routebr_artifact)
    tasks = [t for t in artifact.tasks(controller_only=True) if t.key == "select/deepseek_v4_flash_efficiency/main"]
    return replay_artifact(artifact, tasks)


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


def test_paper_replay_keeps_the_two_kinds_of_evidence_apart(flash_main) -> None:
    from routebr_kit.notebook.display import render_conclusion

    facts = _replay_facts(flash_main)
    assert (facts["independent"], facts["rebuilt"], facts["independent_n"]) == (100, 100, 100)
    text = render_conclusion(_template("07_paper_replay"), facts)
    assert "**Independent evidence:**" in text and "by construction" in text
    assert "not all of them" in text and "are identical" in text and "replicates nothing" not in text


def test_kit_fallback_report_replays_through_the_same_function(tmp_path: Path) -> None:
    from routebr_kit.experiments.kit_replay import kit_replay_report
    from routebr_kit.notebook.display import render_conclusion

    kit = kit_replay_report(tmp_path, profile="deepseek_v4_flash_efficiency", seed=0)
    assert kit.report.ok and kit.report.rows == len(kit.cases)
    assert any(d.reason.fail_closed for d in kit.decisions())  # the fallback still has a failure to study
    text = render_conclusion(_template("07_paper_replay"), _replay_facts(
        kit.report, have_artifact=False, kit_run=True, published_reproduced=None, published_reproduced_n=None))
    assert "replicates nothing published" in text and "published values reproduce" not in text


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


def test_dataset_conclusion_reads_the_tables() -> None:
    composition = pd.DataFrame({"split": ["DEV", "MAIN"], "partition": ["DEV", "SELECT"], "cases": [120, 160],
                                "dispatchable": [50, 76], "bounded": [70, 84]})
    audit = pd.DataFrame({"kind": ["FULL", "SELECT"], "priority_decided": [75, 16], "errors": [0, 1],
                          "warnings": [0, 0]})
    sources = pd.DataFrame({"a": [62, 0], "b": [32, 30]},
                           index=pd.MultiIndex.from_tuples([("CLARIFY", "R040"), ("CLARIFY", "R999")],
                                                           names=["boundary", "rule"]))
    c = conclusions.dataset(composition, audit, sources, seed=3, language="zh", second=None, second_label="")
    assert c.values["priority_decided"] == 75 and c.values["audit_errors"] == 1
    assert "a bug to report" in c.markdown
    assert (c.values["gate_before"], c.values["gate_after"]) == (0, 30)
    assert not _stray(c)
