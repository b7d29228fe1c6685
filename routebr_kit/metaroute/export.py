"""The five published files: ``tasks.csv``, ``traces.csv``, ``summary.csv``, ``comparisons.csv``, ``details.json``.

CSV files are written the way ``csv.DictWriter`` does by default — CRLF line ends, ``True``/``False``, empty
cells for ``None``, floats in shortest round-trip form — and JSON with sorted keys and two-space indentation.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import io
import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..core.errors import DataError, ErrorCode
from .evaluation import Comparison, Evaluation, PolicySummary
from .records import FAILURE_CODES, NEED_FIELDS, TaskSpec, Traces

TASKS, TRACES, SUMMARY, COMPARISONS, DETAILS = (
    "tasks.csv", "traces.csv", "summary.csv", "comparisons.csv", "details.json")

_TASK_COLUMNS = ("task_id", "workload", "difficulty", "ambiguity", *NEED_FIELDS.values(), "cost_budget",
                "latency_budget_s")
TRACE_COLUMNS = ("policy", "task_id", "workload", "seed", "actions", "success", "expected_success", "cost",
                 "latency_s", "retries", "route_valid", "within_cost_budget", "within_latency_budget", "confidence",
                 "rationale", "failure_mode")
SUMMARY_COLUMNS = tuple(f.name for f in dataclasses.fields(PolicySummary))
#: git blob ids of the published ``traces.csv`` files, which the artifact does not ship
_PUBLISHED_TRACES_BLOBS = {"main": "751cd2f1fbd6137a66ebc0ad361064bbe69a71d0",
                          "ablations": "71ce1f5ed23208bd7f102be6131e60ef7e46142b"}
_COMPARISON_COLUMNS = tuple(f.name for f in dataclasses.fields(Comparison))


def write_csv(path: Path, columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> Path:
    """A ``csv.writer`` file, written beside ``path`` and then moved onto it (never half-written)."""
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        writer.writerows(rows)
    tmp.replace(path)
    return path


#: Rows formatted per block: bounds the export's extra memory (about 150 bytes of text per row in flight).
BLOCK_ROWS = 1 << 16


def write_traces(path: str | Path, traces: Traces) -> Path:
    """``traces.csv``, byte for byte what ``csv.writer`` makes of the rows (seed, policy, task order), without a
    Python row loop.

    A row is three fragments: ``policy,task_id,workload,`` (one per policy × task), the seed, and the rest of the
    row.  The rest is a function of nine small-domain columns, so per block of rows the distinct combinations are
    found with hash factorization (floats by their bit pattern, so ``repr`` is exact), each distinct one is
    formatted once by ``csv.writer``, and rows are assembled by NumPy object indexing and concatenation.
    """
    path = Path(path)
    n_seeds, n_policies, n_tasks = traces.success.shape
    per_seed = n_policies * n_tasks
    prefixes = np.array([_csv_bytes((policy, task.task_id, task.workload.value))[:-2] + b","
                         for policy in traces.policies for task in traces.tasks], dtype=object)
    plans = [(plan.label, plan.confidence, plan.rationale) for plan in traces.plans]
    failures = ["" if mode is None else mode.value for mode in FAILURE_CODES]
    columns = (traces.plan, traces.success, traces.expected_success, traces.cost, traces.latency_s, traces.retries,
               traces.within_cost_budget, traces.within_latency_budget, traces.failure)
    step = max(1, BLOCK_ROWS // max(1, per_seed))
    formatted: dict[tuple[Any, ...], bytes] = {}  # every distinct row tail of the run, formatted once
    with open(path, "wb") as handle:
        handle.write(_csv_bytes(TRACE_COLUMNS))
        for start in range(0, n_seeds, step):
            block = [column[start:start + step].ravel() for column in columns]
            row_code = _factorize_rows(block)
            _, first = np.unique(row_code, return_index=True)  # a representative row of every distinct tail
            keys = zip(*(_exact(column[first]).tolist() for column in block))
            tails = np.empty(len(first), dtype=object)
            tails[:] = [formatted.get(key) or formatted.setdefault(key, _tail(key, plans, failures)) for key in keys]
            seeds = np.array([b"%d," % seed for seed in traces.seeds[start:start + step]], dtype=object)
            pieces = np.empty((len(row_code), 3), dtype=object)  # prefix, seed, tail: joined without temporaries
            pieces[:, 0] = np.tile(prefixes, len(seeds))
            pieces[:, 1] = np.repeat(seeds, per_seed)
            pieces[:, 2] = tails[row_code]
            handle.write(b"".join(pieces.ravel().tolist()))
    return path


def _exact(column: np.ndarray) -> np.ndarray:
    """Floats by bit pattern (so ``-0.0`` and ``0.0`` stay apart, as their ``repr`` does)."""
    return column.view(np.int64) if column.dtype == np.float64 else column


def _tail(key: tuple[Any, ...], plans: Sequence[tuple[str, float, str]], failures: Sequence[str]) -> bytes:
    plan, success, expected, cost, latency, retries, within_cost, within_latency, failure = key
    label, confidence, rationale = plans[plan]
    floats = np.array([expected, cost, latency], dtype=np.int64).view(np.float64).tolist()
    return _csv_bytes((label, success, *floats, retries, True, within_cost, within_latency, confidence, rationale,
                       failures[failure]))


def _csv_bytes(fields: Sequence[Any]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer).writerow(fields)
    return buffer.getvalue().encode("utf-8")


def _factorize_rows(columns: Sequence[np.ndarray]) -> np.ndarray:
    """One int64 code per row, equal exactly when every column is equal (floats compared by bit pattern).

    Each column is hash-factorized, the codes are combined in mixed radix, and the partial code is factorized
    again whenever the next radix could overflow int64 — so the result is exact for any number of distinct values.
    """
    import pandas as pd

    combined: np.ndarray | None = None
    bound = 1
    for column in columns:
        code, unique = pd.factorize(_exact(column), sort=False)
        size = max(1, len(unique))
        if combined is None:
            combined, bound = code.astype(np.int64), size
            continue
        if bound * size >= 1 << 62:
            combined, distinct = pd.factorize(combined, sort=False)
            combined, bound = combined.astype(np.int64), max(1, len(distinct))
        combined = combined * size + code
        bound *= size
    assert combined is not None
    return pd.factorize(combined, sort=False)[0]


def export_run(out_dir: str | Path, tasks: Sequence[TaskSpec], traces: Traces, evaluation: Evaluation,
               *, include_traces: bool = True) -> dict[str, Path]:
    """Write the published files into ``out_dir`` (``comparisons.csv`` only when there are comparisons)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {TASKS: write_csv(out / TASKS, _TASK_COLUMNS, (
        (t.task_id, t.workload.value, t.difficulty, t.ambiguity, *t.needs, t.cost_budget, t.latency_budget_s)
        for t in tasks))}
    if include_traces:
        written[TRACES] = write_traces(out / TRACES, traces)
    written[SUMMARY] = write_csv(out / SUMMARY, SUMMARY_COLUMNS, (dataclasses.astuple(s) for s in evaluation.summaries))
    if evaluation.comparisons:
        written[COMPARISONS] = write_csv(out / COMPARISONS, _COMPARISON_COLUMNS,
                                         (dataclasses.astuple(c) for c in evaluation.comparisons))
    written[DETAILS] = out / DETAILS
    written[DETAILS].write_text(json.dumps(evaluation.details(), indent=2, sort_keys=True) + "\n", encoding="utf-8")
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
        result[TRACES] = git_blob_id(out / TRACES) == _PUBLISHED_TRACES_BLOBS[suite]
    return result
