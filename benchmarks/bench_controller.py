"""Decisions per second of the deterministic path on the 1,400 published RouteBR-controller proposals.

Loads the artifact once, rebuilds every recorded proposal (as ``replay`` does), then times
``Controller.decide`` alone — contract, primary commitment, state gate, object gate, Decision record — with no
I/O, on one core.  Prints the median of five repetitions (garbage collector paused while timing, as ``timeit``
does), by the wall clock (``perf_counter``) and by this process's CPU time (``process_time``, less sensitive to
other processes on a shared machine).  Every call does the whole work: the controller keeps nothing between
calls (only structures compiled from the frozen assets when it is built).  For scale it also times, in the same
run, the one replay path (:func:`routebr_kit.runs.replay.replay_rows`: the async protocol through a replay backend
plus ledger rows) over the same rows, and prints the ratio of the two measured rates — never a ratio against a
figure measured elsewhere.

    .venv/bin/python benchmarks/bench_controller.py [--artifact ../shared/routebr_artifact] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from routebr_kit.core.controller import ControllerOptions
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store.artifact import Artifact

TARGET_RATE = 600_000  # issue 11's target for decide on this 2-core machine (a target, not a measurement)


def workload(artifact: Artifact) -> list[tuple]:
    items = []
    for task in artifact.tasks(controller_only=True):
        decide = artifact.assets.controller(ControllerOptions.for_system(task.system)).decide
        cases = artifact.cases(task.phase)
        for row in artifact.predictions(task):
            items.append((decide, cases[row.case_id].request, row.proposal_output))
    return items


def rate(items: list[tuple], inner: int) -> float:
    """Decisions per second by the wall clock (see :func:`rates`)."""
    return rates(items, inner)[0]


def rates(items: list[tuple], inner: int) -> tuple[float, float]:
    """Decisions per second of ``inner`` passes over ``items``: ``(by wall clock, by process CPU time)``."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start, cpu = time.perf_counter(), time.process_time()
        for _ in range(inner):
            for decide, request, output in items:
                decide(request, output)
        done = inner * len(items)
        return done / (time.perf_counter() - start), done / max(time.process_time() - cpu, 1e-9)
    finally:
        if gc_was_enabled:
            gc.enable()


def replay_rate(artifact: Artifact) -> float:
    """Rows per second of the one replay path over every controller task (one pass)."""
    jobs = [(artifact.assets.controller(ControllerOptions.for_system(t.system)), artifact.predictions(t),
             artifact.cases(t.phase), t.receipts()) for t in artifact.tasks(controller_only=True)]
    start = time.perf_counter()
    rows = sum(len(replay_rows(c, r, cases, receipts=receipts).rows) for c, r, cases, receipts in jobs)
    return rows / (time.perf_counter() - start)


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "routebr_artifact"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--inner", type=int, default=20, help="passes over the 1,400 rows per repetition")
    args = parser.parse_args()

    artifact = Artifact(args.artifact)
    items = workload(artifact)
    rate(items, 1)  # warm-up
    measured = [rates(items, args.inner) for _ in range(args.repeat)]
    walls = [wall for wall, _ in measured]
    median = statistics.median(walls)
    cpu_median = statistics.median(cpu for _, cpu in measured)
    replay = statistics.median(replay_rate(artifact) for _ in range(args.repeat))
    print(f"rows: {len(items)}; repetitions: {args.repeat} × {args.inner} passes")
    print(f"per decision: {1e6 / median:.2f} µs wall (min {1e6 / max(walls):.2f}, max {1e6 / min(walls):.2f}); "
          f"{1e6 / cpu_median:.2f} µs CPU ({cpu_median:,.0f} decisions per CPU-second)")
    print(f"replay path (replay_rows, same rows, this run): {replay:,.0f} rows/s; decide is {median / replay:.1f}× "
          "that rate")
    print(f"target: ≥ {TARGET_RATE:,} decisions/s — {'met' if median >= TARGET_RATE else 'not met'}")
    print(f"{median:,.0f} decisions/s")


if __name__ == "__main__":
    main()
