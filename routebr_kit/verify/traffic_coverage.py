"""Recorded traffic against the verifier's regions: which rules were the first match for some recorded row, which
admitted regions no row exercised (per split), and the ``rule_coverage >= X%`` gate criterion.

A recorded row is an :class:`Observation`: the case's runtime state and the proposal the controller committed to
(its action and object class).  Only rows of controller systems (RouteBR, A-state, A-ground) count — the B1/B2
baselines never consult the rules — and a row whose proposal broke the contract reaches no rule.
:func:`observations_from_ledgers` reads them from a ledger set (the published artifact or run directories, as
loaded by :func:`routebr_kit.review.ledgers.load_ledgers`; read by attribute, so this layer does not import it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.controller import ControllerOptions
from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, UNRESOLVED, Catalog, Registry
from ..core.rules import PolicyEngine
from .mdd import Manager
from .program import FAIL, Release
from .space import Source, build_space


@dataclass(frozen=True)
class Observation:
    """One recorded controller row: where it comes from, its state, and its committed proposal (``None``: the
    proposal broke the contract)."""

    task: str
    split: str
    case_id: str
    state: Mapping[str, Any]
    action_id: str | None
    object_class: str | None  # the candidate's object type, UNRESOLVED, NONE; None: outside the candidate list


def observations_from_ledgers(ledgers: Any) -> tuple[Observation, ...]:
    """Every controller row of a :class:`~routebr_kit.review.ledgers.LedgerSet` as an :class:`Observation`."""
    out = []
    for key in sorted(ledgers.tasks):
        task = ledgers.tasks[key]
        if not task.system.uses_controller:
            continue
        for row in task.rows:
            case = task.cases[row.case_id]
            request = case.request
            accepted = row.valid_json and not row.fallback_used
            object_class: str | None = None
            if row.pred_object_id in (UNRESOLVED, NONE):
                object_class = row.pred_object_id
            elif row.pred_object_id in request.candidate_index:
                object_class = request.candidate_index[row.pred_object_id].object_type
            out.append(Observation(key, case.split.value, row.case_id, dict(request.state.values),
                                   row.pred_action if accepted else None, object_class))
    return tuple(out)


@dataclass(frozen=True)
class SplitCoverage:
    split: str
    rows: int
    rules_covered: tuple[str, ...]
    regions_exercised: int

    def as_dict(self) -> dict[str, Any]:
        return {"split": self.split, "rows": self.rows, "rules_covered": list(self.rules_covered),
                "regions_exercised": self.regions_exercised}


@dataclass(frozen=True)
class CoverageReport:
    rules: tuple[str, ...]
    live_rules: tuple[str, ...]
    covered: tuple[str, ...]  # first match for some recorded row
    rows: int
    rows_reaching_rules: int
    distinct_states: int
    regions_total: int  # (action, winning rule) regions over admitted states
    regions_exercised: int
    unexercised: tuple[tuple[str, str, Mapping[str, Any]], ...]  # (action, rule, witness state)
    splits: tuple[SplitCoverage, ...] = field(default_factory=tuple)

    @property
    def rule_coverage(self) -> float:
        return 100.0 * len(self.covered) / len(self.rules) if self.rules else 100.0

    def as_dict(self) -> dict[str, Any]:
        return {"rules": len(self.rules), "live_rules": len(self.live_rules), "covered_rules": list(self.covered),
                "uncovered_rules": [r for r in self.rules if r not in self.covered],
                "rule_coverage_pct": round(self.rule_coverage, 2), "rows": self.rows,
                "rows_reaching_rules": self.rows_reaching_rules, "distinct_states": self.distinct_states,
                "regions_total": self.regions_total, "regions_exercised": self.regions_exercised,
                "unexercised_regions": [{"action": a, "rule": r, "witness_state": dict(s)}
                                        for a, r, s in self.unexercised],
                "splits": [s.as_dict() for s in self.splits]}

    def lines(self) -> list[str]:
        out = [f"recorded controller rows: {self.rows} ({self.rows_reaching_rules} reach the rules; "
               f"{self.distinct_states} distinct runtime states)",
               f"rules that were the first match for some row: {len(self.covered)} of {len(self.rules)} "
               f"({self.rule_coverage:.1f}%; {len(self.live_rules)} can be the first match at all): "
               f"{', '.join(self.covered) or 'none'}",
               f"uncovered rules: {', '.join(r for r in self.rules if r not in self.covered) or 'none'}",
               f"(action, winning rule) regions exercised: {self.regions_exercised} of {self.regions_total}"]
        for s in self.splits:
            out.append(f"  {s.split}: {s.rows} rows; rules {', '.join(s.rules_covered) or 'none'}; "
                       f"{s.regions_exercised} regions")
        if self.unexercised:
            out.append("regions no recorded row exercised (action: rule, one state of it):")
            out += [f"  {a}: {r}  {dict(s)}" for a, r, s in self.unexercised]
        return out


def coverage(catalog: Catalog, policy: PolicyEngine, observations: Sequence[Observation],
             registry: Registry | None = None, *, options: ControllerOptions | None = None) -> CoverageReport:
    """Which rules and regions the recorded rows exercise (each row located exactly in the diagram; the winning rule
    is checked against :meth:`PolicyEngine.evaluate <routebr_kit.core.rules.PolicyEngine.evaluate>`)."""
    space = build_space([Source.of_rules(policy.rules, policy.state_schema)])
    manager = Manager([len(v.values) for v in space.variables])
    release = Release("release", catalog, policy, space, manager, options=options, registry=registry)
    seen: dict[str, set[tuple[str, str]]] = {}
    covered: dict[str, set[str]] = {}
    rows: dict[str, int] = {}
    states: set[tuple] = set()
    reaching = 0
    for o in observations:
        rows[o.split] = rows.get(o.split, 0) + 1
        point = space.classify(o.state)
        states.add(tuple(sorted((k, repr(v)) for k, v in o.state.items())))
        if o.action_id is None or o.action_id not in catalog or o.object_class is None:
            continue
        leaf = manager.evaluate(release.diagrams[o.action_id], point)
        if leaf == FAIL:
            continue
        expected = policy.evaluate(o.action_id, o.state).rule_id
        if expected != leaf:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, f"the rule engine's first match {expected}",
                            got=leaf, field="state", detail=f"{o.task} {o.case_id}")
        reaching += 1
        seen.setdefault(o.split, set()).add((o.action_id, leaf))
        covered.setdefault(o.split, set()).add(leaf)
    all_seen = set().union(*seen.values()) if seen else set()
    all_covered = set().union(*covered.values()) if covered else set()
    regions = [(a, leaf) for a in catalog.ids for leaf in manager.leaves(release.diagrams[a]) if leaf != FAIL]
    order = {r.rule_id: i for i, r in enumerate(policy.rules)}
    regions.sort(key=lambda x: (catalog.ids.index(x[0]), order[x[1]]))
    unexercised = tuple((a, leaf, release.witness_state(a, leaf)) for a, leaf in regions if (a, leaf) not in all_seen)
    live = {leaf for _, leaf in regions}
    rule_ids = tuple(r.rule_id for r in policy.rules)
    splits = tuple(SplitCoverage(s, rows[s], tuple(r for r in rule_ids if r in covered.get(s, set())),
                                 len(seen.get(s, set()))) for s in sorted(rows))
    return CoverageReport(rule_ids, tuple(r for r in rule_ids if r in live),
                          tuple(r for r in rule_ids if r in all_covered), len(observations), reaching, len(states),
                          len(regions), len(all_seen), unexercised, splits)


_CRITERION = re.compile(r"^\s*rule_coverage\s*(>=|>|<=|<|==)\s*(\d+(?:\.\d+)?)\s*%\s*$")


def coverage_gate(spec: str, report: CoverageReport) -> tuple[bool, str]:
    """``rule_coverage >= X%``: whether it holds, and the line to print."""
    match = _CRITERION.match(spec)
    if match is None:
        raise DataError(ErrorCode.INVALID_VALUE, "a criterion 'rule_coverage >= X%'", got=spec, field="gate")
    op, threshold = match.group(1), float(match.group(2))
    value = report.rule_coverage
    passed = {">=": value >= threshold, ">": value > threshold, "<=": value <= threshold, "<": value < threshold,
              "==": value == threshold}[op]
    return passed, f"{'PASS' if passed else 'FAIL'} rule_coverage {op} {threshold:g}% (measured {value:.1f}%)"



__all__ = ["CoverageReport", "Observation", "SplitCoverage", "coverage", "coverage_gate", "observations_from_ledgers"]
