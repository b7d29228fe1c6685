"""Strict JSON: what the kit accepts from files and from model replies.

Python's ``json`` is lenient in three ways that matter to a fail-closed router, and this module closes each one:

* ``NaN``, ``Infinity`` and ``-Infinity`` (and numbers that overflow to infinity, such as ``1e999``) are not JSON;
  they are rejected (:attr:`JsonIssue.NON_FINITE`) instead of loading as floats that compare unequal to everything;
* a key repeated within one object is rejected (:attr:`JsonIssue.DUPLICATE_KEY`) instead of the last value
  silently winning;
* nesting deeper than a bound is rejected (:attr:`JsonIssue.TOO_DEEP`) instead of raising ``RecursionError``
  (a scalar has depth 0, ``[]`` and ``{}`` depth 1, ``{"topk": ["A1"]}`` depth 2).

And one rule for what the kit writes: a lone surrogate (``"\\ud800"``, which strict JSON text may carry as an escape)
cannot be encoded as UTF-8, so :func:`escape_surrogates` replaces each one with the six characters ``\\udXXX`` — the
file writer (:mod:`routebr_kit.store.redact`) on JSON text, where they are the same escape again, and the records
(:func:`encodable`: ``Decision.as_dict()``, ``Decision.trace()``) on every string they hold.

Standard library only.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Mapping
from typing import Any

#: Default nesting bound of :func:`strict_loads` for files (model replies use the contract's tighter bound).
MAX_FILE_DEPTH = 64


class JsonIssue(str, enum.Enum):
    SYNTAX = "SYNTAX"
    NON_FINITE = "NON_FINITE"
    DUPLICATE_KEY = "DUPLICATE_KEY"
    TOO_DEEP = "TOO_DEEP"


class StrictJsonError(ValueError):
    """Why a text is not strict JSON.  ``key`` names the repeated key for ``DUPLICATE_KEY``."""

    def __init__(self, issue: JsonIssue, detail: str, key: str | None = None) -> None:
        self.issue, self.detail, self.key = issue, detail, key
        super().__init__(detail)


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise StrictJsonError(JsonIssue.DUPLICATE_KEY, f"duplicate key {key!r} in one JSON object", key)
            seen.add(key)
    return out


def _constant(name: str) -> Any:
    raise StrictJsonError(JsonIssue.NON_FINITE, f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise StrictJsonError(JsonIssue.NON_FINITE, f"{text[:40]} overflows to infinity")
    return value


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)


def strict_loads(text: str, *, max_depth: int = MAX_FILE_DEPTH) -> Any:
    """Parse ``text`` as strict JSON (see the module docstring); raises :class:`StrictJsonError`, nothing else."""
    try:
        value = _DECODER.decode(text)
    except StrictJsonError:
        raise
    except RecursionError:
        raise StrictJsonError(JsonIssue.TOO_DEEP, f"nesting deeper than {max_depth}") from None
    except ValueError as exc:  # JSONDecodeError, and int() refusing more than 4300 digits
        raise StrictJsonError(JsonIssue.SYNTAX, str(exc)[:160]) from None
    # Depth can exceed the bound only if the text holds more than max_depth brackets: count them in C first.
    if text.count("[") + text.count("{") > max_depth and exceeds_depth(value, max_depth):
        raise StrictJsonError(JsonIssue.TOO_DEEP, f"nesting deeper than {max_depth}")
    return value


def exceeds_depth(value: Any, limit: int) -> bool:
    """Whether a parsed value (mappings, lists, tuples) nests deeper than ``limit``.  Iterative; cycles count as
    infinitely deep, so a self-containing structure exceeds every limit instead of looping."""
    stack = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        depth += 1
        if depth > limit:
            return True
        stack.extend((child, depth) for child in children if isinstance(child, (Mapping, list, tuple)))
    return False


def is_finite_number(value: Any) -> bool:
    """An ``int`` or a finite ``float`` (never a ``bool``)."""
    kind = type(value)
    return kind is int or (kind is float and math.isfinite(value))


_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by the six characters ``\\udXXX`` (lower-case hex).

    The kit's one escaping rule.  Inside JSON text the six characters are the JSON escape of the same code point, so
    the writer's files read back as the same string; in a record or a CSV cell they are plain text.  Idempotent, and
    the identity on text without surrogates."""
    if _SURROGATE.search(text) is None:
        return text
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def encodable(value: Any) -> Any:
    """A copy of a JSON-ready value (dicts, lists, tuples, scalars) whose strings, keys included, are UTF-8
    encodable (:func:`escape_surrogates`); tuples become lists.  For records, which are JSON-ready by construction."""
    if isinstance(value, str):
        return escape_surrogates(value)
    if isinstance(value, Mapping):
        return {escape_surrogates(k) if isinstance(k, str) else k: encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encodable(v) for v in value]
    return value
