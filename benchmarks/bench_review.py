"""Release-review speed: shadow + diff over the 1,960 published executions, and ``decide`` on 1,000,000 rows.

1. **Fresh-process wall time** of a shadow replay (a tightening rule edit) and of the paired diff with a gate over
   every published result folder, each in its own new Python process (``subprocess``; imports included), measured
   two ways: the same work through the review library alone, and through the ``routebr-kit`` console entry point
   (argument parsing, then only the invoked subcommand's module).  Median of ``--repeat`` runs.
2. **Row-by-row** ``Controller.decide`` (Algorithm 1 on stored replies, the one path) on a synthetic ledger of
   1,000,000 recorded decisions (generated here from a seed: 256 runtime states × 24 candidate lists, and first
   outputs valid and invalid).  Prints the rate.

    .venv/bin/python benchmarks/bench_review.py [--artifact ../shared/routebr_artifact] [--rows 1000000] [--repeat 3]

The machine is shared: also printed is the CPU time of each child process, which load does not inflate.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from routebr_kit.core.records import Entity, RouteRequest, RuntimeState
from routebr_kit.store.artifact import Artifact

REPO = Path(__file__).resolve().parents[1]
PYTHON = sys.executable
RULE = ('R065,65,A5_PROTECTED_ACTION,"{""policy_version"":{""lt"":""v2""}}",HANDOFF,'
        '"Protected actions need policy v2",v2\r\n')
#: The work of ``routebr-kit shadow`` and ``routebr-kit diff --gate``, through the review library alone (no argument
#: parsing, no command table).
SHADOW_LIBRARY = """
import sys
from routebr_kit.review.assets import compare_assets
from routebr_kit.review.change_impact import artifact_asset_files
from routebr_kit.review.ledgers import load_ledgers
from routebr_kit.review.shadow import shadow_replay, write_shadow
artifact, rules, out = sys.argv[1:]
base = artifact_asset_files(artifact)
edit = compare_assets(base, base.replace(rules=rules))
write_shadow(shadow_replay(load_ledgers(artifact, details=False), edit), out)
"""
DIFF_LIBRARY = """
import sys
from routebr_kit.review.diff import diff_ledgers, markdown
from routebr_kit.review.gate import Gate
from routebr_kit.review.ledgers import load_ledgers
base, candidate = sys.argv[1:3]
cache = {}
report = diff_ledgers(load_ledgers(base, cache=cache), load_ledgers(candidate, cache=cache))
verdict = Gate.parse("new_false_dispatch <= 0").evaluate(report)
markdown(report, verdict.lines())
sys.exit(0 if verdict.passed else 1)
"""


def _child(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, child CPU seconds, exit status) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=REPO, env={**os.environ, "TQDM_DISABLE": "1", "PYTHONHASHSEED": "0"},
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def fresh_process(artifact: Path, repeat: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench_review_"))
    rules = work / "boundary_rules.csv"
    rules.write_bytes((artifact / "data" / "boundary_rules.csv").read_bytes() + RULE.encode())
    for entry in ("review library", "routebr-kit console script"):
        walls, cpus = [], []
        for i in range(repeat):
            out = work / f"{entry[:6]}-{i}"
            if entry == "review library":
                w1, c1, s1 = _child([PYTHON, "-c", SHADOW_LIBRARY, str(artifact), str(rules), str(out)])
                w2, c2, s2 = _child([PYTHON, "-c", DIFF_LIBRARY, str(artifact), str(out)])
            else:
                cli = [PYTHON, "-m", "routebr_kit"]
                w1, c1, s1 = _child(cli + ["shadow", "--artifact", str(artifact), "--rules", str(rules),
                                           "--out", str(out)])
                w2, c2, s2 = _child(cli + ["diff", str(artifact), str(out), "--gate", "new_false_dispatch <= 0"])
            assert s1 == 0 and s2 == 0, (s1, s2)
            walls.append(w1 + w2)
            cpus.append(c1 + c2)
        print(f"shadow + diff, 1,960 published executions, fresh processes ({entry}): "
              f"{statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU (median of {repeat})")


# --------------------------------------------------------------------------------------------- 1,000,000 rows


FIELDS = ("identity_verified", "entity_resolved", "action_permission", "service_available", "context_fresh",
          "safety_escalation_required", "request_supported", "request_scope_clear")


def synthetic_ledger(artifact: Artifact, rows: int, seed: int = 0) -> tuple[list, list, list[int], list[int]]:
    """``rows`` recorded decisions over every boolean runtime state and 24 candidate lists from the registry:
    ``(requests, outputs, request index per row, output index per row)``."""
    rng = np.random.default_rng(seed)
    entities = list(artifact.assets.registry)[:12] + [Entity("TOPIC:rates", "TOPIC", "rates"),
                                                      Entity("ACCT:main", "ACCOUNT", "main account")]
    lists = [tuple(entities[j] for j in sorted(rng.choice(len(entities), size=k, replace=False)))
             for k in (1, 2, 3) for _ in range(8)]
    states = [RuntimeState({**dict(zip(FIELDS, bits)), "policy_version": "v1"})
              for bits in itertools.product((True, False), repeat=len(FIELDS))]
    requests = [RouteRequest(f"S{s}-L{c}", "", (), state, cands) for s, state in enumerate(states)
                for c, cands in enumerate(lists)]
    actions = artifact.assets.catalog.ids
    outputs: list[object] = []
    by_list: list[list[int]] = []
    for cands in lists:
        mine = []
        for a in actions:
            for o in [e.object_id for e in cands] + ["UNRESOLVED", "NONE"]:
                for topk in ([a], [a, next(x for x in actions if x != a)]):
                    mine.append(len(outputs))
                    outputs.append({"action_id": a, "object_id": o, "topk": topk})
        for bad in ("not json", '{"action_id": "A1_ADVISORY"}'):
            mine.append(len(outputs))
            outputs.append(bad)
        by_list.append(mine)
    request_index = rng.integers(0, len(requests), size=rows)
    list_of_request = np.array([i % len(lists) for i in range(len(requests))])
    offsets = np.array([m[0] for m in by_list])
    sizes = np.array([len(m) for m in by_list])
    lst = list_of_request[request_index]
    output_index = offsets[lst] + (rng.random(rows) * sizes[lst]).astype(np.int64)
    return requests, outputs, request_index.tolist(), output_index.tolist()


def decide_loop(controller, requests: list, outputs: list, request_index: list[int],
                output_index: list[int]) -> None:
    """The minimal pure-Python loop: ``Controller.decide`` on every row (results dropped as they come)."""
    decide = controller.decide
    for r, o in zip(request_index, output_index):
        decide(requests[r], outputs[o])


def row_by_row(artifact: Artifact, rows: int) -> None:
    controller = artifact.assets.controller()
    ledger = synthetic_ledger(artifact, rows)
    gc_was = gc.isenabled()
    gc.disable()
    try:
        start = time.perf_counter()
        decide_loop(controller, *ledger)
        elapsed = time.perf_counter() - start
    finally:
        if gc_was:
            gc.enable()
    print(f"replay of {rows:,} recorded decisions ({len(ledger[0]):,} requests, {len(ledger[1]):,} outputs): "
          f"Controller.decide row by row {rows / elapsed:,.0f} decisions/s ({elapsed:.2f} s)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=REPO.parent / "shared" / "routebr_artifact")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-processes", action="store_true")
    args = parser.parse_args()
    if not args.skip_processes:
        fresh_process(args.artifact, args.repeat)
    row_by_row(Artifact(args.artifact), args.rows)


if __name__ == "__main__":
    main()
