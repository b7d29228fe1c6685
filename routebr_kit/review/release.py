"""The release review in one call: impact → shadow replay → paired diff → gate, as one :class:`Review`.

Impact, shadow and diff are views of one replay of each side (:class:`~routebr_kit.review.shadow.ReviewReplay`: the
base release once, the candidate once), whichever of them asks first.

:func:`release_review` is the single implementation of the flow the paper's §III-D describes; notebook 10's rule
editor (:class:`routebr_kit.notebook.widgets.RuleEditor`), notebook 10 itself and ``routebr-kit review`` all call it,
and ``routebr-kit impact`` / ``shadow`` / ``diff`` share its loading and rendering helpers (:func:`load_review_source`,
:func:`candidate_edit`, :func:`edit_lines`, :func:`impact_lines`, :func:`diff_sentence`)::

    from routebr_kit.review import release_review
    review = release_review("assets/released", "assets/candidate", "runs/", gate="new_false_dispatch <= 0")
    print("\\n".join(review.lines()))
    review.passed  # the gate verdict; review.diff.changed lists every changed row, new false dispatches first

No model is called: the candidate is judged on the recorded proposals (rows whose replay cannot be exact — a
changed prompt, candidate list or rule table in a B2 prompt — are flagged ``needs_live_rerun``, never passed off as
exact; see :mod:`routebr_kit.review.shadow`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from .assets import AssetEdit, AssetFiles, compare_assets
from .change_impact import PAPER_SLICES, ImpactReport, artifact_asset_files, impact
from .diff import ChangeClass, DiffReport, diff_ledgers, split_table
from .gate import Gate, GateResult, default_gate
from .ledgers import LedgerSet, load_ledgers, load_many
from .shadow import ReviewReplay, ShadowResult, parse_options, shadow_ledgers, shadow_replay

#: The columns of a changed-rows table (CLI, Markdown, notebook).
CHANGED_COLUMNS = ("change_class", "task", "case_id", "gold_final_path", "base_final_path", "candidate_final_path",
                   "first_changed_stage", "base_rule", "candidate_rule", "forbidden_cause", "forbidden_rule",
                   "needs_live_rerun")


# --------------------------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class ReviewSource:
    """The recorded ledgers a review judges a candidate on, the release they were recorded under, and a label."""

    ledgers: LedgerSet
    base: AssetFiles
    label: str


def state_schema_file(path: str | Path | None, flag: str) -> Path | None:
    """A state-schema file named on the command line, checked to exist (``None`` passes through)."""
    if path is not None and not Path(path).is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing state-schema JSON file", file=str(path), field=flag)
    return None if path is None else Path(path)


def load_review_source(*, artifact: str | Path | None = None, ledger: Sequence[str | Path] | None = None,
                       cases: str | Path | None = None, base_assets: str | Path | None = None,
                       base_state_schema: str | Path | None = None, details: bool = True) -> ReviewSource:
    """``--artifact DIR`` or ``--ledger RUN_DIR ...`` (with ``--cases``), and the base release.

    The base release is ``base_assets`` when given; else the artifact's published assets (``data/`` and
    ``experiments/prompts.json``); else, for run directories, the folder of ``cases``.  ``base_state_schema`` is the
    runtime-state schema file the runs used (``run --state-schema``; default: ``state_schema.json`` in the base
    assets, else the schema derived from the rules); a run whose manifest recorded another schema hash is refused
    (``INCONSISTENT_ASSETS``) rather than replayed under the wrong schema.  ``details`` loads the per-row decision
    details the diff compares stage by stage (a review needs them; ``shadow`` does not).
    """
    schema = state_schema_file(base_state_schema, "--base-state-schema")
    if (artifact is None) == (not ledger):
        raise DataError(ErrorCode.EMPTY_VALUE, "exactly one of --artifact DIR or --ledger RUN_DIR ...",
                        field="ledger")
    if artifact is not None:
        base = AssetFiles.from_dir(base_assets) if base_assets is not None else artifact_asset_files(artifact)
        return ReviewSource(load_ledgers(artifact, details=details), base.replace(state_schema=schema), str(artifact))
    if base_assets is None and cases is None:
        raise DataError(ErrorCode.EMPTY_VALUE, "--cases FILE (and optionally --base-assets DIR) with --ledger",
                        field="cases")
    base = AssetFiles.from_dir(base_assets if base_assets is not None else Path(cases).parent).replace(
        state_schema=schema)
    label = " ".join(str(p) for p in ledger)
    return ReviewSource(load_many(list(ledger), cases=cases, assets=base.load(), details=details), base, label)


def _files(value: AssetFiles | str | Path) -> AssetFiles:
    return value if isinstance(value, AssetFiles) else AssetFiles.from_dir(value)


def candidate_edit(base: AssetFiles | str | Path, candidate: AssetFiles | str | Path | None = None,
                   **files: str | Path | None) -> AssetEdit:
    """The edit from ``base`` to ``candidate``.

    ``candidate`` is a full release (:class:`AssetFiles`) or a directory laid over the base (it need hold only the
    files it changes); ``files`` (``catalog=``, ``rules=``, ``registry=``, ``prompts=``, ``state_schema=``) swap
    single files in last.
    """
    base_files = _files(base)
    if not isinstance(candidate, AssetFiles):
        candidate = base_files if candidate is None else base_files.overlay(candidate)
    return compare_assets(base_files, candidate.replace(**files))


def _gate(gate: Gate | str | Path | None) -> Gate:
    if isinstance(gate, Gate):
        return gate
    if gate is None:
        return default_gate(replay=True)  # a release review replays recorded proposals
    return Gate.from_arg(str(gate))


def _verdict(gate: Gate, diff: DiffReport, check: Any, releases: Any = None) -> GateResult:
    """``gate`` on ``diff``, plus ``widening <= 0`` when the exact verifier's ``check`` finds the releases differ."""
    if check is not None and check.differs:
        gate = gate.with_widening()
    return gate.evaluate(diff, releases, release_values=None if check is None else {"widening": check.widening})


