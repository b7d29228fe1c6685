"""The paper"s experiments: sources, backend screening (RQ4), the CONFIRM study (RQ1-RQ3), ablations, replication.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.experiments import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "ablations": "boundary_mcnemar offline_agreement prevented_promotions replay_variants",
    "guarantee": "false_dispatch_examples search_false_dispatch study_audit",
    "kit_replay": "kit_replay_report",
    "published": "audit_results read_published scorecard side_by_side",
    "replication": "INDEPENDENT LedgerOrigin REBUILT artifact_ledgers paper_runs paper_tables replay_artifact "
        "replay_story",
    "screening": "COUNT_TOLERANCE PATH_TOLERANCE_POINTS ScreeningConfig compare_with_published held_out_table "
        "published_runs run_screening screening_cases screening_figure seed_scores seed_sweep simulated_rows",
    "session_grid": "composite_scores grid_facts open_learned run_benchmarks score_grid",
    "sources": "HOW_TO_GET Source resolve_source",
    "study": "StudyConfig load_study",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
