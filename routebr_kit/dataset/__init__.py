"""The kit's own RouteBR benchmark: a seeded 600-scenario generator (English and Chinese) and a stricter audit.

* :func:`generate_benchmark` / :func:`write_benchmark` — plan (:mod:`.composition`), word (:mod:`.realize`),
  label (:mod:`.labels`) and write a benchmark in the published CSV schema;
* :func:`audit_cases` — every published validator check plus the ones it misses, as a typed report.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "audit": "audit_files second_audit",
    "composition": "Partition",
    "generate": "Benchmark BenchmarkConfig KIT_DATA_DIR Manifest generate_benchmark write_benchmark",
    "labels": "gold_label",
    "sessions": "SESSION_DATA_DIR audit_sessions generate_sessions timeline",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