def _ledgers(ledgers: LedgerSet | str | Path) -> LedgerSet:
    chosen = ledgers if isinstance(ledgers, LedgerSet) else load_ledgers(ledgers)
    for task in chosen.tasks.values():
        if task.system.uses_controller and task.rows and not task.details:
            # without the base decisions' rules and reasons the diff would miss every trace-only change
            raise DataError(ErrorCode.EMPTY_VALUE, "ledgers loaded with decision details "
                            "(load_ledgers(..., details=True), the default)", file=str(task.path), field="details")
    return chosen


# --------------------------------------------------------------------------------------------- the review


class SummaryRow(dict):
    """A review's one-row summary: a plain ``dict`` (``pd.DataFrame([row])`` makes it a table) that also prints as
    a one-row text table, as the rule editor's summary did (``row.to_string(index=False)``)."""

    def to_string(self, index: bool = False) -> str:
        del index  # a one-row summary has no index to show
        return "\n".join(text_table([self]))


@dataclass(frozen=True)
class Review:
    """Everything one release review found: the edit, its exact impact, the shadow replay, the diff, the verdict."""

    edit: AssetEdit
    impact: ImpactReport
    shadow: ShadowResult
    diff: DiffReport
    gate: GateResult
    label: str = ""
    release: Any = None  # the exact verifier's check (routebr_kit.verify.releases.ReleaseCheck)

    @property
    def passed(self) -> bool:
        return self.gate.passed

    def with_gate(self, gate: Gate | str | Path | None) -> Review:
        """The same review judged by another gate (no replay: the gate reads the diff already made)."""
        return replace(self, gate=_verdict(_gate(gate), self.diff, self.release,
                                           (self.edit.base_assets, self.edit.candidate_assets)))

    def summary(self) -> SummaryRow:
        """One row: what was selected, what changed (every change class, so the counts add up to ``changed``),
        the exact-match drop, lost FLIP pairs and the verdict."""
        m = self.diff.metrics()
        row = SummaryRow({"edit": self.label} if self.label else {})
        row |= {"classes": ", ".join(c.value for c in self.edit.classes) or "none",
                "selected (exact)": len(self.impact.selected()), "live re-run rows": len(self.impact.live_rerun),
                "changed": int(m["changed"]), "new false dispatch": int(m["new_false_dispatch"]),
                "new false block": int(m["new_false_block"]), "fixed": int(m["fixed"]),
                "other path change": int(m["other_path_change"]), "trace only": int(m["trace_only"]),
                "exact drop (pp)": round(m["path_exact_drop"], 2), "FLIP pairs lost": int(m["flip_pairs_drop"]),
                "gate": "PASS" if self.passed else "FAIL"}
        return row

    def changed_rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The changed rows (new false dispatches first) as :data:`CHANGED_COLUMNS` records."""
        rows = self.diff.changed if limit is None else self.diff.changed[:limit]
        return [{k: c.as_dict()[k] for k in CHANGED_COLUMNS} for c in rows]

    def lines(self, *, show: int = 20) -> list[str]:
        """The whole review as plain text: edit, impact, shadow, per-split diff, changed rows, gate verdict."""
        out = [*edit_lines(self.edit), *impact_lines(self.impact)]
        s = self.shadow
        out += ["", f"shadow replay: {s.rows} rows, {s.changed} changed decisions, {s.needs_live_rerun} need a live "
                f"re-run; model calls 0", ""]
        out += text_table(split_table(self.diff))
        out += ["", diff_sentence(self.diff)]
        rows = self.changed_rows(show)
        if rows:
            out += ["", *text_table(rows, CHANGED_COLUMNS)]
            if len(self.diff.changed) > show:
                out.append(f"... and {len(self.diff.changed) - show} more (--json for all)")
        release = [] if self.release is None else self.release.lines()
        return [*out, *([""] if release else []), *release, "", *self.gate.lines()]

    def as_dict(self) -> dict[str, Any]:
        return {"label": self.label, "summary": self.summary(), "impact": self.impact.as_dict(),
                "shadow": {"rows": self.shadow.rows, "changed_decisions": self.shadow.changed,
                           "needs_live_rerun": self.shadow.needs_live_rerun, "model_calls": 0,
                           "tasks": self.shadow.summary()},
                "diff": self.diff.as_dict(), "gate": self.gate.as_dict(),
                "release": None if self.release is None else self.release.as_dict()}


def release_review(base: AssetFiles | str | Path, candidate: AssetFiles | AssetEdit | str | Path,
                   ledgers: LedgerSet | str | Path, gate: Gate | str | Path | None = None, *,
                   options: Sequence[str] | Mapping[str, Any] | None = None, label: str = "",
                   allow_widening: Sequence[str] = ()) -> Review:
    """Review ``candidate`` against ``base`` on the recorded ``ledgers``, with no model call.

    * ``base`` — the released assets (:class:`AssetFiles` or a directory);
    * ``candidate`` — a full release, a directory laid over the base (holding only what it changes), or an
      :class:`AssetEdit` already computed (then ``base`` must be its base);
    * ``ledgers`` — a :class:`LedgerSet` loaded with details, or a path :func:`load_ledgers` reads (an artifact, a
      run directory or a shadow output);
    * ``gate`` — a :class:`Gate`, an inline spec or a JSON/YAML file; ``None`` is :data:`DEFAULT_GATE`;
    * ``options`` — controller option overrides for the candidate (``["fallback=DEFER"]``, see ``parse_options``);
    * ``allow_widening`` — actions whose dispatch set may widen.

    Whenever the two releases' rules, catalog, registry or state schema differ, the exact semantic diff
    (:func:`~routebr_kit.verify.releases.release_check`) runs and the gate gains ``widening <= 0``: shadow replay
    sees only the recorded states, the verifier every state.

    Typed errors (:class:`~routebr_kit.core.errors.DataError`, :class:`~routebr_kit.review.diff.NotComparable`) are
    raised, never swallowed.
    """
    chosen_gate = _gate(gate)  # a bad gate fails before any replay
    overrides = parse_options(options)
    if isinstance(candidate, AssetEdit):
        edit = candidate
        if _files(base) != edit.base:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "an edit whose base is the given base", field="base",
                            got=str(edit.base.catalog.parent))
    else:
        edit = candidate_edit(base, candidate)
    recorded = _ledgers(ledgers)
    replay = ReviewReplay(recorded, edit, overrides)  # each side replayed once: impact and shadow are its views
    selection = impact(edit, recorded, overrides, replay=replay)
    shadow = shadow_replay(recorded, edit, overrides, replay=replay)
    report = diff_ledgers(recorded, shadow_ledgers(shadow))
    from ..verify import observations_from_ledgers
    from ..verify.releases import release_check
    check = release_check(edit.base_assets, edit.candidate_assets, observations=observations_from_ledgers(recorded),
                          allow_widening=allow_widening)
    return Review(edit, selection, shadow, report, _verdict(chosen_gate, report, check), label, check)


# --------------------------------------------------------------------------------------------- rendering


def text_table(rows: Sequence[Mapping[str, Any]], columns: Sequence[str] | None = None) -> list[str]:
    """A plain fixed-width table (numbers right-aligned), as lines."""
    if not rows:
        return []
    cols = list(columns or rows[0].keys())
    widths = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in cols}
    out = ["  ".join(str(c).ljust(widths[c]) for c in cols).rstrip(), "  ".join("-" * widths[c] for c in cols)]
    for r in rows:
        out.append("  ".join(str(r.get(c, "")).rjust(widths[c]) if isinstance(r.get(c), (int, float))
                             and not isinstance(r.get(c), bool) else str(r.get(c, "")).ljust(widths[c])
                             for c in cols).rstrip())
    return out


def edit_lines(edit: AssetEdit) -> list[str]:
    """What changed between the two releases, and the paper's regression slice for each edit class."""
    out = [f"changed files: {', '.join(edit.changed_files) or 'none'}; "
           f"edit classes: {', '.join(c.value for c in edit.classes) or 'none'}"]
    if edit.rules_changed:
        out.append(f"rules changed: {', '.join(edit.rules_changed)}")
    if edit.registry_changed:
        out.append("registry changed: " + ", ".join(f"{k} ({v})" for k, v in edit.registry_changed.items()))
    if edit.prompt_stages_changed:
        out.append(f"prompt stages changed: {', '.join(edit.prompt_stages_changed)}")
    if edit.state_schema_changed:
        out.append("runtime-state schema changed (every state is checked against it before anything else)")
    out += [f"paper regression slice for {cls.value}: {PAPER_SLICES[cls]}" for cls in edit.classes]
    return out


