"""Run MetaRoute-Bench end to end: tasks → policies → executor → traces → evaluation → files.

    run = run_benchmark(30)                                   # the published main experiment, bit-exact
    run = run_benchmark(300, suite=Suite.ABLATIONS, mode=Mode.FAST)
    run.export("outputs/metaroute/main")
"""

from __future__ import annotations

import enum
import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import DataError, ErrorCode
from .config import MetaRouteConfig
from .evaluation import Evaluation, evaluate
from .executor import ExactExecutor, Executor, FastExecutor, GridExecutor
from .export import export_run
from .policies import Policy, ablation_policies, default_policies
from .records import ExecutionTrace, RoutePlan, TaskSpec, Traces
from .workloads import generate_tasks


class Mode(str, enum.Enum):
    """``exact``: the published CPython streams, bit for bit.  ``fast``: vectorized, counter-based draws."""

    EXACT = "exact"
    FAST = "fast"


class Suite(str, enum.Enum):
    """Which policy set to run."""

    MAIN = "main"  # the eight policies of Table 2
    ABLATIONS = "ablations"  # adaptive and its four ablations (Table 3)

    def policies(self, config: MetaRouteConfig = MetaRouteConfig()) -> tuple[Policy, ...]:
        return default_policies(config) if self is Suite.MAIN else ablation_policies(config)


def execute_all(tasks: Sequence[TaskSpec], policies: Sequence[Policy], seeds: Sequence[int], executor: Executor,
                *, progress: bool = False) -> Traces:
    """Every (seed, policy, task) trace, as a grid.

    A :class:`GridExecutor` runs the grid itself.  Otherwise seeds (outer), policies and tasks (inner) are
    visited in published order: per (seed, policy) one ``random.Random("{seed}:{policy}")`` stream feeds the
    policy's routing across the tasks, and every plan goes through ``executor.execute``.  Plans of
    deterministic policies are computed once per task.
    """
    names = [p.name for p in policies]
    if len(set(names)) != len(names):
        raise DataError(ErrorCode.DUPLICATE_ID, "distinct policy names", field="policies", got=names)
    if isinstance(executor, GridExecutor):
        return executor.execute_grid(tasks, policies, seeds)
    visit: Iterable[int] = seeds
    if progress:
        from ..scale.progress import progress_bar

        visit = progress_bar(seeds, desc="seeds")
    fixed: dict[str, list[RoutePlan]] = {}
    records: list[ExecutionTrace] = []
    for seed in visit:
        for policy in policies:
            rng = random.Random(f"{seed}:{policy.name}")
            if policy.stochastic:
                plans = [policy.route(task, rng) for task in tasks]
            else:
                if policy.name not in fixed:
                    fixed[policy.name] = [policy.route(task, rng) for task in tasks]
                plans = fixed[policy.name]
            execute, name = executor.execute, policy.name
            records.extend([execute(task, plan, seed, name) for task, plan in zip(tasks, plans)])
    return Traces.from_records(records, tasks, names, seeds)


@dataclass(frozen=True)
class BenchmarkRun:
    """One finished run: its inputs, every trace and the evaluation."""

    config: MetaRouteConfig
    mode: Mode
    tasks: tuple[TaskSpec, ...]
    traces: Traces
    evaluation: Evaluation

    def export(self, out_dir: str | Path, *, include_traces: bool = True) -> dict[str, Path]:
        """Write the published files; see :func:`routebr_kit.metaroute.export.export_run`."""
        return export_run(out_dir, self.tasks, self.traces, self.evaluation, include_traces=include_traces)


def run_benchmark(seeds: int | Sequence[int] = 30, *, suite: Suite = Suite.MAIN,
                  policies: Sequence[Policy] | None = None, mode: Mode = Mode.EXACT,
                  config: MetaRouteConfig = MetaRouteConfig(), executor: Executor | None = None,
                  progress: bool = False) -> BenchmarkRun:
    """Generate the tasks, run every policy of ``suite`` (or ``policies``) for ``seeds`` and evaluate.

    ``seeds`` is a count (seeds 0..n−1, as published) or explicit seed values.  ``executor`` replaces the
    simulator of ``mode`` (for instance with a live executor).
    """
    if isinstance(seeds, int):
        if seeds < 1:
            raise DataError(ErrorCode.INVALID_VALUE, "at least one seed", field="seeds", got=seeds)
        seeds = range(seeds)
    mode = Mode(mode)
    tasks = generate_tasks(config.generator)
    chosen = tuple(policies) if policies is not None else Suite(suite).policies(config)
    executor = executor or (ExactExecutor if mode is Mode.EXACT else FastExecutor)(config.executor)
    traces = execute_all(tasks, chosen, tuple(seeds), executor, progress=progress)
    return BenchmarkRun(config, mode, tasks, traces, evaluate(traces, config.evaluation))
