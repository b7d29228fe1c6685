"""The only URLs a report writes, and the check that it wrote no other.

A report is opened from disk by whoever receives it, so nothing a folder holds (a notebook name in a manifest, a
caption, a file name) may become a link the reader can follow somewhere else or a ``javascript:`` URL.  Every
``href`` the template writes goes through :func:`safe_href`; every ``src`` is an embedded PNG; and
:func:`check_urls` reads the finished page back and refuses it if any ``href``/``src``/``action`` (or any other
URL-bearing attribute) is outside this allow-list:

* ``#`` anchors made of letters, digits, ``-`` and ``_``;
* relative paths inside the report's folder: ``/``-separated segments of letters, digits, ``.``, ``-``, ``_``,
  none of them ``.`` or ``..``, none starting with a dot (so no scheme, no ``//host``, no ``..``, no escapes);
* ``data:image/png;base64,…`` for ``<img src>``.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

from ..core.errors import DataError, ErrorCode

_ANCHOR = re.compile(r"#[A-Za-z0-9_-]{1,200}")
_SEGMENT = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/]*={0,2}")
#: attributes that carry a URL a browser may fetch or navigate to
_URL_ATTRIBUTES = frozenset({"href", "src", "action", "formaction", "srcset", "poster", "data", "background",
                            "cite", "longdesc", "manifest", "ping", "xlink:href"})


def safe_href(value: object) -> str | None:
    """``value`` when it is an allowed link (an anchor or a relative path inside the folder), else ``None``."""
    if not isinstance(value, str):
        return None
    if _ANCHOR.fullmatch(value):
        return value
    parts = value.split("/")
    if len(parts) <= 16 and all(_SEGMENT.fullmatch(p) for p in parts):
        return value
    return None


def anchor_id(prefix: str, name: str, index: int) -> str:
    """An element ID (and so a ``#`` target): ``prefix-name`` when the name is plain letters, digits, ``-`` and
    ``_``, else ``prefix-index`` (never other text from the data)."""
    candidate = f"{prefix}-{name}"
    return candidate if _ANCHOR.fullmatch("#" + candidate) else f"{prefix}-{index}"


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.bad: list[tuple[str, str, str]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if name.lower() not in _URL_ATTRIBUTES:
                continue
            text = value or ""
            allowed = (_PNG.fullmatch(text) is not None) if (tag, name) == ("img", "src") else \
                (safe_href(text) is not None and name == "href")
            if not allowed:
                self.bad.append((tag, name, text[:80]))

    handle_startendtag = handle_starttag


def check_urls(html: str) -> None:
    """Refuse a page holding any URL outside the allow-list (a bug in the report, never shipped)."""
    audit = _Audit()
    audit.feed(html)
    audit.close()
    if audit.bad:
        tag, name, value = audit.bad[0]
        raise DataError(ErrorCode.INVALID_VALUE, "only anchors, relative paths inside the folder and embedded PNGs "
                        "as URLs in the report", field=f"<{tag} {name}>", got=value)


__all__ = ["anchor_id", "check_urls", "safe_href"]
