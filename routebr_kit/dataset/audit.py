"""Read-only audit of a RouteBR cases file: every published validator check, then the checks it misses.

**Published checks** (spec §5.3, in its order; class ``PUBLISHED``, all errors): catalog ontology; registry size,
ID and code format (empty published registry fields are already rejected by the loader: exit 2); per row —
required values, duplicate IDs, split, action, boundary, difficulty, JSON fields, rule IDs, registry membership
of candidates and gold object, ANAPHORA history, CODE_ONLY code, duplicate requests within a split, FLIP pair IDs;
split counts; requests shared across DEV/MAIN/ENTITY; FLIP pairs.  For a kit registry (``display_name`` column)
the ID check is ``<exchange>:<security_code>`` instead of the Chinese-only ``(SSE|SZSE):<6 digits>``.  Annotator
disagreement counting (review mode) is not reproduced: neither the published nor the generated files carry
review columns.

**Kit checks** (class ``KIT``): the gold final path follows from gold action and boundary; gold boundary and
gold rule IDs equal what the kit's controller computes for the gold proposal on the runtime state
(:mod:`~routebr_kit.dataset.labels`: a ``CLARIFY`` from the object gate carries the default rule); the gold
object is a candidate of a type the action accepts, and matches the difficulty (``UNRESOLVED`` exactly for
CONFLICTING/UNDERSPECIFIED, ``NONE`` exactly for object-free actions); ``scenario_cell`` repeats the gold
fields; runtime states satisfy the runtime-state schema (``STATE_SCHEMA``, one finding per state naming every
violating field: derived from the rules — every field a rule tests, of its literals' type — or given by a
state-schema file, see :mod:`routebr_kit.core.state`); candidates match the registry; references
fit their difficulty under exact closed-list matching (:mod:`~routebr_kit.dataset.references`); cue families are
known; FLIP pairs share their candidates and differ in exactly one predicate; the paper's composition holds for
the file's kind.  Two kit findings are *warnings* (reported, exit status unaffected): cue evidence that is not a
literal span of the request or history, and registry names that occur inside another entity's name.

**File kinds.**  ``FULL`` (600 rows with DEV), ``SELECT`` (100/40/20), ``CONFIRM`` (200/80/40) or ``SUBSET``
(anything else: split counts and composition are reported as statistics, not checked).  ``auto`` detects the
kind from the split counts.  Several files audited together are also checked against each other: subsets must
be disjoint and their rows identical to the full file's rows.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.controller import Controller
from ..core.errors import DataError
from ..core.records import NONE, UNRESOLVED, Boundary, Catalog, Registry, Terminal, final_path_of
from ..core.rules import PolicyEngine
from ..store.assets import CsvTable, load_catalog, load_registry, load_rules, load_state_schema, read_csv
from ..store.cases import CASE_COLUMNS, CASE_REQUIRED_VALUES, Case, ObjectDifficulty, Split, load_cases
from ..store.files import parse_json
from .composition import (
    ACTION_TOTALS,
    ACTIONS,
    BOUNDARY_TOTALS,
    CUE_CELLS,
    DEV_DISPATCH,
    MIN_PRIORITY_DECIDED_CONFIRM,
    PARTITION_DISPATCH,
    PARTITION_SIZES,
    SPLIT_SIZES,
    UNRESOLVABLE,
    Partition,
)
from .findings import AuditCode, AuditReport, AuditSet, AuditStats, CheckClass, FileKind, Finding, Severity
from .labels import gold_label
from .language import CueFamily
from .references import code_of, mentioned, mentioned_in_any, normalise, overlapping_names

_JSON_FIELDS = ("history_json", "runtime_context_json", "candidate_entities_json", "gold_cues_json",
               "gold_rule_ids_json")
REGISTRY_SIZE = 40
_PUBLISHED_ID = re.compile(r"(SSE|SZSE):\d{6}")
_PUBLISHED_CODE = re.compile(r"\d{6}")
_KIT_ID = re.compile(r"[A-Z]+:[0-9A-Z.]+")
_MISSING = object()


# --------------------------------------------------------------------------------------------- entry points


def audit_cases(cases: str | Path, catalog: str | Path, rules: str | Path, entities: str | Path | None = None, *,
                kind: FileKind | str = "auto", state_schema: str | Path | None = None) -> AuditReport:
    """Audit one cases file against its catalog, rules (and runtime-state schema: derived from them, or
    ``state_schema``'s file overriding) and (optionally) entity registry.  Never writes."""
    cat = load_catalog(catalog)
    policy = load_rules(rules, cat, load_state_schema(state_schema) if state_schema is not None else None)
    registry = load_registry(entities) if entities is not None else None
    table = read_csv(cases, CASE_COLUMNS)
    return _Audit(table, cat, policy, registry, kind).run()


def audit_files(paths: Sequence[str | Path], catalog: str | Path, rules: str | Path,
                entities: str | Path | None = None, *, kind: FileKind | str = "auto",
                state_schema: str | Path | None = None) -> AuditSet:
    """Audit several cases files (e.g. the 600 file and its SELECT/CONFIRM subsets) and relate them."""
    reports = tuple(audit_cases(p, catalog, rules, entities, kind=kind, state_schema=state_schema) for p in paths)
    return AuditSet(reports, tuple(_cross_findings(paths, reports)))


# --------------------------------------------------------------------------------------------- the audit


@dataclass(frozen=True, slots=True)
class _RawCase:
    """One CSV record as the published checks see it (``split`` is ``None`` when not one of the four)."""

    line: int
    case_id: str
    split: str | None
    raw: Mapping[str, str]
    json: Mapping[str, Any]


class _Audit:
    """One audit run: collects findings in check order, never raises on bad rows."""

    def __init__(self, table: CsvTable, catalog: Catalog, policy: PolicyEngine, registry: Registry | None,
                 kind: FileKind | str) -> None:
        self.table, self.catalog, self.policy, self.registry = table, catalog, policy, registry
        self.requested_kind = kind if kind == "auto" or isinstance(kind, FileKind) else FileKind(kind.upper())
        self.findings: list[Finding] = []
        self.rule_ids = {r.rule_id for r in policy.rules}
        self.allowing = {r.rule_id for r in policy.rules if r.decision is Boundary.ALLOW}
        self._pairs: dict[str, list[_RawCase]] = {}

    def add(self, code: AuditCode, subject: str, detail: str, line: int | None = None) -> None:
        self.findings.append(Finding(code, subject, detail, line))

    def run(self) -> AuditReport:
        self._catalog()
        if self.registry is not None:
            self._registry(self.registry)
        rows = self._rows()
        kind = self._kind(rows)
        self._split_counts(rows, kind)
        self._cross_split(rows)
        self._flip_pairs(rows)
        cases = self._typed()
        stats = self._stats(rows, cases)
        if cases is not None:
            self._composition(cases, kind, stats)
        hashes = {"cases": self.table.sha256, "catalog": self.catalog.sha256, "rules": self.policy.sha256}
        if self.registry is not None:
            hashes["entities"] = self.registry.sha256
        return AuditReport(self.table.path, kind, tuple(self.findings), stats, MappingProxyType(hashes))

    # ---- 1. catalog and 2. registry
    def _catalog(self) -> None:
        if set(self.catalog.ids) != set(ACTIONS):
            self.add(AuditCode.CATALOG_ONTOLOGY, "catalog", f"action IDs {sorted(self.catalog.ids)} are not the "
                     f"five-action ontology {list(ACTIONS)}")

    def _registry(self, registry: Registry) -> None:
        published = all("official_short_name" in e.attributes for e in registry)
        if len(registry) != REGISTRY_SIZE:
            self.add(AuditCode.REGISTRY_SIZE, "registry", f"{len(registry)} entities, expected {REGISTRY_SIZE}")
        for e in registry:
            code = e.attributes.get("security_code", "")
            if published:
                if not _PUBLISHED_ID.fullmatch(e.object_id):
                    self.add(AuditCode.REGISTRY_ID_FORMAT, e.object_id, "object_id is not (SSE|SZSE):<6 digits>")
                if not _PUBLISHED_CODE.fullmatch(code):
                    self.add(AuditCode.REGISTRY_CODE_FORMAT, e.object_id, f"security_code {code!r} is not 6 digits")
                continue
            exchange = e.attributes.get("exchange", "")
            if not _KIT_ID.fullmatch(e.object_id) or e.object_id != f"{exchange}:{code}":
                self.add(AuditCode.REGISTRY_ID_FORMAT, e.object_id, f"object_id is not <exchange>:<security_code> "
                         f"({exchange}:{code})")
            for name in ("exchange", "security_code", "asset_group"):
                if not e.attributes.get(name, "").strip():
                    self.add(AuditCode.REGISTRY_FIELD, e.object_id, f"empty {name}")
        for object_id, term, longer, other in overlapping_names(registry.entities):
            self.add(AuditCode.REGISTRY_NAME_OVERLAP, object_id, f"name {term!r} occurs inside {longer!r} ({other})")

    # ---- 3. per row (published)
    def _rows(self) -> list[_RawCase]:
        rows: list[_RawCase] = []
        first_line: dict[str, int] = {}
        requests: dict[tuple[str, str], str] = {}
        for line, raw in self.table.rows:
            row = self._fields(line, raw, first_line)
            self._values(row)
            if row.split != Split.FLIP.value:
                key = (row.split or raw["split"], normalise(raw["history_json"] + raw["utterance"]))
                if key in requests:
                    self.add(AuditCode.DUPLICATE_REQUEST, row.case_id, f"same request as {requests[key]}", line)
                requests.setdefault(key, row.case_id)
            elif not raw["pair_id"].strip():
                self.add(AuditCode.FLIP_WITHOUT_PAIR_ID, row.case_id, "FLIP row without pair_id", line)
            rows.append(row)
        return rows

    def _fields(self, line: int, raw: Mapping[str, str], first_line: dict[str, int]) -> _RawCase:
        """Required values, unique ID, enumerations, JSON parsing."""
        case_id = raw["case_id"].strip()
        subject = case_id or f"line {line}"
        for name in CASE_REQUIRED_VALUES:
            if not raw[name].strip():
                self.add(AuditCode.EMPTY_REQUIRED, subject, f"empty {name}", line)
        if case_id in first_line:
            self.add(AuditCode.DUPLICATE_CASE_ID, subject, f"first seen on line {first_line[case_id]}", line)
        first_line.setdefault(case_id, line)
        split = raw["split"].strip().upper()
        if split not in Split.__members__:
            self.add(AuditCode.UNKNOWN_SPLIT, subject, f"split {raw['split']!r}", line)
        action = raw["gold_action"].strip()
        if action not in ACTIONS or action not in self.catalog:
            self.add(AuditCode.UNKNOWN_ACTION, subject, f"gold_action {action!r}", line)
        for name, values, code in (("gold_boundary", Boundary, AuditCode.UNKNOWN_BOUNDARY),
                                   ("gold_object_difficulty", ObjectDifficulty, AuditCode.UNKNOWN_DIFFICULTY)):
            if raw[name].strip() not in values.__members__:
                self.add(code, subject, f"{name} {raw[name]!r}", line)
        parsed = {}
        for name in _JSON_FIELDS:
            if text := raw[name].strip():
                try:
                    parsed[name] = parse_json(text, f"strict JSON in {name}")
                except DataError as exc:  # the published check, strict: no NaN, no repeated keys
                    self.add(AuditCode.INVALID_JSON, subject, f"{name}: {exc.detail or exc}", line)
        return _RawCase(line, subject, split if split in Split.__members__ else None, raw, parsed)

    def _values(self, row: _RawCase) -> None:
        """Rule IDs, registry membership, ANAPHORA history, CODE_ONLY code."""
        raw, subject, line = row.raw, row.case_id, row.line
        rule_ids = row.json.get("gold_rule_ids_json")
        if isinstance(rule_ids, list) and (unknown := [r for r in rule_ids if r not in self.rule_ids]):
            self.add(AuditCode.UNKNOWN_RULE_ID, subject, f"gold rule IDs {unknown} not in the rules", line)
        gold_object = raw["gold_object_id"].strip() or NONE
        concrete = gold_object not in (NONE, UNRESOLVED)
        if self.registry is not None:
            candidates = row.json.get("candidate_entities_json")
            ids = [c.get("object_id") for c in candidates if isinstance(c, dict)] \
                if isinstance(candidates, list) else []
            if outside := [i for i in ids if i not in self.registry]:
                self.add(AuditCode.CANDIDATE_NOT_REGISTERED, subject, f"candidates {outside}", line)
            if concrete and gold_object not in self.registry:
                self.add(AuditCode.GOLD_OBJECT_NOT_REGISTERED, subject, f"gold_object_id {gold_object}", line)
        difficulty = raw["gold_object_difficulty"].strip()
        if difficulty == ObjectDifficulty.ANAPHORA.value and not row.json.get("history_json"):
            self.add(AuditCode.ANAPHORA_WITHOUT_HISTORY, subject, "ANAPHORA with an empty history", line)
        if difficulty == ObjectDifficulty.CODE_ONLY.value and concrete and code_of(gold_object) not in raw["utterance"]:
            self.add(AuditCode.CODE_ONLY_WITHOUT_CODE, subject, f"utterance lacks {code_of(gold_object)}", line)

    # ---- 5. counts and cross-split duplicates
    def _kind(self, rows: list[_RawCase]) -> FileKind:
        if self.requested_kind != "auto":
            return self.requested_kind  # type: ignore[return-value]
        splits = Counter(r.split for r in rows)
        if splits.get(Split.DEV.value) or len(rows) == sum(SPLIT_SIZES.values()):
            return FileKind.FULL
        for partition in Partition:
            if splits == {s.value: n for s, n in PARTITION_SIZES[partition].items()}:
                return FileKind(partition.value)
        return FileKind.SUBSET

    def _split_counts(self, rows: list[_RawCase], kind: FileKind) -> None:
        if kind is FileKind.SUBSET:
            return
        expected = SPLIT_SIZES if kind is FileKind.FULL else PARTITION_SIZES[Partition(kind.value)]
        got = Counter(r.split for r in rows)
        for split, n in expected.items():
            if got.get(split.value, 0) != n:
                self.add(AuditCode.SPLIT_COUNT, split.value, f"{got.get(split.value, 0)} rows, expected {n} "
                         f"({kind.value})")

    def _cross_split(self, rows: list[_RawCase]) -> None:
        where: dict[str, dict[str, str]] = defaultdict(dict)
        for r in rows:
            if r.split in (Split.DEV.value, Split.MAIN.value, Split.ENTITY.value):
                where[normalise(r.raw["utterance"])].setdefault(r.split, r.case_id)
        for places in where.values():
            if len(places) > 1:
                ids = sorted(places.values())
                self.add(AuditCode.CROSS_SPLIT_DUPLICATE, ids[0], f"same utterance in {sorted(places)}: {ids}")

    # ---- 6. FLIP pairs (published), plus candidates and one-predicate difference (kit)
    def _flip_pairs(self, rows: list[_RawCase]) -> None:
        pairs: dict[str, list[_RawCase]] = defaultdict(list)
        for r in rows:
            if r.split == Split.FLIP.value and r.raw["pair_id"].strip():
                pairs[r.raw["pair_id"].strip()].append(r)
        for pair_id, members in pairs.items():
            ids = [m.case_id for m in members]
            if len(members) != 2:
                self.add(AuditCode.FLIP_PAIR_SIZE, pair_id, f"{len(members)} rows {ids}, expected 2")
                continue
            a, b = (m.raw for m in members)
            if normalise(a["history_json"] + a["utterance"]) != normalise(b["history_json"] + b["utterance"]):
                self.add(AuditCode.FLIP_REQUEST_MISMATCH, pair_id, f"{ids} differ in history or utterance")
            if a["runtime_context_json"].strip() == b["runtime_context_json"].strip():
                self.add(AuditCode.FLIP_STATE_IDENTICAL, pair_id, f"{ids} have the same runtime context")
            boundaries = {a["gold_boundary"].strip(), b["gold_boundary"].strip()}
            if len(boundaries) != 2 or Boundary.ALLOW.value not in boundaries:
                self.add(AuditCode.FLIP_BOUNDARY_SET, pair_id, f"{ids} boundaries {sorted(boundaries)}")
        self._pairs = pairs

    # ---- kit checks on typed cases
    def _typed(self) -> tuple[Case, ...] | None:
        try:
            cases = load_cases(self.table.path)
        except DataError as exc:
            self.add(AuditCode.CASES_UNLOADABLE, Path(self.table.path).name, f"kit checks skipped: {exc}")
            return None
        controller = Controller(self.catalog, self.policy)
        for case in cases:
            self._case(case, controller)
        by_id = {c.case_id: c for c in cases}
        for pair_id, members in self._pairs.items():
            if len(members) == 2:
                self._flip_kit(pair_id, by_id[members[0].case_id], by_id[members[1].case_id])
        return cases

    def _case(self, case: Case, controller: Controller) -> None:
        g = case.gold

        def add(code: AuditCode, detail: str) -> None:
            self.add(code, case.case_id, detail, case.line)

        bad = self.policy.state_schema.check(case.request.state.values)
        if bad:
            add(AuditCode.STATE_SCHEMA, "runtime state breaks the state schema (the controller fails closed): "
                + "; ".join(v.describe() for v in bad))
        if g.action not in self.catalog:
            return
        expected_path = final_path_of(Terminal.from_boundary(g.boundary), g.action)
        if g.final_path != expected_path:
            add(AuditCode.GOLD_PATH_MISMATCH, f"gold_final_path {g.final_path}, expected {expected_path}")
        cue_cell = CUE_CELLS.get(len(g.cues), f"{len(g.cues)} cues")
        cell = "|".join((g.action, g.boundary.value, g.object_difficulty.value, cue_cell))
        if case.scenario_cell != cell:
            add(AuditCode.SCENARIO_CELL_MISMATCH, f"scenario_cell {case.scenario_cell}, gold fields say {cell}")
        if self._gold_object(case, add) and not bad:
            label = gold_label(controller, case.request, g.action, g.object_id)
            if label.boundary is not g.boundary:
                add(AuditCode.GOLD_BOUNDARY_MISMATCH, f"gold {g.boundary.value}, computed {label.boundary.value} "
                    f"(rule {','.join(label.rule_ids)}{', object gate' if label.object_gate else ''})")
            if tuple(g.rule_ids) != label.rule_ids:
                add(AuditCode.GOLD_RULE_MISMATCH, f"gold {list(g.rule_ids)}, computed {list(label.rule_ids)}")
        if self.registry is not None:
            for e in case.request.candidates:
                ref = self.registry.index.get(e.object_id)
                if ref is not None and (e.object_type, e.display_name, tuple(e.aliases)) != \
                        (ref.object_type, ref.display_name, tuple(ref.aliases)):
                    add(AuditCode.CANDIDATE_REGISTRY_MISMATCH, f"candidate {e.object_id} differs from the registry")
        self._references(case, add)
        for cue in g.cues:
            family, evidence = cue.get("family"), cue.get("evidence")
            if family not in CueFamily.__members__:
                add(AuditCode.CUE_FAMILY_UNKNOWN, f"cue family {family!r}")
            if not isinstance(evidence, str) or not evidence or not any(
                    evidence in text for text in (case.request.utterance, *case.request.history)):
                add(AuditCode.CUE_EVIDENCE_NOT_FOUND, f"{family} evidence {evidence!r} is not in the request")

    def _gold_object(self, case: Case, add: Callable[[AuditCode, str], None]) -> bool:
        """Object-contract checks on the gold object; ``False`` when the gold proposal cannot be evaluated."""
        g, action = case.gold, self.catalog[case.gold.action]
        d = g.object_difficulty
        if not action.requires_object:
            ok = g.object_id == NONE and d is ObjectDifficulty.NONE
            if not ok:
                add(AuditCode.GOLD_OBJECT_DIFFICULTY, f"object-free {g.action} needs NONE/NONE, has "
                    f"{g.object_id}/{d.value}")
            return ok
        if d in UNRESOLVABLE or d is ObjectDifficulty.NONE:
            if g.object_id != UNRESOLVED or d is ObjectDifficulty.NONE:
                add(AuditCode.GOLD_OBJECT_DIFFICULTY, f"{d.value} on {g.action} with gold object {g.object_id}")
                return False
            return True
        entity = case.request.candidate_index.get(g.object_id)
        if entity is None:
            add(AuditCode.GOLD_OBJECT_NOT_CANDIDATE, f"{d.value} gold object {g.object_id} is not a candidate")
            return False
        if not action.permits(entity.object_type):
            add(AuditCode.GOLD_OBJECT_TYPE, f"{g.object_id} is {entity.object_type}; {g.action} takes "
                f"{'|'.join(action.required_object_types)}")
            return False
        return True

    def _references(self, case: Case, add: Callable[[AuditCode, str], None]) -> None:
        g, request = case.gold, case.request
        candidates = request.candidates
        named = {e.object_id for e in mentioned(request.utterance, candidates)}
        earlier = {e.object_id for e in mentioned_in_any(request.history, candidates)}
        d = g.object_difficulty
        problem = None
        if d in (ObjectDifficulty.EXPLICIT_NAME, ObjectDifficulty.CODE_ONLY) and named != {g.object_id}:
            problem = f"{d.value} request names {sorted(named)}, not just {g.object_id}"
        elif d is ObjectDifficulty.ANAPHORA and (g.object_id in named or earlier != {g.object_id}):
            problem = f"ANAPHORA: request names {sorted(named)}, history names {sorted(earlier)}"
        elif d is ObjectDifficulty.CONFLICTING and len(named) < 2:
            problem = f"CONFLICTING request names {sorted(named)} (needs two candidates)"
        elif d is ObjectDifficulty.UNDERSPECIFIED and len(named | earlier) == 1:
            problem = f"UNDERSPECIFIED request uniquely names {sorted(named | earlier)}"
        if problem:
            add(AuditCode.REFERENCE_MISMATCH, problem)

    def _flip_kit(self, pair_id: str, a: Case, b: Case) -> None:
        ids = [a.case_id, b.case_id]
        if [e.object_id for e in a.request.candidates] != [e.object_id for e in b.request.candidates]:
            self.add(AuditCode.FLIP_CANDIDATES_MISMATCH, pair_id, f"{ids} have different candidates")
        sa, sb = a.request.state.values, b.request.state.values
        differing = sorted(k for k in set(sa) | set(sb) if sa.get(k, _MISSING) != sb.get(k, _MISSING))
        if len(differing) != 1:
            self.add(AuditCode.FLIP_PREDICATE_COUNT, pair_id, f"{ids} differ in {differing}, expected one predicate")

    # ---- statistics and composition
    def _stats(self, rows: list[_RawCase], cases: tuple[Case, ...] | None) -> AuditStats:
        raw = [r.raw for r in rows]
        count = lambda name: MappingProxyType(dict(Counter(x[name].strip() for x in raw)))  # noqa: E731
        dispatchable, decided, gate = Counter(), Counter(), Counter()
        unresolvable = coupled = 0
        for c in cases or ():
            split = c.split.value
            dispatchable[split] += c.gold.dispatchable
            values = c.request.state.values
            if c.gold.action in self.catalog:
                matched = [r for r in self.policy.matching(c.gold.action, values) if not r.is_default]
                decided[split] += len(matched) > 1
                gate[split] += (not c.gold.dispatchable and bool(c.gold.rule_ids)
                                and set(c.gold.rule_ids) <= self.allowing)
            if c.gold.object_difficulty in UNRESOLVABLE:
                unresolvable += 1
                coupled += values.get("entity_resolved") is False
        return AuditStats(
            rows=len(rows), splits=count("split"), actions=count("gold_action"), boundaries=count("gold_boundary"),
            difficulties=count("gold_object_difficulty"),
            cue_cells=MappingProxyType(dict(Counter(x["scenario_cell"].rsplit("|", 1)[-1] for x in raw))),
            dispatchable=MappingProxyType(dict(dispatchable)), priority_decided=MappingProxyType(dict(decided)),
            object_gate=MappingProxyType(dict(gate)), unresolvable=unresolvable, unresolvable_coupled=coupled)

    def _composition(self, cases: tuple[Case, ...], kind: FileKind, stats: AuditStats) -> None:
        def expect(what: str, got: Mapping[str, int], want: Mapping[str, int]) -> None:
            if dict(got) != dict(want):
                self.add(AuditCode.COMPOSITION_COUNT, kind.value, f"{what} {dict(got)}, expected {dict(want)}")

        dispatch = sum(c.gold.dispatchable for c in cases)
        if kind is FileKind.FULL:
            expect("actions", stats.actions, ACTION_TOTALS)
            expect("boundaries", stats.boundaries, {b.value: n for b, n in BOUNDARY_TOTALS.items()})
            dev = [c for c in cases if c.split is Split.DEV]
            expect("DEV dispatchable/bounded", {"dispatchable": sum(c.gold.dispatchable for c in dev),
                                                "bounded": sum(not c.gold.dispatchable for c in dev)},
                   dict(zip(("dispatchable", "bounded"), DEV_DISPATCH)))
        elif kind in (FileKind.SELECT, FileKind.CONFIRM):
            expect("dispatchable/bounded", {"dispatchable": dispatch, "bounded": len(cases) - dispatch},
                   dict(zip(("dispatchable", "bounded"), PARTITION_DISPATCH[Partition(kind.value)])))
        if kind is FileKind.CONFIRM and sum(stats.priority_decided.values()) < MIN_PRIORITY_DECIDED_CONFIRM:
            self.add(AuditCode.COMPOSITION_COUNT, kind.value, f"{sum(stats.priority_decided.values())} "
                     f"priority-decided cases, expected at least {MIN_PRIORITY_DECIDED_CONFIRM}")


def second_audit(artifact_root: str | Path | None, *, seed: int, language: str, decouple_entity_state: bool,
                 data_dir: str | Path, out_dir: str | Path) -> tuple[str, AuditReport]:
    """Notebook 01's second, stricter audit: ``(label, report)`` of the audit of the published ``routebr_600.csv``
    under ``artifact_root``, or (no artifact) of the kit's benchmark in the language other than ``language`` (same
    seed), written under ``out_dir/benchmark-<other>``."""
    from .generate import BenchmarkConfig, write_benchmark

    if artifact_root is not None:
        data = Path(artifact_root) / "data"
        report = audit_files([data / "routebr_600.csv"], data / "catalog.csv", data / "boundary_rules.csv",
                             data / "entity_catalog.csv").reports[0]
        return "The published `routebr_600.csv`", report
    other = "zh" if language == "en" else "en"
    label = f"The kit's own benchmark ({other}, seed {seed}; fallback without the artifact)"
    manifest = write_benchmark(BenchmarkConfig(seed, other, decouple_entity_state, Path(data_dir)).generate(),
                               Path(out_dir) / f"benchmark-{other}")
    report = audit_files([manifest.path("routebr_600.csv")], manifest.path("catalog.csv"),
                         manifest.path("boundary_rules.csv"), manifest.path("registry.csv")).reports[0]
    return label, report


def _cross_findings(paths: Sequence[str | Path], reports: Sequence[AuditReport]) -> list[Finding]:
    """Subsets are disjoint and repeat the full file's rows verbatim."""
    tables = {str(p): {values["case_id"].strip(): values for _, values in read_csv(p, CASE_COLUMNS).rows}
              for p in paths}
    full = [str(p) for p, r in zip(paths, reports) if r.kind is FileKind.FULL]
    subsets = [str(p) for p, r in zip(paths, reports) if r.kind is not FileKind.FULL]
    findings = []
    for i, a in enumerate(subsets):
        for b in subsets[i + 1:]:
            for case_id in sorted(tables[a].keys() & tables[b].keys()):
                findings.append(Finding(AuditCode.SUBSET_OVERLAP, case_id,
                                        f"in both {Path(a).name} and {Path(b).name}"))
    for reference in full:
        for subset in subsets:
            for case_id, values in tables[subset].items():
                if tables[reference].get(case_id) != values:
                    findings.append(Finding(AuditCode.SUBSET_ROW_MISMATCH, case_id,
                                            f"{Path(subset).name} row differs from {Path(reference).name}"))
    return findings


__all__ = ["AuditCode", "AuditReport", "AuditSet", "AuditStats", "CheckClass", "FileKind", "Finding", "Severity",
           "audit_cases", "audit_files", "second_audit"]
