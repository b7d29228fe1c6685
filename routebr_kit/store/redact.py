"""What the kit writes is redacted of secrets and always encodable — one mechanism for every writer.

Every file the kit writes (receipts ``raw/*.json``, ``predictions.csv``, ``run_manifest.json``, response-cache
entries) goes through :func:`encode_json` or :func:`csv_cell`, and every recorded message (backend failures,
cache-miss errors) through :func:`redact_text`.  Two guarantees:

* **Redaction.**  Every registered secret is replaced by ``[REDACTED]`` wherever it occurs, in keys and values:
  the API key of each OpenAI-compatible backend built in this process (its ``secrets()`` hook), the password of a
  ``user:password@`` base URL, anything passed to :func:`register_secret`, and the value of every environment
  variable named in ``ROUTEBR_KIT_SECRET_ENVS`` (comma-separated names).  Values shorter than
  :data:`MIN_SECRET_CHARS` are not treated as secrets (placeholder keys such as ``EMPTY`` would match ordinary
  text).
* **Encodable.**  Any value becomes strict, valid UTF-8 JSON that the kit's strict reader loads back: a lone
  surrogate (``"\\ud800"``, which a server may send as a JSON escape) is written as the same ``\\udXXX`` escape
  and reads back as the same string; non-finite floats become the strings ``"NaN"``, ``"Infinity"``,
  ``"-Infinity"``; tuples become lists; a key that is not a string is written as its JSON text or ``repr``, any
  other object as its ``repr``; a key that would repeat once written (``1`` beside ``"1"``, two keys holding
  secrets) gets a ``#2``, ``#3`` … suffix, so no file has a duplicate key; a container nested deeper than
  :data:`MAX_DEPTH` (counted from the file's root) is replaced by the string ``"[DEPTH_LIMIT]"``, an integer of
  more than 4096 bits by ``"[INT_LIMIT]"``.  (Two adjacent surrogates that form a pair read back as the one
  character they encode: JSON cannot tell them apart.)  CSV cells, which have no escape syntax, get the six
  characters ``\\udXXX`` in place of a lone surrogate.

Standard library only.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..core.strict_json import MAX_FILE_DEPTH, escape_surrogates

REDACTED = "[REDACTED]"
DEPTH_LIMIT = "[DEPTH_LIMIT]"
INT_LIMIT = "[INT_LIMIT]"
#: Shorter values are never treated as secrets.
_MIN_SECRET_CHARS = 8
#: Containers nested deeper than this are written as :data:`DEPTH_LIMIT`: the strict reader's bound for files
#: (:data:`~routebr_kit.core.strict_json.MAX_FILE_DEPTH`), counted from the file's root, so what is written reads back.
MAX_DEPTH = MAX_FILE_DEPTH
#: Environment variable naming further environment variables whose values are secrets.
SECRET_ENVS = "ROUTEBR_KIT_SECRET_ENVS"

_MAX_INT_BITS = 4096  # well inside the interpreter's int-to-text limit
_NON_FINITE = {math.inf: "Infinity", -math.inf: "-Infinity"}


@dataclass(frozen=True, slots=True)
class Redactor:
    """A fixed set of secrets (longest first, so a secret containing another is replaced whole)."""

    secrets: tuple[str, ...] = ()

    def text(self, value: str) -> str:
        for secret in self.secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value

    def value(self, value: Any, depth: int = 0) -> Any:
        """A JSON-ready, redacted copy of ``value`` at ``depth`` in its file (see the module docstring)."""
        if isinstance(value, str):
            return self.text(value) if self.secrets else value
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, int):
            return value if value.bit_length() <= _MAX_INT_BITS else INT_LIMIT
        if isinstance(value, float):
            if math.isnan(value):
                return "NaN"
            return _NON_FINITE.get(value, value)
        if isinstance(value, (Mapping, list, tuple)):
            if depth >= MAX_DEPTH:
                return DEPTH_LIMIT
            if isinstance(value, Mapping):
                out: dict[str, Any] = {}
                for k, v in value.items():
                    key = self._key(k)
                    if key in out:  # two keys that read the same once written (1 and "1", two redacted keys)
                        key = next(f"{key}#{n}" for n in range(2, len(out) + 3) if f"{key}#{n}" not in out)
                    out[key] = self.value(v, depth + 1)
                return out
            return [self.value(v, depth + 1) for v in value]
        return self.text(repr(value))

    def _key(self, key: Any) -> str:
        if not isinstance(key, str):
            key = json.dumps(key) if key is None or isinstance(key, (bool, int, float)) else repr(key)
        return self.text(key) if self.secrets else key


class SecretRegistry:
    """The process's secrets.  Registering is idempotent and thread-safe; :meth:`redactor` takes a snapshot."""

    def __init__(self) -> None:
        self._values: dict[str, None] = {}
        self._lock = threading.Lock()

    def register(self, *values: Any) -> None:
        with self._lock:
            for value in values:
                if isinstance(value, str) and len(value) >= _MIN_SECRET_CHARS:
                    self._values[value] = None

    def redactor(self) -> Redactor:
        with self._lock:
            found = dict(self._values)
        for name in os.environ.get(SECRET_ENVS, "").split(","):
            value = os.environ.get(name.strip(), "") if name.strip() else ""
            if len(value) >= _MIN_SECRET_CHARS:
                found[value] = None
        return Redactor(tuple(sorted(found, key=lambda s: (-len(s), s))))


