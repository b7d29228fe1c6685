"""Interactive exploration for notebooks 00 and 08: controls whose logic runs (and is tested) without a browser.

* :class:`Figure1Explorer` — the paper's Figure 1 as a control: one toggle per runtime-state predicate, the
  proposal (action, object, topk) and the A-state switch; every change re-decides the request with
  :meth:`Controller.decide` and redraws the terminal, the trace and the decision-path figure.
* :class:`RuleEditor` — notebook 10's rule editor: edit (or add) one boundary rule, then review it with the one
  release-review entry point (:func:`routebr_kit.review.release.release_review`: impact → shadow replay → diff →
  gate); its result is an HTML summary whose table and gate lines wrap between words, never inside one.
* :class:`SessionExplorer` — one session step by step: a clock slider, buttons that add identity checks and
  approvals, the amount; the request is re-decided on the session the controls describe (issue 32).
* :class:`MetaRouteExplorer` — sliders for the main executor constants; every change re-runs the fast
  (vectorized, seeded) MetaRoute executor and redraws success, cost and latency per policy.

Both keep their result on the kernel side (``explorer.decision`` / ``explorer.run`` and the ``value`` of plain
HTML widgets), so tests set widget values in Python and assert what was redrawn; the browser test reads the same
state from the page (stable CSS classes: ``routebr-state-<predicate>``, ``routebr-terminal``,
``metaroute-<key>``).  A bad input (an unparsable topk, an invalid configuration) is shown as its typed error,
never as a traceback.  The figure functions live here as well; the closing conclusions of 00 and 08 are
``%%conclusion`` templates in the notebooks themselves.
"""

from __future__ import annotations

import html
import io
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

from ..core.controller import Controller, Decision, TraceStep
from ..core.errors import DataError, ErrorCode, KitError
from ..core.records import NONE, UNRESOLVED, Boundary, RouteRequest, RuntimeState, Terminal
from ..core.rules import rule
from ..metaroute import MetaRouteConfig, Mode, Suite, run_benchmark
from ..metaroute.analysis import summary_frame
from ..metaroute.run import BenchmarkRun
from ..review.assets import AssetFiles, write_release
from ..review.gate import DEFAULT_GATE, Gate
from ..review.ledgers import LedgerSet
from ..review.release import Review, release_review
from ..store.files import parse_json

#: Colour-blind-safe palette of every figure drawn here.
PALETTE = "colorblind"
_TRACE_ORDER = tuple(TraceStep)


def _step_colours() -> dict[str, Any]:
    c = sns.color_palette(PALETTE)
    return {"pass": c[0], "stop": c[3], "dispatch": c[2], "skipped": (0.88, 0.88, 0.88)}


def _step_kind(decision: Decision, step: TraceStep, outcome: str) -> str:
    if step is TraceStep.EMIT:
        return "dispatch" if decision.dispatched else "stop"
    if step is TraceStep.STATE_GATE and decision.rule is not None and decision.options.enforce_state:
        return "pass" if decision.rule.decision.value == "ALLOW" else "stop"
    if step is TraceStep.STATE_GATE and decision.state_errors:
        return "stop"
    if step is TraceStep.VALIDATE and outcome == "invalid" and decision.proposal is None:
        return "stop"
    if step is TraceStep.OBJECT_GATE and decision.terminal is Terminal.CLARIFY:
        return "stop"
    return "pass"


_COUNT = {2: "two", 3: "three", 4: "four"}


