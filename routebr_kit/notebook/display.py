"""Small pandas views of controller records for notebooks (no logic beyond formatting)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

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


class OneLineRows:
    """A DataFrame shown as an HTML table whose cells never wrap. JupyterLab squeezes the columns of a table wider
    than the page and wraps every cell that holds a space, so a grouped table with a ``cases`` column grows rows
    several lines tall; with ``nowrap`` (scoped to this table) each row stays one line and the table scrolls sideways
    instead. The plain-text form is the frame's own, for readers without HTML."""

    STYLE = "<style>.routebr-one-line td, .routebr-one-line th {white-space: nowrap;}</style>"

    def __init__(self, frame: pd.DataFrame) -> None:
        self.frame = frame

    @property
    def data(self) -> str:
        return f'<div class="routebr-one-line">{self.STYLE}{self.frame.to_html()}</div>'

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, str]:
        return {"text/html": self.data, "text/plain": repr(self.frame)}


def one_line_rows(frame: pd.DataFrame) -> OneLineRows:
    """``frame`` for display with one line per row (see :class:`OneLineRows`)."""
    return OneLineRows(frame)


def trace_table(decision: Decision) -> pd.DataFrame:
    """One row per step of the decision's trace."""
    return pd.DataFrame([{"step": t.step.value, "outcome": t.outcome, "detail": t.detail}
                         for t in decision.trace()])


def decisions_table(decisions: Iterable[Decision], *, label: str = "request_id", details: bool = False
                    ) -> pd.DataFrame:
    """One row per decision: what was emitted and why (``details``: also the winning rule's priority, empty without
    a rule, and the model calls made)."""
    return pd.DataFrame([{label: d.request_id, "terminal": d.terminal.value, "final_path": d.final_path,
                          "action@object": d.strict_path, "winning_rule": d.rule_id or "",
                          "rule_decision": d.rule.decision.value if d.rule else "", "reason": d.reason.value,
                          **({"rule_priority": d.rule.priority if d.rule else "", "calls": d.calls} if details else {})}
                         for d in decisions])


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


# --- Conclusion templates ---------------------------------------------------------------------------------------
# A notebook's closing section is Markdown written in the notebook; ``{name}`` / ``{name:.1f}`` fill from a facts
# mapping and ``{?flag|words if true|words if false}`` chooses by a boolean fact (the words may hold placeholders).
# ``{{`` and ``}}`` are literal braces.


class ConclusionError(ValueError):
    """A conclusion template and its facts disagree (a fact missing, unused, or a choice on a non-boolean)."""


def _parse(text: str, i: int, stop: str) -> tuple[list, int]:
    """Parts of ``text`` from ``i`` up to an unmatched character in ``stop``: strings, ("fill", name, spec) and
    ("choose", flag, yes_parts, no_parts)."""
    parts: list = []
    while i < len(text) and text[i] not in stop:
        if text.startswith(("{{", "}}"), i):
            parts.append(text[i])
            i += 2
        elif text[i] == "{" and text.startswith("{?", i):
            bar = text.find("|", i)
            if bar < 0:
                raise ConclusionError(f"choice at {i} has no '|': {text[i:i + 40]!r}")
            yes, j = _parse(text, bar + 1, "|}")
            no, j = _parse(text, j + 1, "}") if j < len(text) and text[j] == "|" else ([], j)
            if j >= len(text):
                raise ConclusionError(f"choice at {i} is not closed: {text[i:i + 40]!r}")
            parts.append(("choose", text[i + 2:bar].strip(), yes, no))
            i = j + 1
        elif text[i] == "{":
            end = text.find("}", i)
            if end < 0:
                raise ConclusionError(f"placeholder at {i} is not closed: {text[i:i + 40]!r}")
            name, _, spec = text[i + 1:end].partition(":")
            parts.append(("fill", name.strip(), spec))
            i = end + 1
        elif text[i] == "}":
            raise ConclusionError(f"unmatched '}}' at {i} (write '}}}}' for a literal brace)")
        else:
            parts.append(text[i])
            i += 1
    return parts, i


def _names(parts: list) -> set[str]:
    out: set[str] = set()
    for p in parts:
        if isinstance(p, tuple):
            out.add(p[1])
            if p[0] == "choose":
                out |= _names(p[2]) | _names(p[3])
    return out


def _fill(parts: list, facts: Mapping[str, Any]) -> str:
    out = []
    for p in parts:
        if isinstance(p, str):
            out.append(p)
        elif p[0] == "fill":
            out.append(format(facts[p[1]], p[2]))
        else:
            flag = facts[p[1]]
            if not isinstance(flag, bool) and type(flag).__name__ not in ("bool", "bool_"):  # numpy's bool too
                raise ConclusionError(f"{{?{p[1]}|…}} needs a boolean fact, got {type(flag).__name__} {flag!r}")
            out.append(_fill(p[2] if flag else p[3], facts))
    return "".join(out)


def render_conclusion(template: str, facts: Mapping[str, Any]) -> str:
    """``template`` filled from ``facts``; refuses a template naming a fact ``facts`` lacks and a fact it never uses
    (every placeholder, in either branch of a choice, counts as a use)."""
    parts, _ = _parse(template, 0, "")
    named = _names(parts)
    missing, unused = sorted(named - set(facts)), sorted(set(facts) - named)
    if missing or unused:
        raise ConclusionError("the conclusion and its facts disagree: "
                              + "; ".join(filter(None, [missing and f"template names facts not computed: {missing}",
                                                        unused and f"facts computed but never used: {unused}"])))
    return _fill(parts, facts)


def conclusion_magic(line: str, cell: str) -> None:
    """``%%conclusion facts``: render the cell (a Markdown template) from the dict named on the magic line."""
    from IPython import get_ipython
    from IPython.display import Markdown, display

    name = line.strip() or "facts"
    namespace = get_ipython().user_ns
    if name not in namespace:
        raise ConclusionError(f"%%conclusion {name}: no variable {name!r} in this notebook (compute it above)")
    display(Markdown(render_conclusion(cell.rstrip("\n"), namespace[name])))
