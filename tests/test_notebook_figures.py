"""What a reader sees in every saved notebook figure: a title, tick labels on every axis, colour-blind colours.

:meth:`Outputs.figure <routebr_kit.notebook.outputs.Outputs.figure>` records each figure's anatomy (titles,
tick labels, legend entries, the colours of bars, lines and markers) in ``captions.json``; this test reads it from
the notebook runs the conclusion check executes (:mod:`notebook_runs`, first variant of each notebook).
"""

from __future__ import annotations

import json

import matplotlib
import pandas as pd
import pytest
import seaborn as sns
from matplotlib.colors import to_rgb
from notebook_runs import VARIANTS, executed, variant_names

from routebr_kit.notebook.display import outcome_figure
from routebr_kit.notebook.outputs import figure_anatomy

pytest.importorskip("papermill")
matplotlib.use("Agg")

PALETTE = [to_rgb(c) for c in sns.color_palette("colorblind")]
ALLOWED = PALETTE + [to_rgb(sns.desaturate(c, 0.75)) for c in PALETTE]  # seaborn bars are drawn at saturation 0.75


def allowed_colour(hex_colour: str) -> bool:
    rgb = to_rgb(hex_colour)
    if max(rgb) - min(rgb) < 0.02:  # greys, black and white: axes, error bars, reference lines
        return True
    return any(sum((a - b) ** 2 for a, b in zip(rgb, c, strict=True)) < 0.02 ** 2 for c in ALLOWED)


def _figures(name: str) -> list[dict]:
    out = executed(name, variant_names(name)[0])
    path = out / "captions.json"
    entries = json.loads(path.read_text(encoding="utf-8")) if path.exists() else []
    return [e for e in entries if e["kind"] == "figure"]


FIGURES = sorted(VARIANTS)


def _numeric(label: str) -> bool:
    try:
        float(label.replace("−", "-").replace("%", "").replace(",", ""))
    except ValueError:
        return False
    return True


def figure_problems(name: str, anatomy: dict) -> list[str]:
    """A title; tick labels on every data panel for a categorical axis (the issue: five unnamed bars per panel),
    on at least one panel for a numeric scale the panels share; colours from the colour-blind palette.  Colour
    bars (no data of their own) and diagrams (no ticks at all) are not data panels."""
    problems = []
    if not (anatomy["suptitle"] or any(ax["title"] for ax in anatomy["axes"])):
        problems.append(f"{name}: no title")
    panels = [ax for ax in anatomy["axes"] if (ax["colours"] or ax["images"]) and (ax["xticks"] or ax["yticks"])]
    for axis in ("xticklabels", "yticklabels"):
        labels = [t for ax in panels for t in ax[axis] if t.strip()]
        if not panels:
            continue
        if not labels:
            problems.append(f"{name}: no {axis} on any panel")
        elif not all(_numeric(t) for t in labels):  # categorical: every panel names its categories
            problems += [f"{name} panel {i}: no {axis}" for i, ax in enumerate(panels)
                         if not any(t.strip() for t in ax[axis])]
    for i, ax in enumerate(anatomy["axes"]):
        bad = [c for c in ax["colours"] if not allowed_colour(c)]
        if bad:
            problems.append(f"{name} axes {i}: colours outside the colour-blind palette {bad}")
    return problems


@pytest.mark.parametrize("name", FIGURES)
def test_every_figure_has_a_title_tick_labels_and_colour_blind_colours(name) -> None:
    problems = [p for entry in _figures(name) for p in figure_problems(entry["name"], entry["anatomy"])]
    assert not problems, problems


