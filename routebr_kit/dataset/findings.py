"""What an audit of RouteBR cases files reports (:mod:`routebr_kit.dataset.audit` runs the checks): typed findings,
each a published-validator check or a kit check, an error or a warning; the file's partition statistics."""

from __future__ import annotations

import enum
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..store.cases import Split


class Severity(str, enum.Enum):
    ERROR = "ERROR"
    WARNING = "WARNING"


class CheckClass(str, enum.Enum):
    PUBLISHED = "PUBLISHED"  # a check of the published validator
    KIT = "KIT"  # a check the published validator misses


class FileKind(str, enum.Enum):
    FULL = "FULL"
    SELECT = "SELECT"
    CONFIRM = "CONFIRM"
    SUBSET = "SUBSET"


class AuditCode(str, enum.Enum):
    """Finding codes, published checks first (in the validator's order)."""

    CATALOG_ONTOLOGY = "CATALOG_ONTOLOGY"
    REGISTRY_SIZE = "REGISTRY_SIZE"
    REGISTRY_ID_FORMAT = "REGISTRY_ID_FORMAT"
    REGISTRY_CODE_FORMAT = "REGISTRY_CODE_FORMAT"
    EMPTY_REQUIRED = "EMPTY_REQUIRED"
    DUPLICATE_CASE_ID = "DUPLICATE_CASE_ID"
    UNKNOWN_SPLIT = "UNKNOWN_SPLIT"
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    UNKNOWN_BOUNDARY = "UNKNOWN_BOUNDARY"
    UNKNOWN_DIFFICULTY = "UNKNOWN_DIFFICULTY"
    INVALID_JSON = "INVALID_JSON"
    UNKNOWN_RULE_ID = "UNKNOWN_RULE_ID"
    CANDIDATE_NOT_REGISTERED = "CANDIDATE_NOT_REGISTERED"
    GOLD_OBJECT_NOT_REGISTERED = "GOLD_OBJECT_NOT_REGISTERED"
    ANAPHORA_WITHOUT_HISTORY = "ANAPHORA_WITHOUT_HISTORY"
    CODE_ONLY_WITHOUT_CODE = "CODE_ONLY_WITHOUT_CODE"
    DUPLICATE_REQUEST = "DUPLICATE_REQUEST"
    FLIP_WITHOUT_PAIR_ID = "FLIP_WITHOUT_PAIR_ID"
    SPLIT_COUNT = "SPLIT_COUNT"
    CROSS_SPLIT_DUPLICATE = "CROSS_SPLIT_DUPLICATE"
    FLIP_PAIR_SIZE = "FLIP_PAIR_SIZE"
    FLIP_REQUEST_MISMATCH = "FLIP_REQUEST_MISMATCH"
    FLIP_STATE_IDENTICAL = "FLIP_STATE_IDENTICAL"
    FLIP_BOUNDARY_SET = "FLIP_BOUNDARY_SET"
    # ---- kit checks
    REGISTRY_FIELD = "REGISTRY_FIELD"
    REGISTRY_NAME_OVERLAP = "REGISTRY_NAME_OVERLAP"
    CASES_UNLOADABLE = "CASES_UNLOADABLE"
    STATE_SCHEMA = "STATE_SCHEMA"  # the runtime state breaks the runtime-state schema (the controller fails closed)
    GOLD_OBJECT_DIFFICULTY = "GOLD_OBJECT_DIFFICULTY"
    GOLD_OBJECT_NOT_CANDIDATE = "GOLD_OBJECT_NOT_CANDIDATE"
    GOLD_OBJECT_TYPE = "GOLD_OBJECT_TYPE"
    GOLD_PATH_MISMATCH = "GOLD_PATH_MISMATCH"
    GOLD_BOUNDARY_MISMATCH = "GOLD_BOUNDARY_MISMATCH"
    GOLD_RULE_MISMATCH = "GOLD_RULE_MISMATCH"
    SCENARIO_CELL_MISMATCH = "SCENARIO_CELL_MISMATCH"
    CANDIDATE_REGISTRY_MISMATCH = "CANDIDATE_REGISTRY_MISMATCH"
    REFERENCE_MISMATCH = "REFERENCE_MISMATCH"
    CUE_FAMILY_UNKNOWN = "CUE_FAMILY_UNKNOWN"
    CUE_EVIDENCE_NOT_FOUND = "CUE_EVIDENCE_NOT_FOUND"
    FLIP_CANDIDATES_MISMATCH = "FLIP_CANDIDATES_MISMATCH"
    FLIP_PREDICATE_COUNT = "FLIP_PREDICATE_COUNT"
    COMPOSITION_COUNT = "COMPOSITION_COUNT"
    SUBSET_OVERLAP = "SUBSET_OVERLAP"
    SUBSET_ROW_MISMATCH = "SUBSET_ROW_MISMATCH"

    @property
    def check_class(self) -> CheckClass:
        return CheckClass.PUBLISHED if _ORDER.index(self) <= _ORDER.index(AuditCode.FLIP_BOUNDARY_SET) \
            else CheckClass.KIT

    @property
    def severity(self) -> Severity:
        return Severity.WARNING if self in _WARNINGS else Severity.ERROR


