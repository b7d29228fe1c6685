"""Runner efficiency against a local OpenAI-compatible server with an injected latency (target: >= 0.8 at 32).

The server (``tests/openai_server.py``, its own process) answers every request after ``--latency-ms``.  For each
concurrency the runner sends ``--calls`` RouteBR proposal calls (the published benchmark's cases, re-numbered to
reach the count) through the real ``openai`` client path, writing receipts and fsynced rows as in production.
Efficiency = ideal / measured wall time, with ideal = calls · latency / concurrency.  The published runner ran
each task sequentially (concurrency 1).  The client's CPU time per call and the machine's load average are printed
too: at concurrency 32 the run needs about half a core, so other busy processes on a small machine lower the
figure.

    .venv/bin/python benchmarks/bench_runner.py [--calls 1960] [--latency-ms 200] [--concurrency 1,8,32]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import routebr_kit as rk
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import Profile
from routebr_kit.cli.common import print_table
from routebr_kit.prompts import load_prompts
from routebr_kit.runs.runner import run_cases

REPO = Path(__file__).resolve().parents[1]
DEFAULT_ARTIFACT = REPO.parent / "shared" / "routebr_artifact"
TARGET = 0.8
KEY_ENV = "ROUTEBR_BENCH_API_KEY"


def cases_for(artifact: Path, calls: int) -> list[rk.Case]:
    """``calls`` distinct cases: the 600 published ones, re-numbered ``<id>~<k>`` on each pass."""
    base = rk.load_cases(artifact / "data" / "routebr_600.csv")
    out = []
    for i in range(calls):
        case = base[i % len(base)]
        request = dataclasses.replace(case.request, request_id=f"{case.case_id}~{i // len(base)}")
        out.append(dataclasses.replace(case, request=request))
    return out


def start_server(latency_ms: float) -> tuple[subprocess.Popen, str]:
    server = subprocess.Popen([sys.executable, str(REPO / "tests" / "openai_server.py"), "--latency-ms",
                               str(latency_ms)], stdout=subprocess.PIPE, text=True)
    line = server.stdout.readline().split()
    if not line or line[0] != "READY":
        server.kill()
        raise SystemExit("the benchmark server did not start")
    return server, line[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    parser.add_argument("--calls", type=int, default=1960)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", default="1,8,32", help="comma-separated concurrency levels")
    args = parser.parse_args()
    levels = [int(c) for c in args.concurrency.split(",")]
    data = args.artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    cases = cases_for(args.artifact, args.calls)
    os.environ[KEY_ENV] = "bench-not-a-secret"
    server, base_url = start_server(args.latency_ms)
    rows = []
    try:
        profile = Profile("bench", base_url, KEY_ENV, "test-model", max_retries=0, timeout_s=30.0)
        backend = OpenAICompatBackend(profile, load_prompts("zh"))
        with tempfile.TemporaryDirectory(prefix="bench_runner_") as tmp:
            for level in levels:
                started, cpu = time.perf_counter(), time.process_time()
                result = run_cases(cases, backend, system="routebr", assets=assets, out_dir=Path(tmp) / str(level),
                                   concurrency=level, progress=False)
                wall, cpu = time.perf_counter() - started, time.process_time() - cpu
                calls = result.summary["calls"]
                failed = result.summary["fail_closed"]
                ideal = calls * args.latency_ms / 1000 / level
                rows.append({"concurrency": level, "calls": calls, "fail_closed": failed,
                             "wall_s": round(wall, 2), "ideal_s": round(ideal, 2),
                             "efficiency": round(ideal / wall, 3), "calls_per_s": round(calls / wall, 1),
                             "client_cpu_ms_per_call": round(cpu / calls * 1000, 2),
                             "load_avg_1m": round(os.getloadavg()[0], 2)})
                print(f"concurrency {level}: {calls} calls in {wall:.2f} s (ideal {ideal:.2f} s), "
                      f"efficiency {ideal / wall:.3f}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print()
    print_table(rows)
    top = max(rows, key=lambda r: r["concurrency"])
    verdict = "meets" if top["efficiency"] >= TARGET else "misses"
    print(f"\nefficiency at concurrency {top['concurrency']}: {top['efficiency']} ({verdict} the {TARGET} target)")
    return 0 if all(r["fail_closed"] == 0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
