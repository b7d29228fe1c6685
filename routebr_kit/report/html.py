"""One self-contained HTML file: a Jinja2 template, a hand-written script and stylesheet, the data and the figures.

Nothing is fetched when the page opens: the script, the styles, the data (JSON) and the figures (PNG data URIs) are
inside the file, and a Content-Security-Policy forbids every network request (``default-src 'none'``).  Data goes
into ``<script type="application/json">`` elements through :func:`script_json`, which escapes ``<``, ``>``, ``&``
and the two JavaScript line separators, so no text in a case (``</script>``, ``<!--``) can end the element early;
every other value reaches the page through Jinja2's autoescaping or the script's ``textContent``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.files import read_bytes
from .model import ReportData
from .sources import FigureFile
from .urls import check_urls, safe_href

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


#: The largest figure a report embeds (bytes); a bigger one is a located ``LIMIT_EXCEEDED``, never a huge page.
MAX_FIGURE_BYTES = 16 * 2**20
#: The most bytes of figures one report embeds in all.
_MAX_FIGURES_BYTES = 128 * 2**20
_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _figure_bytes(path: Path, root: Path, *, max_bytes: int = MAX_FIGURE_BYTES) -> bytes:
    """The bytes of a figure the report may embed: a regular PNG file inside ``root`` (its real path, links
    followed, lies under ``root``'s real path), at most ``max_bytes``.  A FIFO, device or dangling link is
    ``WRONG_TYPE``; a link (or a ``..`` path) out of the folder ``UNKNOWN_REFERENCE``; anything else a located
    error from the strict reader — the figure is never opened before these checks, so nothing blocks."""
    real, inside = os.path.realpath(path), os.path.realpath(root)
    if os.path.commonpath([real, inside]) != inside:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a figure inside the report's folder (a link or path leading "
                        "out of it is never embedded)", file=str(path), got=real)
    data = read_bytes(path, "a figure (a regular PNG file)", max_bytes=max_bytes)
    if not data.startswith(_PNG_MAGIC):
        raise DataError(ErrorCode.WRONG_TYPE, "a figure in PNG format", file=str(path), got=data[:8])
    return data


def figure_views(figures: Sequence[FigureFile], root: Path) -> list[dict[str, Any]]:
    """Each figure as a data URI with its caption (and the notebook that made it); see :func:`figure_bytes`."""
    out = []
    total = 0
    for f in figures:
        raw = _figure_bytes(f.path, root, max_bytes=MAX_FIGURE_BYTES)
        total += len(raw)
        if total > _MAX_FIGURES_BYTES:
            raise DataError(ErrorCode.LIMIT_EXCEEDED, f"at most {_MAX_FIGURES_BYTES:,} bytes of figures in one report",
                            file=str(f.path), got=f"{total:,} bytes so far")
        data = base64.b64encode(raw).decode("ascii")
        rel = f.path.relative_to(root).as_posix() if f.path.is_relative_to(root) else f.path.name
        out.append({"caption": f.caption, "notebook": f.notebook, "file": rel, "src": f"data:image/png;base64,{data}"})
    return out


def _content_security_policy(script: str) -> str:
    """The page's policy: nothing fetched, images only as data URIs, and only the report's own script runs —
    allowed by its SHA-256, so no ``'unsafe-inline'``: a ``javascript:`` URL, an inline event handler or an
    injected ``<script>`` is refused by the browser even if one reached the page."""
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return (f"default-src 'none'; img-src data:; style-src 'unsafe-inline'; script-src 'sha256-{digest}'; "
            "base-uri 'none'; form-action 'none'")


def render(data: ReportData) -> str:
    """The HTML text of a report."""
    template = _environment().get_template("report.html.j2")
    script = _asset("report.js")
    text = template.render(
        header=data.header, scorecard=data.scorecard, diff=data.diff, figures=data.figures,
        notebooks=data.notebooks, rows=data.rows, style=_asset("report.css"), script=script,
        csp=_markup(_content_security_policy(script)), href=safe_href,
        data_json=_markup(script_json(data.plain())), chunks_json=_markup(script_json(list(data.chunks))),
        base_chunks_json=_markup(script_json(list(data.base_chunks))),
        cases_json=_markup(script_json(data.case_chunk)), pct=_pct, count=_count_text)
    check_urls(text)
    return text


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


__all__ = ["MAX_FIGURE_BYTES", "figure_views", "render", "script_json", "write_html", "written_time"]
