"""Where notebooks put what they show: tables (CSV + Markdown) and figures (PNG + PDF) with captions.

Every notebook builds one :class:`Outputs` from its ``out_dir`` parameter and saves through it, so the
pipeline can index every table and figure of a run (``captions.json``) in ``outputs/<run_id>/README.md``.
Files are written deterministically: no timestamps in PDF/PNG metadata, fixed float formatting in tables.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..store.files import read_json
from ..store.kitfiles import source_checkout

CAPTIONS = "captions.json"


def notebook_cwd() -> Path:
    """The notebooks' working directory (and the base of relative paths): ``notebooks/`` in a checkout, the current
    directory for an installed wheel (the package folder is never written to)."""
    checkout = source_checkout()
    return checkout / "notebooks" if checkout is not None else Path.cwd()


def kit_path(value: str | Path | None, *, empty: str | Path = "") -> str:
    """A path parameter of a notebook, resolved the same from any working directory.

    A relative path is relative to the kit's ``notebooks/`` folder — where JupyterLab runs the notebook — so
    ``papermill notebooks/00_quickstart.ipynb out.ipynb`` from the repository root (or from anywhere) reads and writes
    the same files as Lab does.  From an installed wheel (no checkout) it is relative to the current directory.  An
    absolute path is kept; an empty value gives ``empty`` (the notebook's "discover" or "the kit's own" default).
    """
    if value is None or str(value) == "":
        return str(empty)
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else Path(os.path.normpath(notebook_cwd() / path)))


@dataclass(frozen=True)
class Saved:
    kind: str  # "table" | "figure"
    name: str
    caption: str
    files: tuple[str, ...]  # relative to out_dir
    anatomy: dict[str, Any] | None = None  # figures: what a reader sees (see figure_anatomy)


def _hex(colour: Any) -> str | None:
    from matplotlib.colors import to_hex, to_rgba

    rgba = to_rgba(colour)
    return None if rgba[3] == 0 else to_hex(rgba[:3])


def figure_anatomy(fig: Any) -> dict[str, Any]:
    """Titles, axis labels, tick labels, legend entries and the colours of bars, lines and markers of a matplotlib
    figure — recorded beside each saved figure so tests can check what a reader sees without parsing a PNG."""
    from matplotlib.collections import PathCollection
    from matplotlib.patches import Rectangle

    fig.canvas.draw()  # tick labels are only filled in when the figure is drawn
    axes = []
    for ax in fig.get_axes():
        if not ax.get_visible() or not ax.axison:
            continue
        colours = {_hex(p.get_facecolor()) for p in ax.patches
                   if not isinstance(p, Rectangle) or p.get_width() or p.get_height()}
        colours |= {_hex(line.get_color()) for line in ax.get_lines() if len(line.get_xdata()) > 1}
        for coll in ax.collections:
            if isinstance(coll, PathCollection):
                colours |= {_hex(c) for c in coll.get_facecolors()}
        legend = ax.get_legend()
        axes.append({"title": ax.get_title(), "xlabel": ax.get_xlabel(), "ylabel": ax.get_ylabel(),
                     "xticklabels": [t.get_text() for t in ax.get_xticklabels() if t.get_visible()],
                     "yticklabels": [t.get_text() for t in ax.get_yticklabels() if t.get_visible()],
                     "legend": [t.get_text() for t in legend.get_texts()] if legend else [],
                     "xticks": len(ax.get_xticks()), "yticks": len(ax.get_yticks()),
                     "images": len(ax.images), "colours": sorted(c for c in colours if c)})
    legends = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
    suptitle = fig._suptitle.get_text() if getattr(fig, "_suptitle", None) is not None else ""
    return {"suptitle": suptitle, "legend": legends, "axes": axes}


class Outputs:
    """Writes ``out_dir/tables/<name>.{csv,md}`` and ``out_dir/figures/<name>.{png,pdf}``, recording captions."""

    def __init__(self, out_dir: str | Path, notebook: str = "") -> None:
        self.root = Path(out_dir)
        self.notebook = notebook
        self.root.mkdir(parents=True, exist_ok=True)

    def table(self, frame: Any, name: str, caption: str, *, float_format: str = "%.4f", index: bool = False) -> Path:
        """Save a DataFrame as CSV (full precision as formatted) and Markdown; returns the CSV path."""
        csv_path = self._folder("tables") / f"{name}.csv"
        md_path = csv_path.with_suffix(".md")
        frame.to_csv(csv_path, index=index, float_format=float_format, lineterminator="\n")
        md_path.write_text(f"**{caption}**\n\n" + markdown_table(frame, index=index) + "\n", encoding="utf-8")
        self._record(Saved("table", name, caption, (f"tables/{name}.csv", f"tables/{name}.md")))
        return csv_path

    def figure(self, fig: Any, name: str, caption: str, *, dpi: int = 120) -> Path:
        """Save a matplotlib figure as PNG and PDF (no timestamps); returns the PNG path."""
        png = self._folder("figures") / f"{name}.png"
        pdf = png.with_suffix(".pdf")
        fig.savefig(png, dpi=dpi, bbox_inches="tight", metadata={"Software": None})
        fig.savefig(pdf, bbox_inches="tight", metadata={"CreationDate": None, "Creator": None, "Producer": None})
        self._record(Saved("figure", name, caption, (f"figures/{name}.png", f"figures/{name}.pdf"),
                           figure_anatomy(fig)))
        return png

    def json(self, value: Any, name: str, caption: str) -> Path:
        path = self._folder("tables") / f"{name}.json"
        path.write_text(json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False) + "\n", encoding="utf-8")
        self._record(Saved("table", name, caption, (f"tables/{name}.json",)))
        return path

    def _folder(self, name: str) -> Path:
        folder = self.root / name
        folder.mkdir(exist_ok=True)
        return folder

    def _record(self, saved: Saved) -> None:
        path = self.root / CAPTIONS
        entries = read_json(path, "a captions file", kind=list) if path.exists() else []
        entries = [e for e in entries if not (e["kind"] == saved.kind and e["name"] == saved.name)]
        entries.append({"kind": saved.kind, "name": saved.name, "caption": saved.caption,
                        "files": list(saved.files), "notebook": self.notebook,
                        **({"anatomy": saved.anatomy} if saved.anatomy is not None else {})})
        path.write_text(json.dumps(entries, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def markdown_table(frame: Any, *, index: bool = False, float_digits: int = 4) -> str:
    """A GitHub-flavoured Markdown table without the optional ``tabulate`` dependency."""
    frame = frame.reset_index() if index else frame
    columns = [str(c) for c in frame.columns]

    def cell(value: Any) -> str:
        if isinstance(value, float):
            text = f"{value:.{float_digits}f}".rstrip("0").rstrip(".") if value == value else ""
        else:
            text = "" if value is None else str(value)
        return text.replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join("---" for _ in columns) + "|"]
    for row in frame.itertuples(index=False, name=None):
        lines.append("| " + " | ".join(cell(v) for v in row) + " |")
    return "\n".join(lines)
