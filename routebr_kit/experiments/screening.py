"""Backend screening (RQ4): the paper's Table IV from published, simulated or live runs.

One entry point, :func:`run_screening`, turns a :class:`ScreeningConfig` into a :class:`Screening` — labelled
prediction ledgers of the chosen backends on the chosen split of a cases file — and everything downstream
(Table IV, the accuracy-versus-latency figure, the comparison with the published numbers) reads only those
ledgers through the evaluation layer.

* ``artifact``: the published ``predictions.csv`` of each profile (no run);
* ``simulated``: each ``sim:<profile>`` through the runner, plus ``local:lexical`` as an extra row;
  every label says *simulated*;
* ``live``: each OpenAI-compatible profile through the runner (resumable, so an interrupted screening continues),
  but only when every profile's API-key environment variable is set; otherwise nothing runs and
  :attr:`Screening.missing_env` lists the variables to set.

:func:`compare_with_published` and :func:`seed_sweep` say how well the simulated profiles reproduce the
published screening: the calibration targets are contract exact match within ±2 points, FD and FB counts within
±2, and the same order of median latencies.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..backends.profiles import PROFILE_LABELS, missing_api_keys
from ..backends.registry import LEXICAL, SIM_PREFIX, make_backend
from ..backends.simulated import SimulatedBackend
from ..core.aio import run_sync
from ..core.errors import DataError, ErrorCode
from ..core.records import System
from ..evaluation.metrics import Scores, score
from ..evaluation.tables import fmt_count, fmt_pct, screening_table
from ..prompts import Protocol
from ..runs.runner import CaseRecorder, run_cases
from ..store.artifact import SELECT, Artifact
from ..store.assets import Assets, assets_beside
from ..store.cases import Case, Split, load_cases
from ..store.ledger import MANIFEST, PredictionRow, prediction_from_decision
from .sources import Source, kit_benchmark_file, published_prompts, resolve_source

#: Calibration tolerances of the simulated profiles against the published screening.
PATH_TOLERANCE_POINTS = 2.0
COUNT_TOLERANCE = 2
SIMULATED = "simulated"


@dataclass(frozen=True, slots=True)
class ScreeningConfig:
    """Validated notebook parameters of a screening."""

    source: Source
    profiles: tuple[str, ...]
    split: str  # "ALL" (MAIN+FLIP+ENTITY) or one split
    cases_path: Path
    artifact_dir: Path | None  # None: no published artifact found (no comparison with the published screening)
    out_dir: Path
    seed: int = 0
    include_lexical: bool = True
    profiles_path: Path | None = None  # live: the profiles file (default: the artifact's api_profiles.json)
    concurrency: int = 8
    banner: str = ""  # Markdown: which source was chosen (``auto`` resolved) and how to switch
    protocol: Protocol = Protocol.KIT  # live profiles: the kit's request protocol or the published one
    prompts_path: Path | None = None  # the published protocol's prompts.json (ARTIFACT/experiments/prompts.json)

    @classmethod
    def from_parameters(cls, *, source: str = "auto", profiles: Sequence[str], split: str,
                        cases_path: str | Path = "", artifact_dir: str | Path = "", out_dir: str | Path,
                        seed: int = 0, include_lexical: bool = True, profiles_path: str | Path | None = None,
                        concurrency: int = 8, protocol: str = "kit") -> ScreeningConfig:
        """``cases_path`` empty: the artifact's SELECT-160 when an artifact is found, else the SELECT-160 of the
        kit's own benchmark (English, generated from ``seed`` into ``out_dir/benchmarks``)."""
        chosen, found, banner = resolve_source(source, artifact_dir)
        chosen_protocol = Protocol.parse(protocol)
        prompts = published_prompts(chosen_protocol, chosen, found)
        if isinstance(profiles, str) or not profiles or not all(isinstance(p, str) and p for p in profiles):
            raise DataError(ErrorCode.INVALID_VALUE, "a non-empty list of profile names", got=profiles,
                            field="profiles")
        unknown = [p for p in profiles if chosen is not Source.LIVE and p not in PROFILE_LABELS]
        if unknown:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "published profile names: " + ", ".join(PROFILE_LABELS),
                            got=unknown, field="profiles")
        split = str(split).upper()
        if split != "ALL" and split not in Split.__members__:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "ALL, MAIN, FLIP, ENTITY or DEV", got=split, field="split")
        if type(seed) is not int:
            raise DataError(ErrorCode.WRONG_TYPE, "an integer seed", got=seed, field="seed")
        if type(concurrency) is not int or concurrency < 1:
            raise DataError(ErrorCode.INVALID_VALUE, "a positive integer concurrency", got=concurrency,
                            field="concurrency")
        if cases_path:
            cases = Path(cases_path)
        elif found is not None:
            cases = Artifact(found).cases_path(SELECT)
        else:
            cases = kit_benchmark_file(Path(out_dir) / "benchmarks" / f"en-{seed}", "routebr_select_160.csv", seed,
                                       "en")
        return cls(chosen, tuple(profiles), split, cases, found, Path(out_dir), seed,
                   bool(include_lexical), Path(profiles_path) if profiles_path else None, concurrency, banner,
                   chosen_protocol, prompts)

    @property
    def live_profiles_path(self) -> Path:
        if self.profiles_path is not None:
            return self.profiles_path
        if self.artifact_dir is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "profiles_path for a live screening without a published artifact "
                            "(whose experiments/api_profiles.json is the default)", field="profiles_path")
        return self.artifact_dir / "experiments" / "api_profiles.json"


