"""Notebook plumbing: the papermill pipeline, the outputs folder, display helpers (the
``%%conclusion`` renderer) and widgets; each notebook states its own conclusion as a template.  A notebook's domain
helpers live in their domain package (notebook
10's review source in :mod:`routebr_kit.review`, notebook 11's suite runs in :mod:`routebr_kit.adversarial`).

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.notebook import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it.
_EXPORTS: dict[str, str] = {
    "ConclusionError": "display",
    "decisions_table": "display",
    "one_line_rows": "display",
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
    "EXECUTOR_SLIDERS": "widgets",
    "Figure1Explorer": "widgets",
    "MetaRouteExplorer": "widgets",
    "PALETTE": "widgets",
    "REVIEW_CSS": "widgets",
    "RuleEditor": "widgets",
    "decision_paths_figure": "widgets",
    "parse_topk": "widgets",
    "policy_outcomes_figure": "widgets",
    "review_html": "widgets",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - an IPython InteractiveShell
    """``%load_ext routebr_kit.notebook``: registers the ``%%conclusion facts`` cell magic (see
    :func:`.display.render_conclusion`)."""
    from .display import conclusion_magic

    ipython.register_magic_function(conclusion_magic, magic_kind="cell", magic_name="conclusion")