def test_the_check_catches_an_unnamed_category_axis() -> None:
    """The defect of issue 23 (11's top-row panels named none of their five bars) is what the check reports."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 1, sharex=True)
    for ax in axes:
        ax.bar(["a", "b"], [1, 2], color=sns.color_palette("colorblind")[0])
    axes[0].set_title("t")
    assert figure_problems("grid", figure_anatomy(fig)) == ["grid panel 0: no xticklabels"]
    axes[0].tick_params(labelbottom=True)
    assert figure_problems("grid", figure_anatomy(fig)) == []
    axes[1].bar(["a"], [3], color="#4c72b0")  # seaborn's default "deep" blue
    assert "colours outside the colour-blind palette" in figure_problems("grid", figure_anatomy(fig))[0]


def test_the_outcome_chart_prints_zero_counts() -> None:
    """Notebook 10's chart labels every bar, so a zero is a printed 0, not a missing bar."""
    summary = pd.DataFrame([{"edit": "rule", "fixed": 0, "changed": 3}, {"edit": "prompt", "fixed": 0, "changed": 0}])
    fig = outcome_figure(summary, ["fixed", "changed"], "What each edit changes")
    labels = [t.get_text() for ax in fig.get_axes() for t in ax.texts]
    assert labels.count("0") == 3 and "3" in labels
    anatomy = figure_anatomy(fig)
    assert anatomy["axes"][0]["title"] == "What each edit changes"
    assert anatomy["axes"][0]["xticklabels"] == ["rule", "prompt"]
    assert all(allowed_colour(c) for c in anatomy["axes"][0]["colours"])


# ------------------------------------------------------------------------------------------- issue 30: two figures


def test_confusion_panels_share_one_colour_scale_and_one_colour_bar() -> None:
    from routebr_kit.evaluation.plots import confusion_figure

    paths = ["DISPATCH", "REJECT"]
    small = pd.DataFrame([[3, 1], [0, 2]], index=paths, columns=paths)
    large = pd.DataFrame([[90, 5], [4, 60]], index=paths, columns=paths)
    fig = confusion_figure({"RouteBR": small, "B1": large}, "confusion")
    meshes = [ax.collections[0] for ax in fig.axes[:2]]
    assert len({m.get_clim() for m in meshes}) == 1 and meshes[0].get_clim() == (0, 90)
    assert len(fig.axes) == 3 and fig.axes[2].get_ylabel() == "cases"  # the one colour bar


def test_difficulty_bars_keep_the_legend_off_the_bars_and_label_zero() -> None:
    from routebr_kit.evaluation.plots import difficulty_figure

    frame = pd.DataFrame({"difficulty": ["easy", "easy", "hard", "hard"], "system": ["RouteBR", "A-ground"] * 2,
                          "exact": [100.0, 95.0, 0.0, 40.0]})
    fig = difficulty_figure(frame, "by difficulty")
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the axes, over no bar
    labels = [t.get_text() for t in ax.texts]
    assert "0%" in labels and len(labels) == 4


@pytest.mark.parametrize("states", [1, 2])
def test_the_figure_1_title_lies_inside_the_figure(states) -> None:
    """Notebook 00's explorer draws one decision: its title (and each panel's) is inside the figure, not clipped."""
    import routebr_kit as rk
    from routebr_kit.dataset.generate import KIT_DATA_DIR
    from routebr_kit.notebook.widgets import decision_paths_figure

    assets = rk.load_assets(KIT_DATA_DIR / "catalog.csv", KIT_DATA_DIR / "boundary_rules.csv")
    etf = rk.Entity("SSE:510300", "ETF", "CSI 300 ETF", ("510300",))
    state = {"identity_verified": True, "entity_resolved": True, "action_permission": True,
             "service_available": True, "context_fresh": True, "safety_escalation_required": False,
             "request_supported": True, "request_scope_clear": True, "policy_version": "v1"}
    request = rk.RouteRequest("FIG1", "Please buy 1,000 units of the CSI 300 ETF.", (), rk.RuntimeState(state), (etf,))
    proposal = {"action_id": "A5_PROTECTED_ACTION", "object_id": "SSE:510300", "topk": ["A5_PROTECTED_ACTION"]}
    decisions = [assets.controller().decide(request, proposal)] * states
    fig = decision_paths_figure(decisions, [f"state {i}" for i in range(states)])
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    for text in [fig._suptitle, *(ax.title for ax in fig.axes)]:
        extent = text.get_window_extent(renderer)
        assert box.x0 <= extent.x0 and extent.x1 <= box.x1 and extent.y1 <= box.y1, (text.get_text(), extent)