def decision_paths_figure(decisions: Sequence[Decision], titles: Sequence[str] | None = None) -> Figure:
    """Each decision's path through the controller as a column of steps, side by side (the paper's Figure 1).

    A step the decision went through is blue, the step that stopped it vermilion, a dispatch green, and a step it
    never reached grey — so two decisions that differ only in one runtime predicate show where they part.
    """
    decisions = list(decisions)
    titles = list(titles) if titles is not None else [d.request_id for d in decisions]
    colours = _step_colours()
    fig, axes = plt.subplots(1, len(decisions), figsize=(4.6 * len(decisions), 5.2), squeeze=False)
    for ax, decision, title in zip(axes[0], decisions, titles):
        events = {e.step: e for e in decision.trace()}
        steps = [s for s in _TRACE_ORDER if s is not TraceStep.REPAIR or s in events]
        for row, step in enumerate(steps):
            y = len(steps) - 1 - row
            event = events.get(step)
            kind = _step_kind(decision, step, event.outcome) if event else "skipped"
            ax.add_patch(FancyBboxPatch((0.04, y + 0.14), 0.92, 0.72, boxstyle="round,pad=0.01,rounding_size=0.08",
                                        facecolor=colours[kind], edgecolor="0.25", lw=0.8, alpha=0.9))
            label = step.value.replace("_", " ").lower()
            text = event.outcome if event else "not reached"
            dark = kind in ("pass", "stop", "dispatch")
            ax.text(0.08, y + 0.62, label, fontsize=9, weight="bold", va="center",
                    color="white" if dark else "0.3")
            ax.text(0.08, y + 0.36, text if len(text) <= 42 else text[:41] + "…", fontsize=8.5, va="center",
                    color="white" if dark else "0.3")
            if row:
                ax.annotate("", (0.5, y + 0.86), (0.5, y + 1.14), arrowprops={"arrowstyle": "-|>", "color": "0.35"})
        ax.set(xlim=(0, 1), ylim=(0, len(steps)), xticks=[], yticks=[])
        ax.set_title(f"{title}\n→ {decision.terminal.value}", fontsize=10)
        for spine in ax.spines.values():
            spine.set_visible(False)
    handles = [FancyBboxPatch((0, 0), 1, 1, facecolor=colours[k], edgecolor="0.25") for k in colours]
    fig.legend(handles, ["passed", "stopped here", "dispatched", "not reached"], loc="lower center", ncol=4,
               frameon=False, fontsize=9)
    heading = ("Figure 1: the proposal through the controller" if len(decisions) == 1 else
               f"Figure 1: the same proposal through the controller under {_COUNT.get(len(decisions), len(decisions))} "
               "runtime states")
    fig.suptitle(heading, fontsize=11)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    return fig


def policy_outcomes_figure(evaluation: Any, title: str = "Success, cost and latency per policy") -> Figure:
    """Three panels — success rate (with its 95% seed-level interval), mean cost, mean latency — per policy."""
    frame = summary_frame(evaluation)
    order = list(frame["policy"])
    colours = dict(zip(order, sns.color_palette(PALETTE, len(order))))
    fig, axes = plt.subplots(1, 3, figsize=(13, 0.38 * len(order) + 1.8), sharey=True)
    panels = (("success_rate", "success rate", "success_ci95"), ("mean_cost", "mean cost", None),
              ("mean_latency_s", "mean latency (s)", None))
    for ax, (column, label, err) in zip(axes, panels):
        ax.barh(order, frame[column], xerr=frame[err] if err else None, color=[colours[p] for p in order],
                edgecolor="0.3", lw=0.5, capsize=3)
        ax.set(xlabel=label)
        if column == "success_rate":
            ax.set_xlim(0, 1)
    axes[0].invert_yaxis()  # shared: best utility on top in every panel
    axes[0].set_ylabel("policy (utility order)")
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _png(fig: Figure) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buffer.getvalue()


def parse_topk(text: str) -> list[str]:
    """``"A5, A3"`` → ``["A5", "A3"]`` (commas or spaces; the controller's contract checks the rest)."""
    return [part for part in text.replace(",", " ").split() if part]


