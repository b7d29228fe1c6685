"""Single-file HTML reports: scorecards, figures, a trace explorer and the paired diff, for any folder of runs.

``load_source`` reads a run folder, a shadow output, a published-artifact result folder or a ``reproduce`` output
through the kit's readers; ``build_report`` turns it (and an optional base for the diff) into data;
``write_report`` does both and writes one self-contained HTML file (no network: scripts, styles, figures and data
are embedded).  Only :mod:`routebr_kit.cli` and the notebook pipeline import this package.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "html": "render script_json write_html",
    "model": "build_report unpack",
    "sources": "load_source",
    "traces": "task_traces",
    "write": "write_report",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
