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

#: Colour-blind-safe palette of every evaluation figure (seaborn's ``colorblind``, after Okabe & Ito).
PALETTE = "colorblind"
#: Pair grid colours: both members exact (blue) / a member missed (orange) — distinguishable without red/green.
PAIR_OK, PAIR_MISSED = sns.color_palette(PALETTE)[0], sns.color_palette(PALETTE)[1]


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
    sns.scatterplot(data=frame, x="median latency (ms)", y="contract exact (%)", hue="backend", style="backend",
                    s=70, ax=ax, zorder=2, palette=PALETTE)
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
    sns.barplot(data=frame, x="system", y="rate (%)", hue="metric", errorbar=None, ax=ax, palette=PALETTE)
    for container, (_, group) in zip(ax.containers, frame.groupby("metric", sort=False)):
        centres = [bar.get_x() + bar.get_width() / 2 for bar in container]
        ax.errorbar(centres, group["rate (%)"], yerr=[group["rate (%)"] - group["low"],
                                                      group["high"] - group["rate (%)"]],
                    fmt="none", ecolor="0.3", elinewidth=1, capsize=3)
        # the k/n label sits above the interval's upper cap, not on it
        for x, high, text in zip(centres, group["high"], group["label"]):
            ax.annotate(text, (x, high), xytext=(0, 3), textcoords="offset points", ha="center", va="bottom",
                        fontsize="x-small")
    ax.set_ylim(0, 112)
    ax.set_xlabel("")
    ax.set_xticks(ax.get_xticks(), [textwrap.fill(t.get_text(), 14) for t in ax.get_xticklabels()],
                  fontsize="small")
    ax.legend(title="", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    ax.set_title("False dispatch and false block by system (Wilson 95% intervals)")
    fig.tight_layout()
    return fig


def confusion_figure(matrices: Mapping[str, pd.DataFrame], title: str) -> Figure:
    """One annotated gold-by-predicted final-path heatmap per system on ONE colour scale (the same count is the
    same colour in every panel), with one colour bar for all panels and tick labels that do not collide."""
    n = len(matrices)
    vmax = max((int(m.to_numpy().max()) for m in matrices.values() if m.size), default=1) or 1
    fig, axes = plt.subplots(1, n + 1, figsize=(6.4 * n + 0.6, 6.0), squeeze=False,
                             gridspec_kw={"width_ratios": [1.0] * n + [0.05]})
    for ax, (label, matrix) in zip(axes[0][:n], matrices.items()):
        sns.heatmap(matrix, annot=True, fmt="d", cmap="cividis", vmin=0, vmax=vmax, cbar=False, ax=ax,
                    annot_kws={"fontsize": 8})
        ax.set_title(label)
        ax.set_xlabel("predicted final path")
        ax.set_ylabel("gold final path")
        ax.tick_params(axis="x", labelrotation=90, labelsize="x-small")
        ax.tick_params(axis="y", labelrotation=0, labelsize="x-small")
    fig.colorbar(axes[0][0].collections[0], cax=axes[0][n], label="cases")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


def difficulty_figure(frame: pd.DataFrame, title: str, *, value: str = "exact", x: str = "difficulty",
                      hue: str = "system") -> Figure:
    """Grouped bars of a percentage by ``x`` and ``hue``: the legend beside the axes (never over a bar) and every
    bar labelled with its value, so a 0 % bar is seen as 0 %, not as a missing one."""
    fig, ax = plt.subplots(figsize=(9, 4))
    sns.barplot(data=frame, x=x, y=value, hue=hue, palette=PALETTE, ax=ax)
    for bars in ax.containers:
        ax.bar_label(bars, fmt="%.0f%%", fontsize="x-small", padding=2)
    ax.set_ylabel("exact final path (%)")
    ax.set_ylim(0, 110)
    ax.set_title(title)
    ax.legend(title=hue, fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def pair_grid_figure(grid: pd.DataFrame, highlight: str = "RouteBR") -> Figure:
    """FLIP pair correctness (rows: systems, columns: pairs); the ``highlight`` row's missed pairs are marked."""
    values = grid.astype(int)
    fig, ax = plt.subplots(figsize=(12, 0.6 * len(values) + 1.6))
    sns.heatmap(values, cmap=sns.color_palette([PAIR_MISSED, PAIR_OK], as_cmap=True), vmin=0, vmax=1, cbar=False,
                linewidths=0.5, linecolor="white", ax=ax)
    missed = [pair for pair, ok in grid.loc[highlight].items() if not ok] if highlight in grid.index else []
    row = list(grid.index).index(highlight) if missed else 0
    for pair in missed:
        column = list(grid.columns).index(pair)
        ax.text(column + 0.5, row + 0.5, "x", ha="center", va="center", color="white", fontweight="bold")
    ax.set_xlabel("FLIP pair (blue: both members exact; orange: a member missed)")
    ax.set_ylabel("")
    ax.tick_params(axis="x", labelsize="x-small", rotation=90)
    title = f"FLIP pairs; {highlight} misses " + ", ".join(missed) if missed else "FLIP pairs"
    ax.set_title(title)
    fig.tight_layout()
    return fig


def seed_spread_figure(per_seed: pd.DataFrame, published: Mapping[str, float] | None = None, *,
                       title: str = "Simulated screen over seeds") -> Figure:
    """Contract exact match of each simulated backend over seeds (one dot per seed, a box per backend).

    ``per_seed`` has columns ``backend``, ``seed`` and ``contract % (sim)``; ``published`` optionally maps a backend
    to its published contract % (drawn as a labelled diamond, so the in-sample calibration target is visible).
    """
    order = list(dict.fromkeys(per_seed["backend"]))
    fig, ax = plt.subplots(figsize=(8, 0.55 * len(order) + 1.8))
    sns.boxplot(data=per_seed, y="backend", x="contract % (sim)", order=order, color="0.9", fliersize=0, ax=ax,
                width=0.6)
    sns.stripplot(data=per_seed, y="backend", x="contract % (sim)", order=order, hue="backend", hue_order=order,
                  palette=PALETTE, size=4, jitter=0.2, alpha=0.8, legend=False, ax=ax)
    if published:
        xs = [published[b] for b in order if b in published]
        ys = [order.index(b) for b in order if b in published]
        ax.scatter(xs, ys, marker="D", s=60, facecolor="none", edgecolor="black", linewidth=1.5, zorder=3,
                   label="published (in-sample calibration target)")
        ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.16), fontsize="small", frameon=False)
    seeds = per_seed["seed"].nunique()
    ax.set_xlabel(f"contract exact match (%), one dot per seed ({seeds} seeds)")
    ax.set_ylabel("")
    ax.set_title(title)
    fig.tight_layout()
    return fig
