"""Seaborn figures of the evaluation: screening accuracy versus latency, FD/FB by system, the FLIP pair grid.

Each function takes scored results and returns a matplotlib figure (save it with ``Outputs.figure``).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from .metrics import Scores


def screening_figure(scores: Mapping[str, Scores]) -> Figure:
    """Contract exact match (with its Wilson 95% interval) against median latency, one point per backend."""
    frame = pd.DataFrame([{
        "backend": label,
        "median latency (ms)": s.latency_ms_median,
        "contract exact (%)": 100 * s.contract_exact.rate,
        "low": 100 * s.contract_exact.wilson.low,
        "high": 100 * s.contract_exact.wilson.high,
    } for label, s in scores.items()])
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    ax.errorbar(frame["median latency (ms)"], frame["contract exact (%)"],
                yerr=[frame["contract exact (%)"] - frame["low"], frame["high"] - frame["contract exact (%)"]],
                fmt="none", ecolor="0.6", elinewidth=1, capsize=3, zorder=1)
    sns.scatterplot(data=frame, x="median latency (ms)", y="contract exact (%)", hue="backend", s=70, ax=ax,
                    zorder=2)
    ax.set_title("Backend screening on SELECT-160 (Wilson 95% intervals)")
    ax.legend(title="backend", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def fd_fb_figure(scores: Mapping[str, Scores]) -> Figure:
    """False dispatch and false block rates per system, with Wilson 95% intervals and ``k/n`` labels."""
    records = []
    for label, s in scores.items():
        for metric, count in (("false dispatch", s.false_dispatch), ("false block", s.false_block)):
            interval = count.wilson
            records.append({"system": label, "metric": metric, "rate (%)": 100 * count.rate,
                            "low": 100 * interval.low, "high": 100 * interval.high, "label": str(count)})
    frame = pd.DataFrame(records)
    fig, ax = plt.subplots(figsize=(11, 4.8))
    sns.barplot(data=frame, x="system", y="rate (%)", hue="metric", errorbar=None, ax=ax)
    for container, (_, group) in zip(ax.containers, frame.groupby("metric", sort=False)):
        centres = [bar.get_x() + bar.get_width() / 2 for bar in container]
        ax.errorbar(centres, group["rate (%)"], yerr=[group["rate (%)"] - group["low"],
                                                      group["high"] - group["rate (%)"]],
                    fmt="none", ecolor="0.3", elinewidth=1, capsize=3)
        ax.bar_label(container, labels=list(group["label"]), padding=2, fontsize="x-small")
    ax.set_ylim(0, 105)
    ax.set_xlabel("")
    ax.set_xticks(ax.get_xticks(), [textwrap.fill(t.get_text(), 14) for t in ax.get_xticklabels()],
                  fontsize="small")
    ax.legend(title="", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("False dispatch and false block by system (Wilson 95% intervals)")
    fig.tight_layout()
    return fig


def pair_grid_figure(grid: pd.DataFrame, highlight: str = "RouteBR") -> Figure:
    """FLIP pair correctness (rows: systems, columns: pairs); the ``highlight`` row's missed pairs are marked."""
    values = grid.astype(int)
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(values) + 1.6))
    sns.heatmap(values, cmap=sns.color_palette(["#d9534f", "#5cb85c"], as_cmap=True), vmin=0, vmax=1, cbar=False,
                linewidths=0.5, linecolor="white", ax=ax)
    missed = [pair for pair, ok in grid.loc[highlight].items() if not ok] if highlight in grid.index else []
    row = list(grid.index).index(highlight) if missed else 0
    for pair in missed:
        column = list(grid.columns).index(pair)
        ax.text(column + 0.5, row + 0.5, "x", ha="center", va="center", color="white", fontweight="bold")
    ax.set_xlabel("FLIP pair (green: both members exact; red: a member missed)")
    ax.set_ylabel("")
    ax.tick_params(axis="x", labelsize="x-small", rotation=90)
    title = f"FLIP pairs; {highlight} misses " + ", ".join(missed) if missed else "FLIP pairs"
    ax.set_title(title)
    fig.tight_layout()
    return fig
