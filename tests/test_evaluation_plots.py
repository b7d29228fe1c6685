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
