"""The CONFIRM study behind the research-question notebooks (RQ1–RQ3 and the ablations), from any source.

One :class:`StudyConfig` (built from a notebook's literal parameters) says where the ledgers come from:

* ``auto`` (the notebooks' default) — ``artifact`` when a published artifact is found, else ``simulated``
  (:func:`~routebr_kit.experiments.sources.resolve_source`; :attr:`StudyConfig.banner` says which);
* ``artifact`` — the published CONFIRM predictions (DeepSeek V4 Pro; A-state and A-ground as published);
* ``simulated`` — a ``sim:<profile>`` backend (or ``local:lexical``) run through the runner on a CONFIRM cases
  file — by default the kit's own benchmark, generated from ``seed`` and ``language`` — with A-state and A-ground
  derived offline from the stored RouteBR proposals;
* ``live`` — an OpenAI-compatible profile, the same way, but only when its API key is in the environment
  (otherwise :attr:`Study.missing_env` names the variables and nothing runs).

Runs are written under ``runs_dir`` and resumed, so the notebooks of one ``make reproduce`` share them; a run there
made under other inputs (an older kit, other assets) is kept, the study runs beside it, and :attr:`Study.banner` says
so.  Everything
downstream reads only the ledgers (:class:`~routebr_kit.store.ledger.PredictionRow`) and the gold cases.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..backends.profiles import missing_api_keys
from ..backends.registry import DEFAULT_PROFILES, make_backend
from ..core.errors import DataError, ErrorCode
from ..core.records import System
from ..evaluation.tables import SYSTEM_LABELS
from ..prompts import Protocol
from ..runs.runner import derive_interventions, run_cases
from ..store.artifact import CONFIRM, Artifact
from ..store.assets import Assets, assets_beside
from ..store.cases import Case, Split, load_cases
from ..store.ledger import PredictionRow
from ..systems.variants import Variant, variant_controller
from .ablations import replay_decisions
from .sources import Source, kit_benchmark_file, parse_source, published_prompts, resolve_source

#: Every (system, split) ledger the research questions use.
RUNS = (
    (System.ROUTEBR, Split.MAIN), (System.ROUTEBR, Split.FLIP), (System.ROUTEBR, Split.ENTITY),
    (System.B1_DIRECT, Split.MAIN), (System.B1_DIRECT, Split.FLIP),
    (System.B2_DIRECT_GUARD, Split.MAIN), (System.B2_DIRECT_GUARD, Split.FLIP),
    (System.A_STATE, Split.FLIP), (System.A_GROUND, Split.ENTITY),
)
DERIVED = (System.A_STATE, System.A_GROUND)


@dataclass(frozen=True, slots=True)
class StudyConfig:
    """Validated notebook parameters of a CONFIRM study."""

    source: Source
    cases_path: Path | None  # None: the kit's own benchmark (seed, language, decouple_entity_state)
    artifact_dir: Path | None
    profile: str
    seed: int
    runs_dir: Path
    language: str = "en"
    decouple_entity_state: bool = False
    profiles_path: Path | None = None
    banner: str = ""  # Markdown: which source was chosen (``auto`` resolved) and how to switch
    protocol: Protocol = Protocol.KIT  # live runs: the kit's request protocol or the published one
    prompts_path: Path | None = None  # the published protocol's prompts.json (ARTIFACT/experiments/prompts.json)

    @classmethod
    def from_parameters(cls, *, source: str = "auto", cases_path: str = "", artifact_dir: str = "",
                        profile: str = "sim:deepseek_v4_primary", seed: int = 0, language: str = "en",
                        decouple_entity_state: bool = False, out_dir: str = ".", runs_dir: str = "",
                        profiles_path: str = "", protocol: str = "kit") -> StudyConfig:
        requested = parse_source(source)
        chosen_protocol = Protocol.parse(protocol)
        if type(seed) is not int:
            raise DataError(ErrorCode.WRONG_TYPE, "an integer seed", got=seed, field="seed")
        if requested is Source.ARTIFACT and cases_path:
            raise DataError(ErrorCode.INVALID_VALUE, "no cases_path with source 'artifact' (it reads the published "
                            "CONFIRM-320; use source 'simulated' or 'live' for other cases)", got=cases_path,
                            field="cases_path")
        # auto with a cases file of one's own means "run on these cases": the simulation, never the artifact
        chosen, found, banner = resolve_source(
            Source.SIMULATED if requested is Source.AUTO and cases_path else requested, artifact_dir)
        if language not in ("en", "zh"):
            raise DataError(ErrorCode.UNKNOWN_ENUM, "en or zh", got=language, field="language")
        if chosen is Source.SIMULATED and not (profile.startswith("sim:") or profile == "local:lexical"):
            raise DataError(ErrorCode.INVALID_VALUE, "a sim:<profile> or local:lexical backend", got=profile,
                            field="profile")
        prompts = published_prompts(chosen_protocol, chosen, found)
        runs = Path(runs_dir) if runs_dir else Path(out_dir) / "runs"
        return cls(chosen, Path(cases_path) if cases_path else None, found,
                   profile, seed, runs, language, bool(decouple_entity_state),
                   Path(profiles_path) if profiles_path else None, banner, chosen_protocol, prompts)

    @property
    def label(self) -> str:
        if self.source is Source.ARTIFACT:
            return "published artifact (DeepSeek V4 Pro)"
        kind = "simulated" if self.profile.startswith("sim:") else self.source.value
        cases = self.cases_path.name if self.cases_path else f"kit benchmark {self.benchmark_name}"
        return f"{kind}: {self.profile}, seed {self.seed}, {cases}"

    @property
    def benchmark_name(self) -> str:
        return f"{self.language}-{self.seed}" + ("-decoupled" if self.decouple_entity_state else "")

    def confirm_cases(self) -> Path:
        """The CONFIRM cases file: the given one, or the kit's own benchmark written under ``runs_dir``."""
        if self.cases_path is not None:
            return self.cases_path
        return kit_benchmark_file(self.runs_dir / "benchmarks" / self.benchmark_name, "routebr_confirm_320.csv",
                                  self.seed, self.language, decouple_entity_state=self.decouple_entity_state)