#: The one registry every writer consults.
SECRETS = SecretRegistry()


def register_secret(*values: Any) -> None:
    """Treat ``values`` as secrets in everything the kit writes from now on (short or non-string values ignored)."""
    SECRETS.register(*values)


def register_backend_secrets(backend: Any) -> None:
    """Register what a backend's ``secrets()`` hook returns (backends without one have none)."""
    hook = getattr(backend, "secrets", None)
    if callable(hook):
        SECRETS.register(*hook())


def url_secrets(url: str) -> tuple[str, ...]:
    """The password (and user) of a ``scheme://user:password@host`` URL, if it has any."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ()
    return tuple(v for v in (parts.password, parts.username if parts.password else None) if v)


def redact_text(text: str) -> str:
    """``text`` with every registered secret replaced by :data:`REDACTED`."""
    return SECRETS.redactor().text(text)


def redact_value(value: Any) -> Any:
    """A JSON-ready, redacted copy of ``value``."""
    return SECRETS.redactor().value(value)


def encode_json(value: Any, *, indent: int | None = None) -> bytes:
    """``value`` as strict UTF-8 JSON with a final newline, redacted and encodable whatever it holds.

    ``indent=None`` writes compact JSON.  Keys keep their insertion order, non-ASCII stays readable.
    """
    separators = None if indent is not None else (",", ":")
    text = json.dumps(redact_value(value), ensure_ascii=False, allow_nan=False, indent=indent,
                      separators=separators)
    return (escape_surrogates(text) + "\n").encode("utf-8")


def csv_cell(text: str, redactor: Redactor | None = None) -> str:
    """One CSV cell: redacted, lone surrogates as the six characters ``\\udXXX``."""
    return escape_surrogates((redactor or SECRETS.redactor()).text(text))


def csv_cells(values: Mapping[str, str]) -> dict[str, str]:
    redactor = SECRETS.redactor()
    return {k: csv_cell(v, redactor) for k, v in values.items()}


__all__ = ["DEPTH_LIMIT", "INT_LIMIT", "MAX_DEPTH", "REDACTED", "SECRETS", "SECRET_ENVS", "Redactor", "SecretRegistry",
           "csv_cell", "csv_cells", "encode_json", "escape_surrogates", "redact_text", "redact_value",
           "register_backend_secrets", "register_secret", "url_secrets"]
