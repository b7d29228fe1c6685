"""Build and write the kit's seeded 600-scenario RouteBR benchmark (English or Chinese).

    bench = generate_benchmark(seed=0, language="en")          # or BenchmarkConfig(0, "en").generate()
    manifest = write_benchmark(bench, "data/generated/en-0")

Pipeline: :func:`~routebr_kit.dataset.composition.allocate` plans 600 slots with the paper's exact counts →
:class:`~routebr_kit.dataset.realize.Realizer` writes each request side (one per FLIP pair) → each slot's runtime
state is built → :func:`~routebr_kit.dataset.labels.gold_label` computes boundary, winning rule and final path
with the kit's controller.  A computed label that differs from the plan means the rule program cannot realise
the composition: a :class:`DataError`, never a silently different benchmark.

``decouple_entity_state=True`` keeps ``entity_resolved=true`` for half of the unresolvable references
(:attr:`Slot.decouplable`), so the object gate — not rule R040 — must produce their ``CLARIFY`` (gold rule
``R999``, gold boundary ``CLARIFY``).  The published data always couples the two (spec §9 item 10).

Files are byte-identical for the same seed, language and options: CSV with ``\\n`` line ends, compact JSON with
fixed key order, no timestamps, SHA-256 of every file in ``manifest.json``.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.controller import Controller
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_bytes
from ..core.records import RouteRequest, RuntimeState
from ..store.assets import Assets, load_assets
from ..store.cases import CASE_COLUMNS, Case, Gold, Split
from ..store.files import MAX_CSV_BYTES, read_bytes
from .composition import CUE_CELLS, PARTITION_SIZES, Partition, Slot, allocate
from .labels import gold_label
from .language import Language, LanguagePack
from .realize import CANDIDATE_ATTRIBUTES, Realizer, RequestSide
from .templates_en import PACK as EN_PACK
from .templates_zh import PACK as ZH_PACK

#: The kit's own assets (catalog, rules, registries), shipped as package data so a non-editable install has them.
KIT_DATA_DIR = Path(__file__).resolve().parents[1] / "resources"
_PACKS: Mapping[Language, LanguagePack] = MappingProxyType({Language.EN: EN_PACK, Language.ZH: ZH_PACK})

CASES_FILE = "routebr_600.csv"
_SUBSET_FILES: Mapping[Partition, str] = MappingProxyType({
    Partition.SELECT: "routebr_select_160.csv", Partition.CONFIRM: "routebr_confirm_320.csv"})
CATALOG_FILE, RULES_FILE, REGISTRY_FILE, MANIFEST_FILE = ("catalog.csv", "boundary_rules.csv", "registry.csv",
                                                          "manifest.json")


@dataclass(frozen=True, slots=True)
class AssetPaths:
    catalog: Path
    rules: Path
    registry: Path

    @classmethod
    def kit(cls, language: Language, data_dir: str | Path | None = None) -> AssetPaths:
        root = Path(data_dir) if data_dir is not None else KIT_DATA_DIR
        return cls(root / CATALOG_FILE, root / RULES_FILE, root / f"registry_{language.value}.csv")


@dataclass(frozen=True, slots=True)
class BenchmarkConfig:
    """What a benchmark is a function of: seed, language, the decoupling option and the asset directory."""

    seed: int = 0
    language: Language = Language.EN
    decouple_entity_state: bool = False
    data_dir: Path | None = None  # default: KIT_DATA_DIR (routebr_kit/resources/)
    lexical_shift: bool = False  # held-out primary templates (dataset.lexical_shift); same plan, states, labels

    def __post_init__(self) -> None:
        if type(self.seed) is not int or self.seed < 0:
            raise DataError(ErrorCode.INVALID_INTEGER, "a non-negative integer seed", got=self.seed, field="seed")
        try:
            object.__setattr__(self, "language", Language(self.language))
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(lang.value for lang in Language),
                            got=self.language, field="language") from None
        for name in ("decouple_entity_state", "lexical_shift"):
            if type(getattr(self, name)) is not bool:
                raise DataError(ErrorCode.WRONG_TYPE, "true or false", got=getattr(self, name), field=name)
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", Path(self.data_dir))

    @property
    def paths(self) -> AssetPaths:
        return AssetPaths.kit(self.language, self.data_dir)

    def generate(self) -> Benchmark:
        """Plan, write and label the 600 cases."""
        return _generate(self)


@dataclass(frozen=True)
class Benchmark:
    """A generated benchmark: 600 cases (output order), their partitions, and the assets they were labelled with."""

    config: BenchmarkConfig
    cases: tuple[Case, ...]
    partitions: Mapping[str, Partition]  # case_id -> SELECT / CONFIRM (DEV cases are in neither)
    assets: Assets

    @property
    def seed(self) -> int:
        return self.config.seed

    @property
    def language(self) -> Language:
        return self.config.language

    def partition(self, partition: Partition) -> tuple[Case, ...]:
        return tuple(c for c in self.cases if self.partitions.get(c.case_id) is partition)

    def case(self, case_id: str) -> Case:
        return {c.case_id: c for c in self.cases}[case_id]  # (case IDs are unique: KeyError for another)

    def rows(self) -> list[dict[str, Any]]:
        """One flat, table-ready record per case: partition, cell fields, cue count, rule, text."""
        records = []
        for case in self.cases:
            g, partition = case.gold, self.partitions.get(case.case_id)
            records.append({
                "case_id": case.case_id, "split": case.split.value,
                "partition": partition.value if partition else "DEV", "pair_id": case.pair_id, "action": g.action,
                "boundary": g.boundary.value, "difficulty": g.object_difficulty.value, "cues": len(g.cues),
                "cue_cell": case.scenario_cell.rsplit("|", 1)[-1], "object_id": g.object_id,
                "rule": ",".join(g.rule_ids), "final_path": g.final_path, "dispatchable": g.dispatchable,
                "utterance": case.request.utterance, "history": " / ".join(case.request.history),
            })
        return records


def generate_benchmark(seed: int = 0, language: Language | str = Language.EN, *,
                       decouple_entity_state: bool = False, data_dir: str | Path | None = None,
                       lexical_shift: bool = False) -> Benchmark:
    """Plan, write and label the 600 cases.  Deterministic in ``(seed, language, decouple_entity_state,
    lexical_shift)``; ``lexical_shift`` words the primary sentences with held-out templates
    (:mod:`routebr_kit.dataset.lexical_shift`) and changes nothing else."""
    return BenchmarkConfig(seed, language, decouple_entity_state, data_dir,  # type: ignore[arg-type]
                           lexical_shift).generate()


def _generate(config: BenchmarkConfig) -> Benchmark:
    paths = config.paths
    assets = load_assets(paths.catalog, paths.rules, paths.registry)
    assert assets.registry is not None
    slots = allocate(config.seed, assets.policy)
    pack = _PACKS[config.language]
    if config.lexical_shift:
        from .lexical_shift import shifted_pack

        pack = shifted_pack(pack)
    realizer = Realizer(pack, assets.registry, config.seed)
    controller = assets.controller()
    cases, partitions = [], {}
    numbers: Counter[Split] = Counter()
    shared: dict[int, RequestSide] = {}
    for slot in slots:
        numbers[slot.split] += 1
        case_id = f"{slot.split.value}-{numbers[slot.split]:04d}"
        if slot.pair is None:
            side = realizer.request(slot, case_id)
        else:
            if slot.pair not in shared:  # one request side per FLIP pair
                shared[slot.pair] = realizer.request(slot, _pair_id(slot))
            side = shared[slot.pair]
        request = RouteRequest(case_id, side.utterance, side.history,
                               RuntimeState(slot.state(config.decouple_entity_state)), side.candidates)
        cases.append(_labelled(controller, slot, request, side))
        if slot.partition is not None:
            partitions[case_id] = slot.partition
    return Benchmark(config, tuple(cases), MappingProxyType(partitions), assets)


def _pair_id(slot: Slot) -> str:
    return f"PAIR-{slot.pair + 1:03d}" if slot.pair is not None else ""


def _labelled(controller: Controller, slot: Slot, request: RouteRequest, side: RequestSide) -> Case:
    label = gold_label(controller, request, slot.action, side.object_id)
    if label.boundary is not slot.boundary:
        raise DataError(ErrorCode.INCONSISTENT_ASSETS, f"a rule program under which {request.request_id} is "
                        f"{slot.boundary.value}", got=label.boundary.value if label.boundary else label.errors,
                        field="condition_json", detail=f"planned route {slot.route.value}")
    gold = Gold(slot.action, slot.difficulty, side.object_id, label.boundary, label.final_path, label.rule_ids,
                tuple(MappingProxyType(c.as_dict()) for c in side.cues))
    cell = "|".join((slot.action, label.boundary.value, slot.difficulty.value, CUE_CELLS[len(side.cues)]))
    return Case(request, slot.split, gold, _pair_id(slot), cell)


# --------------------------------------------------------------------------------------------- files


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _case_row(case: Case) -> dict[str, str]:
    """One case as a published-schema CSV record."""
    g = case.gold
    return {
        "case_id": case.case_id, "split": case.split.value, "pair_id": case.pair_id,
        "scenario_cell": case.scenario_cell, "utterance": case.request.utterance,
        "history_json": _json(list(case.request.history)),
        "runtime_context_json": _json(case.request.state.as_dict()),
        "candidate_entities_json": _json([  # the published shape: model-visible fields, then the registry facts
            {**e.prompt_view(), **{k: e.attributes.get(k, "") for k in CANDIDATE_ATTRIBUTES}}
            for e in case.request.candidates]),
        "gold_cues_json": _json([dict(c) for c in g.cues]), "gold_action": g.action,
        "gold_object_difficulty": g.object_difficulty.value, "gold_object_id": g.object_id,
        "gold_boundary": g.boundary.value, "gold_final_path": g.final_path,
        "gold_rule_ids_json": _json(list(g.rule_ids)),
    }


def cases_csv(cases: Iterable[Case]) -> bytes:
    """The cases file's bytes (UTF-8, ``\\n`` line ends, minimal quoting)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CASE_COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(_case_row(c) for c in cases)
    return buffer.getvalue().encode("utf-8")