def impact_lines(report: ImpactReport, *, rule_rows: int = 20, ledgers: bool = True) -> list[str]:
    """The impact selection: per class paper slice vs exact set, the rows the controller decides differently (with
    the first stage that differs), the live re-run cost and the adapter tests (``ledgers=False``: no recorded rows
    were given, only the adapter tests apply)."""
    out: list[str] = []
    if ledgers:
        out += text_table(report.summary())
        stages = report.stages()
        out.append(f"controller decides differently (exact, from the recorded replies): {len(report.controller)} rows"
                   + (" — first differing stage: " + ", ".join(f"{k} {v}" for k, v in stages.items())
                      if stages else ""))
        if report.controller:
            out += text_table([r.as_dict() for r in report.controller[:rule_rows]],
                              ["task", "case_id", "split", "why", "base_reason", "candidate_reason", "base_rule",
                               "candidate_rule", "base_final_path", "candidate_final_path"])
            if len(report.controller) > rule_rows:
                out.append(f"... and {len(report.controller) - rule_rows} more (--json for all)")
        cost = report.live_cost
        out.append(f"live re-run slice: {cost.rows} rows, {cost.calls} calls, {cost.input_tokens} input + "
                   f"{cost.output_tokens} output tokens" + (f", ${cost.usd}" if cost.usd is not None else
                                                            " (no recorded prices)"))
    out += [f"adapter test [{prop}]: {test}" for prop, test in report.adapter_tests]
    return out


