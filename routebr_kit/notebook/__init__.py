"""Notebook plumbing: the papermill pipeline, the outputs folder, display helpers, the closing sections'
conclusions (:mod:`.conclusions`), notebook 10's review source and notebook 11's suite runs.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.notebook import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it.
_EXPORTS: dict[str, str] = {
    "adaptive_attacks": "attacks",
    "suite_runs": "attacks",
    "ForbiddenContrast": "contrast",
    "calibrate_gates": "calibration_runs",
    "forbidden_dispatch_contrast": "contrast",
    "Conclusion": "conclusions",
    "Facts": "conclusions",
    "adversarial": "conclusions",
    "dataset": "conclusions",
    "forbidden_contrast": "conclusions",
    "gate_calibration": "conclusions",
    "live_small_model": "conclusions",
    "pass_k": "conclusions",
    "release_review": "conclusions",
    "rq2": "conclusions",
    "screening": "conclusions",
    "security": "conclusions",
    "ConclusionError": "display",
    "decisions_table": "display",
    "render_conclusion": "display",
    "outcome_figure": "display",
    "setup": "display",
    "trace_table": "display",
    "Outputs": "outputs",
    "Saved": "outputs",
    "figure_anatomy": "outputs",
    "markdown_table": "outputs",
    "ArtifactChoice": "pipeline",
    "NotebookJob": "pipeline",
    "NotebookResult": "pipeline",
    "PreparedRun": "pipeline",
    "RunPlan": "pipeline",
    "choose_artifact": "pipeline",
    "declared_parameters": "pipeline",
    "execute": "pipeline",
    "listed_outputs": "pipeline",
    "prepare": "pipeline",
    "run": "pipeline",
    "first_match_order": "review_traffic",
    "release_files": "review_traffic",
    "review_source": "review_traffic",
    "transitions": "review_traffic",
    "ReviewOutcome": "review_widget",
    "RuleEditor": "review_widget",
    "summary_frame": "review_widget",
    "trace_pair": "review_widget",
    "EXECUTOR_SLIDERS": "widgets",
    "Figure1Explorer": "widgets",
    "MetaRouteExplorer": "widgets",
    "PALETTE": "widgets",
    "decision_paths_figure": "widgets",
    "parse_topk": "widgets",
    "policy_outcomes_figure": "widgets",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - an IPython InteractiveShell
    """``%load_ext routebr_kit.notebook``: registers the ``%%conclusion facts`` cell magic (see
    :func:`.display.render_conclusion`)."""
    from .display import conclusion_magic

    ipython.register_magic_function(conclusion_magic, magic_kind="cell", magic_name="conclusion")
