"""Decisions per second of the deterministic path on the 1,400 published RouteBR-controller proposals.

Loads the artifact once, rebuilds every recorded proposal (as ``replay`` does), then times
``Controller.decide`` alone — contract, primary commitment, state gate, object gate, Decision record — with no
I/O, on one core.  Prints the median of five repetitions (garbage collector paused while timing, as ``timeit``
does) and the ratio to the published controller's ~68,000 decisions/s on this machine class.

    .venv/bin/python benchmarks/bench_controller.py [--artifact ../shared/routebr_artifact] [--repeat 5]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from pathlib import Path

from routebr_kit.core.controller import ControllerOptions
from routebr_kit.store.artifact import Artifact

PUBLISHED_RATE = 68_000  # decisions/s of the published controller replaying the same rows (≈15 µs each)
TARGET_RATE = 140_000


def workload(artifact: Artifact) -> list[tuple]:
    items = []
    for task in artifact.tasks(controller_only=True):
        decide = artifact.assets.controller(ControllerOptions.for_system(task.system)).decide
        cases = artifact.cases(task.phase)
        for row in artifact.predictions(task):
            items.append((decide, cases[row.case_id].request, row.proposal_output))
    return items


def rate(items: list[tuple], inner: int) -> float:
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        for _ in range(inner):
            for decide, request, output in items:
                decide(request, output)
        return inner * len(items) / (time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "routebr_artifact"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=default)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--inner", type=int, default=20, help="passes over the 1,400 rows per repetition")
    args = parser.parse_args()

    items = workload(Artifact(args.artifact))
    rate(items, 1)  # warm-up
    rates = [rate(items, args.inner) for _ in range(args.repeat)]
    median = statistics.median(rates)
    print(f"rows: {len(items)}; repetitions: {args.repeat} × {args.inner} passes")
    print(f"per decision: {1e6 / median:.2f} µs (min {1e6 / max(rates):.2f}, max {1e6 / min(rates):.2f})")
    print(f"vs published controller: {median / PUBLISHED_RATE:.2f}× (target ≥ {TARGET_RATE / PUBLISHED_RATE:.1f}×)")
    print(f"{median:,.0f} decisions/s")


if __name__ == "__main__":
    main()
