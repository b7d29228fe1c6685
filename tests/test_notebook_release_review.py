"""Notebook 10 teaches what its run computed: the rule-priority relation read from the loaded rules, change counts
that add up to the changed total, the exact verifier's verdict and the coverage — at two sources.

The notebook runs with papermill twice: on the published artifact, found only through ``$ROUTEBR_ARTIFACT`` (a
temporary folder whose children link to the artifact, so the rendered source names that folder — proof that the
variable is honoured), and on the kit's simulated benchmark at seed 1.  The rendered Markdown (the executed
notebook's own output: its ``%%conclusion facts`` template filled from ``tables/conclusions.json``) is then checked
against the CSV tables the run wrote.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from notebook_runs import executed, linked_artifact, variant_names
from test_honest_comparisons import bullets
from test_notebook_conclusions import _conclusion as _saved
from test_notebook_conclusions import _stated

pytest.importorskip("papermill")

CLASSES = ("new false dispatch", "new false block", "fixed", "other path change", "trace only")
NAME = "10_release_review"


@pytest.fixture(scope="module")
def runs() -> dict[str, Path]:
    """The two runs of :data:`notebook_runs.VARIANTS` (shared with the conclusion check), plus the linked root."""
    return {**{v: executed(NAME, v) for v in variant_names(NAME)}, "linked": linked_artifact()}


def _conclusion(out_dir: Path) -> dict:
    """``values`` (the saved facts), ``template`` and ``markdown`` (what the closing cell displayed)."""
    return _saved(out_dir)


def _table(out_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out_dir / "tables" / f"{name}.csv", keep_default_na=False)


def _rendered(out_dir: Path) -> str:
    """The Markdown the executed notebook displays in its closing cell (what a reader sees)."""
    nb = json.loads((out_dir / "executed.ipynb").read_text(encoding="utf-8"))
    shown = [("".join(o["data"]["text/markdown"]), i) for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert shown, "the notebook displays no Markdown"
    return shown[-1][0]


def _bullet(text: str, marker: str) -> str:
    """The rendered bullet containing ``marker``, its wrapped lines joined."""
    return next(b for b in bullets(text) if marker in b)


SOURCES = ("artifact", "simulated")


def test_the_artifact_is_found_through_the_environment_variable(runs) -> None:
    assert f"`{runs['linked']}`" in _rendered(runs["artifact"])
    assert f"`{runs['linked']}`" in _conclusion(runs["artifact"])["values"]["source"]
    assert "simulation" in _rendered(runs["simulated"])


@pytest.mark.parametrize("source", SOURCES)
def test_the_rendered_text_is_the_saved_conclusion(runs, source) -> None:
    from routebr_kit.notebook.display import render_conclusion

    c = _conclusion(runs[source])
    assert _rendered(runs[source]) == c["markdown"] == render_conclusion(c["template"], c["values"])


@pytest.mark.parametrize("source", SOURCES)
def test_every_number_in_the_prose_is_a_stated_fact(runs, source) -> None:
    stray = _stated(_conclusion(runs[source]))
    assert not stray, f"numbers the template types itself instead of stating a fact of the run: {stray}"


@pytest.mark.parametrize("source", SOURCES)
def test_the_priority_relation_is_read_from_the_loaded_rules(runs, source) -> None:
    out = runs[source]
    order = _table(out, "release_review_rule_order").set_index("rule_id")
    text, values = _rendered(out), _conclusion(out)["values"]
    # the engine's order is ascending (priority, rule_id): the table must be sorted so, and the prose must agree
    ranks = list(zip(order["priority"], order.index, strict=True))
    assert ranks == sorted(ranks)
    assert values["new_rule_priority"] == order.loc["R065", "priority"] == 65
    assert "R060 (70, REJECT)" in values["after_rules"] and order.loc["R060", "priority"] == 70
    where = _bullet(text, "Where R065 sits")
    assert order.loc["R065", "order"] < order.loc["R060", "order"]
    assert re.search(r"\*\*before\*\* [^.]*R060", where), where  # R065 is tried before the permission rule
    assert "pre-empts R060" in where
    assert "after the permission rule" not in text and "can only turn dispatches" not in text


@pytest.mark.parametrize("source", SOURCES)
def test_the_change_counts_add_up_to_the_changed_total(runs, source) -> None:
    out = runs[source]
    rule = _table(out, "release_review_edits").set_index("edit").loc["rule"]
    values, text = _conclusion(out)["values"], _rendered(out)
    counts = {k: int(rule[k]) for k in CLASSES}
    assert sum(counts.values()) == int(rule["changed"]) == values["changed"]
    for k, n in counts.items():
        assert values[re.sub(r"[^a-z0-9]+", "_", k)] == n
    found = _bullet(text, "What the review finds")
    said = [int(n) for n in re.findall(r"(\d+) (?:new false dispatches|new false blocks|fixed|other path changes|"
                                       r"trace-only changes)", found)]
    assert said == list(counts.values()) and "together the changed total" in found
    moves = _table(out, "release_review_rule_transitions")
    assert moves["rows"].sum() == int(rule["changed"])
    took = moves[moves["candidate_rule"].str.startswith("R065@")]
    assert sum(int(n) for n in re.findall(r": (\d+) rows", values["took_over"])) == took["rows"].sum()
    right = moves[(moves["base_final_path"] == moves["gold_final_path"]) & moves["base_final_path"].str.startswith("T_")
                  & (moves["candidate_final_path"] != moves["base_final_path"])]
    assert sum(int(n) for n in re.findall(r"(\d+) correct", values["correct_flows"])) == right["rows"].sum()
    assert counts["new false dispatch"] == 0  # a HANDOFF rule can never create a dispatch


@pytest.mark.parametrize("source", SOURCES)
def test_the_exact_verdict_and_coverage_are_the_runs(runs, source) -> None:
    out = runs[source]
    values = _conclusion(out)["values"]
    exact = _table(out, "release_review_rule_verify")
    assert f"{int((exact['relation'] == 'narrowing').sum())} actions narrowing" in values["relations"]
    assert values["widening"] == int((exact["relation"].isin(["widening", "incomparable"])).sum()) == 0
    cover = json.loads((out / "tables" / "release_review_coverage.json").read_text(encoding="utf-8"))
    assert (values["rules_covered"], values["rules"]) == (len(cover["covered_rules"]), cover["rules"])
    assert (values["regions_exercised"], values["regions_total"]) == (cover["regions_exercised"],
                                                                      cover["regions_total"])


def test_the_prose_follows_the_source(runs) -> None:
    first, second = (_conclusion(runs[s])["values"] for s in SOURCES)
    assert first["changed"] != second["changed"]
