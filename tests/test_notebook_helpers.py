"""The library functions that keep notebook cells short (issue 23): each does what its cell used to do."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace as NS

from routebr_kit.core.records import System
from routebr_kit.experiments.ablations import offline_agreement
from routebr_kit.experiments.guarantee import false_dispatch_examples
from routebr_kit.notebook.calibration_runs import routebr_runs
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


def _tasks(*keys_systems: tuple[str, System]) -> dict:
    return {k: NS(key=k, system=s) for k, s in keys_systems}


def test_routebr_runs_keep_routebr_and_only_confirm_when_there_is_confirm() -> None:
    mixed = LedgerSet(Path("r"), "artifact", _tasks(("select/x/main", System.ROUTEBR), ("confirm/routebr/main",
                      System.ROUTEBR), ("confirm/b1_direct/main", System.B1_DIRECT)))
    assert list(routebr_runs(mixed).tasks) == ["confirm/routebr/main"]
    runs = LedgerSet(Path("r"), "runs", _tasks(("routebr_main", System.ROUTEBR), ("b2_main", System.B2_DIRECT_GUARD)))
    assert list(routebr_runs(runs).tasks) == ["routebr_main"]
    assert routebr_runs(runs).kind == "runs"
