"""A rule editor for notebook 10: edit (or add) one boundary rule, then review it with the one release-review
entry point (:func:`routebr_kit.review.release.release_review`: impact → shadow replay → diff → gate).

All logic is in :class:`RuleEditor` and runs without a browser: set the widgets' ``value`` in Python and call
:meth:`RuleEditor.review` (tests do exactly that).  The button only calls the same method.  A bad rule (malformed
JSON, unknown operator, missing default) is shown as its typed error, never as a traceback.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import ipywidgets as widgets
import pandas as pd

from ..core.controller import ControllerOptions
from ..core.errors import KitError
from ..core.records import Boundary
from ..core.rules import rule
from ..review.assets import AssetFiles, write_release
from ..review.gate import DEFAULT_GATE, Gate
from ..review.ledgers import LedgerSet
from ..review.release import Review, release_review
from ..review.shadow import ShadowResult
from ..runs.replay import replay_rows
from ..store.files import parse_json

#: Kept for callers written before :class:`~routebr_kit.review.release.Review` (the one review record).
ReviewOutcome = Review


def summary_frame(review: Review) -> pd.DataFrame:
    """A review's one-row summary (every change class, so the counts add up to ``changed``)."""
    return pd.DataFrame([review.summary()])


class RuleEditor:
    """Widgets for one rule plus the review of the edited program against ``ledgers``."""

    def __init__(self, ledgers: LedgerSet, base: AssetFiles, *, rule_id: str = "R065", priority: int = 65,
                 applies_to: tuple[str, ...] = ("A5_PROTECTED_ACTION",),
                 condition: str = '{"policy_version": {"lt": "v2"}}', decision: str = "HANDOFF",
                 version: str = "v2", gate: str = DEFAULT_GATE, workdir: str | Path | None = None) -> None:
        self.ledgers, self.base = ledgers, base
        self.assets = base.load()
        actions = ["*", *self.assets.catalog.ids]
        self.rule_id = widgets.Text(value=rule_id, description="rule_id")
        self.priority = widgets.IntText(value=priority, description="priority")
        self.applies_to = widgets.SelectMultiple(options=actions, value=tuple(applies_to), description="applies_to")
        self.condition = widgets.Textarea(value=condition, description="condition")
        self.decision = widgets.Dropdown(options=[b.value for b in Boundary], value=decision, description="decision")
        self.version = widgets.Text(value=version, description="version")
        self.gate = widgets.Text(value=gate, description="gate", layout=widgets.Layout(width="90%"))
        self.button = widgets.Button(description="Review edit", button_style="primary")
        self.output = widgets.Output()
        self.button.on_click(lambda _: self.show())
        self.workdir = Path(workdir) if workdir is not None else Path(tempfile.mkdtemp(prefix="rule_editor_"))
        self.last: Review | None = None
        self.error: str | None = None

    @property
    def widget(self) -> widgets.Widget:
        return widgets.VBox([self.rule_id, self.priority, self.applies_to, self.condition, self.decision,
                             self.version, self.gate, self.button, self.output])

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
        """:meth:`review` with the result (or the typed error) written to the output area.

        A failed review clears the previous table and verdict: the error is the only thing shown (and
        :attr:`last` is reset), so an error never sits above an earlier edit's result."""
        self.output.clear_output()
        try:
            outcome = self.review()
        except KitError as exc:
            self.error, self.last = str(exc), None
            with self.output:
                print(f"not reviewed: {exc}")
            return None
        self.error = None
        with self.output:
            print(summary_frame(outcome).to_string(index=False))
            for line in outcome.gate.lines():
                print(line)
        return outcome


def trace_pair(ledgers: LedgerSet, shadow: ShadowResult, task_key: str, case_id: str,
               repeat_id: str = "0") -> pd.DataFrame:
    """A changed case's two traces side by side: the base decision (replayed under the base assets, as recorded:
    the review's own base side when ``shadow`` came from a review of these ``ledgers``) and the shadow decision
    under the candidate."""
    task = ledgers.tasks[task_key]
    at = next(i for i, r in enumerate(task.rows) if (r.case_id, r.repeat_id) == (case_id, repeat_id))
    if shadow.replay is not None and shadow.replay.ledgers is ledgers:
        base = shadow.replay.base(task)[at]  # (replayed once per review, whoever asks first)
    else:
        base = replay_rows(ledgers.assets.controller(ControllerOptions.for_system(task.system)), [task.rows[at]],
                           task.cases, receipts=task.receipts).decisions[0]
    shadow_task = next(t for t in shadow.tasks if t.key == task_key)
    cand = next(r.decision for r in shadow_task.rows if (r.row.case_id, r.row.repeat_id) == (case_id, repeat_id))

    def steps(d) -> dict[str, str]:
        return {e.step.value: f"{e.outcome} — {e.detail}" if e.detail else e.outcome for e in d.trace()}

    a, b = steps(base), steps(cand)
    order = list(dict.fromkeys([*a, *b]))
    return pd.DataFrame({"step": order, "base": [a.get(k, "") for k in order],
                         "candidate": [b.get(k, "") for k in order]})


__all__ = ["ReviewOutcome", "RuleEditor", "summary_frame", "trace_pair"]
