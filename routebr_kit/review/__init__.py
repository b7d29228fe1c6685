"""Release review (paper §III-D): shadow replay of candidate assets, a paired diff with a CI gate, and exact
change-impact selection — all from recorded proposals, with no model call.

One entry point runs the whole flow: :func:`release_review` (impact → shadow → diff → gate, one :class:`Review`).
The steps stay public for finer use: :mod:`.assets` (release files and edits), :mod:`.ledgers` (ledger sets),
:mod:`.impact`, :mod:`.shadow`, :mod:`.diff` and :mod:`.gate`.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "assets": "AssetEdit AssetFiles EditClass compare_assets prompts_with_line registry_without rules_csv "
        "write_release",
    "calibration": "calibrate_gates calibration_facts",
    "change_impact": "AffectedRow Cost ImpactReport PAPER_SLICES artifact_asset_files impact",
    "contrast": "ForbiddenContrast OLD_GATE contrast_facts forbidden_dispatch_contrast",
    "diff": "ChangeClass ChangeStage ChangedRow DiffReport NotComparable diff_ledgers markdown split_table",
    "gate": "Criterion CriterionResult DEFAULT_GATE Gate GateResult METRICS RERUN_GATE default_gate",
    "ledgers": "LedgerSet LedgerTask RowDetail load_ledgers load_many",
    "release": "CHANGED_COLUMNS Review ReviewSource SummaryRow candidate_edit case_summary diff_sentence "
        "edit_lines first_match_order impact_lines load_review_source release_files release_review review_source "
        "text_table transitions",
    "sessions": "review_candidates review_facts",
    "shadow": "ShadowFlag ShadowResult ShadowRow ShadowTask parse_options shadow_ledgers shadow_replay trace_pair "
        "write_shadow",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
