"""Notebook 13 (issue 33), "real proposers offline": the learned and the lexical proposer through RouteBR, B1 and B2
on the published CONFIRM-320 (else a generated one), the trivial-proposer floor beside every accuracy, and each
wrong-but-valid proposal traced to the gate that stopped it (or to none: a false dispatch).  No model call, no
network; the proposals are decided in-process by the release's controller and the baselines' deciders."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.records import ReasonCode, Stage
from ..store.cases import Case, load_cases

SYSTEMS = ("routebr", "b1", "b2")


@dataclass(frozen=True)
class CaseSet:
    """The cases of the notebook and where they came from."""

    cases: tuple[Case, ...]
    path: Path
    label: str
    published: bool


def confirm_cases(artifact_dir: str | Path | None, work: Path, *, seed: int = 7, language: str = "zh",
                  lexical_shift: bool = False) -> CaseSet:
    """The published CONFIRM-320 when an artifact is found (and no shift is asked for), else the kit's generated
    CONFIRM-320 (``seed``, ``language``; a seed the learned proposer does not train on)."""
    from ..dataset import generate_benchmark, write_benchmark
    from ..store.artifact import find_artifact

    found = None if lexical_shift else find_artifact(artifact_dir or None)
    if found is not None:
        path = found / "data" / "routebr_confirm_320.csv"
        return CaseSet(load_cases(path), path, "published CONFIRM-320", True)
    out = work / f"generated-{language}-{seed}{'-shift' if lexical_shift else ''}"
    write_benchmark(generate_benchmark(seed=seed, language=language, lexical_shift=lexical_shift), out)
    path = out / "routebr_confirm_320.csv"
    kind = "lexical-shift" if lexical_shift else "generated"
    return CaseSet(load_cases(path), path, f"{kind} CONFIRM-320 ({language}, seed {seed})", False)


def decide_all(backend: Any, case_set: CaseSet, systems: Sequence[str] = SYSTEMS) -> dict[str, dict[str, Any]]:
    """Each system's decisions and ledger rows for every case (proposals from ``backend.propose``)."""
    from ..store.assets import assets_beside
    from ..store.ledger import prediction_from_decision
    from ..systems.baselines import DirectBaseline, direct_payload, prediction_from_direct

    assets = assets_beside(case_set.path)
    controller = assets.controller()
    out: dict[str, dict[str, Any]] = {}
    for system in systems:
        started = time.perf_counter()
        decisions, rows, proposals = [], [], []
        if system == "routebr":
            for case in case_set.cases:
                proposal = backend.propose(controller.proposal_payload(case.request))
                proposal = proposal.output() if hasattr(proposal, "output") else proposal  # local:lexical's
                decision = controller.decide(case.request, json.dumps(proposal))
                proposals.append(proposal)
                decisions.append(decision)
                rows.append(prediction_from_decision(decision, "routebr"))
        else:
            guard = system == "b2"
            baseline = DirectBaseline(assets.catalog, assets.policy, guard=guard)
            stage = Stage.B2_DIRECT_GUARD if guard else Stage.B1_DIRECT
            for case in case_set.cases:
                payload = direct_payload(case.request, assets.catalog, assets.policy if guard else None)
                learned = getattr(backend, "name", "") == "local:learned"  # the one proposer answering B1/B2
                proposal = backend.propose(payload, stage) if learned else None
                decision = baseline.decide(case.request, json.dumps(proposal))
                proposals.append(proposal)
                decisions.append(decision)
                rows.append(prediction_from_direct(decision))
        out[system] = {"decisions": decisions, "rows": rows, "proposals": proposals,
                       "seconds": time.perf_counter() - started}
    return out