class Figure1Explorer:
    """Toggle runtime-state predicates and edit the proposal; the decision, trace and figure follow.

    ``explorer.decision`` is the current :class:`Decision`; ``explorer.terminal.value`` the HTML the page shows
    (class ``routebr-terminal``, attribute ``data-terminal``); ``explorer.redraws`` counts redraws.
    """

    def __init__(self, controller: Controller, request: RouteRequest, proposal: Mapping[str, Any], *,
                 draw_figure: bool = True) -> None:
        if not isinstance(controller, Controller):
            raise DataError(ErrorCode.WRONG_TYPE, "a Controller", got=controller, field="controller")
        if not isinstance(request, RouteRequest):
            raise DataError(ErrorCode.WRONG_TYPE, "a RouteRequest", got=request, field="request")
        missing = [k for k in ("action_id", "object_id", "topk") if k not in proposal]
        if missing:
            raise DataError(ErrorCode.MISSING_COLUMN, "a proposal with action_id, object_id and topk",
                            field=missing[0], got=dict(proposal))
        self.controller, self.request, self.draw_figure = controller, request, draw_figure
        self.redraws = 0
        self.states: dict[str, widgets.Widget] = {}
        for name, value in request.state.values.items():
            if isinstance(value, bool):
                control = widgets.ToggleButton(value=value, description=name, tooltip=f"runtime state: {name}",
                                               layout=widgets.Layout(width="220px"))
            else:
                control = widgets.Text(value=str(value), description=name,
                                       style={"description_width": "initial"})
            control.add_class("routebr-state")
            control.add_class(f"routebr-state-{name}")
            self.states[name] = control
        objects = [e.object_id for e in request.candidates] + [UNRESOLVED, NONE]
        actions = list(controller.catalog.ids)
        start_object = proposal["object_id"] if proposal["object_id"] in objects else objects[0]
        self.action = widgets.Dropdown(options=actions, value=proposal["action_id"] if proposal["action_id"]
                                       in actions else actions[0], description="action_id")
        self.object = widgets.Dropdown(options=objects, value=start_object, description="object_id")
        self.topk = widgets.Text(value=", ".join(proposal["topk"]), description="topk",
                                 layout=widgets.Layout(width="480px"))
        self.enforce_state = widgets.Checkbox(value=controller.options.enforce_state,
                                              description="enforce state (off = A-state)")
        for control, cls in ((self.action, "routebr-action"), (self.object, "routebr-object"),
                             (self.topk, "routebr-topk"), (self.enforce_state, "routebr-enforce-state")):
            control.add_class(cls)
        self.terminal = widgets.HTML()
        self.terminal.add_class("routebr-terminal-box")
        self.trace_html = widgets.HTML()
        self.trace_html.add_class("routebr-trace")
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="520px"))
        self.decision: Decision | None = None
        self.error: str | None = None
        for control in [*self.states.values(), self.action, self.object, self.topk, self.enforce_state]:
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    # -------------------------------------------------------------------------------------------- inputs
    def state(self) -> RuntimeState:
        """The runtime state the toggles describe (non-boolean fields as typed text)."""
        return RuntimeState({name: control.value for name, control in self.states.items()})

    def proposal(self) -> dict[str, Any]:
        """The proposal the controls describe, as the model's stored first output."""
        return {"action_id": self.action.value, "object_id": self.object.value, "topk": parse_topk(self.topk.value)}

    # -------------------------------------------------------------------------------------------- logic
    def decide(self) -> Decision:
        controller = self.controller
        if controller.options.enforce_state is not self.enforce_state.value:
            controller = controller.with_options(enforce_state=self.enforce_state.value)
        return controller.decide(self.request.with_state(self.state()), self.proposal())

    def update(self) -> Decision | None:
        """Re-decide and redraw; a typed error is shown in place of the result."""
        try:
            decision = self.decide()
        except KitError as exc:
            self.decision, self.error = None, str(exc)
            self.terminal.value = (f'<div class="routebr-terminal" data-terminal="ERROR"><b>not decided:</b> '
                                   f"{html.escape(str(exc))}</div>")
            self.trace_html.value = ""
            return None
        self.decision, self.error = decision, None
        emitted = (f"DISPATCH({decision.action_id}, {decision.object_id})" if decision.dispatched
                   else decision.terminal.value)
        colour = "#009E73" if decision.dispatched else "#D55E00"
        self.terminal.value = (
            f'<div class="routebr-terminal" data-terminal="{decision.terminal.value}" '
            f'style="font-size:1.25em;padding:4px 8px;border-left:6px solid {colour}">'
            f"<b>{html.escape(emitted)}</b> &nbsp; <code>{decision.reason.value}</code>"
            f" &nbsp; rule {html.escape(decision.rule_id or '—')}</div>")
        rows = "".join(f"<tr><td>{e.step.value}</td><td>{html.escape(e.outcome)}</td>"
                       f"<td>{html.escape(e.detail)}</td></tr>" for e in decision.trace())
        self.trace_html.value = ("<table><thead><tr><th>step</th><th>outcome</th><th>detail</th></tr></thead>"
                                 f"<tbody>{rows}</tbody></table>")
        if self.draw_figure:
            self.image.value = _png(decision_paths_figure([decision], ["current controls"]))
        self.redraws += 1
        return decision

    def summary(self) -> str:
        """One static line for papermill / nbval: what the controls currently decide."""
        if self.decision is None:
            return f"not decided: {self.error}"
        d = self.decision
        loaded = self.request.state.values
        changed = ", ".join(f"{k}={v}" for k, v in self.state().values.items() if loaded.get(k) != v)
        gate = "" if self.enforce_state.value else "; state not enforced (A-state)"
        return (f"terminal {d.terminal.value}; path {d.strict_path}; rule {d.rule_id}; reason {d.reason.value}; "
                f"state changed: {changed or 'none'}{gate}")

    @property
    def widget(self) -> widgets.Widget:
        toggles = widgets.GridBox(list(self.states.values()),
                                  layout=widgets.Layout(grid_template_columns="repeat(3, 230px)"))
        controls = widgets.VBox([widgets.HTML("<b>Runtime state</b> (the model never sees it)"), toggles,
                                 widgets.HTML("<b>Proposal</b> (what the model returned)"), self.action,
                                 self.object, self.topk, self.enforce_state])
        box = widgets.VBox([controls, self.terminal, widgets.HBox([self.trace_html, self.image])])
        box.add_class("routebr-figure1-explorer")
        return box


