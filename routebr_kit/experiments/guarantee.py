"""RouteBR's structural guarantee, measured: it never dispatches what the rules forbid *for the proposed action*.

That is not "never a false dispatch".  The controller commits to the action the model proposed and asks the rules
about that action; when the model misreads the request (proposes A2 where the customer asked for A3) and the rules
allow A2 on this state while they would have blocked A3, RouteBR dispatches A2 — a false dispatch that is correct
behaviour of the controller.  :func:`audit_dispatches` checks the guarantee on every dispatch of a set of decisions
and lists each false dispatch with what the rules say for the gold action; :func:`search_false_dispatch` looks
for a concrete one across simulator seeds (cheap: a few seconds per seed, runs resumed under ``runs_dir``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.controller import Decision
from ..core.records import Boundary, System, Terminal
from ..core.rules import PolicyEngine
from ..store.cases import Case, Split
from .study import Study, StudyConfig, load_study


@dataclass(frozen=True, slots=True)
class FalseDispatch:
    """A gold-bounded request that was dispatched: what was proposed, what the rules said for it and for gold."""

    case_id: str
    gold_action: str
    gold_path: str
    gold_rule: str
    proposed_action: str
    object_id: str
    rule_for_proposed: str  # the winning rule for the committed (proposed) action: always an ALLOW
    rule_for_gold: str  # the winning rule the gold action would have met on the same state
    decision_for_gold: str

    @property
    def misread(self) -> bool:
        """The model proposed another action than gold's (the only way RouteBR can false-dispatch)."""
        return self.proposed_action != self.gold_action

    def as_dict(self) -> dict[str, str | bool]:
        return {"case_id": self.case_id, "gold action": self.gold_action, "gold path": self.gold_path,
                "proposed action": self.proposed_action, "object": self.object_id,
                "rule for proposed": self.rule_for_proposed, "rule for gold action": self.rule_for_gold,
                "gold action would be": self.decision_for_gold, "misread": self.misread}


@dataclass(frozen=True, slots=True)
class AuditedDecision:
    """One audited decision: did it dispatch, did the winning rule for its committed action allow that, is its gold
    path a terminal (gold-bounded), and which action it committed to beside gold's."""

    case_id: str
    dispatched: bool
    rule_allows: bool
    gold_bounded: bool
    action: str
    gold_action: str

    def as_dict(self) -> dict[str, str | bool]:
        return {"case_id": self.case_id, "dispatched": self.dispatched, "rule allows": self.rule_allows,
                "gold bounded": self.gold_bounded, "action": self.action, "gold action": self.gold_action}


@dataclass(frozen=True, slots=True)
class DispatchAudit:
    """Every dispatch of a set of decisions against the rules for its committed action.

    ``rows``: one :class:`AuditedDecision` per decision — the counts are computed from them."""

    decisions: int
    dispatches: int
    allowed_dispatches: int  # dispatches whose committed action the winning rule allowed (or gate not enforced)
    gold_bounded: int
    false_dispatches: tuple[FalseDispatch, ...]
    rows: tuple[AuditedDecision, ...] = ()

    @property
    def guarantee_holds(self) -> bool:
        return self.allowed_dispatches == self.dispatches

    def table(self) -> list[dict[str, str | bool]]:
        """The audited decisions as table rows (what every count of the audit is computed from)."""
        return [r.as_dict() for r in self.rows]


def audit_dispatches(decisions: Iterable[Decision], cases: Mapping[str, Case], policy: PolicyEngine) -> DispatchAudit:
    """Check every dispatch against the rule program and list the false dispatches (gold path is a terminal)."""
    chosen = list(decisions)
    rows = tuple(AuditedDecision(d.request_id, d.terminal is Terminal.DISPATCH,
                                 d.rule is not None and d.rule.decision is Boundary.ALLOW,
                                 cases[d.request_id].gold.final_path.startswith("T_"), str(d.action_id or ""),
                                 cases[d.request_id].gold.action) for d in chosen)
    false = []
    for d, row in zip(chosen, rows):
        if not (row.dispatched and row.gold_bounded):
            continue
        case = cases[d.request_id]
        for_gold = policy.evaluate(case.gold.action, case.request.state.values)
        false.append(FalseDispatch(d.request_id, case.gold.action, case.gold.final_path,
                                   ", ".join(case.gold.rule_ids), d.action_id, d.object_id, d.rule_id or "",
                                   for_gold.rule_id, for_gold.decision.value))
    return DispatchAudit(len(chosen), sum(r.dispatched for r in rows),
                         sum(r.dispatched and r.rule_allows for r in rows), sum(r.gold_bounded for r in rows),
                         tuple(false), rows)


def study_audit(study: Study, splits: Sequence[Split | str] = (Split.MAIN, Split.FLIP)) -> DispatchAudit:
    """:func:`audit_dispatches` over RouteBR's replayed decisions on ``splits`` of a study."""
    decisions = [d for split in splits for d in study.routebr_decisions(split)]
    return audit_dispatches(decisions, study.cases, study.assets.policy)


@dataclass(frozen=True, slots=True)
class SearchResult:
    """The simulator seeds searched, each seed's audit, and the first seed with a false dispatch (if any)."""

    profile: str
    audits: Mapping[int, DispatchAudit]

    @property
    def found_seed(self) -> int | None:
        return next((seed for seed, a in self.audits.items() if a.false_dispatches), None)

    def table(self) -> list[dict[str, int]]:
        """One row per searched seed: its decisions, false dispatches and gold-bounded decisions."""
        return [{"seed": seed, "decisions": a.decisions, "false dispatches": len(a.false_dispatches),
                 "gold bounded": a.gold_bounded} for seed, a in self.audits.items()]

    @property
    def example(self) -> FalseDispatch | None:
        seed = self.found_seed
        return None if seed is None else self.audits[seed].false_dispatches[0]


def search_false_dispatch(seeds: Iterable[int], runs_dir: str | Path, *, profile: str = "sim:deepseek_v4_primary",
                          language: str = "en") -> SearchResult:
    """Simulated RouteBR on MAIN+FLIP of the kit benchmark at each seed (stopping at the first false dispatch)."""
    audits: dict[int, DispatchAudit] = {}
    for seed in seeds:
        config = StudyConfig.from_parameters(source="simulated", profile=profile, seed=seed, language=language,
                                             runs_dir=str(runs_dir))
        study = load_study(config, runs=[(System.ROUTEBR, Split.MAIN), (System.ROUTEBR, Split.FLIP)])
        audits[seed] = study_audit(study)
        if audits[seed].false_dispatches:
            break
    return SearchResult(profile, audits)


def false_dispatch_examples(audit: DispatchAudit, search: SearchResult | None) -> list[FalseDispatch]:
    """The false dispatches to show: this run's own, else those of the first searched seed that has one (else none)."""
    if audit.false_dispatches:
        return list(audit.false_dispatches)
    if search is None or search.found_seed is None:
        return []
    return list(search.audits[search.found_seed].false_dispatches)


__all__ = ["AuditedDecision", "DispatchAudit", "FalseDispatch", "SearchResult", "audit_dispatches",
           "false_dispatch_examples", "search_false_dispatch", "study_audit"]