@dataclass(frozen=True)
class Screening:
    """Labelled ledgers of one screening (empty when a live screening lacked its keys)."""

    config: ScreeningConfig
    cases: Mapping[str, Case]
    runs: Mapping[str, tuple[PredictionRow, ...]]
    missing_env: tuple[str, ...] = ()
    run_dirs: Mapping[str, Path] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return bool(self.runs)

    @property
    def simulated(self) -> bool:
        return self.config.source is Source.SIMULATED

    def scores(self) -> dict[str, Scores]:
        return {name: score(rows, self.cases) for name, rows in self.runs.items()}

    def table(self) -> pd.DataFrame:
        """Table IV of these runs (the evaluation layer's :func:`screening_table`)."""
        return screening_table(self.runs, self.cases)

    def title(self) -> str:
        """A one-line caption: the cases, the split and the source (simulated runs say so)."""
        split = "MAIN+FLIP+ENTITY" if self.config.split == "ALL" else self.config.split
        kind = {Source.ARTIFACT: "published runs",
                Source.SIMULATED: "simulated error models (not model evidence)",
                Source.LIVE: "live runs"}[self.config.source]
        lexical = " + local:lexical" if LEXICAL in self.runs else ""
        return f"Backend screening on {self.config.cases_path.stem} ({split}): {kind}{lexical}"


def label(profile: str, source: Source) -> str:
    """How a table row names a backend: the published display name, marked *simulated* or *live*."""
    name = PROFILE_LABELS.get(profile.removeprefix(SIM_PREFIX), profile)
    suffix = {Source.SIMULATED: f" ({SIMULATED})", Source.LIVE: " (live)"}.get(source, "")
    return name + suffix


def screening_cases(path: str | Path, split: str) -> tuple[Case, ...]:
    """The cases of one split (``ALL``: every case) of a cases file, in file order."""
    cases = load_cases(path)
    chosen = cases if split == "ALL" else tuple(c for c in cases if c.split.value == split)
    if not chosen:
        raise DataError(ErrorCode.INVALID_VALUE, f"at least one {split} case", file=str(path), field="split")
    return chosen


