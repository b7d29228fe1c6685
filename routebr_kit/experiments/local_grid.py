"""Notebook 13's live section: a real, weak model (llama.cpp's server with the packaged SmolLM2-135M) behind the
controller, or — when the optional extra ``[local]`` is absent — the simulated backend, said so everywhere.

:func:`open_proposer` starts :class:`~routebr_kit.backends.local_server.LocalServer` in-process on a free
``127.0.0.1`` port (``port=0``) and writes a one-profile file pointing at it; without the extra it returns the
simulated fallback and the banner naming ``make local-model``.  :func:`sample_cases` draws a seeded sample of MAIN
and FLIP cases from the kit's generated benchmark; :func:`run_grid` runs them through each system and constrain mode
with :func:`~routebr_kit.runs.runner.run_cases`; the tables come from :func:`~routebr_kit.evaluation.metrics.score`
and :func:`~routebr_kit.evaluation.stats.wilson`. Nothing here re-implements scoring.
"""

from __future__ import annotations

import random
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..backends.local_server import INSTALL_HINT, SMOLLM2, LocalServer, free_port, require_extra, resolve_model
from ..backends.registry import make_backend
from ..core.errors import DataError
from ..evaluation.metrics import Count, score
from ..runs.runner import RunResult, run_cases
from ..scale.progress import progress_bar
from ..store.assets import Assets, assets_beside
from ..store.cases import Case, Split, load_cases
from .sources import kit_benchmark_file

CASES_FILE = "routebr_confirm_320.csv"
PROFILE = "live"


@dataclass
class Proposer:
    """Who proposes: the live llama.cpp server (``server`` set) or the simulated fallback."""

    live: bool
    label: str  # said in every caption and in the conclusion
    banner: str
    spec: str  # a profile name (live) or a ``sim:`` spec
    profiles_path: Path | None = None
    server: LocalServer | None = None
    constrains: tuple[str, ...] = ()
    skipped: tuple[str, ...] = ()  # constrain modes the fallback cannot send

    def backend(self, constrain: str, cases: Sequence[Case], assets: Assets, seed: int) -> Any:
        if self.live:
            return make_backend(self.spec, profiles_path=self.profiles_path, constrain=constrain, seed=seed)
        return make_backend(self.spec, cases=cases, catalog=assets.catalog, seed=seed)

    def stop(self) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None


def _fallback(why: str, fallback: str, constrains: Sequence[str]) -> Proposer:
    keep = tuple(c for c in constrains if c == "none") or ("none",)
    return Proposer(False, f"SIMULATED backend `{fallback}` (not a model)",
                    f"{why} This run falls back to the **simulated** backend `{fallback}` — a seeded error model, "
                    "not a real model: every table and the conclusion say so. The simulated backend sends no request "
                    "body, so `json-schema` constrained decoding is not run.",
                    fallback, constrains=keep, skipped=tuple(c for c in constrains if c not in keep))


def open_proposer(work: str | Path, *, live: bool = True, threads: int = 2, port: int = 0,
                  constrains: Sequence[str] = ("none", "json-schema"), max_tokens: int = 160,
                  fallback: str = "sim:deepseek_v4_primary") -> Proposer:
    """Start the packaged model's server (``port=0``: a free one), or fall back to ``fallback`` (a simulation):
    without the extra, with ``live=False``, or when the server does not come up (the reason is in the banner)."""
    if not live:
        return _fallback("**Live run switched off** (`live = False`).", fallback, constrains)
    try:
        require_extra()
    except DataError as exc:
        return _fallback(f"**The optional extra `[local]` is not installed** ({exc}). Install it with "
                         f"`{INSTALL_HINT}` to run the real model.", fallback, constrains)
    server = LocalServer(resolve_model(SMOLLM2.name), port=port or free_port(), threads=threads)
    try:
        server.start()
    except DataError as exc:
        return _fallback(f"**The llama.cpp server did not start** ({exc}).", fallback, constrains)
    profiles = Path(work) / "profiles.yaml"
    profiles.parent.mkdir(parents=True, exist_ok=True)
    profiles.write_text(f"{PROFILE}:\n  base_url: {server.base_url}\n  model: {SMOLLM2.alias}\n"
                        "  json_schema_style: inline\n"
                        f"  request_options: {{temperature: 0, max_tokens: {max_tokens}}}\n"
                        "  timeout_s: 900\n  max_retries: 1\n  retry_backoff_s: 0.2\n", encoding="utf-8")
    label = f"LIVE model {SMOLLM2.alias} (llama.cpp, {threads} threads)"
    return Proposer(True, label, f"**Live**: llama.cpp serves `{SMOLLM2.alias}` at `{server.base_url}` "
                    f"(reported models: {', '.join(server.reported)}).", PROFILE, profiles, server,
                    constrains=tuple(constrains))