#: The executor constants the explorer exposes: dotted key → (min, max, step).
EXECUTOR_SLIDERS: Mapping[str, tuple[float, float, float]] = {
    "executor.base_success": (0.3, 0.95, 0.01),
    "executor.recovery_success": (0.0, 1.0, 0.02),
    "executor.failure_penalty": (0.0, 0.6, 0.01),
    "executor.mismatch_penalty": (0.0, 0.2, 0.005),
    "executor.coordination_penalty": (0.0, 0.15, 0.005),
    "executor.operations.use_tool.failure": (0.0, 0.5, 0.01),
}


def _config_value(config: MetaRouteConfig, dotted: str) -> Any:
    node: Any = config
    for part in dotted.split("."):
        if not hasattr(node, "__dataclass_fields__") or part not in node.__dataclass_fields__:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a MetaRoute configuration key", field=dotted, got=part)
        node = getattr(node, part)
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        raise DataError(ErrorCode.WRONG_TYPE, "a numeric configuration constant", field=dotted, got=node)
    return node


class MetaRouteExplorer:
    """Sliders over executor constants; each change re-runs the fast executor and redraws the policy panels.

    ``explorer.run`` is the current :class:`BenchmarkRun` (``explorer.overrides()`` the constants it used),
    ``explorer.table.value`` the summary HTML, ``explorer.image.value`` the PNG, ``explorer.redraws`` a count.
    """

    def __init__(self, config: MetaRouteConfig = MetaRouteConfig(), *, seeds: int = 10,
                 sliders: Mapping[str, tuple[float, float, float]] = EXECUTOR_SLIDERS,
                 draw_figure: bool = True) -> None:
        if not isinstance(config, MetaRouteConfig):
            raise DataError(ErrorCode.WRONG_TYPE, "a MetaRouteConfig", got=config, field="config")
        if isinstance(seeds, bool) or not isinstance(seeds, int) or seeds < 1:
            raise DataError(ErrorCode.INVALID_VALUE, "a positive number of seeds", got=seeds, field="seeds")
        self.base, self.draw_figure, self.redraws = config, draw_figure, 0
        self.sliders: dict[str, widgets.FloatSlider] = {}
        for key, (low, high, step) in sliders.items():
            value = _config_value(config, key)
            slider = widgets.FloatSlider(value=value, min=low, max=high, step=step, description=key.split(".", 1)[1],
                                         continuous_update=False, readout_format=".3f",
                                         style={"description_width": "200px"}, layout=widgets.Layout(width="520px"))
            slider.add_class("metaroute-" + key.replace(".", "-").replace("_", "-"))
            self.sliders[key] = slider
        self.seeds = widgets.IntSlider(value=seeds, min=1, max=60, description="seeds", continuous_update=False,
                                       style={"description_width": "200px"}, layout=widgets.Layout(width="520px"))
        self.seeds.add_class("metaroute-seeds")
        self.table = widgets.HTML()
        self.table.add_class("metaroute-summary")
        self.image = widgets.Image(format="png", layout=widgets.Layout(max_width="900px"))
        self.run: BenchmarkRun | None = None
        self.error: str | None = None
        for control in [*self.sliders.values(), self.seeds]:
            control.observe(lambda _change: self.update(), names="value")
        self.update()

    def overrides(self) -> dict[str, float]:
        """The slider values as dotted configuration overrides (rounded to the slider's step)."""
        return {key: round(float(s.value), 6) for key, s in self.sliders.items()}

    def config(self) -> MetaRouteConfig:
        return self.base.with_overrides(self.overrides())

    def update(self) -> BenchmarkRun | None:
        """Re-run the fast executor with the current constants and redraw (typed errors shown, not raised)."""
        try:
            run = run_benchmark(int(self.seeds.value), suite=Suite.MAIN, mode=Mode.FAST, config=self.config())
        except KitError as exc:
            self.run, self.error = None, str(exc)
            self.table.value = f"<b>not run:</b> {html.escape(str(exc))}"
            return None
        self.run, self.error = run, None
        frame = self.frame()
        self.table.value = frame.to_html(index=False, float_format=lambda v: f"{v:.3f}", border=0)
        if self.draw_figure:
            self.image.value = _png(policy_outcomes_figure(
                run.evaluation, f"Fast executor, {self.seeds.value} seeds: success, cost and latency per policy"))
        self.redraws += 1
        return run

    def frame(self) -> pd.DataFrame:
        """The current run's per-policy success, interval, cost, latency and utility (utility order)."""
        if self.run is None:
            return pd.DataFrame(columns=["policy", "success_rate", "success_ci95", "mean_cost", "mean_latency_s",
                                         "utility"])
        return summary_frame(self.run.evaluation)[["policy", "success_rate", "success_ci95", "mean_cost",
                                                   "mean_latency_s", "utility"]]

    def summary(self) -> str:
        """One static line for papermill / nbval: mode, seeds, the best policy by utility (or why nothing ran)."""
        if self.run is None:
            return f"not run: {self.error}"
        top = self.run.evaluation.summaries[0]
        return (f"{self.run.mode.value} mode, {len(self.run.traces.seeds)} seeds, {len(self.run.evaluation.summaries)} "
                f"policies; best utility: {top.policy} (success {top.success_rate:.3f}, cost {top.mean_cost:.2f}, "
                f"latency {top.mean_latency_s:.1f} s)")

    @property
    def widget(self) -> widgets.Widget:
        box = widgets.VBox([*self.sliders.values(), self.seeds, self.image, self.table])
        box.add_class("metaroute-explorer")
        return box


