"""Single-file HTML reports: scorecards, figures, a trace explorer and the paired diff, for any folder of runs.

``load_source`` reads a run folder, a shadow output, a published-artifact result folder or a ``reproduce`` output
through the kit's readers; ``build_report`` turns it (and an optional base for the diff) into data;
``write_report`` does both and writes one self-contained HTML file (no network: scripts, styles, figures and data
are embedded).  Only :mod:`routebr_kit.cli` and the notebook pipeline import this package.
"""

from .html import figure_views, render, script_json, write_html, written_time
from .model import ReportData, build_report, pack, unpack
from .sources import Producer, ReportSource, SourceKind, load_source
from .traces import RowTrace, TraceSource, task_traces
from .write import write_report

__all__ = ["Producer", "ReportData", "ReportSource", "RowTrace", "SourceKind", "TraceSource", "build_report",
           "figure_views", "load_source", "pack", "render", "script_json", "task_traces", "unpack",
           "write_html", "write_report", "written_time"]
