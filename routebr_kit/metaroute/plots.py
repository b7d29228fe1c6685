"""Seaborn figures of MetaRoute-Bench results (the notebooks only call these)."""

from __future__ import annotations

import textwrap

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure

from .analysis import comparison_frame, summary_frame, workload_frame
from .evaluation import Evaluation

#: Colour-blind-safe palette of every MetaRoute figure.
PALETTE = "colorblind"


def tradeoff_figure(evaluation: Evaluation) -> Figure:
    """The paper's Figure 2: success rate against mean cost and mean latency, with seed-level 95% intervals."""
    frame = summary_frame(evaluation)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for ax, column, label in zip(axes, ("mean_cost", "mean_latency_s"), ("mean cost", "mean latency (s)")):
        ax.errorbar(frame[column], frame["success_rate"], yerr=frame["success_ci95"], fmt="none", ecolor="0.5",
                    elinewidth=1, capsize=3, zorder=1)
        sns.scatterplot(data=frame, x=column, y="success_rate", hue="policy", s=70, ax=ax, legend=False, zorder=2,
                        palette=PALETTE)
        for row in frame.itertuples():
            ax.annotate(row.policy, (getattr(row, column), row.success_rate), textcoords="offset points",
                        xytext=(5, 4), fontsize=8)
        ax.set(xlabel=label, ylabel="success rate")
    fig.suptitle("Success against cost and latency (error bars: 95% seed-level CI)")
    fig.tight_layout()
    return fig


def workload_figure(evaluation: Evaluation) -> Figure:
    """Success rate per policy and workload as an annotated heatmap."""
    frame = workload_frame(evaluation)
    fig, ax = plt.subplots(figsize=(1.3 * len(frame.columns) + 3.5, 0.45 * len(frame) + 2.2))
    sns.heatmap(frame, annot=True, fmt=".3f", cmap="viridis", vmin=0.45, vmax=0.9, ax=ax,
                cbar_kws={"label": "success rate"})
    ax.set(xlabel="workload", ylabel="policy", title="Success rate per policy and workload")
    ax.set_xticks(ax.get_xticks(), [textwrap.fill(str(c).replace("_", " "), 12) for c in frame.columns], rotation=0)
    fig.tight_layout()
    return fig


def action_share_figure(shares: pd.DataFrame, policy: str = "adaptive") -> Figure:
    """Share of a policy's routes that contain each operation, per workload."""
    long = shares.reset_index(names="workload").melt(id_vars="workload", var_name="operation", value_name="share")
    fig, ax = plt.subplots(figsize=(8, 3.8))
    sns.barplot(data=long, x="operation", y="share", hue="workload", ax=ax, palette=PALETTE)
    ax.set(ylim=(0, 1), ylabel="share of routes", title=f"Operations chosen by {policy}")
    sns.move_legend(ax, "upper left", bbox_to_anchor=(1.01, 1), title="workload")
    fig.tight_layout()
    return fig


def differences_figure(evaluation: Evaluation) -> Figure:
    """Paired success differences (treatment minus each baseline) with their 95% intervals, in points."""
    frame = comparison_frame(evaluation).sort_values("success_difference")
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(frame) + 1.4))
    y = np.arange(len(frame))
    ax.errorbar(100 * frame["success_difference"], y, xerr=100 * frame["success_difference_ci95"], fmt="o",
                color=sns.color_palette(PALETTE)[0], capsize=3)
    ax.axvline(0, color="0.4", lw=1, ls="--")
    ax.set_yticks(y, frame["baseline"])
    treatment = frame["treatment"].iloc[0] if len(frame) else ""
    ax.set(xlabel=f"success difference, {treatment} minus baseline (points)", ylabel="",
           title=f"Paired success differences: {treatment} minus each policy (95% seed-level CI)")
    fig.tight_layout()
    return fig


def power_figure(curve: pd.DataFrame, title: str) -> Figure:
    """A paired difference and its interval as the number of seeds grows (log scale; one series per ``mode``)."""
    series = list(curve.groupby("mode", sort=False)) if "mode" in curve else [("", curve)]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for i, (mode, part) in enumerate(series):
        dodge = 1.04 ** (i - (len(series) - 1) / 2)  # side by side on the log axis
        ax.errorbar(part["seeds"] * dodge, part["difference_pts"], yerr=part["ci95_pts"], fmt="o-", capsize=3,
                    label=mode or None, color=sns.color_palette(PALETTE)[i])
    seeds = sorted(curve["seeds"].unique())
    ax.axhline(0, color="0.4", lw=1, ls="--")
    ax.set(xscale="log", xlabel="seeds", ylabel="difference (points)", title=title)
    ax.set_xticks(seeds, [str(n) for n in seeds])
    ax.minorticks_off()
    if len(series) > 1:
        ax.legend(title="mode")
    fig.tight_layout()
    return fig
