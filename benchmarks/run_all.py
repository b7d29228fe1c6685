"""``make bench``: run every benchmark script and write ``benchmarks/RESULTS.md`` — the one place measured figures
live (the README and the documentation include or link it; nobody types a timing into prose).

Each script runs in its own interpreter; its printed output goes into the file verbatim with its wall time, under
a header that records when, on what machine and under what load (1-minute load average before and after) it was
measured.  ``--only NAME`` runs some scripts; ``--out FILE`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: script -> its arguments (the figures the documentation cites)
SCRIPTS: dict[str, list[str]] = {
    "bench_controller.py": [],
    "bench_tables.py": [],
    "bench_generate.py": [],
    "bench_offline_backends.py": [],
    "bench_metaroute.py": [],
    "bench_runner.py": ["--calls", "320", "--concurrency", "8,32"],
}


def _load() -> str:
    try:
        return f"{os.getloadavg()[0]:.2f}"
    except OSError:
        return "unknown"


def _commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", help="script names to run (default: all)")
    parser.add_argument("--out", type=Path, default=HERE / "RESULTS.md")
    args = parser.parse_args(argv)
    chosen = [s for s in SCRIPTS if not args.only or s in args.only or s.removesuffix(".py") in args.only]
    started, load_before = datetime.now(UTC), _load()
    sections, status = [], 0
    for i, script in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {script}", flush=True)
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, str(HERE / script), *SCRIPTS[script]], capture_output=True, text=True,
                             env={**os.environ, "TQDM_DISABLE": "1"})
        seconds = time.perf_counter() - t0
        status |= run.returncode != 0
        shown = run.stdout.strip() + (f"\n\nFAILED, exit {run.returncode}:\n{run.stderr.strip()}"
                                      if run.returncode else "")
        sections += [f"## `{script}` {' '.join(SCRIPTS[script])}".rstrip(), "",
                     f"Wall time {seconds:.1f} s.", "", "```text", shown, "```", ""]
    header = ["# Benchmark results", "",
              "Written by `make bench` (`benchmarks/run_all.py`); do not edit by hand.", "",
              "| measured | |", "|---|---|",
              f"| date | {started:%Y-%m-%d %H:%M} UTC |",
              f"| machine | {platform.machine()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()} |",
              f"| python | {platform.python_version()} |",
              f"| commit | {_commit()} |",
              f"| load (1-min average) | {load_before} before, {_load()} after |", ""]
    args.out.write_text("\n".join(header + sections), encoding="utf-8")
    print(f"written: {args.out}")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
