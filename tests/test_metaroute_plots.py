"""MetaRoute figures: titled, readable workload labels, the colour-blind palette."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from routebr_kit.metaroute import Mode, Suite, run_benchmark  # noqa: E402
from routebr_kit.metaroute.plots import differences_figure, workload_figure  # noqa: E402


@pytest.fixture(scope="module")
def evaluation():
    return run_benchmark(3, suite=Suite.ABLATIONS, mode=Mode.FAST).evaluation


def test_workload_figure_has_a_title_and_separate_labels(evaluation) -> None:
    fig = workload_figure(evaluation)
    ax = fig.axes[0]
    assert ax.get_title()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    labels = [t for t in ax.get_xticklabels() if t.get_text()]
    assert all("_" not in t.get_text() for t in labels)
    boxes = [t.get_window_extent(renderer) for t in labels]
    assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
    plt.close(fig)


def test_differences_figure_has_a_title(evaluation) -> None:
    fig = differences_figure(evaluation)
    assert "minus" in fig.axes[0].get_title()
    plt.close(fig)
