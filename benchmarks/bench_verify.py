"""Wall time of the verifier, in-process, each figure measured in this run (median of ``--repeat`` runs, garbage
collector paused while timing):

1. ``verify_release`` of the published release (catalog, boundary rules, registry), with every finding
   (redundancy included) — target ≤ 100 ms;
2. ``verify_release`` of seeded synthetic programs with 24 boolean, 4 numeric (4 thresholds each) and 3 string
   (4 constants each) fields and 200 rules — target ≤ 2 s each — with the redundancy finding and without it;
3. ``semantic_diff`` of such a program and a candidate with 5 rules given another decision — target ≤ 2 s;
4. bounded session verification (``verify --horizon K``, issue 32) on the shipped example (``data/sessions/``: the
   temporal rule program and its five assertions, one deliberately false) for K = 1..``--horizon``, and the session
   diff against the example candidate (``rules_candidate.csv``: the hourly limit over two hours) — median of
   ``--horizon-repeat`` runs, the feasibility caches cleared before each, with the number of abstract sessions
   explored (the K = 1 time includes importing scipy).  No target: the figures show how the cost grows with K.

No state is enumerated (2^24 boolean assignments alone would be 16.7 million): the figures come with the diagram
sizes and region counts that were actually built.

The machine's load is printed with the figures (wall time on a shared machine moves with it).

    .venv/bin/python benchmarks/bench_verify.py [--artifact DIR] [--seeds 0 1 … 9] [--repeat 5]
                                                [--horizon 4] [--horizon-repeat 3]

``--horizon 0`` leaves out part 4; ``--seeds`` with no seed leaves out part 2 and 3.
"""

from __future__ import annotations

import argparse
import gc
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routebr_kit.store.artifact import SIBLING_DIR
from routebr_kit.store.assets import load_assets, load_catalog, load_rules
from routebr_kit.verify import horizon, semantic_diff, verify_release
from routebr_kit.verify.synthetic import perturbed, synthetic_program

ROOT = Path(__file__).resolve().parents[1]


def timed(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            result = fn()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--artifact", type=Path, default=SIBLING_DIR)
    parser.add_argument("--seeds", type=int, nargs="*", default=list(range(10)))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--horizon", type=int, default=4, help="largest K of the session sweep (0: none)")
    parser.add_argument("--horizon-repeat", type=int, default=3)
    args = parser.parse_args()
    if hasattr(os, "getloadavg"):
        print(f"load average at start: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")

    data = args.artifact / "data"
    a = load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    t, report = timed(lambda: verify_release(a.catalog, a.policy, a.registry), args.repeat * 4)
    print(f"published release: verify {t * 1000:.1f} ms (target <= 100 ms); states_total {report.states_total}, "
          f"regions_total {report.regions_total}, diagram nodes {report.diagram_nodes}")
    t2, _ = timed(lambda: verify_release(a.catalog, a.policy, a.registry, redundancy=False), args.repeat * 4)
    print(f"published release without the redundancy finding: {t2 * 1000:.1f} ms")
    print()
    print("synthetic: 24 boolean + 4 numeric + 3 string fields, 200 rules, 5 actions (targets <= 2 s)")
    print(f"{'seed':>4}  {'verify':>8}  {'no redund.':>10}  {'diff':>8}  {'regions':>8}  {'nodes':>7}  "
          f"{'changed regions':>15}")
    worst = {"verify": 0.0, "plain": 0.0, "diff": 0.0}
    for seed in args.seeds:
        program = synthetic_program(seed)
        policy = program.policy()
        cand = perturbed(program, seed + 1000).policy()
        def full(program=program, policy=policy):
            return verify_release(program.catalog, policy, program.registry)

        def plain(program=program, policy=policy):
            return verify_release(program.catalog, policy, program.registry, redundancy=False)

        def diff_of(program=program, policy=policy, cand=cand):
            return semantic_diff(program.catalog, policy, program.catalog, cand, program.registry, program.registry)

        tv, rep = timed(full, args.repeat)
        tp, _ = timed(plain, args.repeat)
        td, diff = timed(diff_of, args.repeat)
        worst = {"verify": max(worst["verify"], tv), "plain": max(worst["plain"], tp), "diff": max(worst["diff"], td)}
        print(f"{seed:>4}  {tv:>7.2f}s  {tp:>9.2f}s  {td:>7.2f}s  {rep.regions_total:>8}  {rep.diagram_nodes:>7}  "
              f"{diff.regions_changed:>15}")
    if hasattr(os, "getloadavg"):
        print(f"load average at end: {os.getloadavg()[0]:.2f}")
    if args.seeds:
        print(f"worst over {len(args.seeds)} seeds: verify {worst['verify']:.2f} s, without redundancy "
              f"{worst['plain']:.2f} s, diff {worst['diff']:.2f} s")
    if args.horizon > 0:
        print()
        horizon_sweep(args.horizon, args.horizon_repeat)


def _clear_horizon_caches() -> None:
    horizon._times_feasible.cache_clear()
    horizon._amounts_feasible.cache_clear()


def horizon_sweep(max_k: int, repeat: int) -> None:
    """Part 4: ``verify --horizon K`` and the session diff on ``data/sessions/`` for K = 1..max_k."""
    catalog = load_catalog(ROOT / "routebr_kit/resources/catalog.csv")
    policy = load_rules(ROOT / "data/sessions/rules.csv", catalog)
    candidate = load_rules(ROOT / "data/sessions/rules_candidate.csv", catalog)
    assertions = horizon.load_assertions(ROOT / "data/sessions/assertions.json", catalog)
    load = f"; load average {os.getloadavg()[0]:.2f}" if hasattr(os, "getloadavg") else ""
    print(f"sessions (data/sessions/, {len(assertions)} assertions), median of {repeat}{load}")
    print(f"{'K':>2}  {'verify':>8}  {'sessions':>8}  {'refuted (confirmed)':>19}  {'diff':>8}  {'diff sessions':>13}")
    for k in range(1, max_k + 1):
        times, dtimes = [], []
        for _ in range(repeat):
            _clear_horizon_caches()
            start = time.perf_counter()
            report = horizon.verify_horizon(catalog, policy, assertions, k)
            times.append(time.perf_counter() - start)
            _clear_horizon_caches()
            start = time.perf_counter()
            diff = horizon.session_diff(catalog, policy, candidate, k)
            dtimes.append(time.perf_counter() - start)
        refuted = [r for r in report.results if not r.holds]
        confirmed = sum(r.counterexample.confirmed for r in refuted if r.counterexample)
        print(f"{k:>2}  {statistics.median(times):>7.3f}s  {report.sessions:>8}  "
              f"{f'{len(refuted)} ({confirmed})':>19}  {statistics.median(dtimes):>7.3f}s  {diff.sessions:>13}")


if __name__ == "__main__":
    main()
