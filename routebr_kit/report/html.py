"""One self-contained HTML file: a Jinja2 template, a hand-written script and stylesheet, the data and the figures.

Nothing is fetched when the page opens: the script, the styles, the data (JSON) and the figures (PNG data URIs) are
inside the file, and a Content-Security-Policy forbids every network request (``default-src 'none'``).  Data goes
into ``<script type="application/json">`` elements through :func:`script_json`, which escapes ``<``, ``>``, ``&``
and the two JavaScript line separators, so no text in a case (``</script>``, ``<!--``) can end the element early;
every other value reaches the page through Jinja2's autoescaping or the script's ``textContent``.
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from .model import ReportData
from .sources import FigureFile

_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def script_json(value: Any) -> str:
    """JSON safe inside a ``<script>`` element (and still JSON: ``JSON.parse`` gives ``value`` back)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    for char, escaped in _ESCAPES.items():
        text = text.replace(char, escaped)
    return text


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("templates", name).read_text(encoding="utf-8")


@cache
def _environment() -> Any:
    import jinja2

    return jinja2.Environment(loader=jinja2.FunctionLoader(lambda name: _asset(name)), autoescape=True,
                              undefined=jinja2.StrictUndefined, keep_trailing_newline=True)


def written_time() -> str:
    """Now in UTC, or ``$SOURCE_DATE_EPOCH`` when set (reproducible builds: same inputs, byte-identical file)."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    if epoch:
        try:
            moment = datetime.fromtimestamp(int(epoch), UTC)
        except (ValueError, OverflowError, OSError):
            raise DataError(ErrorCode.INVALID_INTEGER, "seconds since 1970 (an integer)", got=epoch,
                            field="$SOURCE_DATE_EPOCH") from None
    else:
        moment = datetime.now(UTC)
    return moment.isoformat(timespec="seconds")


def figure_views(figures: Sequence[FigureFile], root: Path) -> list[dict[str, Any]]:
    """Each figure as a data URI with its caption (and the notebook that made it)."""
    out = []
    for f in figures:
        data = base64.b64encode(f.path.read_bytes()).decode("ascii")
        rel = f.path.relative_to(root).as_posix() if f.path.is_relative_to(root) else f.path.name
        out.append({"caption": f.caption, "notebook": f.notebook, "file": rel, "src": f"data:image/png;base64,{data}"})
    return out


def render(data: ReportData) -> str:
    """The HTML text of a report."""
    template = _environment().get_template("report.html.j2")
    return template.render(
        header=data.header, scorecard=data.scorecard, diff=data.diff, figures=data.figures,
        notebooks=data.notebooks, rows=data.rows, style=_asset("report.css"), script=_asset("report.js"),
        data_json=_markup(script_json(data.plain())), chunks_json=_markup(script_json(list(data.chunks))),
        base_chunks_json=_markup(script_json(list(data.base_chunks))),
        cases_json=_markup(script_json(data.case_chunk)), pct=_pct, count=_count_text)


def _markup(text: str) -> Any:
    from markupsafe import Markup

    return Markup(text)  # noqa: S704 - script_json escaped every character that could close the element


def _pct(c: Mapping[str, Any] | None) -> str:
    if not c or not c.get("n"):
        return "–"
    return f"{100 * c['rate']:.1f}%"


def _count_text(c: Mapping[str, Any] | None, wilson: bool = False) -> str:
    if not c:
        return "–"
    text = f"{c['hits']}/{c['n']}"
    if wilson and c.get("n"):
        text += f" ({100 * c['rate']:.1f}% [{100 * c['low']:.1f}, {100 * c['high']:.1f}])"
    return text


def write_html(data: ReportData, out: str | Path) -> Path:
    """Write the report to ``out`` (UTF-8); returns the path."""
    path = Path(out)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = render(data)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


__all__ = ["figure_views", "render", "script_json", "write_html", "written_time"]
