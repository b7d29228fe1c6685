"""The session benchmark (issue 32) through RouteBR, B1 and B2: each proposer (the simulated one and, when given,
the learned one) on every request with its gold history, RouteBR also closed loop (each request's history made of
its own earlier decisions), the composite requests item by item, and one score table beside the trivial-proposer
floor.  Notebook 14 shows them; its timeline is :func:`routebr_kit.dataset.sessions.timeline`, its counterexample
replay :mod:`routebr_kit.verify.horizon_replay` and its release review :mod:`routebr_kit.review.sessions`.  No model
call, no network."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.aio import run_sync
from ..store.cases import Case
from .proposers import SYSTEMS, floor_cells


def open_learned(model_dir: str, train_seeds: Sequence[int]) -> tuple[Any, str]:
    """``(LearnedBackend or None, banner)``: the model of ``model_dir`` when it holds one; else (no directory, or
    its model file missing) a model trained in memory on ``train_seeds``; ``None`` without scikit-learn."""
    from ..backends import learned

    try:
        learned.require_sklearn()
    except Exception as exc:  # the optional extra [learned] is missing: the notebook runs without it
        return None, f"learned proposer skipped: {exc}"
    if model_dir and (Path(model_dir) / learned.MODEL_FILE).is_file():
        return learned.LearnedBackend(model_dir=model_dir), f"learned proposer: the model of {model_dir}"
    started = time.perf_counter()
    model = learned.train(seeds=tuple(train_seeds))
    why = f"no model file in {model_dir!r}; " if model_dir else ""
    return learned.LearnedBackend(model), (f"learned proposer: {why}trained in memory on generated seeds "
                                           f"{list(train_seeds)} in {time.perf_counter() - started:.1f} s")


def _engines(assets: Any) -> dict[str, Any]:
    from ..systems.baselines import DirectBaseline

    return {"routebr": assets.controller(), "b1": DirectBaseline(assets.catalog, assets.policy, guard=False),
            "b2": DirectBaseline(assets.catalog, assets.policy, guard=True)}


def _decide_grid(proposers: Mapping[str, Any], cases: Sequence[Case], assets: Any,
                systems: Sequence[str] = SYSTEMS) -> dict[tuple[str, str], dict[str, Any]]:
    """``(proposer, system) -> {rows, decisions, seconds}``: every request (its session carrying the gold history)
    decided by each system with each proposer."""
    from ..store.ledger import prediction_from_decision
    from ..systems.baselines import prediction_from_direct

    engines = _engines(assets)
    out = {}
    for name, backend in proposers.items():
        for system in systems:
            started = time.perf_counter()
            decisions = [run_sync(engines[system].aroute(c.request, backend)) for c in cases]
            rows = [prediction_from_decision(d, "routebr") if system == "routebr" else prediction_from_direct(d)
                    for d in decisions]
            out[(name, system)] = {"rows": rows, "decisions": decisions, "seconds": time.perf_counter() - started}
    return out


def _closed_loop(bench: Any, backend: Any) -> dict[str, Any]:
    """RouteBR run session by session (composite requests too, item by item through :class:`ItemwiseProposer`),
    each request's history made of its own earlier decisions: requests and whole sessions matching the gold."""
    from ..runs.sessions import ItemwiseProposer, decision_summary, run_sessions

    _, decisions = run_sessions(bench.assets.controller(), [(s.session_id, s.steps) for s in bench.sessions],
                                ItemwiseProposer(backend))
    hits = {s.session_id: [decision_summary(d)["final_path"] == g["final_path"]
                           for d, g in zip(decisions[s.session_id], s.summaries)] for s in bench.sessions}
    return {"requests": sum(map(sum, hits.values())), "n": sum(map(len, hits.values())),
            "sessions": sum(all(h) for h in hits.values()), "n_sessions": len(hits)}


def _proposers(bench: Any, sim_profile: str, seed: int, learned: Any) -> dict[str, Any]:
    """The simulated proposer of a benchmark's cases (composite items too), and the learned one when given."""
    from ..backends.simulated import SimulatedBackend

    simulated = SimulatedBackend(sim_profile, bench.cases() + bench.item_cases(), seed=seed)
    return {"simulated": simulated} | ({"learned": learned} if learned is not None else {})


def run_benchmarks(benches: Sequence[Any], sim_profile: str, seed: int, learned: Any = None
                   ) -> tuple[dict[tuple[str, str], dict[str, Any]], dict[str, dict[str, int]], tuple[Case, ...]]:
    """Every benchmark (one per language) through every system with the simulated proposer (``sim_profile``) and,
    when given, the learned one: the merged grid, the closed-loop counts per proposer, and all the cases."""
    grids: dict[tuple[str, str], dict[str, Any]] = {}
    loops: dict[str, dict[str, int]] = {}
    for b in benches:
        proposers = _proposers(b, sim_profile, seed, learned)
        for key, run in _decide_grid(proposers, b.cases(), b.assets).items():
            merged = grids.setdefault(key, {"rows": [], "decisions": [], "seconds": 0.0})
            merged["rows"] += run["rows"]
            merged["decisions"] += run["decisions"]
            merged["seconds"] += run["seconds"]
        for name, backend in proposers.items():
            for k, v in _closed_loop(b, backend).items():
                loops.setdefault(name, {}).setdefault(k, 0)
                loops[name][k] += v
    return grids, loops, tuple(c for b in benches for c in b.cases())


