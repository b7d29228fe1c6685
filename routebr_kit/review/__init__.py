"""Release review (paper §III-D): shadow replay of candidate assets, a paired diff with a CI gate, and exact
change-impact selection — all from recorded proposals, with no model call.

One entry point runs the whole flow: :func:`release_review` (impact → shadow → diff → gate, one :class:`Review`).
The steps stay public for finer use: :mod:`.assets` (release files and edits), :mod:`.ledgers` (ledger sets),
:mod:`.impact`, :mod:`.shadow`, :mod:`.diff` and :mod:`.gate`.
"""

from .assets import (
    AssetEdit,
    AssetFiles,
    EditClass,
    compare_assets,
    prompts_with_line,
    registry_without,
    rules_csv,
    write_release,
)
from .contrast import OLD_GATE, ForbiddenContrast, forbidden_dispatch_contrast
from .diff import ChangeClass, ChangedRow, ChangeStage, DiffReport, NotComparable, diff_ledgers, markdown, split_table
from .gate import DEFAULT_GATE, METRICS, Criterion, CriterionResult, Gate, GateResult
from .impact import PAPER_SLICES, AffectedRow, Cost, ImpactReport, artifact_asset_files, impact
from .ledgers import LedgerSet, LedgerTask, RowDetail, load_ledgers, load_many
from .release import (
    CHANGED_COLUMNS,
    Review,
    ReviewSource,
    SummaryRow,
    candidate_edit,
    case_summary,
    diff_sentence,
    edit_lines,
    first_match_order,
    impact_lines,
    load_review_source,
    release_files,
    release_review,
    review_source,
    text_table,
    transitions,
)
from .shadow import (
    ShadowFlag,
    ShadowResult,
    ShadowRow,
    ShadowTask,
    parse_options,
    shadow_ledgers,
    shadow_replay,
    write_shadow,
)

__all__ = ["CHANGED_COLUMNS", "DEFAULT_GATE", "METRICS", "OLD_GATE", "PAPER_SLICES", "AffectedRow", "AssetEdit",
           "AssetFiles", "ChangeClass", "ChangeStage", "ChangedRow", "Cost", "Criterion", "CriterionResult",
           "DiffReport", "EditClass", "ForbiddenContrast", "Gate", "GateResult", "ImpactReport", "LedgerSet",
           "LedgerTask", "NotComparable", "Review", "ReviewSource", "RowDetail", "ShadowFlag", "ShadowResult",
           "ShadowRow", "ShadowTask", "SummaryRow", "artifact_asset_files", "candidate_edit", "case_summary",
           "compare_assets", "diff_ledgers", "diff_sentence", "edit_lines", "first_match_order",
           "forbidden_dispatch_contrast", "impact", "impact_lines", "load_ledgers", "load_many", "load_review_source",
           "markdown", "parse_options", "prompts_with_line", "registry_without", "release_files", "release_review",
           "review_source", "rules_csv", "shadow_ledgers", "shadow_replay", "split_table", "text_table",
           "transitions", "write_release", "write_shadow"]