def run_screening(config: ScreeningConfig, *, assets: Assets | None = None, progress: bool = False) -> Screening:
    """Build the screening ledgers of ``config`` (see the module docstring)."""
    cases = screening_cases(config.cases_path, config.split)
    by_id = {c.case_id: c for c in cases}
    if config.source is Source.ARTIFACT:
        runs = published_runs(Artifact(config.artifact_dir), config.profiles, by_id)
        return Screening(config, by_id, runs)
    if config.source is Source.LIVE:
        missing = missing_api_keys(config.profiles, config.live_profiles_path)
        if missing:
            return Screening(config, by_id, {}, missing_env=missing)
    assets = assets or assets_beside(config.cases_path)
    specs = [(SIM_PREFIX + p if config.source is Source.SIMULATED else p) for p in config.profiles]
    specs += [LEXICAL] if config.include_lexical else []
    runs, dirs = {}, {}
    live = config.source is Source.LIVE
    for spec in specs:
        name = LEXICAL if spec == LEXICAL else label(spec, config.source)
        published = live and spec != LEXICAL and config.protocol is Protocol.PUBLISHED  # lexical sends no request
        run_dir = (config.out_dir / "runs" / f"seed-{config.seed}"
                   / (spec.replace(":", "-") + ("-published" if published else "")))
        runs[name] = run_backend(spec, cases, assets, run_dir, seed=config.seed, cases_path=config.cases_path,
                                 profiles_path=config.live_profiles_path if live else None,
                                 concurrency=config.concurrency, progress=progress,
                                 protocol=Protocol.PUBLISHED if published else Protocol.KIT,
                                 prompts_path=config.prompts_path if published else None)
        dirs[name] = run_dir
    return Screening(config, by_id, runs, run_dirs=dirs)


def run_backend(spec: str, cases: Sequence[Case], assets: Assets, run_dir: str | Path, *, seed: int = 0,
                cases_path: str | Path | None = None, profiles_path: str | Path | None = None,
                concurrency: int = 8, progress: bool = False, protocol: Protocol | str = Protocol.KIT,
                prompts_path: str | Path | None = None) -> tuple[PredictionRow, ...]:
    """RouteBR over ``cases`` with the backend ``spec`` names, through the runner into ``run_dir``.

    ``protocol`` and ``prompts_path`` choose what a live profile sends (see :func:`make_backend`).

    Offline backends (``sim:<profile>``, ``local:lexical``) are cheap and route deterministically, so a previous
    run in ``run_dir`` is replaced; a live profile resumes it instead (no paid call is ever repeated).
    """
    offline = spec.startswith(SIM_PREFIX) or spec == LEXICAL
    run_dir = Path(run_dir)
    if offline and (run_dir / MANIFEST).exists():
        shutil.rmtree(run_dir)
    backend = make_backend(spec, cases=cases, catalog=assets.catalog, seed=seed, profiles_path=profiles_path,
                           protocol=protocol, prompts_path=prompts_path)
    result = run_cases(cases, backend, system=System.ROUTEBR, assets=assets, out_dir=run_dir,
                       concurrency=concurrency, resume=not offline, progress=progress, cases_path=cases_path)
    return result.rows


def held_out_table(spec: str, sets: Mapping[str, tuple[Sequence[Case], Assets]], out_dir: str | Path) -> pd.DataFrame:
    """One backend on several named case sets (each with its own assets), one row per set, in Table IV's formats.

    Each set runs through :func:`run_backend` into ``out_dir/<set name>``.
    """
    records = []
    for name, (cases, assets) in sets.items():
        rows = run_backend(spec, cases, assets, Path(out_dir) / _slug(name))
        s = score(rows, cases)
        records.append({"cases": name, "n": s.n, "Contract": fmt_pct(s.contract_exact.rate),
                        "Path F1": fmt_pct(s.path_macro_f1), "Action": fmt_pct(s.action.rate),
                        "Object": fmt_pct(s.object.rate), "FD": fmt_count(s.false_dispatch),
                        "FB": fmt_count(s.false_block)})
    return pd.DataFrame(records)


