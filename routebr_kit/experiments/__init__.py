"""The paper"s experiments: sources, backend screening (RQ4), the CONFIRM study (RQ1-RQ3), ablations, replication.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.experiments import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "ablations": "Promotion boundary_mcnemar prevented_promotions promote_lower_ranked replay_decisions "
        "replay_variants",
    "guarantee": "AuditedDecision DispatchAudit FalseDispatch SearchResult audit_dispatches search_false_dispatch "
        "study_audit",
    "kit_replay": "KIT_PHASE KitReplay kit_replay_report",
    "published": "Check PublishedComparison PublishedResults ResultsAudit Scorecard audit_results "
        "parse_results_markdown read_published scorecard side_by_side",
    "replication": "Disagreement LedgerOrigin PaperRuns PaperTables ReplayReport TaskReplay artifact_ledgers "
        "build_tables compare_task paper_runs paper_tables replay_artifact replay_story replay_task",
    "screening": "COUNT_TOLERANCE PATH_TOLERANCE_POINTS Screening ScreeningConfig compare_with_published "
        "held_out_table label published_runs run_backend run_screening screening_cases screening_figure "
        "seed_scores seed_sweep simulated_rows",
    "seed_spread": "SeedSpread rq1_cell screen_cell spread_cells",
    "sources": "HOW_TO_GET ResolvedSource Source kit_benchmark_file parse_source published_prompts resolve_source",
    "study": "Study StudyConfig load_study",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