@dataclass(frozen=True, slots=True)
class Manifest:
    """What :func:`write_benchmark` wrote: the directory and the SHA-256 of each file."""

    out_dir: Path
    files: Mapping[str, str]

    def path(self, name: str) -> Path:
        return self.out_dir / name


def write_benchmark(benchmark: Benchmark, out_dir: str | Path) -> Manifest:
    """Write the three case files, the catalog, the rules, the registry and ``manifest.json`` into ``out_dir``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    contents = {CASES_FILE: cases_csv(benchmark.cases)}
    for partition, name in _SUBSET_FILES.items():
        subset = benchmark.partition(partition)
        expected = sum(PARTITION_SIZES[partition].values())
        if len(subset) != expected:
            raise DataError(ErrorCode.INVALID_VALUE, f"{expected} {partition.value} cases", got=len(subset))
        contents[name] = cases_csv(subset)
    paths = benchmark.config.paths
    for name, source in ((CATALOG_FILE, paths.catalog), (RULES_FILE, paths.rules), (REGISTRY_FILE, paths.registry)):
        contents[name] = read_bytes(source, "an asset file", max_bytes=MAX_CSV_BYTES)
    hashes = {name: sha256_bytes(data) for name, data in contents.items()}
    manifest = {
        "generator": "routebr_kit.dataset",
        "seed": benchmark.seed,
        "language": benchmark.language.value,
        "options": {"decouple_entity_state": benchmark.config.decouple_entity_state,
                    **({"lexical_shift": True} if benchmark.config.lexical_shift else {})},
        "counts": {"cases": len(benchmark.cases),
                   **{p.value: len(benchmark.partition(p)) for p in Partition}},
        "files": hashes,
    }
    contents[MANIFEST_FILE] = (json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False) + "\n").encode()
    for name, data in contents.items():
        (out / name).write_bytes(data)
    return Manifest(out, MappingProxyType({**hashes, MANIFEST_FILE: sha256_bytes(contents[MANIFEST_FILE])}))
