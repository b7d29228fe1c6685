"""Wall time of the verifier, in-process, each figure measured in this run (median of ``--repeat`` runs, garbage
collector paused while timing):

1. ``verify_release`` of the published release (catalog, boundary rules, registry), with every finding
   (redundancy included) — target ≤ 100 ms;
2. ``verify_release`` of seeded synthetic programs with 24 boolean, 4 numeric (4 thresholds each) and 3 string
   (4 constants each) fields and 200 rules — target ≤ 2 s each — with the redundancy finding and without it;
3. ``semantic_diff`` of such a program and a candidate with 5 rules given another decision — target ≤ 2 s.

No state is enumerated (2^24 boolean assignments alone would be 16.7 million): the figures come with the diagram
sizes and region counts that were actually built.

The machine's load is printed with the figures (wall time on a shared machine moves with it).

    .venv/bin/python benchmarks/bench_verify.py [--artifact DIR] [--seeds 0 1 … 9] [--repeat 5]
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
from routebr_kit.store.assets import load_assets
from routebr_kit.verify import semantic_diff, verify_release
from routebr_kit.verify.synthetic import perturbed, synthetic_program


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
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--repeat", type=int, default=5)
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
    print(f"worst over {len(args.seeds)} seeds: verify {worst['verify']:.2f} s, without redundancy "
          f"{worst['plain']:.2f} s, diff {worst['diff']:.2f} s")


if __name__ == "__main__":
    main()
