"""Decisions per second of ``Controller.decide`` on the 1,400 published RouteBR-controller proposals, side by side.

Loads the artifact once and rebuilds every recorded proposal (as ``replay`` does), then times ``decide`` alone —
contract, primary commitment, state-schema check, state gate, object gate, ``Decision`` record — with no I/O, on
one core, garbage collector paused while timing (as ``timeit`` does).  Every call does the whole work: the
controller keeps nothing between calls, only structures compiled from the frozen assets when it is built.

Each figure below is measured in this run.  The shared machine's speed drifts by up to 2× within seconds, so the
workloads are measured **interleaved** — one timing of each in turn (each after one untimed pass of its own), the
order rotated every repetition so that each follows each other equally often — and every printed
ratio is the median of the per-repetition ratios of two timings taken close together, never a ratio against a
figure measured elsewhere:

1. ``decide`` on each recorded proposal;
2. the one replay path (:func:`routebr_kit.runs.replay.replay_rows`: the async protocol through a replay backend
   plus ledger rows) over the same rows;
3. with ``--published-src DIR`` — the ``src/`` folder of a checkout of the published RouteBR repository, which the
   kit does not ship — the published controller's ``route`` on the same requests, its backend returning each
   recorded output.  ``route`` is the published code's only way from an output to a decision (it also builds the
   proposal payload each time, which deciding stored outputs does not need).  The rows whose published decision
   agrees with the kit's (final path) are counted, as a check that both did the same job.

With ``--instructions`` it also counts **instructions per decision** under ``valgrind --tool=cachegrind`` (which
do not depend on the machine's load): each workload runs in a fresh interpreter under cachegrind twice, with zero
and with ``--instruction-passes`` passes after the same set-up and warm-up pass, and the difference is divided by
the decisions made.  Targets (issue 19): ``decide`` at least 3.5× the published controller side by side, and at
most 25,000 instructions per decision.  There is no absolute-rate target: decisions per second depend on the machine
and its load.

    .venv/bin/python benchmarks/bench_controller.py [--artifact DIR] [--published-src DIR] [--repeat 18]
                                                    [--instructions [--instruction-passes 4]]
"""

from __future__ import annotations

import argparse
import gc
import importlib
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routebr_kit.core.controller import ControllerOptions
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store.artifact import Artifact

TARGET_RATIO = 3.5  # issue 19: decide at least 3.5× the published controller, measured side by side
TARGET_INSTRUCTIONS = 25_000  # issue 19: at most this many instructions per decision (cachegrind)


def workload(artifact: Artifact) -> list[tuple]:
    """``(decide, request, first output)`` for every recorded proposal of every controller task."""
    items = []
    for task in artifact.tasks(controller_only=True):
        decide = artifact.assets.controller(ControllerOptions.for_system(task.system)).decide
        cases = artifact.cases(task.phase)
        for row in artifact.predictions(task):
            items.append((decide, cases[row.case_id].request, row.proposal_output))
    return items


def rate(items: list[tuple], inner: int = 1) -> float:
    """Decisions per second (wall clock) of ``inner`` passes of ``decide`` over ``items``."""
    def one_pass() -> None:
        for decide, request, output in items:
            decide(request, output)

    return _timed(one_pass, inner) * len(items)


