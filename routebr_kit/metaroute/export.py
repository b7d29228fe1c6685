"""The five published files: ``tasks.csv``, ``traces.csv``, ``summary.csv``, ``comparisons.csv``, ``details.json``.

CSV files are written the way ``csv.DictWriter`` does by default — CRLF line ends, ``True``/``False``, empty
cells for ``None``, floats in shortest round-trip form — and JSON with sorted keys and two-space indentation.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
from collections.abc import Iterable, Iterator, Sequence
from itertools import product
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from .evaluation import Comparison, Evaluation, PolicySummary
from .records import FAILURE_CODES, NEED_FIELDS, TaskSpec, Traces

TASKS, TRACES, SUMMARY, COMPARISONS, DETAILS = (
    "tasks.csv", "traces.csv", "summary.csv", "comparisons.csv", "details.json")

TASK_COLUMNS = ("task_id", "workload", "difficulty", "ambiguity", *NEED_FIELDS.values(), "cost_budget",
                "latency_budget_s")
TRACE_COLUMNS = ("policy", "task_id", "workload", "seed", "actions", "success", "expected_success", "cost",
                 "latency_s", "retries", "route_valid", "within_cost_budget", "within_latency_budget", "confidence",
                 "rationale", "failure_mode")
SUMMARY_COLUMNS = tuple(f.name for f in dataclasses.fields(PolicySummary))
#: git blob ids of the published ``traces.csv`` files, which the artifact does not ship
PUBLISHED_TRACES_BLOBS = {"main": "751cd2f1fbd6137a66ebc0ad361064bbe69a71d0",
                          "ablations": "71ce1f5ed23208bd7f102be6131e60ef7e46142b"}
COMPARISON_COLUMNS = tuple(f.name for f in dataclasses.fields(Comparison))


def _write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    return path


def write_tasks(path: str | Path, tasks: Sequence[TaskSpec]) -> Path:
    return _write_csv(Path(path), TASK_COLUMNS, (
        (t.task_id, t.workload.value, t.difficulty, t.ambiguity, *t.needs, t.cost_budget, t.latency_budget_s)
        for t in tasks))


def trace_rows(traces: Traces) -> Iterator[tuple[Any, ...]]:
    """``traces.csv`` rows in published order (seed, policy, task)."""
    plans = [(plan.label, plan.confidence, plan.rationale) for plan in traces.plans]
    tasks = [(t.task_id, t.workload.value) for t in traces.tasks]
    failures = ["" if mode is None else mode.value for mode in FAILURE_CODES]
    columns = zip(*(getattr(traces, name).ravel().tolist() for name in (
        "plan", "success", "expected_success", "cost", "latency_s", "retries", "within_cost_budget",
        "within_latency_budget", "failure")))
    for (seed, policy, (task_id, workload)), (plan, success, expected, cost, latency, retries, within_cost,
                                              within_latency, failure) in zip(
            product(traces.seeds, traces.policies, tasks), columns):
        label, confidence, rationale = plans[plan]
        # route_valid is always True: a RoutePlan cannot be built from an invalid route
        yield (policy, task_id, workload, seed, label, success, expected, cost, latency, retries, True, within_cost,
               within_latency, confidence, rationale, failures[failure])


def write_traces(path: str | Path, traces: Traces) -> Path:
    return _write_csv(Path(path), TRACE_COLUMNS, trace_rows(traces))


def write_summary(path: str | Path, summaries: Sequence[PolicySummary]) -> Path:
    return _write_csv(Path(path), SUMMARY_COLUMNS, (dataclasses.astuple(s) for s in summaries))


def write_comparisons(path: str | Path, comparisons: Sequence[Comparison]) -> Path:
    return _write_csv(Path(path), COMPARISON_COLUMNS, (dataclasses.astuple(c) for c in comparisons))


def write_details(path: str | Path, evaluation: Evaluation) -> Path:
    path = Path(path)
    path.write_text(json.dumps(evaluation.details(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path


def export_run(out_dir: str | Path, tasks: Sequence[TaskSpec], traces: Traces, evaluation: Evaluation,
               *, include_traces: bool = True) -> dict[str, Path]:
    """Write the published files into ``out_dir`` (``comparisons.csv`` only when there are comparisons)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {TASKS: write_tasks(out / TASKS, tasks)}
    if include_traces:
        written[TRACES] = write_traces(out / TRACES, traces)
    written[SUMMARY] = write_summary(out / SUMMARY, evaluation.summaries)
    if evaluation.comparisons:
        written[COMPARISONS] = write_comparisons(out / COMPARISONS, evaluation.comparisons)
    written[DETAILS] = write_details(out / DETAILS, evaluation)
    return written


def git_blob_id(path: str | Path) -> str:
    """What ``git hash-object`` prints for a file."""
    data = Path(path).read_bytes()
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def published_match(out_dir: str | Path, artifact_dir: str | Path, suite: str) -> dict[str, bool]:
    """Whether each exported file equals the published one of ``suite`` (``main`` or ``ablations``).

    Shipped files are compared byte for byte; ``traces.csv`` (if exported) by its published git blob id.
    """
    out, reference = Path(out_dir), Path(artifact_dir) / suite
    result = {}
    for name in (TASKS, SUMMARY, COMPARISONS, DETAILS):
        if not (reference / name).is_file():
            raise DataError(ErrorCode.FILE_NOT_FOUND, f"the published {name}", file=str(reference / name))
        result[name] = (out / name).is_file() and (out / name).read_bytes() == (reference / name).read_bytes()
    if (out / TRACES).is_file():
        result[TRACES] = git_blob_id(out / TRACES) == PUBLISHED_TRACES_BLOBS[suite]
    return result
