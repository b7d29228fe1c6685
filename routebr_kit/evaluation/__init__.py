"""The evaluation layer: metrics, statistics and the paper's table builders — no knowledge of any artifact.

It reads only ledgers (:class:`~routebr_kit.store.ledger.PredictionRow` sequences) and gold cases, so the same code
scores published, replayed, simulated, local and live runs.  Figures live in :mod:`routebr_kit.evaluation.plots`
(imported on demand, it needs matplotlib and seaborn).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "floor": "trivial_floor",
    "metrics": "PAPER_PATH_LABELS flip_pairs index_cases macro_f1 score scores_frame",
    "pass_k": "reliability",
    "plots": "difficulty_figure fd_fb_figure pair_grid_figure screening_figure seed_spread_figure",
    "stats": "Z95 mcnemar mcnemar_p_published wilson wilson_published",
    "tables": "SYSTEM_LABELS mcnemar_table pair_grid parse_count rq12_table rq3_table screening_table",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