#: The editor's summary: a table whose cells never break inside a word (the notebook's output CSS breaks any
#: character in a ``pre``), scrolling sideways when wider than the cell; the gate lines wrap between words.
REVIEW_CSS = ("<style>.routebr-review-summary {overflow-x: auto; max-width: 100%}"
              " .routebr-review-summary table {border-collapse: collapse; font-size: 0.9em}"
              " .routebr-review-summary th, .routebr-review-summary td {padding: 2px 6px; text-align: right;"
              " white-space: nowrap; word-break: normal; overflow-wrap: normal}"
              " .routebr-review-gate {white-space: pre-wrap; word-break: normal; overflow-wrap: break-word;"
              " font-family: var(--jp-code-font-family, monospace); margin: 4px 0}</style>")


def review_html(review: Review) -> str:
    """A review's one-row summary (every change class, so the counts add up to ``changed``) and its gate lines,
    as HTML that wraps only between words (see :data:`REVIEW_CSS`)."""
    row = review.summary()
    head = "".join(f"<th>{html.escape(str(k))}</th>" for k in row)
    cells = "".join(f"<td>{html.escape(str(v))}</td>" for v in row.values())
    gate = html.escape("\n".join(review.gate.lines()))
    return (f"{REVIEW_CSS}<div class='routebr-review-summary'><table><thead><tr>{head}</tr></thead>"
            f"<tbody><tr>{cells}</tr></tbody></table></div><div class='routebr-review-gate'>{gate}</div>")