_ORDER = list(AuditCode)
_WARNINGS = frozenset({AuditCode.CUE_EVIDENCE_NOT_FOUND, AuditCode.REGISTRY_NAME_OVERLAP})


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: its code, what it concerns (case ID, pair, registry object or file) and a short detail."""

    code: AuditCode
    subject: str
    detail: str
    line: int | None = None

    @property
    def severity(self) -> Severity:
        return self.code.severity

    @property
    def check_class(self) -> CheckClass:
        return self.code.check_class

    def as_dict(self) -> dict[str, Any]:
        return {"severity": self.severity.value, "class": self.check_class.value, "code": self.code.value,
                "subject": self.subject, "line": self.line, "detail": self.detail}

    def __str__(self) -> str:
        where = f"{self.subject} (line {self.line})" if self.line else self.subject
        return f"{self.severity.value} {self.check_class.value} {self.code.value} {where}: {self.detail}"


@dataclass(frozen=True)
class AuditStats:
    """Partition statistics of the audited file."""

    rows: int
    splits: Mapping[str, int]
    actions: Mapping[str, int]
    boundaries: Mapping[str, int]
    difficulties: Mapping[str, int]
    cue_cells: Mapping[str, int]
    dispatchable: Mapping[str, int]  # per split, from the gold final path
    priority_decided: Mapping[str, int]  # per split: more than one non-default rule matches
    object_gate: Mapping[str, int]  # per split: gold CLARIFY from the object gate (rule ALLOW)
    unresolvable: int
    unresolvable_coupled: int  # ... whose state says entity_resolved=false (spec §9 item 10)

    def split_rows(self) -> list[dict[str, Any]]:
        """One row per split (and a total): cases, dispatchable, bounded, priority-decided, object-gate."""
        rows = []
        for split in [*(s.value for s in Split if s.value in self.splits), "ALL"]:
            n = self.rows if split == "ALL" else self.splits[split]
            pick = (lambda m: sum(m.values())) if split == "ALL" else (lambda m, s=split: m.get(s, 0))
            rows.append({"split": split, "cases": n, "dispatchable": pick(self.dispatchable),
                         "bounded": n - pick(self.dispatchable), "priority_decided": pick(self.priority_decided),
                         "object_gate": pick(self.object_gate)})
        return rows


@dataclass(frozen=True)
class AuditReport:
    """The typed result of auditing one cases file."""

    path: str
    kind: FileKind
    findings: tuple[Finding, ...]
    stats: AuditStats
    hashes: Mapping[str, str]  # input name -> SHA-256

    @property
    def errors(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.ERROR)

    @property
    def warnings(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.severity is Severity.WARNING)

    @property
    def ok(self) -> bool:
        """No errors of either class (warnings allowed)."""
        return not self.errors

    @property
    def published_ok(self) -> bool:
        """The published validator's checks all pass."""
        return not any(f.check_class is CheckClass.PUBLISHED for f in self.errors)

    def codes(self) -> dict[AuditCode, int]:
        return dict(Counter(f.code for f in self.findings))

    def subjects(self, code: AuditCode) -> tuple[str, ...]:
        return tuple(f.subject for f in self.findings if f.code is code)


@dataclass(frozen=True)
class AuditSet:
    """Several files audited together, plus the findings that relate them."""

    reports: tuple[AuditReport, ...]
    cross: tuple[Finding, ...] = ()

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports) and not any(f.severity is Severity.ERROR for f in self.cross)


__all__ = ["AuditCode", "AuditReport", "AuditSet", "AuditStats", "CheckClass", "FileKind", "Finding", "Severity"]
