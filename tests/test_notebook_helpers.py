"""The library functions that keep notebook cells short (issue 23): each does what its cell used to do."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

from routebr_kit.core.records import Boundary, System, Terminal
from routebr_kit.experiments.ablations import offline_agreement
from routebr_kit.experiments.guarantee import SearchResult, audit_dispatches, false_dispatch_examples
from routebr_kit.review.calibration import routebr_runs
from routebr_kit.review.ledgers import LedgerSet


def _row(case_id: str, path: str, obj: str) -> NS:
    return NS(case_id=case_id, pred_final_path=path, pred_object_id=obj)


def test_offline_agreement_counts_matching_paths_and_objects_by_case_id() -> None:
    recorded = [_row("c1", "A1", "o1"), _row("c2", "T_REJECT", "o2"), _row("c3", "A2", "o3")]
    offline = [_row("c3", "A2", "ox"), _row("c1", "A1", "o1"), _row("c2", "A1", "o2")]  # another order
    assert offline_agreement("a_state", "FLIP", recorded, offline) == {
        "variant": "a_state", "split": "FLIP", "cases": 3, "same final path": 2, "same object": 2}


def test_false_dispatch_examples_prefer_the_run_then_the_first_searched_seed() -> None:
    own, other = NS(false_dispatches=("fd-own",)), NS(false_dispatches=("fd-seed-7", "fd-seed-7b"))
    none = NS(false_dispatches=())
    search = NS(found_seed=7, audits={6: none, 7: other})
    assert false_dispatch_examples(own, search) == ["fd-own"]
    assert false_dispatch_examples(none, search) == ["fd-seed-7", "fd-seed-7b"]
    assert false_dispatch_examples(none, None) == []
    assert false_dispatch_examples(none, NS(found_seed=None, audits={6: none})) == []


def _decision(case_id: str, terminal: Terminal, action: str, allows: bool) -> NS:
    rule = NS(decision=Boundary.ALLOW if allows else Boundary.REJECT)
    return NS(request_id=case_id, terminal=terminal, action_id=action, object_id="NONE", rule=rule, rule_id="R1")


def _case(gold_path: str, gold_action: str) -> NS:
    return NS(gold=NS(final_path=gold_path, action=gold_action, rule_ids=("R1",)), request=NS(state=NS(values={})))


def test_the_dispatch_audit_table_is_what_its_counts_are_computed_from() -> None:
    """One row per decision (notebooks 03/04 save it): dispatched, allowed by the winning rule, gold-bounded."""
    cases = {"c1": _case("A1", "A1"), "c2": _case("T_REJECT", "A3"), "c3": _case("T_CLARIFY", "A2"),
             "c4": _case("A2", "A2")}
    decisions = [_decision("c1", Terminal.DISPATCH, "A1", True), _decision("c2", Terminal.DISPATCH, "A2", True),
                 _decision("c3", Terminal.CLARIFY, "A2", False), _decision("c4", Terminal.REJECT, "A2", False)]
    policy = NS(evaluate=lambda action, state: NS(rule_id="R9", decision=Boundary.REJECT))
    audit = audit_dispatches(decisions, cases, policy)
    assert (audit.decisions, audit.dispatches, audit.allowed_dispatches, audit.gold_bounded) == (4, 2, 2, 2)
    assert [fd.case_id for fd in audit.false_dispatches] == ["c2"] and audit.false_dispatches[0].misread
    table = audit.table()
    assert [r["case_id"] for r in table] == ["c1", "c2", "c3", "c4"]
    assert [(r["dispatched"], r["rule allows"], r["gold bounded"]) for r in table] == [
        (True, True, False), (True, True, True), (False, False, True), (False, False, False)]
    assert (table[1]["action"], table[1]["gold action"]) == ("A2", "A3")
    search = SearchResult("sim:x", {0: audit_dispatches(decisions[2:], cases, policy), 1: audit})
    assert search.table() == [{"seed": 0, "decisions": 2, "false dispatches": 0, "gold bounded": 1},
                              {"seed": 1, "decisions": 4, "false dispatches": 1, "gold bounded": 2}]


def _tasks(*keys_systems: tuple[str, System]) -> dict:
    return {k: NS(key=k, system=s) for k, s in keys_systems}


def test_routebr_runs_keep_routebr_and_only_confirm_when_there_is_confirm() -> None:
    mixed = LedgerSet(Path("r"), "artifact", _tasks(("select/x/main", System.ROUTEBR), ("confirm/routebr/main",
                      System.ROUTEBR), ("confirm/b1_direct/main", System.B1_DIRECT)))
    assert list(routebr_runs(mixed).tasks) == ["confirm/routebr/main"]
    runs = LedgerSet(Path("r"), "runs", _tasks(("routebr_main", System.ROUTEBR), ("b2_main", System.B2_DIRECT_GUARD)))
    assert list(routebr_runs(runs).tasks) == ["routebr_main"]
    assert routebr_runs(runs).kind == "runs"
