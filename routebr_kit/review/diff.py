"""Paired diff of two ledger sets: what changed, where in the pipeline it changed first, and what it costs.

Rows are paired by ``(task, case_id, repeat_id)``; ``task`` is the result folder relative to the results root
(``select/deepseek_v4_primary/main``).  Two ledger sets are comparable only when they hold the same tasks, each
with the same systems, the same row keys and the same gold labels (:class:`NotComparable` otherwise — the CLI exits
2).

For every changed row the diff names the **first stage that changed** (:class:`ChangeStage`, in pipeline order:
state schema — the verdict on the runtime state, checked before any model call —, proposal, contract/repair,
winning rule and version, object gate, terminal) and its **change class** (:class:`ChangeClass`, the first that
applies): a new forbidden dispatch, a new false dispatch, a new false block, a fix, another path change, or a
trace-only change (same emitted path, different rule or reason).  New forbidden dispatches are listed first, then
new false dispatches.

**Forbidden dispatch** (:mod:`routebr_kit.evaluation.forbidden`) is judged against the rules, not the gold label.
A changed row is a *new forbidden dispatch* when the candidate row dispatches an action/object that the candidate's
release would not dispatch on the row's state, the base row was no forbidden dispatch under the base's release
(each side's release: :mod:`routebr_kit.review.dispatch`), and the candidate's dispatch (action and object) is not
the base's.  It catches what the gold-based FD cannot: a gold-ALLOW row (gold ``A1_ADVISORY``) that newly
dispatches an action a rule blocks there (``A5_PROTECTED_ACTION`` under R050) is no false dispatch, only a path
change.  The same recorded dispatch refused only because the rules tightened (a B1/B2 row kept as recorded, an
A-state row past its bypassed gate) is not new — the candidate did nothing new; it shows in the per-side
``forbidden_dispatch`` totals.  ``new_false_dispatch`` stays the paper's count (gold-bounded rows that newly
dispatch), whatever class its rows are listed under.

Per split (pooled over the tasks of that split): exact match, strict exact, FD and FB with their denominators,
FLIP pairs, object accuracy — each before and after, with Wilson 95% intervals — and the exact McNemar test on the
discordant pairs (:mod:`routebr_kit.evaluation.stats`).  :meth:`DiffReport.metrics` gives the flat numbers a
:mod:`gate <routebr_kit.review.gate>` reads.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from ..core.errors import KitError
from ..core.records import ReasonCode, RouteRequest
from ..evaluation.forbidden import DispatchCheck, DispatchGate, dispatches
from ..evaluation.metrics import Count, first_pass_valid_of, flip_pairs, score
from ..evaluation.paired import drop_lcb, regression_p
from ..evaluation.stats import McNemar, mcnemar
from ..store.cases import Split
from ..store.ledger import PredictionRow
from .dispatch import Releases
from .ledgers import SHADOW_KEY, LedgerSet, LedgerTask, RowDetail


class ChangeStage(str, enum.Enum):
    """Pipeline stages, in order: the first one whose record differs is where a change entered."""

    STATE_SCHEMA = "state_schema"  # the runtime-state verdict (and which fields fail), before any model call
    PROPOSAL = "proposal"
    CONTRACT = "contract/repair"
    RULE = "rule"
    OBJECT_GATE = "object_gate"
    TERMINAL = "terminal"


class ChangeClass(str, enum.Enum):
    NEW_FORBIDDEN_DISPATCH = "new_forbidden_dispatch"
    NEW_FALSE_DISPATCH = "new_false_dispatch"
    NEW_FALSE_BLOCK = "new_false_block"
    FIXED = "fixed"
    OTHER_PATH_CHANGE = "other_path_change"
    TRACE_ONLY = "trace_only"


_CLASS_ORDER = {c: i for i, c in enumerate(ChangeClass)}


class NotComparable(KitError):
    """The two ledger sets cannot be paired (different tasks, row keys, systems or gold labels)."""

    def __init__(self, reasons: Sequence[str]) -> None:
        self.reasons = tuple(reasons)
        shown = "; ".join(self.reasons[:5]) + (f"; and {len(self.reasons) - 5} more" if len(self.reasons) > 5 else "")
        super().__init__(f"ledgers are not comparable: {shown}")


@dataclass(frozen=True, slots=True)
class ChangedRow:
    task: str
    case_id: str
    repeat_id: str
    split: str
    gold_final_path: str
    base_final_path: str
    candidate_final_path: str
    base_strict_path: str
    candidate_strict_path: str
    first_changed_stage: ChangeStage
    change_class: ChangeClass
    became_wrong: bool
    needs_live_rerun: bool
    base_detail: RowDetail | None = None
    candidate_detail: RowDetail | None = None
    base_check: DispatchCheck | None = None
    candidate_check: DispatchCheck | None = None

    @property
    def new_false_dispatch(self) -> bool:
        """The paper's new false dispatch: a gold-bounded row that dispatches now and did not before."""
        return (self.gold_final_path.startswith("T_") and dispatches(self.candidate_final_path)
                and not dispatches(self.base_final_path))

    def as_dict(self) -> dict[str, Any]:
        def rule(d: RowDetail | None) -> str | None:
            return None if d is None or d.rule_id is None else f"{d.rule_id}@{d.rule_version}->{d.rule_decision}"

        return {"task": self.task, "case_id": self.case_id, "repeat_id": self.repeat_id, "split": self.split,
                "gold_final_path": self.gold_final_path, "base_final_path": self.base_final_path,
                "candidate_final_path": self.candidate_final_path, "base_strict_path": self.base_strict_path,
                "candidate_strict_path": self.candidate_strict_path,
                "first_changed_stage": self.first_changed_stage.value, "change_class": self.change_class.value,
                "became_wrong": self.became_wrong, "needs_live_rerun": self.needs_live_rerun,
                "base_rule": rule(self.base_detail), "candidate_rule": rule(self.candidate_detail),
                "base_reason": self.base_detail.reason if self.base_detail else None,
                "candidate_reason": self.candidate_detail.reason if self.candidate_detail else None,
                "base_forbidden": self.base_check.forbidden if self.base_check else None,
                "candidate_forbidden": self.candidate_check.forbidden if self.candidate_check else None,
                "forbidden_cause": (self.candidate_check.cause.value
                                    if self.candidate_check and self.candidate_check.cause else None),
                "forbidden_rule": (self.candidate_check.rule_id
                                   if self.candidate_check and self.candidate_check.cause else None)}


