"""Fast trace export: the vectorized ``traces.csv`` writer is byte-identical to ``csv.writer`` over trace_rows."""

from __future__ import annotations

import csv
import dataclasses
import io
import tempfile
from collections.abc import Iterator
from itertools import product
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.metaroute import Mode, RoutePlan, Suite, Traces, run_benchmark
from routebr_kit.metaroute import export as export_module
from routebr_kit.metaroute.export import TRACE_COLUMNS, _factorize_rows, write_traces
from routebr_kit.metaroute.records import FAILURE_CODES, RouteAction


def trace_rows(traces: Traces) -> Iterator[tuple[Any, ...]]:
    """``traces.csv`` rows in published order (seed, policy, task), one Python tuple each."""
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


def reference(traces: Traces) -> bytes:
    buffer = io.StringIO(newline="")
    writer = csv.writer(buffer)
    writer.writerow(TRACE_COLUMNS)
    writer.writerows(trace_rows(traces))
    return buffer.getvalue().encode("utf-8")


@pytest.fixture(scope="module")
def fast() -> Traces:
    return run_benchmark(6, mode=Mode.FAST).traces


@pytest.fixture(scope="module")
def exact() -> Traces:
    return run_benchmark(2, suite=Suite.ABLATIONS, mode=Mode.EXACT).traces


@pytest.mark.parametrize("block_rows", [1, 1000, 1 << 16])
def test_fast_and_exact_grids_match_the_row_writer(fast: Traces, exact: Traces, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch, block_rows: int) -> None:
    monkeypatch.setattr(export_module, "BLOCK_ROWS", block_rows)  # one seed per block … every seed in one
    for name, traces in (("fast", fast), ("exact", exact)):
        write_traces(tmp_path / f"{name}.csv", traces)
        assert (tmp_path / f"{name}.csv").read_bytes() == reference(traces), name


@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_arbitrary_values_and_awkward_text_match_the_row_writer(fast: Traces, data: st.DataObject) -> None:
    traces = fast.select(policies=["random", "adaptive"], seeds=[0, 3])
    shape = traces.success.shape
    pool = data.draw(st.lists(st.sampled_from([0.0, -0.0, 1e-7, 0.1, 1 / 3, 2.5e16, 123456.789, 0.98]),
                              min_size=1, max_size=5))
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))

    def grid(values: list, dtype: type) -> np.ndarray:
        return np.array(values, dtype=dtype)[rng.integers(0, len(values), size=shape)]

    text = st.text(alphabet=st.sampled_from(list('ab,"\r\n é中|')), max_size=6)
    plans = tuple(RoutePlan((RouteAction.ANSWER,), confidence=c, rationale=data.draw(text))
                  for c in (0.0, 0.25, 1.0))
    changed = dataclasses.replace(
        traces, plans=plans, plan=grid([0, 1, 2], np.int32), cost=grid(pool, np.float64),
        expected_success=grid(pool[::-1], np.float64), latency_s=grid(pool, np.float64),
        success=grid([True, False], np.bool_), failure=grid(list(range(8)), np.int8),
        policies=(data.draw(text) or "p", "q,\"r\""), seeds=(0, 10**12))
    with tempfile.TemporaryDirectory() as tmp:
        write_traces(Path(tmp) / "t.csv", changed)
        assert (Path(tmp) / "t.csv").read_bytes() == reference(changed)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40),
                          st.integers(-(2**40), 2**40), st.integers(-(2**40), 2**40)), min_size=1, max_size=60))
def test_row_codes_are_equal_exactly_when_rows_are(rows: list[tuple[int, ...]]) -> None:
    columns = [np.array(col, dtype=np.int64) for col in zip(*rows)]
    codes = _factorize_rows(columns).tolist()
    for i in range(len(rows)):
        for j in range(len(rows)):
            assert (codes[i] == codes[j]) == (rows[i] == rows[j])


def test_row_codes_stay_exact_past_the_int64_radix_bound() -> None:
    rng = np.random.default_rng(0)
    columns = [rng.integers(0, 2**60, size=20_000) for _ in range(5)]  # 20 000⁵ > 2⁶² combined radix
    columns[0][1::2] = columns[0][0::2]
    for c in columns[1:]:
        c[1::2] = c[0::2]  # every odd row repeats the row before it
    codes = _factorize_rows(columns)
    assert (codes[1::2] == codes[0::2]).all() and len(set(codes.tolist())) == 10_000


def test_negative_zero_is_written_as_python_writes_it(fast: Traces, tmp_path: Path) -> None:
    cost = fast.cost.copy()
    cost[0, 0, 0], cost[0, 0, 1] = -0.0, 0.0
    changed = dataclasses.replace(fast, cost=cost)
    write_traces(tmp_path / "t.csv", changed)
    assert (tmp_path / "t.csv").read_bytes() == reference(changed)
