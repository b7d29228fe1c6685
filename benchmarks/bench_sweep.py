"""Wall times of the MetaRoute robustness sweep on each executor, and of the fast trace export.

1. **Sweep** — the same Latin-hypercube design (``--configs`` configurations × ``--seeds`` seeds, the eight main
   policies, fast mode) run from scratch, each into a fresh directory, ``inline``, then ``processes:2``, then
   ``dask:2`` (an in-process ``LocalCluster`` of two single-threaded worker processes; cluster start-up is
   included).  Prints each wall time, traces simulated per second, and ``efficiency at 2 workers`` =
   inline time / (2 × parallel time) — 1.0 is a perfect two-fold speed-up.  The three ``summary.csv`` files are
   compared byte for byte.
2. **Trace export** — ``run_benchmark(--trace-seeds, mode=fast)`` exported with and without ``traces.csv``:
   run + export wall time of both, their ratio (target ≤ 3), traces written per second, and the export's peak
   traced memory per trace (``tracemalloc``, measured in a separate export so it does not slow the timed one).

Figures are measured on whatever machine runs this; a shared, loaded machine depresses the efficiency.

    .venv/bin/python benchmarks/bench_sweep.py [--configs 200] [--seeds 30] [--trace-seeds 3000]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
import tracemalloc
from pathlib import Path

from routebr_kit.metaroute import Mode, run_benchmark
from routebr_kit.metaroute.sweep import SUMMARY, default_space, design, run_sweep

TRACES_PER_SEED = 8 * 180  # eight policies × 180 tasks


def sweep(plan, seeds: int, executor: str, root: Path) -> tuple[float, bytes]:
    out = root / executor.replace(":", "_")
    start = time.perf_counter()
    run_sweep(plan, seeds, out, executor=executor)
    return time.perf_counter() - start, (out / SUMMARY).read_bytes()


def trace_export(seeds: int, root: Path) -> None:
    start = time.perf_counter()
    run = run_benchmark(seeds, mode=Mode.FAST)
    simulated = time.perf_counter() - start
    start = time.perf_counter()
    run.export(root / "no_traces", include_traces=False)
    without = simulated + time.perf_counter() - start
    start = time.perf_counter()
    run.export(root / "traces")
    export = time.perf_counter() - start
    with_traces = simulated + export
    tracemalloc.start()
    run.export(root / "traces_memory")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    n = len(run.traces)
    size = (root / "traces" / "traces.csv").stat().st_size
    print(f"\ntrace export at {seeds} seeds ({n:,} traces, traces.csv {size / 1e6:.0f} MB):")
    print(f"  run + export without traces: {without:.2f} s")
    print(f"  run + export with traces:    {with_traces:.2f} s  (traces.csv alone {export:.2f} s)")
    print(f"  with / without: {with_traces / without:.2f}x (target <= 3)")
    print(f"  traces written per second: {n / export:,.0f}")
    print(f"  export peak traced memory: {peak / n:.1f} bytes per trace (target < 120)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=30)
    parser.add_argument("--sample-seed", type=int, default=0)
    parser.add_argument("--trace-seeds", type=int, default=3000)
    parser.add_argument("--executors", nargs="+", default=["inline", "processes:2", "dask:2"])
    args = parser.parse_args()
    plan = design(default_space(), samples=args.configs, seed=args.sample_seed)
    traces = args.configs * args.seeds * TRACES_PER_SEED
    print(f"sweep: {args.configs} configurations x {args.seeds} seeds = {traces:,} traces per executor")
    times, summaries = {}, {}
    with tempfile.TemporaryDirectory() as tmp:
        for executor in args.executors:
            times[executor], summaries[executor] = sweep(plan, args.seeds, executor, Path(tmp))
            load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
            print(f"  {executor:<12} {times[executor]:7.2f} s   {traces / times[executor]:>12,.0f} traces/s"
                  f"   (load average after: {load}; {os.cpu_count()} cores)")
        identical = len(set(summaries.values())) == 1
        print(f"  summary.csv byte-identical across {', '.join(args.executors)}: {identical}")
        if "inline" in times:
            for executor, seconds in times.items():
                if executor != "inline":
                    print(f"efficiency at 2 workers: {times['inline'] / (2 * seconds):.2f}  ({executor})")
        trace_export(args.trace_seeds, Path(tmp))


if __name__ == "__main__":
    main()
