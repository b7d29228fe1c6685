"""The evaluation layer: metrics, statistics and the paper's table builders — no knowledge of any artifact.

It reads only ledgers (:class:`~routebr_kit.store.ledger.PredictionRow` sequences) and gold cases, so the same code
scores published, replayed, simulated, local and live runs.  Figures live in :mod:`routebr_kit.evaluation.plots`
(imported on demand, it needs matplotlib and seaborn).
"""

from .. import lazy_exports
from .forbidden import DispatchCheck, DispatchGate, ForbiddenCause, dispatches
from .metrics import (
    PAPER_PATH_LABELS,
    Count,
    PairScores,
    Scores,
    calls_of,
    first_pass_valid_of,
    flip_pairs,
    gold_boundary_disagreements,
    index_cases,
    macro_f1,
    score,
    scores_frame,
)
from .stats import Z95, Interval, McNemar, mcnemar, mcnemar_p_published, wilson, wilson_published

#: The table builders need pandas; they load on first use so that scoring alone (``routebr-kit diff``) does not.
_TABLES = dict.fromkeys(("SYSTEM_LABELS", "fmt_count", "fmt_pct", "mcnemar_results", "mcnemar_table", "pair_grid",
                         "rq3_table", "rq12_table", "screening_table"), "tables")
__all__ = [name for name in dir() if not name.startswith("_") and name != "lazy_exports"] + list(_TABLES)
__getattr__, __dir__ = lazy_exports(__name__, _TABLES)
