"""The evaluation figures draw what they claim: one point per backend, two bars per system, the missed pairs."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from routebr_kit.evaluation import pair_grid, score
from routebr_kit.evaluation.plots import fd_fb_figure, pair_grid_figure, screening_figure
from routebr_kit.experiments.replication import LedgerOrigin, artifact_ledgers, paper_runs
from routebr_kit.store.artifact import CONFIRM, SELECT, Artifact


@pytest.fixture(scope="module")
def setup(routebr_artifact):
    artifact = Artifact(routebr_artifact)
    return artifact, paper_runs(artifact_ledgers(artifact, LedgerOrigin.PUBLISHED))


def test_screening_figure_has_one_point_per_backend(setup) -> None:
    artifact, runs = setup
    fig = screening_figure({label: score(rows, artifact.cases(SELECT)) for label, rows in runs.screening.items()})
    ax = fig.axes[0]
    points = sum(len(c.get_offsets()) for c in ax.collections if hasattr(c, "get_offsets"))
    assert points >= 6
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(runs.screening)
    plt.close(fig)


def test_fd_fb_figure_labels_every_bar_with_its_counts(setup) -> None:
    artifact, runs = setup
    pooled = {label: score([*runs.main[label], *runs.flip[label]], artifact.cases(CONFIRM)) for label in runs.main}
    fig = fd_fb_figure(pooled)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert labels == ["0/166", "127/166", "1/166", "1/114", "2/114", "2/114"]
    plt.close(fig)


def test_pair_grid_marks_the_three_missed_routebr_pairs(setup) -> None:
    artifact, runs = setup
    fig = pair_grid_figure(pair_grid(runs.flip, artifact.cases(CONFIRM)))
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.texts] == ["x", "x", "x"]
    assert ax.get_title() == "FLIP pairs; RouteBR misses PAIR-028, PAIR-029, PAIR-032"
    plt.close(fig)


def test_fd_fb_count_labels_sit_above_the_interval_caps(setup) -> None:
    artifact, runs = setup
    pooled = {label: score([*runs.main[label], *runs.flip[label]], artifact.cases(CONFIRM)) for label in runs.main}
    fig = fd_fb_figure(pooled)
    ax = fig.axes[0]
    highs = [100 * c.wilson.high for metric in ("false_dispatch", "false_block")
             for c in (getattr(s, metric) for s in pooled.values())]
    for text, high in zip(ax.texts, highs):
        assert text.xy[1] == pytest.approx(high) and text.get_position()[1] > 0 and text.get_va() == "bottom"
    plt.close(fig)


def test_pair_grid_is_not_red_green(setup) -> None:
    from matplotlib.colors import to_rgb

    from routebr_kit.evaluation.plots import PAIR_MISSED, PAIR_OK

    artifact, runs = setup
    fig = pair_grid_figure(pair_grid(runs.flip, artifact.cases(CONFIRM)))
    colours = {tuple(round(v, 3) for v in to_rgb(c)) for c in (PAIR_OK, PAIR_MISSED)}
    assert colours.isdisjoint({(round(0xd9 / 255, 3), round(0x53 / 255, 3), round(0x4f / 255, 3)),
                               (round(0x5c / 255, 3), round(0xb8 / 255, 3), round(0x5c / 255, 3))})
    red_green = [abs(r - g) > 0.3 and b < 0.4 for r, g, b in colours]
    assert not all(red_green)
    assert "blue" in fig.axes[0].get_xlabel() and "green" not in fig.axes[0].get_xlabel()
    plt.close(fig)


def test_confusion_figure_ticks_do_not_collide(setup) -> None:
    from routebr_kit.evaluation import analysis
    from routebr_kit.evaluation.plots import confusion_figure

    artifact, runs = setup
    fig = confusion_figure({label: analysis.confusion(rows, artifact.cases(CONFIRM))
                            for label, rows in runs.main.items()}, "t")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        boxes = [t.get_window_extent(renderer) for t in ax.get_xticklabels() if t.get_text()]
        assert all(not a.overlaps(b) for a, b in zip(boxes, boxes[1:]))
    plt.close(fig)
