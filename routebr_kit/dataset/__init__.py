"""The kit's own RouteBR benchmark: a seeded 600-scenario generator (English and Chinese) and a stricter audit.

* :func:`generate_benchmark` / :func:`write_benchmark` — plan (:mod:`.composition`), word (:mod:`.realize`),
  label (:mod:`.labels`) and write a benchmark in the published CSV schema;
* :func:`audit_cases` — every published validator check plus the ones it misses, as a typed report.
"""

from .audit import (
    AuditCode,
    AuditReport,
    AuditSet,
    CheckClass,
    FileKind,
    Finding,
    Severity,
    audit_cases,
    audit_files,
    second_audit,
)
from .composition import ACTIONS, Partition, Route, Slot, allocate
from .generate import (
    KIT_DATA_DIR,
    AssetPaths,
    Benchmark,
    BenchmarkConfig,
    Manifest,
    cases_csv,
    generate_benchmark,
    write_benchmark,
)
from .labels import GoldLabel, gold_label
from .language import CueFamily, Language

__all__ = [name for name in dir() if not name.startswith("_")]