def _slug(name: str) -> str:
    return "".join(ch if ch.isalnum() else "-" for ch in name.lower()).strip("-")


def published_runs(artifact: Artifact, profiles: Iterable[str],
                   cases: Mapping[str, Case]) -> dict[str, tuple[PredictionRow, ...]]:
    """The published SELECT rows of each published profile, restricted to ``cases`` (every case must have a row).

    Profiles the artifact did not screen (a live-only profile) have nothing to compare with and are left out.
    """
    runs = {}
    for profile in (p for p in profiles if p in PROFILE_LABELS):
        rows = [r for t in artifact.tasks(phase="select") if t.profile == profile
                for r in artifact.predictions(t) if r.case_id in cases]
        if {r.case_id for r in rows} != set(cases):
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a published row for every screened case",
                            file=str(artifact.root), field=profile, got=len(rows))
        runs[PROFILE_LABELS[profile]] = tuple(rows)
    return runs


def compare_with_published(screening: Screening, published: Mapping[str, Sequence[PredictionRow]]) -> pd.DataFrame:
    """Each profile's screened row beside its published row, with the calibration checks.

    ``published`` maps the published display names (:data:`~routebr_kit.backends.profiles.PROFILE_LABELS`) to rows.
    """
    records = []
    for profile in screening.config.profiles:
        mine = screening.runs.get(label(profile, screening.config.source))
        theirs = published.get(PROFILE_LABELS.get(profile, ""))
        if mine is not None and theirs is not None:
            records.append(_comparison(PROFILE_LABELS[profile], score(mine, screening.cases),
                                       score(theirs, screening.cases)))
    frame = pd.DataFrame(records)
    if not frame.empty:
        frame["latency rank (sim)"] = frame["median ms (sim)"].rank(method="first").astype(int)
        frame["latency rank (pub)"] = frame["median ms (pub)"].rank(method="first").astype(int)
    return frame


def _comparison(name: str, sim: Scores, pub: Scores) -> dict[str, Any]:
    delta = 100 * (sim.contract_exact.rate - pub.contract_exact.rate)
    fd, fb = sim.false_dispatch.hits - pub.false_dispatch.hits, sim.false_block.hits - pub.false_block.hits
    return {
        "backend": name,
        "contract % (sim)": round(100 * sim.contract_exact.rate, 1),
        "contract % (pub)": round(100 * pub.contract_exact.rate, 1),
        "Δ points": round(delta, 1),
        "FD (sim)": sim.false_dispatch.hits, "FD (pub)": pub.false_dispatch.hits,
        "FB (sim)": sim.false_block.hits, "FB (pub)": pub.false_block.hits,
        "median ms (sim)": round(sim.latency_ms_median), "median ms (pub)": round(pub.latency_ms_median),
        "within tolerance": bool(abs(delta) <= PATH_TOLERANCE_POINTS and abs(fd) <= COUNT_TOLERANCE
                                 and abs(fb) <= COUNT_TOLERANCE),
    }


def seed_scores(config: ScreeningConfig, seeds: Iterable[int],
                published: Mapping[str, Sequence[PredictionRow]] | None = None, *,
                assets: Assets | None = None) -> pd.DataFrame:
    """One row per simulated profile and seed: contract %, FD, FB and median latency of that seed's draw.

    With ``published`` (display name → published rows of the same cases) each row also carries the published
    values and whether the draw meets every calibration tolerance (as :func:`compare_with_published`).  Rows come
    from :func:`simulated_rows` (no run directories), so many seeds stay fast.
    """
    cases = screening_cases(config.cases_path, config.split)
    by_id = {c.case_id: c for c in cases}
    assets = assets or assets_beside(config.cases_path)
    records = []
    for profile in (p for p in config.profiles if p in PROFILE_LABELS):  # a live-only profile has no error model
        name = PROFILE_LABELS[profile]
        theirs = score(published[name], by_id) if published is not None else None
        for seed in seeds:
            mine = score(simulated_rows(profile, cases, assets, seed=seed), by_id)
            if theirs is not None:
                records.append({**_comparison(name, mine, theirs), "seed": seed})
            else:
                records.append({"backend": name, "seed": seed,
                                "contract % (sim)": round(100 * mine.contract_exact.rate, 1),
                                "FD (sim)": mine.false_dispatch.hits, "FB (sim)": mine.false_block.hits,
                                "median ms (sim)": round(mine.latency_ms_median)})
    return pd.DataFrame(records)