@dataclass(frozen=True)
class Study:
    """Gold cases, assets and every ledger of one CONFIRM study."""

    config: StudyConfig
    assets: Assets
    cases: Mapping[str, Case]
    runs: Mapping[tuple[System, Split], tuple[PredictionRow, ...]]
    receipts: Mapping[tuple[System, Split], tuple[Path, ...]] = field(default_factory=dict)
    missing_env: tuple[str, ...] = ()
    stale_notes: tuple[str, ...] = ()  # runs found under other inputs and kept (:attr:`RunResult.stale_note`)

    @property
    def banner(self) -> str:
        """The notebook's banner: :attr:`StudyConfig.banner`, then a line for every stale run kept beside."""
        return "\n\n".join((self.config.banner, *self.stale_notes))

    @property
    def ready(self) -> bool:
        return bool(self.runs)

    def rows(self, system: System | str, *splits: Split | str) -> tuple[PredictionRow, ...]:
        """The ledger rows of ``system`` on the given splits (in split order)."""
        system = System(system)
        out: list[PredictionRow] = []
        for split in map(Split, splits):
            if (system, split) not in self.runs:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a run of this study", got=f"{system.value}/{split.value}")
            out.extend(self.runs[(system, split)])
        return tuple(out)

    def cases_of(self, split: Split | str) -> dict[str, Case]:
        split = Split(split)
        return {k: c for k, c in self.cases.items() if c.split is split}

    def systems_on(self, split: Split | str) -> list[System]:
        return [s for (s, sp) in self.runs if sp is Split(split)]

    def labelled(self, split: Split | str, systems: Sequence[System] | None = None) -> dict[str, tuple]:
        """``{table label: rows}`` of the systems run on ``split`` (in study order), as the paper's tables name them."""
        chosen = systems if systems is not None else self.systems_on(split)
        return {SYSTEM_LABELS[s]: self.rows(s, split) for s in chosen if (s, Split(split)) in self.runs}

    def routebr_decisions(self, split: Split | str, case_ids: Sequence[str] | None = None) -> list:
        """RouteBR's decisions on ``split`` re-derived from the stored outputs (full records with traces)."""
        rows = self.rows(System.ROUTEBR, split)
        if case_ids is not None:
            wanted = set(case_ids)
            rows = tuple(r for r in rows if r.case_id in wanted)
        return replay_decisions(variant_controller(self.assets, Variant.ROUTEBR), rows, self.cases,
                                self.receipts.get((System.ROUTEBR, Split(split)), ()))


