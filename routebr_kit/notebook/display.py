"""Small pandas views of controller records for notebooks (no logic beyond formatting)."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd

from ..core.controller import Decision


def setup() -> None:
    """Stable, readable notebook output: rounded floats, wide text frames, a quiet seaborn theme."""
    import warnings

    pd.set_option("display.precision", 3)
    pd.set_option("display.width", 160)
    pd.set_option("display.max_colwidth", 90)
    pd.set_option("display.max_columns", 30)
    # Only known third-party noise, scoped to the module that raises it; the kit's own warnings stay visible.
    warnings.filterwarnings("ignore", category=FutureWarning, module=r"seaborn\.")
    warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"(jupyter_client|zmq|ipykernel)\.")
    warnings.filterwarnings("ignore", message="IProgress not found")  # tqdm without ipywidgets: bars are off
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")  # every figure: colour-blind safe
    try:  # figures inline even when MPLBACKEND=Agg is set for headless runs
        from IPython import get_ipython

        shell = get_ipython()
        if shell is not None:
            shell.run_line_magic("matplotlib", "inline")
    except ImportError:  # pragma: no cover - IPython comes with ipykernel
        pass


def trace_table(decision: Decision) -> pd.DataFrame:
    """One row per step of the decision's trace."""
    return pd.DataFrame([{"step": t.step.value, "outcome": t.outcome, "detail": t.detail}
                         for t in decision.trace()])


def decisions_table(decisions: Iterable[Decision], *, label: str = "request_id", details: bool = False
                    ) -> pd.DataFrame:
    """One row per decision: what was emitted and why (``details``: also the winning rule's priority, empty without
    a rule, and the model calls made)."""
    rows = []
    for d in decisions:
        extra = {"rule_priority": d.rule.priority if d.rule else "", "calls": d.calls} if details else {}
        rows.append({
            label: d.request_id,
            "terminal": d.terminal.value,
            "final_path": d.final_path,
            "action@object": d.strict_path,
            "winning_rule": d.rule_id or "",
            "rule_decision": d.rule.decision.value if d.rule else "",
            "reason": d.reason.value,
            **extra,
        })
    return pd.DataFrame(rows)


def outcome_figure(summary: pd.DataFrame, classes: list[str], title: str, *, label: str = "edit"):
    """Grouped bars of ``classes`` per ``label`` row (colour-blind palette), each bar labelled with its count so a
    zero shows as a printed 0 rather than a missing bar."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    long = summary.melt(id_vars=label, value_vars=classes, var_name="outcome", value_name="rows")
    fig, ax = plt.subplots(figsize=(10, 4.2))
    sns.barplot(data=long, x=label, y="rows", hue="outcome", palette="colorblind", ax=ax)
    for container in ax.containers:
        ax.bar_label(container, fontsize="x-small", padding=1)
    ax.set_xlabel("")
    ax.set_ylabel("recorded rows")
    ax.set_title(title)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig
