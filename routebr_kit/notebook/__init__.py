"""Notebook plumbing: the papermill pipeline, the outputs folder, display helpers (the ``%%conclusion`` renderer)
and widgets; each notebook states its own conclusion as a template.  A notebook's domain helpers live in their domain
package (notebook 10's review source in :mod:`routebr_kit.review`, notebook 11's suite runs in
:mod:`routebr_kit.adversarial`).

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.notebook import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "display": "ConclusionError decisions_table one_line_rows outcome_figure render_conclusion setup trace_table",
    "outputs": "Outputs Saved figure_anatomy kit_path markdown_table",
    "pipeline": "ArtifactChoice NotebookJob NotebookResult PreparedRun RunPlan choose_artifact "
        "declared_parameters execute listed_outputs prepare run",
    "widgets": "EXECUTOR_SLIDERS Figure1Explorer MetaRouteExplorer PALETTE REVIEW_CSS RuleEditor SessionExplorer "
        "decision_paths_figure parse_topk policy_outcomes_figure review_html",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)


def load_ipython_extension(ipython) -> None:  # noqa: ANN001 - an IPython InteractiveShell
    """``%load_ext routebr_kit.notebook``: registers the ``%%conclusion facts`` cell magic (see
    :func:`.display.render_conclusion`)."""
    from .display import conclusion_magic

    ipython.register_magic_function(conclusion_magic, magic_kind="cell", magic_name="conclusion")