def score_table(grids: dict[str, dict[str, dict[str, Any]]], case_set: CaseSet) -> tuple[pd.DataFrame, Any]:
    """One row per (proposer, system): exact with Wilson, FD, FB, FLIP pairs; and the floor of the same cases."""
    from ..evaluation.scorecard import score_report
    from ..store.assets import assets_beside

    controller = assets_beside(case_set.path).controller()
    records, floor = [], None
    for proposer, grid in grids.items():
        for system, run in grid.items():
            report = score_report(run["rows"], case_set.cases, controller=controller if floor is None else None)
            floor = floor or report["floor"]
            overall = report["splits"].get("ALL") or next(iter(report["splits"].values()))
            low, high = overall.contract_exact.wilson
            pairs = report["flip"]
            records.append({"proposer": proposer, "system": system, "exact": str(overall.contract_exact),
                            "exact %": round(100 * overall.contract_exact.rate, 1),
                            "Wilson 95%": f"{100 * low:.1f}-{100 * high:.1f}",
                            "FD": str(overall.false_dispatch), "FB": str(overall.false_block),
                            "FLIP pairs": str(pairs.pairs) if pairs is not None else "",
                            "floor exact %": round(100 * floor.exact.rate, 1),
                            "cases/s": round(len(run["rows"]) / max(run["seconds"], 1e-9))})
    return pd.DataFrame(records), floor


def beside_floor(scored: Sequence[tuple[str, str, Any]], floor: Any) -> pd.DataFrame:
    """One row per ``(proposer, kind, Scores)``: exact with Wilson 95%, the points above ``floor`` (a
    :class:`~routebr_kit.evaluation.floor.Floor` of the same cases), FD and FB; the floor itself as the last row."""
    return pd.DataFrame([{"proposer": name, "kind": kind, **floor_cells(s, floor)} for name, kind, s in
                         [*scored, (f"floor: always {floor.action_id}", "constant proposer", floor.scores)]])


def floor_cells(s: Any, floor: Any) -> dict[str, Any]:
    """A score table's cells for one ``Scores``: exact with Wilson 95%, the points above ``floor``, FD and FB."""
    low, high = s.contract_exact.wilson
    return {"exact": str(s.contract_exact), "exact %": round(100 * s.contract_exact.rate, 1),
            "Wilson 95%": f"{100 * low:.1f}-{100 * high:.1f}",
            "above floor (points)": round(100 * (s.contract_exact.rate - floor.exact.rate), 1),
            "FD": str(s.false_dispatch), "FB": str(s.false_block)}


_GATE = {ReasonCode.BOUNDARY_TERMINAL: "state gate (a rule on the runtime state)",
         ReasonCode.OBJECT_UNRESOLVED: "object gate (no resolved object)",
         ReasonCode.DISPATCH_OK: "none: dispatched"}


def wrong_but_valid(run: dict[str, Any], case_set: CaseSet) -> pd.DataFrame:
    """RouteBR rows whose proposal passed the contract but named the wrong action or object, and the gate that
    stopped each (``none: dispatched`` on a gold-bounded case is a false dispatch)."""
    records = []
    for case, decision, proposal in zip(case_set.cases, run["decisions"], run["proposals"]):
        if not decision.valid:
            continue
        gold = case.gold
        if proposal["action_id"] == gold.action and proposal["object_id"] == gold.object_id:
            continue
        gate = _GATE.get(decision.reason, decision.reason.value)
        records.append({"case_id": case.case_id, "gold_action": gold.action, "proposed": proposal["action_id"],
                        "object": proposal["object_id"], "gold_path": gold.final_path,
                        "final_path": decision.final_path, "gate": gate,
                        "false_dispatch": (not gold.dispatchable) and decision.reason is ReasonCode.DISPATCH_OK,
                        "exact": decision.final_path == gold.final_path,
                        "request": case.request.utterance[:60]})
    return pd.DataFrame(records, columns=["case_id", "gold_action", "proposed", "object", "gold_path", "final_path",
                                          "gate", "false_dispatch", "exact", "request"])


__all__ = ["CaseSet", "SYSTEMS", "beside_floor", "confirm_cases", "decide_all", "floor_cells", "score_table",
           "wrong_but_valid"]