def diff_sentence(report: DiffReport) -> str:
    """``N paired rows; M changed: …`` with every change class (they add up to M)."""
    m = report.metrics()
    parts = ", ".join(f"{int(m[c.value])} {c.value.replace('_', ' ')}" for c in ChangeClass)
    return (f"{report.rows} paired rows; {int(m['changed'])} changed: {parts}; {int(m['needs_live_rerun'])} need a "
            f"live re-run")

# --- notebook 10's recorded traffic and the tables it shows ---------------------------------------------------
# Where the recorded traffic comes from: the published artifact or the kit's simulated benchmark runs.
# ``source="auto"`` uses the artifact whenever :func:`~routebr_kit.store.artifact.find_artifact` finds one (an explicit
# ``artifact_dir``, then ``$ROUTEBR_ARTIFACT``, ``artifacts/routebr/`` and the sibling checkout) and otherwise records
# base runs of the kit's generated benchmark with a simulated backend (a simulation, not model evidence).
# ``"artifact"`` demands the artifact (a typed error when none is found); ``"simulated"`` never reads it.  An explicit
# ``artifact_dir`` that is not an artifact is an error, never a silent fall-back.

SOURCES = ("auto", "artifact", "simulated")
#: The base runs recorded on the kit benchmark: (system, split).
_KIT_TASKS = (("routebr", "MAIN"), ("routebr", "FLIP"), ("routebr", "ENTITY"), ("b2", "FLIP"))
#: How many case IDs a grouped table cell names before it only counts the rest.
CASES_SHOWN = 3