class RuleEditor:
    """Widgets for one rule plus the review of the edited program against ``ledgers``.

    All logic runs without a browser: set the widgets' ``value`` in Python and call :meth:`review` (tests do exactly
    that); the button only calls :meth:`show`.  A bad rule (malformed JSON, unknown operator, missing default) is
    shown as its typed error, never as a traceback."""

    def __init__(self, ledgers: LedgerSet, base: AssetFiles, *, rule_id: str = "R065", priority: int = 65,
                 applies_to: tuple[str, ...] = ("A5_PROTECTED_ACTION",),
                 condition: str = '{"policy_version": {"lt": "v2"}}', decision: str = "HANDOFF",
                 version: str = "v2", gate: str = DEFAULT_GATE, workdir: str | Path | None = None) -> None:
        self.ledgers, self.base = ledgers, base
        self.assets = base.load()
        actions = ["*", *self.assets.catalog.ids]
        wide = widgets.Layout(width="90%")
        style = {"description_width": "initial"}
        self.rule_id = widgets.Text(value=rule_id, description="rule_id", style=style)
        self.priority = widgets.IntText(value=priority, description="priority", style=style)
        self.applies_to = widgets.SelectMultiple(options=actions, value=tuple(applies_to), description="applies_to",
                                                 style=style)
        self.condition = widgets.Textarea(value=condition, description="condition", layout=wide, style=style)
        self.decision = widgets.Dropdown(options=[b.value for b in Boundary], value=decision, description="decision",
                                         style=style)
        self.version = widgets.Text(value=version, description="version", style=style)
        self.gate = widgets.Text(value=gate, description="gate", layout=wide, style=style)
        self.button = widgets.Button(description="Review edit", button_style="primary")
        self.result = widgets.HTML(layout=widgets.Layout(width="100%"))  # the last review's summary (HTML)
        self.output = widgets.Output()  # a typed error, when the edit could not be reviewed
        self.button.on_click(lambda _: self.show())
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="rule_editor_"))
        self.last: Review | None = None
        self.error: str | None = None

    @property
    def widget(self) -> widgets.Widget:
        return widgets.VBox([self.rule_id, self.priority, self.applies_to, self.condition, self.decision,
                             self.version, self.gate, self.button, self.result, self.output],
                            layout=widgets.Layout(width="100%"))

    def candidate_rules(self) -> list:
        """The base program with the edited rule replacing (or joining) its namesake."""
        condition = parse_json(self.condition.value, "a JSON object condition", field="condition_json")
        edited = rule(self.rule_id.value.strip(), int(self.priority.value), tuple(self.applies_to.value) or ("*",),
                      condition, self.decision.value, self.version.value.strip() or "v1", "edited in notebook 10")
        return [r for r in self.assets.policy.rules if r.rule_id != edited.rule_id] + [edited]

    def review(self) -> Review:
        """:func:`~routebr_kit.review.release.release_review` of the current widget values (raises typed errors)."""
        gate = Gate.parse(self.gate.value)  # a bad gate fails before the candidate is written
        candidate = write_release(self.workdir / "candidate", self.base, rules=self.candidate_rules())
        self.last = release_review(self.base, candidate, self.ledgers, gate, label=f"rule {self.rule_id.value}")
        return self.last

    def show(self) -> Review | None:
        """:meth:`review` with the result (:func:`review_html`) or the typed error shown below the controls.

        A failed review clears the previous table and verdict: the error is the only thing shown (and
        :attr:`last` is reset), so an error never sits above an earlier edit's result."""
        self.output.clear_output()
        self.result.value = ""
        try:
            outcome = self.review()
        except KitError as exc:
            self.error, self.last = str(exc), None
            with self.output:
                print(f"not reviewed: {exc}")
            return None
        self.error = None
        self.result.value = review_html(outcome)
        return outcome


