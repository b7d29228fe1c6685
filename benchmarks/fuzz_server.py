"""Fuzz the run path end to end: ≥10,000 hostile replies from a real local server through ``run_cases``.

A local OpenAI-compatible server (``tests/openai_server.py``, in this process) answers every request with a reply
from ``tests/fuzz_replies.py``'s seeded generator (bytes, arbitrary and deeply nested JSON, any Unicode including
lone surrogates, malformed envelopes, mutated proposals, echoed API keys, HTTP statuses, wrong content types,
truncated and huge bodies, and valid answers).  RouteBR runs over batches of the published cases through the
``openai`` SDK path (``make_backend`` with a profile pointing at the server) until the server has answered
``--replies`` requests.  Each finished run directory is checked (``fuzz_replies.check_run``): one row per case,
strict UTF-8 JSON receipts, no key in any file, no dispatch outside the catalog / the candidates / against a
non-ALLOW rule, receipts replaying to the same decisions.

Printed: replies served (by kind), runs, cases, crashed runs (an exception out of ``run_cases``), invariant
violations, failures a backend *raised* (recorded as ``EXCEPTION``, by message), reasons, wall time and replies/s.
Exit status 1 if any run crashed or any invariant was violated.

    .venv/bin/python benchmarks/fuzz_server.py [--replies 10000] [--seed 0] [--cases-per-run 60] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import time
import traceback
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from fuzz_replies import HostileResponder, check_run  # noqa: E402
from openai_server import OpenAIServer  # noqa: E402

import routebr_kit as rk  # noqa: E402
from routebr_kit.backends.registry import make_backend  # noqa: E402
from routebr_kit.runs.runner import run_cases  # noqa: E402

DEFAULT_ARTIFACT = REPO.parent / "shared" / "routebr_artifact"
KEY_ENV = "ROUTEBR_FUZZ_API_KEY"
KEY = "sk-fuzz-0d4c9b1e7a2f40c8b3e6"


def batches(cases: list[rk.Case], size: int):
    """Batches of ``size`` distinct cases, re-numbered ``<id>~<k>`` on each pass over the file."""
    k = 0
    while True:
        for start in range(0, len(cases), size):
            chunk = cases[start:start + size]
            yield [dataclasses.replace(c, request=dataclasses.replace(c.request, request_id=f"{c.case_id}~{k}"))
                   for c in chunk]
        k += 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replies", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--cases-per-run", type=int, default=60)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--huge-bytes", type=int, default=2_000_000, help="largest 'huge' body")
    parser.add_argument("--artifact", type=Path, default=DEFAULT_ARTIFACT)
    args = parser.parse_args()

    os.environ[KEY_ENV] = KEY
    os.environ.setdefault("TQDM_DISABLE", "1")
    data = args.artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    cases = list(rk.load_cases(data / "routebr_600.csv"))
    responder = HostileResponder(args.seed, secrets=(KEY,), huge_bytes=args.huge_bytes)
    runs = crashed = total_cases = 0
    violations: list[str] = []
    crashes: list[str] = []
    reasons: Counter[str] = Counter()
    raised: Counter[str] = Counter()
    kinds: Counter[str] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="routebr-fuzz-") as tmp, OpenAIServer(responder) as server:
        profiles = Path(tmp) / "profiles.json"
        profiles.write_text(json.dumps({"fuzz": {
            "base_url": server.base_url, "api_key_env": KEY_ENV, "model": "test-model", "timeout_s": 20,
            "max_retries": 1, "retry_backoff_s": 0.001, "max_retry_after_s": 0.01,
            "request_options": {"temperature": 0, "max_tokens": 256}}}), encoding="utf-8")
        for chunk in batches(cases, args.cases_per_run):
            if server.count >= args.replies:
                break
            out = Path(tmp) / f"run{runs:04d}"
            runs += 1
            total_cases += len(chunk)
            try:
                backend = make_backend("fuzz", cases=chunk, profiles_path=profiles)
                run_cases(chunk, backend, system="routebr", assets=assets, out_dir=out,
                          concurrency=args.concurrency, progress=False)
            except BaseException as exc:  # noqa: BLE001 - a crashed run is what this script counts
                crashed += 1
                crashes.append("".join(traceback.format_exception_only(exc)).strip()[:300])
                continue
            violations += check_run(out, chunk, assets, secrets=(KEY,))
            for path in (out / "raw").glob("*.json"):
                receipt = json.loads(path.read_text(encoding="utf-8"))
                reasons[receipt["summary"]["reason"]] += 1
                for entry in receipt["responses"]:
                    failure = entry.get("failure") or {}
                    kinds[failure.get("kind") or "ok"] += 1
                    if failure.get("kind") == rk.FailureKind.EXCEPTION.value:
                        raised[failure["message"].split(":")[0]] += 1
        served = server.count
    wall = time.perf_counter() - started
    print(f"replies served        {served}  (seed {args.seed}, concurrency {args.concurrency})")
    print(f"by kind               {dict(sorted(responder.kinds.items()))}")
    print(f"runs                  {runs}  cases {total_cases}")
    print(f"crashed runs          {crashed}")
    print(f"invariant violations  {len(violations)}")
    print(f"reply outcomes        {dict(sorted(kinds.items()))}")
    print(f"raised by backend     {dict(raised.most_common())}  (recorded as EXCEPTION, fail-closed)")
    print(f"reasons               {dict(sorted(reasons.items()))}")
    print(f"wall                  {wall:.1f} s  ({served / wall:.0f} replies/s)")
    for line in crashes[:5] + violations[:20]:
        print("  " + line)
    return 1 if crashed or violations else 0


if __name__ == "__main__":
    sys.exit(main())
