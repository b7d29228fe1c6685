"""Replay a kit-generated run with the artifact's machinery (notebook 07's fallback without the published artifact).

:func:`kit_replay_report` runs one simulated profile (``sim:<profile>``) over the SELECT partition of the kit's
generated benchmark through the runner — which writes ``predictions.csv`` and one receipt per case, exactly the
shape of a published result folder — and then replays those stored outputs through the one replay function
(:func:`routebr_kit.runs.replay.replay_rows`).  The result is a
:class:`~routebr_kit.experiments.replication.ReplayReport` (one task per split), so ``summary_lines()`` and
``table()`` read as they do for the artifact.  It is a self-consistency demonstration of the replay path on the
kit's own run, not a replication of anything published.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..core.controller import Decision
from ..core.records import System
from ..dataset import Partition, generate_benchmark
from ..runs.replay import replay_rows
from ..store.artifact import ArtifactTask
from ..store.cases import Case, Split
from .replication import ReplayReport, compare_task
from .screening import run_backend

KIT_PHASE = "kit"


@dataclass(frozen=True)
class KitReplay:
    """The replay report of a kit run, its cases and the run folder it read."""

    report: ReplayReport
    cases: dict[str, Case]
    run_dir: Path

    def decisions(self) -> tuple[Decision, ...]:
        return tuple(d for t in self.report.tasks for d in t.decisions)


def kit_replay_report(out_dir: str | Path, *, profile: str = "deepseek_v4_primary", seed: int = 0,
                      language: str = "en") -> KitReplay:
    """Run ``sim:<profile>`` on the kit's SELECT partition into ``out_dir/<profile>``, then replay it (see module)."""
    bench = generate_benchmark(seed, language)
    cases = tuple(bench.partition(Partition.SELECT))
    by_id = {c.case_id: c for c in cases}
    run_dir = Path(out_dir) / f"sim-{profile}-{language}-{seed}"
    recorded = run_backend(f"sim:{profile}", cases, bench.assets, run_dir, seed=seed)
    receipts = sorted((run_dir / "raw").glob("*.json"))
    replayed = replay_rows(bench.assets.controller(), recorded, by_id, receipts=receipts, name=f"replay:{profile}")
    tasks = []
    for split in (Split.MAIN, Split.FLIP, Split.ENTITY):
        index = [i for i, row in enumerate(recorded) if by_id[row.case_id].split is split]
        if not index:
            continue
        task = ArtifactTask(KIT_PHASE, profile, System.ROUTEBR, split, run_dir)
        tasks.append(compare_task(task, tuple(recorded[i] for i in index), tuple(replayed.rows[i] for i in index),
                                  tuple(replayed.decisions[i] for i in index)))
    return KitReplay(ReplayReport(tuple(tasks)), by_id, run_dir)


__all__ = ["KIT_PHASE", "KitReplay", "kit_replay_report"]
