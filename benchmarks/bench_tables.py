"""Time recomputing every published RouteBR table from the artifact (target: under 2 seconds).

One run = load the artifact (cases, assets, 27 ledgers), replay the 1,400 controller rows, build Tables IV–VI and
the McNemar tests from the published predictions and from the replay, audit the artifact, parse
FINAL_RESULTS.{md,json} and score every published value.

    .venv/bin/python benchmarks/bench_tables.py [--artifact ../shared/routebr_artifact] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

_started = time.perf_counter()
from routebr_kit.experiments.published import audit_results, read_published, scorecard  # noqa: E402
from routebr_kit.experiments.replication import LedgerOrigin, paper_tables, replay_artifact  # noqa: E402
from routebr_kit.store.artifact import Artifact  # noqa: E402

IMPORT_SECONDS = time.perf_counter() - _started
DEFAULT_ARTIFACT = Path(__file__).resolve().parents[1].parent / "shared" / "routebr_artifact"
TARGET_SECONDS = 2.0


def recompute(root: Path) -> str:
    artifact = Artifact(root)  # a fresh instance: nothing cached between runs
    report = replay_artifact(artifact)
    published = paper_tables(artifact, LedgerOrigin.PUBLISHED)
    replayed = paper_tables(artifact, LedgerOrigin.REPLAYED, report)
    if published.differences(replayed):
        raise SystemExit("replayed tables differ from published-prediction tables")
    return scorecard(replayed, audit_results(artifact), read_published(artifact)).line


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    timings, line = [], ""
    for _ in range(args.repeat):
        start = time.perf_counter()
        line = recompute(args.artifact)
        timings.append(time.perf_counter() - start)
    first, median = timings[0], statistics.median(timings)
    print(f"imports (pandas, scipy, kit): {IMPORT_SECONDS:.2f} s, once per process")
    print(f"recompute everything from the artifact: first {first:.2f} s, median {median:.2f} s, "
          f"max {max(timings):.2f} s over {args.repeat} runs (target < {TARGET_SECONDS:.0f} s)")
    total = IMPORT_SECONDS + first
    print(f"import + first recompute: {total:.2f} s ({'within' if total < TARGET_SECONDS else 'OVER'} target)")
    print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