def _timed(work: Callable[[], Any], inner: int) -> float:
    """Passes per second of ``work`` after one untimed pass (which brings its data into the caches, whatever ran
    before), garbage collector paused."""
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        work()
        start = time.perf_counter()
        for _ in range(inner):
            work()
        return inner / (time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()


def replay_workload(artifact: Artifact) -> tuple[Callable[[], Any], int]:
    """One pass of the replay path over every controller task, and its row count."""
    jobs = [(artifact.assets.controller(ControllerOptions.for_system(t.system)), artifact.predictions(t),
             artifact.cases(t.phase), t.receipts()) for t in artifact.tasks(controller_only=True)]
    rows = sum(len(predictions) for _, predictions, _, _ in jobs)
    return (lambda: [replay_rows(c, p, cases, receipts=r) for c, p, cases, r in jobs]), rows


class _Recorded:
    """A backend for the published controller: the row's recorded output, at every stage (a repair request gets
    the same output again, as a row rebuilt from a ledger has no repair of its own)."""

    output: Any = None

    def complete(self, stage: str, payload: dict[str, Any]) -> Any:
        return self.output


def published_workload(artifact: Artifact, src: Path) -> tuple[Callable[[], Any], int, int]:
    """One pass of the published controller's ``route`` over the same rows; its row count; and how many rows it
    decides with the kit's final path.  Built from the kit's loaded assets through the published records."""
    sys.path.insert(0, str(src))
    try:
        models = importlib.import_module("routebr.models")
        policy_module = importlib.import_module("routebr.policy")
        controller_module = importlib.import_module("routebr.controller")
    finally:
        sys.path.remove(str(src))
    jobs, agree = [], 0
    for task in artifact.tasks(controller_only=True):
        kit = artifact.assets.controller(ControllerOptions.for_system(task.system))
        backend = _Recorded()
        catalog = [models.CatalogEntry(a.action_id, a.service_name, a.description, a.required_object_types)
                   for a in kit.catalog]
        rules = [models.Rule(r.rule_id, r.priority, r.applies_to, dict(r.condition.source),
                             models.Boundary(r.decision.value), r.version) for r in kit.policy.rules]
        published = controller_module.Controller(
            backend, catalog, policy_module.PolicyEngine(rules), models.Terminal(kit.options.fallback.value),
            enforce_state=kit.options.enforce_state, enable_grounding=kit.options.enable_grounding)
        cases = artifact.cases(task.phase)
        for row in artifact.predictions(task):
            request = cases[row.case_id].request
            mirrored = models.RouteRequest(
                request.request_id, request.utterance, request.history, dict(request.state.values),
                tuple(models.EntityCandidate(e.object_id, e.object_type, e.display_name, e.aliases)
                      for e in request.candidates))
            output = row.proposal_output
            backend.output = output
            result = published.route(mirrored)
            path = result.action_id if result.terminal == "DISPATCH" else f"T_{result.terminal}"
            agree += path == kit.decide(request, output).final_path
            jobs.append((published.route, backend, mirrored, output))

    def one_pass() -> None:
        for route, backend, request, output in jobs:
            backend.output = output
            route(request)

    return one_pass, len(jobs), agree


def _worker(args: argparse.Namespace) -> None:
    """``--worker NAME``: set up one workload, run one warm-up pass, then ``--instruction-passes`` passes (for
    cachegrind; prints nothing)."""
    artifact = Artifact(args.artifact)
    if args.worker == "decide":
        items = workload(artifact)

        def one_pass() -> None:
            for decide, request, output in items:
                decide(request, output)
    else:
        one_pass = published_workload(artifact, args.published_src)[0]
    one_pass()
    for _ in range(args.instruction_passes):
        one_pass()


def instructions_per_decision(args: argparse.Namespace, name: str, rows: int) -> float | None:
    """Instructions per decision of workload ``name`` under cachegrind (``None`` without valgrind)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    counts = []
    for passes in (0, args.instruction_passes):
        command = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null",
                   sys.executable, __file__, "--worker", name, "--instruction-passes", str(passes),
                   "--artifact", str(args.artifact)]
        if args.published_src is not None:
            command += ["--published-src", str(args.published_src)]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        found = re.search(r"I\s+refs:\s+([\d,]+)", done.stderr)
        if found is None:
            raise RuntimeError(f"no instruction count in cachegrind's output: {done.stderr[-300:]}")
        counts.append(int(found.group(1).replace(",", "")))
    return (counts[1] - counts[0]) / (args.instruction_passes * rows)


def main() -> None:
    default = Path(__file__).resolve().parents[1].parent / "shared" / "routebr_artifact"
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=default)
    parser.add_argument("--published-src", type=Path, default=None,
                        help="src/ of a checkout of the published RouteBR repository (measured side by side)")
    parser.add_argument("--repeat", type=int, default=18, help="interleaved repetitions")
    parser.add_argument("--inner", type=int, default=3, help="passes over the rows per repetition and workload")
    parser.add_argument("--instructions", action="store_true",
                        help="also count instructions per decision under valgrind --tool=cachegrind")
    parser.add_argument("--instruction-passes", type=int, default=4, help="passes counted under cachegrind")
    parser.add_argument("--worker", choices=("decide", "published"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker is not None:
        _worker(args)
        return

    artifact = Artifact(args.artifact)
    items = workload(artifact)
    replay, replay_rows_count = replay_workload(artifact)
    workloads: dict[str, Callable[[], float]] = {
        "decide": lambda: rate(items, args.inner),
        "replay path (replay_rows)": lambda: _timed(replay, 1) * replay_rows_count,
    }
    agree = None
    if args.published_src is not None:
        published, published_count, agree = published_workload(artifact, args.published_src)
        workloads["published controller (route)"] = lambda: _timed(published, args.inner) * published_count
    for measure in workloads.values():  # warm-up
        measure()
    rates: dict[str, list[float]] = {name: [] for name in workloads}
    names = list(workloads)
    for repetition in range(args.repeat):
        for name in names[repetition % len(names):] + names[:repetition % len(names)]:
            rates[name].append(workloads[name]())

    decide = rates["decide"]
    median = statistics.median(decide)
    print(f"rows: {len(items)}; {args.repeat} interleaved repetitions × {args.inner} passes")
    for name, measured in rates.items():
        line = f"{name:30s} {statistics.median(measured):>10,.0f} per s (min {min(measured):,.0f}, max " \
               f"{max(measured):,.0f})"
        if name != "decide":
            ratio = statistics.median(d / m for d, m in zip(decide, measured))
            line += f"; decide is {ratio:.2f}× this"
        print(line)
    if agree is not None:
        ratio = statistics.median(d / p for d, p in zip(decide, rates["published controller (route)"]))
        print(f"published controller: same final path on {agree}/{len(items)} rows; target ≥ {TARGET_RATIO:g}× "
              f"the published controller — {'met' if ratio >= TARGET_RATIO else 'not met'} ({ratio:.2f}×)")
    if args.instructions:
        mine = instructions_per_decision(args, "decide", len(items))
        if mine is None:
            print("instructions per decision: not measured (valgrind not found)")
        else:
            verdict = "met" if mine <= TARGET_INSTRUCTIONS else "not met"
            line = f"instructions per decision (cachegrind): decide {mine:,.0f}; target ≤ {TARGET_INSTRUCTIONS:,} — " \
                   f"{verdict}"
            if args.published_src is not None:
                theirs = instructions_per_decision(args, "published", len(items))
                line += f"; published route {theirs:,.0f} ({theirs / mine:.2f}× decide's)"
            print(line)
    print(f"{median:,.0f} decisions/s")


if __name__ == "__main__":
    main()
