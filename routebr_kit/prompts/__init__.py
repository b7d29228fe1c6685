"""Versioned prompt texts, one data file per language: ``routebr-prompts-v<version>.<language>.json``.

Each file holds the four stage instructions of the paper's §6 structure (``ROUTEBR``, ``B1_DIRECT``,
``B2_DIRECT_GUARD``, ``REPAIR``) as lists of lines, the output schema of each answering stage, and the line that
restates the target schema to the repair model.  ``{output_schema}`` in a text is replaced by the stage's schema.
These are the texts of the ``kit`` request protocol; the ``published`` protocol's texts are read from the published
artifact's ``experiments/prompts.json`` at run time (:mod:`routebr_kit.prompts.published`).
Standard library only.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "..store.cases": "Language",
    "kit": "ANSWERING_STAGES PROMPT_KEYS PromptSet detect_language load_prompts prompt_path",
    "published": "Protocol PublishedPrompts load_published_prompts",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
