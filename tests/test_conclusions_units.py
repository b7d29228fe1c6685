"""Unit and property tests of the conclusions wired into notebooks 01, 02, 07 and 09 (no notebook execution)."""

from __future__ import annotations

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
    from routebr_kit.experiments.kit_replay import kit_replay_report

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