@dataclass(frozen=True, slots=True)
class Side:
    """One side's counts on one split."""

    exact: Count
    strict: Count
    false_dispatch: Count
    false_block: Count
    object: Count
    flip_pairs: Count | None
    forbidden_dispatch: Count = Count(0, 0)  # over every row of the side

    def as_dict(self, prefix: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in (f.name for f in fields(self)):
            count = getattr(self, name)
            if count is None:
                continue
            low, high = count.wilson
            out |= {f"{prefix}_{name}": count.hits, f"{prefix}_{name}_n": count.n,
                    f"{prefix}_{name}_rate": count.rate, f"{prefix}_{name}_wilson_low": low,
                    f"{prefix}_{name}_wilson_high": high}
        return out


@dataclass(frozen=True, slots=True)
class SplitDelta:
    split: str
    rows: int
    base: Side
    candidate: Side
    mcnemar: McNemar

    @property
    def exact_drop_pp(self) -> float:
        return 100.0 * (self.base.exact.rate - self.candidate.exact.rate) if self.rows else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {"split": self.split, "rows": self.rows, **self.base.as_dict("base"),
                **self.candidate.as_dict("candidate"), "exact_drop_pp": self.exact_drop_pp,
                "mcnemar": self.mcnemar.as_dict()}


def _sum(counts: Sequence[Count]) -> Count:
    return Count(sum(c.hits for c in counts), sum(c.n for c in counts))


@dataclass(frozen=True)
class DiffReport:
    base_root: str
    candidate_root: str
    changed: tuple[ChangedRow, ...]
    splits: tuple[SplitDelta, ...]
    total: SplitDelta
    rows: int
    needs_live_rerun: int
    tasks: tuple[str, ...] = field(default_factory=tuple)

    def metrics(self, split: str | None = None) -> dict[str, float]:
        """The numbers a gate reads, over every row or over one split."""
        if split is None:
            chosen, delta = self.changed, self.total
        else:
            matches = [s for s in self.splits if s.split == split]
            delta = matches[0] if matches else None
            chosen = tuple(c for c in self.changed if c.split == split)
        out: dict[str, float] = {
            "changed": len(chosen),
            "new_forbidden_dispatch": sum(c.change_class is ChangeClass.NEW_FORBIDDEN_DISPATCH for c in chosen),
            "new_false_dispatch": sum(c.new_false_dispatch for c in chosen),
            "new_false_block": sum(c.change_class is ChangeClass.NEW_FALSE_BLOCK for c in chosen),
            "fixed": sum(c.change_class is ChangeClass.FIXED for c in chosen),
            "other_path_change": sum(c.change_class is ChangeClass.OTHER_PATH_CHANGE for c in chosen),
            "trace_only": sum(c.change_class is ChangeClass.TRACE_ONLY for c in chosen),
            "new_errors": sum(c.became_wrong for c in chosen),
            "needs_live_rerun": (self.needs_live_rerun if split is None
                                 else sum(c.needs_live_rerun for c in chosen)),
        }
        if delta is None:
            return out | {"path_exact_regression_p": 1.0, "path_exact_drop_lcb": 0.0,
                          "path_exact_drop": 0.0, "strict_exact_drop": 0.0, "object_accuracy_drop": 0.0,
                          "flip_pairs_drop": 0, "false_dispatch_increase": 0, "false_block_increase": 0,
                          "forbidden_dispatch": 0, "forbidden_dispatch_increase": 0}
        b, c = delta.base, delta.candidate

        def drop_pp(x: Count, y: Count) -> float:
            return 100.0 * (x.rate - y.rate) if x.n and y.n else 0.0

        flips = (b.flip_pairs.hits - c.flip_pairs.hits) if b.flip_pairs and c.flip_pairs else 0
        m = delta.mcnemar  # base-only correct = regressions, candidate-only correct = fixes
        out |= {"path_exact_regression_p": regression_p(m.a_only_correct, m.b_only_correct),
                "path_exact_drop_lcb": drop_lcb(m.a_only_correct, m.b_only_correct, m.paired)}
        return out | {"path_exact_drop": drop_pp(b.exact, c.exact), "strict_exact_drop": drop_pp(b.strict, c.strict),
                      "object_accuracy_drop": drop_pp(b.object, c.object), "flip_pairs_drop": flips,
                      "false_dispatch_increase": c.false_dispatch.hits - b.false_dispatch.hits,
                      "false_block_increase": c.false_block.hits - b.false_block.hits,
                      "forbidden_dispatch": c.forbidden_dispatch.hits,
                      "forbidden_dispatch_increase": c.forbidden_dispatch.hits - b.forbidden_dispatch.hits}

    def as_dict(self) -> dict[str, Any]:
        return {"base": self.base_root, "candidate": self.candidate_root, "rows": self.rows,
                "changed": [c.as_dict() for c in self.changed], "needs_live_rerun": self.needs_live_rerun,
                "metrics": self.metrics(), "splits": [s.as_dict() for s in self.splits], "total": self.total.as_dict()}


# --------------------------------------------------------------------------------------------- pairing


def check_comparable(base: LedgerSet, candidate: LedgerSet) -> None:
    reasons: list[str] = []
    only_base = sorted(base.tasks.keys() - candidate.tasks.keys())
    only_cand = sorted(candidate.tasks.keys() - base.tasks.keys())
    if only_base:
        reasons.append("tasks only in BASE: " + ", ".join(only_base[:5]))
    if only_cand:
        reasons.append("tasks only in CANDIDATE: " + ", ".join(only_cand[:5]))
    for key in sorted(base.tasks.keys() & candidate.tasks.keys()):
        a, b = base.tasks[key], candidate.tasks[key]
        if a.system is not b.system:
            reasons.append(f"{key}: system {a.system.value} vs {b.system.value}")
        ka, kb = set(a.row_keys()), set(b.row_keys())
        if ka != kb:
            missing, extra = sorted(ka - kb), sorted(kb - ka)
            reasons.append(f"{key}: different case sets ({len(missing)} rows only in BASE, e.g. "
                           f"{missing[:2]}; {len(extra)} only in CANDIDATE, e.g. {extra[:2]})")
        elif a.gold_sha256 != b.gold_sha256:
            reasons.append(f"{key}: different gold labels (gold sha256 {a.gold_sha256[:12]} vs {b.gold_sha256[:12]})")
    if reasons:
        raise NotComparable(reasons)


def _flagged(task: LedgerTask) -> set[tuple[str, str]]:
    entries = (task.manifest.get(SHADOW_KEY) or {}).get("needs_live_rerun") or []
    return {(str(e["case_id"]), str(e.get("repeat_id", "0"))) for e in entries}


def first_changed_stage(a: PredictionRow, b: PredictionRow, da: RowDetail | None,
                        db: RowDetail | None) -> ChangeStage | None:
    """The first pipeline stage whose record differs between two rows of the same case (``None``: no change)."""
    if _state_changed(a, b, da, db):
        return ChangeStage.STATE_SCHEMA
    if a.valid_json and b.valid_json and ((a.pred_action, a.topk) != (b.pred_action, b.topk)
                                          or (a.pred_object_id != b.pred_object_id and a.pred_object_id != "UNRESOLVED"
                                              and b.pred_object_id != "UNRESOLVED")):
        return ChangeStage.PROPOSAL
    if (a.valid_json, a.fallback_used, first_pass_valid_of(a)) != (b.valid_json, b.fallback_used,
                                                                    first_pass_valid_of(b)) \
            or (da is not None and db is not None and da.repair_attempted != db.repair_attempted):
        return ChangeStage.CONTRACT
    if da is not None and db is not None and (da.rule_id, da.rule_version, da.rule_decision) != (
            db.rule_id, db.rule_version, db.rule_decision):
        return ChangeStage.RULE
    if (da is not None and db is not None and da.object_resolution != db.object_resolution) \
            or a.pred_object_id != b.pred_object_id:
        return ChangeStage.OBJECT_GATE
    if (a.pred_final_path, a.pred_boundary, a.strict_path) != (b.pred_final_path, b.pred_boundary, b.strict_path) \
            or (da is not None and db is not None and da.reason != db.reason):
        return ChangeStage.TERMINAL
    return None


_INVALID_STATE = ReasonCode.FAIL_CLOSED_INVALID_STATE.value


def _state_changed(a: PredictionRow, b: PredictionRow, da: RowDetail | None, db: RowDetail | None) -> bool:
    """Whether the state-schema verdict differs: the violations (``CODE:field``) when both sides carry decision
    details, else whether each side's state failed its schema at all."""
    if da is not None and db is not None:
        return (da.state_errors, da.reason == _INVALID_STATE) != (db.state_errors, db.reason == _INVALID_STATE)

    def failed(row: PredictionRow, d: RowDetail | None) -> bool:
        return d.reason == _INVALID_STATE if d is not None else row.error_code == _INVALID_STATE

    return failed(a, da) != failed(b, db)


def change_class(gold_path: str, a: PredictionRow, b: PredictionRow, base_forbidden: bool = False,
                 candidate_forbidden: bool = False) -> ChangeClass:
    """The first class that applies, in :class:`ChangeClass` order (``*_forbidden``: each side's verdict under its
    release, :class:`~routebr_kit.evaluation.forbidden.DispatchCheck`)."""
    bounded, a_dispatched, b_dispatched = (gold_path.startswith("T_"), dispatches(a.pred_final_path),
                                           dispatches(b.pred_final_path))
    if candidate_forbidden and not base_forbidden and (a.pred_final_path, a.pred_object_id) != (
            b.pred_final_path, b.pred_object_id):
        return ChangeClass.NEW_FORBIDDEN_DISPATCH
    if bounded and b_dispatched and not a_dispatched:
        return ChangeClass.NEW_FALSE_DISPATCH
    if not bounded and not b_dispatched and a_dispatched:
        return ChangeClass.NEW_FALSE_BLOCK
    if a.pred_final_path != gold_path and b.pred_final_path == gold_path:
        return ChangeClass.FIXED
    if (a.pred_final_path, a.strict_path) != (b.pred_final_path, b.strict_path):
        return ChangeClass.OTHER_PATH_CHANGE
    return ChangeClass.TRACE_ONLY


def _side(tasks: Sequence[tuple[LedgerTask, Sequence[PredictionRow], DispatchGate]]) -> Side:
    scores, pairs = [], []
    for task, rows, gate in tasks:
        scores.append(score(rows, task.cases, gate))
        for repeat in sorted({r.repeat_id for r in rows}):
            chosen = [r for r in rows if r.repeat_id == repeat]
            if chosen and all(task.cases[r.case_id].split is Split.FLIP for r in chosen):
                pairs.append(flip_pairs(chosen, task.cases).pairs)
    return Side(_sum([s.contract_exact for s in scores]), _sum([s.strict_exact for s in scores]),
                _sum([s.false_dispatch for s in scores]), _sum([s.false_block for s in scores]),
                _sum([s.object for s in scores]), _sum(pairs) if pairs else None,
                _sum([s.forbidden_dispatch for s in scores if s.forbidden_dispatch is not None]))


_Item = tuple[LedgerTask, list[PredictionRow], list[PredictionRow], DispatchGate, DispatchGate]


class _AskedOnce(DispatchGate):
    """A release's dispatch gate asked at most once per row within one diff: the per-split and overall scores and
    the changed rows read the same verdicts (rows are held by the diff, so their ``id`` stays theirs)."""

    __slots__ = ("_verdicts",)

    def __init__(self, gate: DispatchGate) -> None:
        self.controller = gate.controller
        self._verdicts: dict[int, DispatchCheck] = {}

    def check(self, row: PredictionRow, request: RouteRequest) -> DispatchCheck:
        found = self._verdicts.get(id(row))
        if found is None:
            found = self._verdicts[id(row)] = super().check(row, request)
        return found


def _delta(name: str, items: Sequence[_Item]) -> SplitDelta:
    base = _side([(t, a, ga) for t, a, _, ga, _ in items])
    cand = _side([(t, b, gb) for t, _, b, _, gb in items])
    a_ok = {f"{t.key}|{r.case_id}|{r.repeat_id}": r.pred_final_path == t.cases[r.case_id].gold.final_path
            for t, rows, _, _, _ in items for r in rows}
    b_ok = {f"{t.key}|{r.case_id}|{r.repeat_id}": r.pred_final_path == t.cases[r.case_id].gold.final_path
            for t, _, rows, _, _ in items for r in rows}
    return SplitDelta(name, sum(len(a) for _, a, *_ in items), base, cand, mcnemar(a_ok, b_ok))


def diff_ledgers(base: LedgerSet, candidate: LedgerSet, *, state_schema: str | Path | None = None) -> DiffReport:
    """Pair two ledger sets and report every change (raises :class:`NotComparable`).

    ``state_schema``: for run directories, the runtime-state schema file their runs used (``run --state-schema``)
    when it is not the ``state_schema.json`` beside their cases — the release forbidden dispatches are judged under
    (its hash is checked against the one each run's manifest recorded).
    """
    check_comparable(base, candidate)
    changed: list[ChangedRow] = []
    by_split: dict[str, list[_Item]] = {}
    flagged_total = 0
    releases_a, releases_b = Releases(base, state_schema), Releases(candidate, state_schema)
    for key in sorted(base.tasks):
        ta, tb = base.tasks[key], candidate.tasks[key]
        ga, gb = _AskedOnce(releases_a.gate(ta)), _AskedOnce(releases_b.gate(tb))
        rows_b = {(r.case_id, r.repeat_id): r for r in tb.rows}
        flagged = _flagged(tb)
        flagged_total += len(flagged)
        per_split: dict[str, tuple[list[PredictionRow], list[PredictionRow]]] = {}
        for a in ta.rows:
            k = (a.case_id, a.repeat_id)
            b = rows_b[k]
            case = ta.cases[a.case_id]
            split = case.split.value
            pa, pb = per_split.setdefault(split, ([], []))
            pa.append(a)
            pb.append(b)
            da, db = ta.details.get(k), tb.details.get(k)
            stage = first_changed_stage(a, b, da, db)
            if stage is None:
                continue
            ka, kb = ga.check(a, case.request), gb.check(b, case.request)
            gold = case.gold.final_path
            changed.append(ChangedRow(key, a.case_id, a.repeat_id, split, gold, a.pred_final_path, b.pred_final_path,
                                      a.strict_path, b.strict_path, stage,
                                      change_class(gold, a, b, ka.forbidden, kb.forbidden),
                                      a.pred_final_path == gold and b.pred_final_path != gold, k in flagged, da, db,
                                      ka, kb))
        for split, (pa, pb) in per_split.items():
            by_split.setdefault(split, []).append((ta, pa, pb, ga, gb))
    order = [s.value for s in Split]
    splits = tuple(_delta(s, by_split[s]) for s in sorted(by_split, key=lambda s: order.index(s) if s in order else 99))
    everything = [item for s in by_split for item in by_split[s]]
    changed.sort(key=lambda c: (_CLASS_ORDER[c.change_class], c.task, c.case_id, c.repeat_id))
    return DiffReport(str(base.root), str(candidate.root), tuple(changed), splits, _delta("ALL", everything),
                      base.rows, flagged_total, tuple(sorted(base.tasks)))


# --------------------------------------------------------------------------------------------- rendering


def _pct(c: Count) -> str:
    if not c.n:
        return "–"
    low, high = c.wilson
    return f"{c.hits}/{c.n} ({100 * c.rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}])"


def split_table(report: DiffReport) -> list[dict[str, Any]]:
    """One row per split plus ALL: before → after with Wilson 95% and the McNemar split and p-value."""
    out = []
    for s in (*report.splits, report.total):
        m = s.mcnemar
        out.append({"split": s.split, "rows": s.rows, "exact base": _pct(s.base.exact),
                    "exact candidate": _pct(s.candidate.exact), "FD base": str(s.base.false_dispatch),
                    "FD candidate": str(s.candidate.false_dispatch), "FB base": str(s.base.false_block),
                    "FB candidate": str(s.candidate.false_block),
                    "forbidden base": str(s.base.forbidden_dispatch),
                    "forbidden candidate": str(s.candidate.forbidden_dispatch),
                    "FLIP pairs": (f"{s.base.flip_pairs} -> {s.candidate.flip_pairs}" if s.base.flip_pairs else "–"),
                    "object": f"{s.base.object} -> {s.candidate.object}",
                    "McNemar base:candidate": m.split, "p": round(m.p_two_sided, 4)})
    return out


def markdown(report: DiffReport, gate_lines: Sequence[str] = ()) -> str:
    """A review-ready Markdown report: gate verdict, per-split deltas, changed rows (new forbidden dispatches first,
    then new false dispatches)."""
    m = report.metrics()
    lines = ["# Release diff", "", f"* base: `{report.base_root}`", f"* candidate: `{report.candidate_root}`",
             f"* paired rows: {report.rows}; changed: {m['changed']} (new forbidden dispatch "
             f"{m['new_forbidden_dispatch']}, new false dispatch {m['new_false_dispatch']}, "
             f"new false block {m['new_false_block']}, fixed {m['fixed']}, other path change "
             f"{m['other_path_change']}, trace only {m['trace_only']}); needs live re-run: {m['needs_live_rerun']}",
             ""]
    if gate_lines:
        lines += ["## Gate", "", *[f"* {line}" for line in gate_lines], ""]
    table = split_table(report)
    cols = list(table[0].keys())
    lines += ["## Per split (Wilson 95%; exact McNemar on discordant pairs)", "",
              "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in table]
    lines += ["", "## Changed rows", ""]
    if report.changed:
        cols = ["change_class", "task", "case_id", "repeat_id", "gold_final_path", "base_final_path",
                "candidate_final_path", "first_changed_stage", "base_rule", "candidate_rule", "forbidden_cause",
                "forbidden_rule", "needs_live_rerun"]
        lines += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        lines += ["| " + " | ".join(str(c.as_dict()[k]) for k in cols) + " |" for c in report.changed]
    else:
        lines.append("No decision changed.")
    return "\n".join(lines) + "\n"


__all__ = ["ChangeClass", "ChangeStage", "ChangedRow", "DiffReport", "NotComparable", "SplitDelta",
           "change_class", "check_comparable", "diff_ledgers", "first_changed_stage", "markdown", "split_table"]