def release_files(source: ReviewSource):
    """The base release's files and the first 16 hex digits of their hashes (a DataFrame)."""
    import pandas as pd

    hashes = source.base.hashes()
    return pd.DataFrame([{"asset": k, "file": Path(v).name if v else "—", "sha256": (hashes[k] or "")[:16]}
                         for k, v in source.base.describe()["files"].items()])


def review_source(source: str = "auto", artifact_dir: str = "", *, seed: int = 0, language: str = "en",
                  profile: str = "sim:deepseek_v4_primary", runs_dir: str = "", out_dir: str = ".") -> ReviewSource:
    """The recorded traffic of notebook 10 (see the comment above :data:`SOURCES`)."""
    from ..store.artifact import ARTIFACT_ENV, find_artifact

    if source not in SOURCES:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(SOURCES), got=source, field="source")
    found = find_artifact(artifact_dir or None) if source != "simulated" else None
    if found is not None:
        ledgers = load_ledgers(found)
        label = f"published artifact `{found}`: {ledgers.rows:,} recorded rows in {len(ledgers.tasks)} result folders"
        return ReviewSource(ledgers, artifact_asset_files(found), label)
    if source == "artifact":
        raise DataError(ErrorCode.FILE_NOT_FOUND, "the published artifact (artifact_dir, "
                        f"${ARTIFACT_ENV}, artifacts/routebr/ or ../shared/routebr_artifact)", field="source")
    return _kit_runs(seed, language, profile, Path(runs_dir) if runs_dir else Path(out_dir) / "runs")