class SessionExplorer:
    """One session, step by step (issue 32): choose a request, move the clock, add identity checks or approvals,
    change the amount; the request is re-decided on the session the controls describe — the external events and
    the earlier requests' decisions (gold proposals, this controller) up to the clock, plus the events added.

    ``explorer.decision`` is the current decision, ``explorer.terminal.value`` its HTML (``data-terminal``),
    ``explorer.events`` the history it was decided on; ``set_clock`` / ``add_event`` drive it without a browser.
    """

    def __init__(self, controller: Controller, session: Any, *, index: int | None = None) -> None:
        self.controller, self.session = controller, session
        steps = session.steps
        start = index if index is not None else len(steps) - 1
        self.added: list[Any] = []
        self.request_no = widgets.Dropdown(options=[(f"request {i + 1}: {s.utterance[:40]}", i)
                                                    for i, s in enumerate(steps)], value=start, description="request")
        self.clock = widgets.IntSlider(description="clock (s)", continuous_update=False,
                                       style={"description_width": "90px"}, layout=widgets.Layout(width="560px"))
        self.amount = widgets.IntText(description="amount", style={"description_width": "90px"})
        self.add_check = widgets.Button(description="+ identity check now")
        self.add_approval = widgets.Button(description="+ approval now")
        self.clear = widgets.Button(description="clear added events")
        self.terminal, self.history_html = widgets.HTML(), widgets.HTML()
        self.terminal.add_class("routebr-terminal-box")
        self.decision: Any = None
        self.events: tuple[Any, ...] = ()
        self._select(start)
        self.request_no.observe(lambda c: self._select(c["new"]), names="value")
        for control in (self.clock, self.amount):
            control.observe(lambda _c: self.update(), names="value")
        self.add_check.on_click(lambda _b: self.add_event("identity_check"))
        self.add_approval.on_click(lambda _b: self.add_event("approval"))
        self.clear.on_click(lambda _b: (self.added.clear(), self.update()))

    def _earlier(self, index: int) -> list[Any]:
        """The events before request ``index``: external events and the gold proposals' decisions, in order (a
        composite request: one event per decided item)."""
        from ..runs.sessions import router_for, step_events

        history: list[Any] = []
        for step in self.session.steps[:index]:
            d = router_for(self.controller, step).decide(step.request(history, self.session.session_id),
                                                        step.gold_output())
            history += step_events(d, step)
        return history + list(self.session.steps[index].externals)

    def _select(self, index: int) -> None:
        step = self.session.steps[index]
        earlier = self._earlier(index)
        low = max([e.at for e in earlier], default=step.now)
        self.clock.min, self.clock.max = 0, max(self.clock.max, low + 3 * 3600)
        self.clock.min, self.clock.value = low, step.now
        self.amount.value = int(step.attributes.get("amount", 0))
        self.update()

    def set_clock(self, now: int) -> Any:
        self.clock.value = max(self.clock.min, min(int(now), self.clock.max))
        return self.update()

    def add_event(self, kind: str) -> Any:
        from ..core.session import Event

        self.added.append(Event(int(self.clock.value), kind))
        return self.update()

    def update(self) -> Any:
        from ..runs.sessions import decision_summary, router_for

        index, now = self.request_no.value, int(self.clock.value)
        step = self.session.steps[index]
        events = sorted([*self._earlier(index), *(e for e in self.added if e.at <= now)], key=lambda e: e.at)
        self.events = tuple(events)
        attrs = {"amount": int(self.amount.value)} if "amount" in step.attributes or self.amount.value else {}
        moved = type(step)(step.request_id, now, (), step.utterance, step.candidates, step.gold_action,
                           step.gold_object, attrs, step.state, step.items, step.mode)
        try:
            self.decision = router_for(self.controller, step).decide(moved.request(events, self.session.session_id),
                                                                     step.gold_output())
        except KitError as exc:
            self.decision, self.terminal.value = None, f"<b>not decided:</b> {html.escape(str(exc))}"
            return None
        d, shown = self.decision, decision_summary(self.decision)
        colour = "#009E73" if shown["terminal"] == "DISPATCH" else "#D55E00"
        singles = [o.decision for o in d.items if o.decision is not None] if hasattr(d, "items") else [d]
        evidence = "".join(f"<li><code>{html.escape(o)}</code> {html.escape(x)}</li>" for one in singles
                           for o, x in one.temporal_evidence())
        self.terminal.value = (f'<div class="routebr-terminal" data-terminal="{shown["terminal"]}" style="font-size:'
                               f'1.2em;padding:4px 8px;border-left:6px solid {colour}"><b>'
                               f'{html.escape(shown["final_path"])}</b> &nbsp; rule '
                               f'{html.escape(shown["rule_id"] or "—")}</div><ul>{evidence}</ul>')
        rows = "".join(f"<tr><td>{e.at - now}</td><td>{html.escape(e.describe())}</td></tr>" for e in events)
        self.history_html.value = ("<table><thead><tr><th>age (s, negative)</th><th>event</th></tr></thead>"
                                   f"<tbody>{rows}</tbody></table>")
        return d

    def summary(self) -> str:
        """One static line for papermill / nbval."""
        from ..runs.sessions import decision_summary

        if self.decision is None:
            return "not decided"
        shown = decision_summary(self.decision)
        return (f"request {self.request_no.value + 1} at t={self.clock.value} with {len(self.events)} earlier events "
                f"({len(self.added)} added): {shown['final_path']}, rule {shown['rule_id']}")

    @property
    def widget(self) -> widgets.Widget:
        buttons = widgets.HBox([self.add_check, self.add_approval, self.clear])
        box = widgets.VBox([self.request_no, self.clock, self.amount, buttons, self.terminal, self.history_html])
        box.add_class("routebr-session-explorer")
        return box


__all__ = ["EXECUTOR_SLIDERS", "PALETTE", "REVIEW_CSS", "Figure1Explorer", "MetaRouteExplorer", "RuleEditor",
           "SessionExplorer", "decision_paths_figure", "parse_topk", "policy_outcomes_figure", "review_html"]
