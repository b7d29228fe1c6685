"""``Controller.decide`` side by side with two policy engines — Cedar (``cedarpy``) and Rego (``regopy``) — on the
published RouteBR program (``pip install routebr-kit[peers]``).

The program is encoded for both engines by ``benchmarks/peers_encode.py`` (its docstring lists the semantic gaps
found and how the harness closes them).  The benchmark

1. checks that the three engines decide alike — terminal, action, object, winning rule and reason (fail-closed
   reasons by family) — on the 1,400 recorded RouteBR-controller proposals (routebr, a_state and a_ground, each
   under its own options), on the full state grid (every boolean runtime state × every catalog action, with a
   resolved, an unresolved and a missing object, plus states that break the schema), and on the fail-closed
   proposals below; it exits non-zero on any disagreement;
2. times each engine's decisions per second, **interleaved in one process** (one timing of each in turn, the order
   rotated every repetition, garbage collector paused) on (a) the recorded rows and (b) fail-closed proposals — the
   recorded requests with outputs that break the contract (JSON text that does not parse, an action outside the
   catalog, a ``topk`` not primary-first, an object outside the candidates); every printed ratio is the median of
   the per-repetition ratios.  A peer's time includes its harness (the strict-JSON parse and building the engine's
   request), which it needs to decide at all; a Cedar batch call (``is_authorized_batch``) is timed too.

    .venv/bin/python benchmarks/bench_peers.py [--artifact DIR] [--repeat 7]

Targets (issue 29): ``decide`` ≥ 5× the faster peer on recorded rows, ≥ 3× on fail-closed proposals.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from peers_encode import CedarProgram, RegoProgram, agreement  # noqa: E402

from routebr_kit.core.controller import Controller, ControllerOptions  # noqa: E402
from routebr_kit.core.records import NONE, UNRESOLVED, RouteRequest, RuntimeState  # noqa: E402
from routebr_kit.store.artifact import Artifact  # noqa: E402

TARGET_RECORDED, TARGET_FAIL_CLOSED = 5.0, 3.0


def recorded(artifact: Artifact) -> list[tuple[Controller, RouteRequest, Any]]:
    """``(controller, request, first output)`` for every recorded proposal of every controller task."""
    items = []
    for task in artifact.tasks(controller_only=True):
        controller = artifact.assets.controller(ControllerOptions.for_system(task.system))
        cases = artifact.cases(task.phase)
        items += [(controller, cases[row.case_id].request, row.proposal_output) for row in artifact.predictions(task)]
    return items


def fail_closed(items: list[tuple[Controller, RouteRequest, Any]]) -> list[tuple[Controller, RouteRequest, Any]]:
    """The recorded requests with outputs that break the contract, four kinds in turn."""
    out = []
    for i, (controller, request, _) in enumerate(items):
        actions = controller.catalog.ids
        kind = i % 4
        if kind == 0:
            output: Any = '{"action_id": "' + actions[0] + '", "object_id": '  # truncated JSON text
        elif kind == 1:
            output = {"action_id": "A9_UNKNOWN", "object_id": NONE, "topk": ["A9_UNKNOWN"]}
        elif kind == 2:
            output = {"action_id": actions[0], "object_id": UNRESOLVED, "topk": [actions[1], actions[0]]}
        else:
            output = {"action_id": actions[0], "object_id": "NOT_A_CANDIDATE", "topk": [actions[0]]}
        out.append((controller, request, output))
    return out


def grid(controller: Controller, candidates: tuple) -> list[tuple[RouteRequest, Any]]:
    """Every boolean state of the schema × every action × object (a typed candidate, UNRESOLVED, NONE), plus
    states that break the schema (a field missing, a field not boolean)."""
    names = [f.name for f in controller.policy.state_schema.fields]
    states = [dict(zip(names, bits)) for bits in itertools.product((False, True), repeat=len(names))]
    states += [{k: v for k, v in states[-1].items() if k != names[0]}, {**states[-1], names[-1]: 1},
               {**states[0], names[1]: "true"}]
    rows = []
    for n, state in enumerate(states):
        request = RouteRequest(f"G{n}", "", (), RuntimeState(state), candidates)
        for action in controller.catalog:
            typed = next((e.object_id for e in candidates if e.object_type in action.required_object_types), NONE)
            for obj in {typed, UNRESOLVED, NONE}:
                rows.append((request, {"action_id": action.action_id, "object_id": obj, "topk": [action.action_id]}))
    return rows


def check(items, engines_of) -> int:
    """Disagreements over ``items`` (printed, the first few)."""
    found = 0
    by_controller: dict[int, list] = {}
    for controller, request, output in items:
        by_controller.setdefault(id(controller), [controller, []])[1].append((request, output))
    for controller, rows in by_controller.values():
        for i, engine, mine, theirs in agreement(controller, rows, engines_of(controller)):
            found += 1
            if found <= 5:
                print(f"  DISAGREE {engine} row {i}: kit {mine} peer {theirs} output {json.dumps(rows[i][1])[:160]}")
    return found


def timed(work: Callable[[], Any], rows: int) -> float:
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        work()
        return rows / (time.perf_counter() - start)
    finally:
        if gc_was:
            gc.enable()


def workloads(items, engines_of) -> dict[str, Callable[[], Any]]:
    kit = [(c.decide, r, o) for c, r, o in items]
    cedar = [(engines_of(c)[0].decide, r, o) for c, r, o in items]
    rego = [(engines_of(c)[1].decide, r, o) for c, r, o in items]
    import cedarpy

    programs = [engines_of(c)[0] for c, _, _ in items]
    batch_groups: dict[int, list] = {}
    for program, (_, r, o) in zip(programs, items):
        batch_groups.setdefault(id(program), [program, []])[1].append((r, o))

    def cedar_batch() -> None:
        for program, rows in batch_groups.values():
            built = [program.request(r, o) for r, o in rows]
            results = cedarpy.is_authorized_batch([b[0] for b in built], program.policies, program.entities)
            for result, (_, proposal) in zip(results, built):
                program.outcome(result, proposal)

    def loop(calls):
        return lambda: [decide(r, o) for decide, r, o in calls]

    return {"decide": loop(kit), "cedar": loop(cedar), "cedar batch": cedar_batch, "rego": loop(rego)}


def measure(name: str, items, engines_of, repeat: int) -> dict[str, float]:
    work = workloads(items, engines_of)
    for w in work.values():
        w()  # warm-up
    rates: dict[str, list[float]] = {k: [] for k in work}
    names = list(work)
    for rep in range(repeat):
        for k in names[rep % len(names):] + names[:rep % len(names)]:
            rates[k].append(timed(work[k], len(items)))
    print(f"\n{name}: {len(items):,} decisions, {repeat} interleaved repetitions")
    ratios = {}
    for k, r in rates.items():
        line = f"  {k:12s} {statistics.median(r):>10,.0f} decisions/s"
        if k != "decide":
            ratios[k] = statistics.median(d / m for d, m in zip(rates["decide"], r))
            line += f"   decide is {ratios[k]:.1f}x this"
        print(line)
    return ratios


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "routebr_artifact"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    artifact = Artifact(args.artifact)
    items = recorded(artifact)
    programs: dict[int, tuple[CedarProgram, RegoProgram]] = {}

    def engines_of(controller: Controller) -> tuple[CedarProgram, RegoProgram]:
        if id(controller) not in programs:
            programs[id(controller)] = (CedarProgram(controller), RegoProgram(controller))
        return programs[id(controller)]

    bad = fail_closed(items)
    candidates = tuple(list(artifact.assets.registry)[:2])
    grids = [(c, r, o) for c in {c.options: c for c, _, _ in items}.values() for r, o in grid(c, candidates)]
    disagreements = 0
    for label, chosen in (("recorded proposals", items), ("state grid", grids), ("fail-closed proposals", bad)):
        found = check(chosen, engines_of)
        disagreements += found
        print(f"agreement on {len(chosen):,} {label}: {len(chosen) - found:,}/{len(chosen):,} "
              f"(kit, Cedar and Rego decide alike)" if not found else f"{found} disagreements on {label}")
    print(f"(Cedar policies per program: {len(engines_of(items[0][0]).__getitem__(0).annotations)}; one program "
          f"per controller options)")
    a = measure("recorded proposals", items, engines_of, args.repeat)
    b = measure("fail-closed proposals", bad, engines_of, args.repeat)
    fa, fb = min(a.values()), min(b.values())  # the faster peer: the smallest ratio
    print(f"\ntarget decide >= {TARGET_RECORDED:g}x the faster peer on recorded rows: {fa:.1f}x "
          f"({'met' if fa >= TARGET_RECORDED else 'NOT met'}); >= {TARGET_FAIL_CLOSED:g}x on fail-closed: {fb:.1f}x "
          f"({'met' if fb >= TARGET_FAIL_CLOSED else 'NOT met'})")
    sys.exit(1 if disagreements else 0)


if __name__ == "__main__":
    main()
