"""Wall time of bounded session verification (``verify --horizon K``, issue 32) on the shipped example
(``data/sessions/``: the temporal rule program and its five assertions, one deliberately false), K = 1..4, and of
the session diff against the example candidate (``rules_candidate.csv``: the hourly limit over two hours).

Each figure: median of ``--repeat`` in-process runs, the feasibility caches cleared before each; the number of
abstract sessions explored is printed with it.  The machine's load is printed too (wall time on a shared machine
moves with it).

    .venv/bin/python benchmarks/bench_horizon.py [--max-k 4] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from routebr_kit.store.assets import load_catalog, load_rules
from routebr_kit.verify import horizon

ROOT = Path(__file__).resolve().parents[1]


def _clear() -> None:
    horizon._times_feasible.cache_clear()
    horizon._amounts_feasible.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-k", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    catalog = load_catalog(ROOT / "routebr_kit/resources/catalog.csv")
    policy = load_rules(ROOT / "data/sessions/rules.csv", catalog)
    candidate = load_rules(ROOT / "data/sessions/rules_candidate.csv", catalog)
    assertions = horizon.load_assertions(ROOT / "data/sessions/assertions.json", catalog)
    print(f"load average {os.getloadavg()[0]:.2f}")
    print("K  verify_s  sessions  refuted(confirmed)  diff_s  diff_sessions")
    for k in range(1, args.max_k + 1):
        times, dtimes = [], []
        for _ in range(args.repeat):
            _clear()
            start = time.perf_counter()
            report = horizon.verify_horizon(catalog, policy, assertions, k)
            times.append(time.perf_counter() - start)
            _clear()
            start = time.perf_counter()
            diff = horizon.session_diff(catalog, policy, candidate, k)
            dtimes.append(time.perf_counter() - start)
        refuted = [r for r in report.results if not r.holds]
        confirmed = sum(r.counterexample.confirmed for r in refuted if r.counterexample)
        print(f"{k}  {statistics.median(times):8.3f}  {report.sessions:8d}  {len(refuted)}({confirmed})"
              f"                {statistics.median(dtimes):6.3f}  {diff.sessions:8d}")


if __name__ == "__main__":
    main()