def _kit_runs(seed: int, language: str, profile: str, runs: Path) -> ReviewSource:
    from ..backends.registry import make_backend
    from ..dataset import generate_benchmark, write_benchmark
    from ..prompts import prompt_path
    from ..runs.runner import run_cases
    from ..store.assets import assets_beside
    from ..store.cases import Split, load_cases

    bench = runs / "benchmarks" / f"{language}-{seed}"
    cases_path = bench / "routebr_confirm_320.csv"
    if not cases_path.exists():
        write_benchmark(generate_benchmark(seed, language), bench)
    assets = assets_beside(cases_path)
    cases = [c for c in load_cases(cases_path) if c.split is not Split.DEV]
    folders = []
    for system, split in _KIT_TASKS:
        folder = runs / profile.replace(":", "-") / f"seed-{seed}" / f"{system}-{split.lower()}"
        backend = make_backend(profile, cases=cases, catalog=assets.catalog, seed=seed)
        result = run_cases([c for c in cases if c.split.value == split], backend, system=system, assets=assets,
                           out_dir=folder, resume=True, progress=False, cases_path=cases_path, keep_stale=True)
        if result.stale_note:  # a run of an older kit stays as it was; this review uses a fresh one beside it
            print(result.stale_note)
        folders.append(result.out_dir)
    ledgers = load_many(folders, cases=cases_path, assets=assets)
    label = f"kit benchmark {language}-{seed}, simulated backend {profile} (a simulation, not model evidence)"
    return ReviewSource(ledgers, AssetFiles.from_dir(bench).replace(prompts=prompt_path(language)), label)


def first_match_order(policy, action: str, new_rule_id: str | None = None):
    """The rules that apply to ``action``, in the order the engine tries them (ascending ``(priority, rule_id)``;
    the first whose condition holds decides), as a DataFrame."""
    import pandas as pd

    rows = [{"order": i + 1, "rule_id": r.rule_id, "priority": r.priority, "decision": r.decision.value,
             "applies_to": ", ".join(r.applies_to), "new": r.rule_id == new_rule_id}
            for i, r in enumerate(r for r in policy.rules if "*" in r.applies_to or action in r.applies_to)]
    return pd.DataFrame(rows, columns=["order", "rule_id", "priority", "decision", "applies_to", "new"])


def case_summary(ids: Sequence[str], shown: int = CASES_SHOWN) -> str:
    """Distinct case IDs, sorted, as a bounded cell: the first ``shown`` and how many more (``"A B C +4 more"``)."""
    ids = sorted(set(ids))
    return " ".join(ids[:shown]) + (f" +{len(ids) - shown} more" if len(ids) > shown else "")


def transitions(report: DiffReport):
    """The changed rows of a diff grouped by change class, task, gold path, base → candidate path and winning
    rules (``rows`` per group: the groups add up to the diff's ``changed``; ``cases``: :func:`case_summary` of the
    group's case IDs, so a large group stays one line), as a DataFrame."""
    import pandas as pd

    cols = ["change_class", "task", "gold_final_path", "base_final_path", "candidate_final_path", "base_rule",
            "candidate_rule"]
    frame = pd.DataFrame([c.as_dict() for c in report.changed], columns=[*cols, "case_id"])
    frame[["base_rule", "candidate_rule"]] = frame[["base_rule", "candidate_rule"]].fillna("—")
    grouped = frame.groupby(cols, sort=False).agg(rows=("case_id", "size"), cases=("case_id", case_summary))
    grouped = grouped.reset_index()
    return grouped.sort_values(["change_class", "rows"], ascending=[True, False], kind="stable").reset_index(drop=True)


__all__ = ["CASES_SHOWN", "CHANGED_COLUMNS", "SOURCES", "Review", "ReviewSource", "SummaryRow", "candidate_edit",
           "case_summary", "diff_sentence", "edit_lines", "first_match_order", "impact_lines", "load_review_source",
           "release_files", "release_review", "review_source", "state_schema_file", "text_table", "transitions"]