def load_study(config: StudyConfig, *, runs: Sequence[tuple[System, Split]] = RUNS, progress: bool = False,
               concurrency: int = 8) -> Study:
    """Every requested ledger of the study (running or deriving what a simulated or live source needs)."""
    if config.source is Source.ARTIFACT:
        return _from_artifact(config, runs)
    return _from_runs(config, runs, progress=progress, concurrency=concurrency)


def _from_artifact(config: StudyConfig, runs: Sequence[tuple[System, Split]]) -> Study:
    artifact = Artifact(config.artifact_dir)  # type: ignore[arg-type]
    ledgers, receipts = {}, {}
    for system, split in runs:
        task = artifact.task(CONFIRM, system.value, split)
        ledgers[(system, split)] = artifact.predictions(task)
        receipts[(system, split)] = tuple(task.receipts())
    return Study(config, artifact.assets, dict(artifact.cases(CONFIRM)), ledgers, receipts)


def _from_runs(config: StudyConfig, runs: Sequence[tuple[System, Split]], *, progress: bool,
               concurrency: int) -> Study:
    cases_path = config.confirm_cases()
    assets = assets_beside(cases_path)
    cases = {c.case_id: c for c in load_cases(cases_path) if c.split is not Split.DEV}
    if config.source is Source.LIVE:
        missing = missing_api_keys([config.profile], config.profiles_path or DEFAULT_PROFILES)
        if missing:
            return Study(config, assets, cases, {}, missing_env=missing)
    backend_kwargs: dict[str, Any] = {"cases": list(cases.values()), "catalog": assets.catalog, "seed": config.seed,
                                      "protocol": config.protocol, "prompts_path": config.prompts_path}
    if config.profiles_path is not None:
        backend_kwargs["profiles_path"] = config.profiles_path
    backend_dir = config.profile.replace(":", "-") + ("" if config.protocol is Protocol.KIT else "-published")
    root = config.runs_dir / backend_dir / f"seed-{config.seed}" / cases_path.parent.name
    if config.profile == "local:lexical":  # a proposer, not a router: it answers RouteBR's stage only
        runs = [(system, split) for system, split in runs if system.uses_controller]
    ledgers, receipts, folders, notes = {}, {}, {}, []
    for system, split in sorted(runs, key=lambda r: r[0] in DERIVED):  # RouteBR runs before their derivatives
        out = root / system.value / split.value.lower()
        if system in DERIVED:
            source = folders.get((System.ROUTEBR, split), root / System.ROUTEBR.value / split.value.lower())
            result = derive_interventions(source, cases, assets, out, system=system, resume=True, progress=progress,
                                          keep_stale=True)
        else:
            chosen = [c for c in cases.values() if c.split is split]
            backend = make_backend(config.profile, **backend_kwargs)
            result = run_cases(chosen, backend, system=system, assets=assets, out_dir=out, resume=True,
                               progress=progress, concurrency=concurrency, cases_path=cases_path, keep_stale=True)
        ledgers[(system, split)], folders[(system, split)] = result.rows, result.out_dir
        receipts[(system, split)] = tuple(sorted((result.out_dir / "raw").glob("*.json")))
        notes += [result.stale_note] if result.stale_note else []
    ordered = {run: ledgers[run] for run in runs}
    return Study(config, assets, cases, ordered, receipts, stale_notes=tuple(notes))
