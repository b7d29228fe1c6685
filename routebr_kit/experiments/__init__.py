"""The paper"s experiments: sources, backend screening (RQ4), the CONFIRM study (RQ1-RQ3), ablations, replication.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.experiments import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it (a function named like its module, such as
#: ``seed_spread``, stays in its module: the package attribute of that name is the module).
_EXPORTS: dict[str, str] = {
    "Promotion": "ablations",
    "boundary_mcnemar": "ablations",
    "prevented_promotions": "ablations",
    "promote_lower_ranked": "ablations",
    "replay_decisions": "ablations",
    "replay_variants": "ablations",
    "AuditedDecision": "guarantee",
    "DispatchAudit": "guarantee",
    "FalseDispatch": "guarantee",
    "SearchResult": "guarantee",
    "audit_dispatches": "guarantee",
    "search_false_dispatch": "guarantee",
    "study_audit": "guarantee",
    "KIT_PHASE": "kit_replay",
    "KitReplay": "kit_replay",
    "kit_replay_report": "kit_replay",
    "Check": "published",
    "PublishedComparison": "published",
    "PublishedResults": "published",
    "ResultsAudit": "published",
    "Scorecard": "published",
    "audit_results": "published",
    "parse_results_markdown": "published",
    "read_published": "published",
    "scorecard": "published",
    "side_by_side": "published",
    "Disagreement": "replication",
    "LedgerOrigin": "replication",
    "PaperRuns": "replication",
    "PaperTables": "replication",
    "ReplayReport": "replication",
    "TaskReplay": "replication",
    "artifact_ledgers": "replication",
    "compare_task": "replication",
    "build_tables": "replication",
    "paper_runs": "replication",
    "paper_tables": "replication",
    "replay_artifact": "replication",
    "replay_story": "replication",
    "replay_task": "replication",
    "COUNT_TOLERANCE": "screening",
    "PATH_TOLERANCE_POINTS": "screening",
    "Screening": "screening",
    "ScreeningConfig": "screening",
    "compare_with_published": "screening",
    "held_out_table": "screening",
    "label": "screening",
    "missing_api_keys": "screening",
    "published_runs": "screening",
    "run_backend": "screening",
    "run_screening": "screening",
    "screening_cases": "screening",
    "screening_figure": "screening",
    "seed_scores": "screening",
    "seed_sweep": "screening",
    "simulated_rows": "screening",
    "SeedSpread": "seed_spread",
    "rq1_cell": "seed_spread",
    "screen_cell": "seed_spread",
    "spread_cells": "seed_spread",
    "HOW_TO_GET": "sources",
    "ResolvedSource": "sources",
    "Source": "sources",
    "parse_source": "sources",
    "resolve_source": "sources",
    "Study": "study",
    "StudyConfig": "study",
    "load_study": "study",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
