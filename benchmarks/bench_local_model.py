"""A real small model through the runner: llama.cpp's server with the packaged SmolLM2-135M (extra ``[local]``).

Starts the server on a free 127.0.0.1 port (:class:`~routebr_kit.backends.local_server.LocalServer`), then runs
``--cases`` RouteBR cases of the kit's generated benchmark (seed 0, MAIN then FLIP) for each response format
(free = ``json_object``, constrained = the per-request JSON Schema) at each concurrency, and prints, measured in
this run: prompt and completion tokens per second of model time, per-case latency p50/p95, cases per minute of
wall time, first-pass validity and fail-closed counts.  Printed, never asserted.  The figures depend on the
machine's load (printed too): llama-cpp-python's server answers one request at a time, so concurrency 2 mostly
queues.

    .venv/bin/python benchmarks/bench_local_model.py [--cases 8] [--concurrency 1,2] [--threads N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from routebr_kit.backends.constrain import Constrain
from routebr_kit.backends.local_server import (
    SMOLLM2,
    LocalServer,
    default_threads,
    free_port,
    missing_modules,
    resolve_model,
)
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import Profile
from routebr_kit.cli.common import print_table
from routebr_kit.dataset import generate_benchmark
from routebr_kit.prompts import load_prompts
from routebr_kit.runs.runner import run_cases


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=8)
    p.add_argument("--concurrency", default="1,2")
    p.add_argument("--threads", type=int, default=default_threads())
    args = p.parse_args(argv)
    missing = missing_modules(packaged=SMOLLM2)
    if missing:
        print(f"extra [local] not installed ({', '.join(missing)}): make local-model", file=sys.stderr)
        return 2
    bench = generate_benchmark(seed=0, language="en")
    cases = ([c for c in bench.cases if c.split.value == "MAIN"][: args.cases - args.cases // 2]
             + [c for c in bench.cases if c.split.value == "FLIP"][: args.cases // 2])
    port = free_port()
    started = time.perf_counter()
    rows = []
    with LocalServer(resolve_model(SMOLLM2.name), port=port, threads=args.threads) as server, \
            tempfile.TemporaryDirectory() as tmp:
        ready_s = time.perf_counter() - started
        profile = Profile("bench-local", server.base_url, "", SMOLLM2.alias, json_schema_style="inline",
                          request_options={"temperature": 0, "max_tokens": 160}, timeout_s=600, max_retries=0)
        for constrain in Constrain:
            for concurrency in [int(c) for c in args.concurrency.split(",")]:
                backend = OpenAICompatBackend(profile, load_prompts("en"), constrain=constrain)
                t0 = time.perf_counter()
                result = run_cases(cases, backend, system="routebr", assets=bench.assets, progress=False,
                                   out_dir=Path(tmp) / f"{constrain.value}-{concurrency}", concurrency=concurrency)
                wall = time.perf_counter() - t0
                latency = [float(r.latency_ms) / 1000 for r in result.rows]
                prompt = sum(int(r.input_tokens) for r in result.rows)
                completion = sum(int(r.output_tokens) for r in result.rows)
                model_s = sum(latency)
                rows.append({
                    "format": "free" if constrain is Constrain.NONE else "constrained", "concurrency": concurrency,
                    "cases": len(result.rows), "first_pass_valid": sum(bool(r.first_pass_valid) for r in result.rows),
                    "fail_closed": result.summary["fail_closed"],
                    "prompt_tok/s": round(prompt / model_s, 1) if model_s else 0.0,
                    "completion_tok/s": round(completion / model_s, 1) if model_s else 0.0,
                    "p50_s": round(statistics.median(latency), 2), "p95_s": round(_pct(latency, 0.95), 2),
                    "cases/min": round(60 * len(result.rows) / wall, 2),
                })
    print(f"SmolLM2-135M-Instruct Q4_1, llama-cpp-python server, {args.threads} threads; server ready in "
          f"{ready_s:.1f} s; load average {' '.join(f'{x:.1f}' for x in os.getloadavg())} (at the end)")
    print("tok/s = tokens over the summed per-case latency (prompt and completion share that time)")
    print_table(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