def composite_scores(benches: Sequence[Any], sim_profile: str, seed: int, learned: Any = None) -> pd.DataFrame:
    """The composite requests (on their gold history) through RouteBR, B1 and B2 in their mode, each proposer
    answering item by item (:class:`~routebr_kit.runs.sessions.ItemwiseProposer`): requests whose every item emits
    the gold, items that do, and items dispatched where the gold does not (false dispatches)."""
    from ..core.composite_decision import CompositeController
    from ..runs.sessions import ItemwiseProposer
    from ..systems.baselines import CompositeBaseline

    tally: dict[tuple[str, str], list[int]] = {}
    for b in benches:
        proposers = _proposers(b, sim_profile, seed, learned)
        a = b.assets
        routers = {mode: {"routebr": CompositeController(a.controller(), mode),
                          "b1": CompositeBaseline.for_system("b1_direct", a.catalog, a.policy, mode),
                          "b2": CompositeBaseline.for_system("b2_direct_guard", a.catalog, a.policy, mode)}
                   for mode in ("atomic", "independent")}
        for s in b.sessions:
            for step, request, gold in zip(s.steps, s.requests, s.summaries):
                if not step.composite:
                    continue
                for name, backend in proposers.items():
                    for system, router in routers[step.mode].items():
                        d = run_sync(router.aroute(request, ItemwiseProposer(backend)))
                        _tally(tally.setdefault((name, system), [0, 0, 0, 0, 0]), d, gold)
    return pd.DataFrame([{"proposer": p, "system": s, "composite exact": f"{t[0]}/{t[1]}",
                          "items exact": f"{t[2]}/{t[3]}", "items falsely dispatched": t[4]}
                         for (p, s), t in tally.items()])


def _tally(t: list[int], d: Any, gold: Mapping[str, Any]) -> None:
    from ..runs.sessions import decision_summary

    got = decision_summary(d)["final_path"].split(" + ")
    want = [i["final_path"] for i in gold["items"]]
    t[0] += got == want
    t[1] += 1
    t[2] += sum(a == b for a, b in zip(got, want))
    t[3] += len(want)
    t[4] += sum(not a.startswith("T_") and b.startswith("T_") for a, b in zip(got, want))


def score_grid(grid: Mapping[tuple[str, str], Mapping[str, Any]], cases: Sequence[Case], floor: Any,
               loops: Mapping[str, Mapping[str, Any]] | None = None) -> pd.DataFrame:
    """One row per (proposer, system): exact with Wilson 95%, the points above the floor, FD and FB; RouteBR rows
    also the closed-loop request and session exactness (``loops``); the floor as the last row."""
    from ..evaluation.metrics import score

    index = {c.case_id: c for c in cases}
    records = [_row(proposer, system, score(run["rows"], index), floor,
                    (loops or {}).get(proposer) if system == "routebr" else None)
               for (proposer, system), run in grid.items()]
    return pd.DataFrame([*records, _row(f"floor: always {floor.action_id}", "routebr", floor.scores, floor, None)])


def _row(proposer: str, system: str, s: Any, floor: Any, loop: Mapping[str, Any] | None) -> dict[str, Any]:
    return {"proposer": proposer, "system": system, **floor_cells(s, floor),
            "closed-loop requests": f"{loop['requests']}/{loop['n']}" if loop else "",
            "sessions all exact": f"{loop['sessions']}/{loop['n_sessions']}" if loop else ""}


def grid_facts(audit: Mapping[str, Any], scores: pd.DataFrame, floor: Any, composite: pd.DataFrame
               ) -> dict[str, Any]:
    """The benchmark's composition (``audit``: :func:`~routebr_kit.dataset.sessions.audit_sessions`) and the
    simulated (and learned) proposer's rows of :func:`score_grid` and :func:`composite_scores`, as the facts a
    conclusion states (the learned ones ``"not run"`` / ``"-"`` when ``scores`` has no learned row)."""
    def row(proposer: str, system: str) -> Any:
        found = scores[(scores.proposer == proposer) & (scores.system == system)]
        return found.iloc[0] if len(found) else None

    route, b1, b2, lrn = (row("simulated", "routebr"), row("simulated", "b1"), row("simulated", "b2"),
                          row("learned", "routebr"))
    decided = {f"{p}_decided": c["decided"] for p, c in audit["per_predicate"].items()}
    comp = composite.set_index(["proposer", "system"])
    return {
        "sessions": audit["sessions"], "requests": audit["requests"], **decided,
        "composite_requests": audit["composite"]["requests"], "composite_items": audit["composite"]["items"],
        "composite_route": comp.loc[("simulated", "routebr"), "composite exact"],
        "composite_route_fd": int(comp.loc[("simulated", "routebr"), "items falsely dispatched"]),
        "composite_b1": comp.loc[("simulated", "b1"), "composite exact"],
        "composite_b1_fd": int(comp.loc[("simulated", "b1"), "items falsely dispatched"]),
        "route_exact": route["exact"], "route_pct": float(route["exact %"]), "route_fd": route["FD"],
        "route_loop": route["closed-loop requests"], "route_sessions": route["sessions all exact"],
        "b1_exact": b1["exact"], "b1_fd": b1["FD"], "b2_exact": b2["exact"], "b2_fd": b2["FD"],
        "floor_action": floor.action_id, "floor_pct": 100 * floor.exact.rate,
        "above_floor": bool(route["exact %"] > 100 * floor.exact.rate), "has_learned": lrn is not None,
        "learned_exact": lrn["exact"] if lrn is not None else "not run",
        "learned_fd": lrn["FD"] if lrn is not None else "-",
    }


__all__ = ["composite_scores", "grid_facts", "open_learned", "run_benchmarks", "score_grid"]