def seed_sweep(config: ScreeningConfig, seeds: Iterable[int], published: Mapping[str, Sequence[PredictionRow]], *,
               assets: Assets | None = None, per_seed: pd.DataFrame | None = None) -> pd.DataFrame:
    """The simulated profiles over several seeds: per profile, the spread of contract %, FD, FB and median latency
    against the published run, and the share of seeds whose run meets every calibration tolerance.

    ``per_seed``: the :func:`seed_scores` of the same seeds with ``published`` (computed here when omitted).
    """
    frame = per_seed if per_seed is not None else seed_scores(config, seeds, published, assets=assets)
    grouped = frame.groupby("backend", sort=False)
    return pd.DataFrame({
        "seeds": grouped.size(),
        "contract % (pub)": grouped["contract % (pub)"].first(),
        "contract % mean": grouped["contract % (sim)"].mean().round(2),
        "contract % min": grouped["contract % (sim)"].min(),
        "contract % max": grouped["contract % (sim)"].max(),
        "FD (pub)": grouped["FD (pub)"].first(), "FD mean": grouped["FD (sim)"].mean().round(2),
        "FB (pub)": grouped["FB (pub)"].first(), "FB mean": grouped["FB (sim)"].mean().round(2),
        "median ms (pub)": grouped["median ms (pub)"].first(),
        "median ms mean": grouped["median ms (sim)"].mean().round(0),
        "share within tolerance": grouped["within tolerance"].mean().round(2),
    }).reset_index()


def simulated_rows(profile: str, cases: Sequence[Case], assets: Assets, *,
                   seed: int = 0) -> tuple[PredictionRow, ...]:
    """RouteBR ledger rows of one simulated profile, computed in memory (no receipts, no run directory).

    The same rows the runner writes for ``sim:<profile>`` (tokens and latency summed over a case's calls).
    """
    backend = SimulatedBackend(profile, cases, seed=seed)
    controller = assets.controller()

    async def one(case: Case) -> PredictionRow:
        recorded = CaseRecorder(backend)
        decision = await controller.aroute(case.request, recorded)
        replies = [x.reply for x in recorded.exchanges]
        return prediction_from_decision(
            decision, System.ROUTEBR.value, input_tokens=sum(r.prompt_tokens for r in replies),
            output_tokens=sum(r.completion_tokens for r in replies),
            latency_ms=round(sum(r.latency_ms for r in replies), 3))

    async def every() -> list[PredictionRow]:
        return [await one(case) for case in cases]

    return tuple(run_sync(every()))


def screening_figure(screening: Screening) -> Any:
    """Contract exact match against median latency with Wilson 95% intervals, titled with the source."""
    from ..evaluation.plots import screening_figure as plot

    fig = plot(screening.scores())
    fig.axes[0].set_title(screening.title().replace(": ", ":\n", 1), fontsize="medium")
    return fig


__all__ = ["COUNT_TOLERANCE", "PATH_TOLERANCE_POINTS", "Screening", "ScreeningConfig", "compare_with_published",
           "held_out_table", "label", "published_runs", "run_backend", "run_screening", "screening_cases",
           "screening_figure", "seed_scores", "seed_sweep", "simulated_rows"]