@dataclass(frozen=True)
class Sample:
    cases_path: Path
    assets: Assets
    cases: tuple[Case, ...]
    bench: Path
    language: str


def sample_cases(work: str | Path, *, n_cases: int, seed: int, language: str = "en") -> Sample:
    """A seeded sample of ``n_cases`` cases of the kit benchmark: ``max(1, n_cases // 4)`` whole FLIP pairs (both
    states of one request) and MAIN cases for the rest."""
    bench = Path(work) / "benchmark" / f"{language}-{seed}"
    cases_path = kit_benchmark_file(bench, CASES_FILE, seed, language)
    pool = load_cases(cases_path)
    rng = random.Random(seed)
    pairs = sorted({c.pair_id for c in pool if c.split is Split.FLIP})
    chosen = set(rng.sample(pairs, max(1, n_cases // 4)))
    flip = [c for c in pool if c.split is Split.FLIP and c.pair_id in chosen]
    main = rng.sample([c for c in pool if c.split is Split.MAIN], max(0, n_cases - len(flip)))
    picked = main + flip
    return Sample(cases_path, assets_beside(cases_path), tuple(picked), bench, language)


@dataclass
class Grid:
    runs: dict[tuple[str, str], RunResult] = field(default_factory=dict)
    seconds: dict[tuple[str, str], float] = field(default_factory=dict)


def run_grid(proposer: Proposer, sample: Sample, work: str | Path, *, systems: Sequence[str], seed: int,
             concurrency: int = 1, progress: bool = True) -> Grid:
    """Every (system, constrain) run of the sample, each in a fresh folder under ``work``: a re-executed notebook
    runs again rather than resuming, since its server (port), sample or parameters may differ from the last run's —
    which the runner would rightly refuse to resume.

    ``progress``: one bar over the grid's runs (naming the run in progress) and one over each run's cases — a live
    model answers in seconds per call, so the cell shows where it is (off with ``TQDM_DISABLE``)."""
    grid = Grid()
    cells = [(constrain, system) for constrain in proposer.constrains for system in systems]
    bar = progress_bar(total=len(cells), desc="live grid", unit="run", show=progress)
    try:
        for constrain, system in cells:
            bar.set_postfix_str(f"{system}, constrain {constrain}")
            folder = Path(work) / "runs" / ("live" if proposer.live else "sim") / f"{system}-{constrain}"
            if folder.exists():  # this notebook's own earlier run of the same cell
                shutil.rmtree(folder)
            started = time.monotonic()
            grid.runs[system, constrain] = run_cases(
                sample.cases, proposer.backend(constrain, sample.cases, sample.assets, seed), system=system,
                assets=sample.assets, out_dir=folder, concurrency=concurrency, resume=False, progress=progress,
                cases_path=sample.cases_path)
            grid.seconds[system, constrain] = round(time.monotonic() - started, 1)
            bar.update()
    finally:
        bar.close()
    return grid


def _ci(count: Count) -> str:
    low, high = count.wilson
    return f"{count.hits}/{count.n} [{low:.2f}, {high:.2f}]"


def scores_table(grid: Grid, sample: Sample) -> pd.DataFrame:
    """Exact match, false dispatches, false blocks (Wilson 95%), repairs, fail-closed rows, tokens, latency."""
    records = []
    for (system, constrain), result in grid.runs.items():
        s = score(result.rows, sample.cases)
        rows = result.rows
        records.append({"system": system, "constrain": constrain, "n": s.n, "exact": _ci(s.contract_exact),
                        "false_dispatch": _ci(s.false_dispatch), "false_block": _ci(s.false_block),
                        "valid_json": s.valid_json.hits, "repairs": sum(r.repair_count or 0 for r in rows),
                        "fail_closed": sum(r.error_code.startswith("FAIL_CLOSED") for r in rows),
                        "calls": s.calls, "tokens": s.tokens,
                        "latency_s_median": round(s.latency_ms_median / 1000, 2),
                        "wall_s": grid.seconds[system, constrain]})
    return pd.DataFrame(records)


__all__ = ["Grid", "Proposer", "Sample", "open_proposer", "run_grid", "sample_cases", "scores_table"]
