"""Wall times of MetaRoute-Bench: exact mode against the published code, fast mode against the exact mode.

Three measurements; times are the median (and best) of ``--repeat`` runs:

1. **End to end** — ``routebr-kit metaroute --seeds N --out DIR`` as a fresh process (interpreter start, imports,
   run, all five files), exact mode: the published ``metarouter-benchmark`` did the same in 1.92 s (30 seeds) and
   20.1 s (300 seeds) on this machine class (spec §2, ``/usr/bin/time``, Python 3.11).
2. **Run** — ``run_benchmark(N, mode=…)`` in process: task generation, routing, execution and evaluation, no
   file output.  The exact/fast ratio at 300 seeds is the speed-up of the fast mode (target ≥ 20×).
3. **Statistical equivalence** at 300 seeds — each policy's success rate in both modes next to the published
   30-seed interval and the model's exact expectation.

    .venv/bin/python benchmarks/bench_metaroute.py [--repeat 3] [--seeds 30 300]
"""

from __future__ import annotations

import argparse
import csv
import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from routebr_kit.metaroute import Mode, default_policies, expected_success_rates, run_benchmark

PUBLISHED_WALL = {30: 1.92, 300: 20.1}  # seconds, published code, main experiment, whole process
TARGET_RATIO = 20
CLI = Path(sys.executable).with_name("routebr-kit")


def timed(action, repeat: int) -> tuple[float, float]:
    """Median and best wall time of ``repeat`` calls (garbage collector paused while timing, as ``timeit`` does)."""
    times = []
    for _ in range(repeat):
        gc.collect()
        gc.disable()
        try:
            start = time.perf_counter()
            action()
            times.append(time.perf_counter() - start)
        finally:
            gc.enable()
    return statistics.median(times), min(times)


def cli_wall(seeds: int, repeat: int) -> tuple[float, float]:
    env = {**os.environ, "TQDM_DISABLE": "1"}
    with tempfile.TemporaryDirectory() as out:
        return timed(lambda: subprocess.run([str(CLI), "metaroute", "--seeds", str(seeds), "--out", out],
                                            check=True, stdout=subprocess.DEVNULL, env=env), repeat)


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "metaroute_artifact"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[30, 300])
    args = parser.parse_args()

    print("1. End to end, exact mode (fresh process, all five files)")
    for seeds in args.seeds:
        wall, best = cli_wall(seeds, args.repeat)
        published = PUBLISHED_WALL.get(seeds)
        versus = f"   published {published:5.2f} s   ({published / wall:.1f}× faster)" if published else ""
        print(f"   {seeds:>4} seeds   kit {wall:6.2f} s (best {best:.2f}){versus}")

    print("\n2. Run (generate, route, execute, evaluate; no files)")
    runs = {}
    for seeds in args.seeds:
        exact, exact_best = timed(lambda n=seeds: run_benchmark(n, mode=Mode.EXACT), args.repeat)
        fast, fast_best = timed(lambda n=seeds: run_benchmark(n, mode=Mode.FAST), max(args.repeat, 5))
        runs[seeds] = exact / fast
        print(f"   {seeds:>4} seeds   exact {exact:6.3f} s (best {exact_best:.3f})   fast {fast:6.3f} s "
              f"(best {fast_best:.3f})   ratio {exact / fast:5.1f}×")
    top = max(args.seeds)
    verdict = "meets" if runs[top] >= TARGET_RATIO else "MISSES"
    print(f"   fast mode at {top} seeds: {runs[top]:.1f}× faster than exact, medians ({verdict} the "
          f"{TARGET_RATIO}× target)")

    print(f"\n3. Success rate at {top} seeds against the published 30-seed interval and the model expectation")
    exact, fast = run_benchmark(top, mode=Mode.EXACT), run_benchmark(top, mode=Mode.FAST)
    expected = expected_success_rates(exact.tasks, default_policies(exact.config), exact.config.executor)
    with open(args.artifact / "main" / "summary.csv", encoding="utf-8") as handle:
        published = {row["policy"]: (float(row["success_rate"]), float(row["success_ci95"]))
                     for row in csv.DictReader(handle)}
    print(f"   {'policy':<18} {'published 30':>17} {'exact':>7} {'fast':>7} {'expected':>8}  "
          f"{'fast in CI':>10}  {'fast z':>6}")
    for summary in exact.evaluation.summaries:
        name = summary.policy
        s30, ci30 = published[name]
        f = fast.evaluation.summary(name)
        inside = abs(f.success_rate - s30) <= ci30
        z = (f.success_rate - expected[name]) / (f.success_ci95 / 1.96)
        print(f"   {name:<18} {s30:.4f} ± {ci30:.4f} {summary.success_rate:7.4f} {f.success_rate:7.4f} "
              f"{expected[name]:8.4f}  {'yes' if inside else 'no':>10}  {z:+6.2f}")
    print("   (expected = the model's exact success probability; z = fast minus expected in seed-level standard "
          "errors)")


if __name__ == "__main__":
    main()
