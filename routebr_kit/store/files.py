"""The one strict file reader: every JSON and YAML document the kit reads, and the bytes of every CSV it reads.

Each rule below fails with one :class:`~routebr_kit.core.errors.DataError` naming the file, the 1-based line, the
field (a dotted path such as ``stages.ROUTEBR`` or ``gate[2]``) and an :class:`~routebr_kit.core.errors.ErrorCode`:

* **A regular file of bounded size.** A missing path is ``FILE_NOT_FOUND``; a directory, a FIFO or a device is
  ``WRONG_TYPE`` (so is a dangling symbolic link; the file is opened without blocking and its type checked on the
  open descriptor, so a FIFO never hangs a read); a symbolic-link loop or an unreadable file ``FILE_UNREADABLE``;
  more than ``max_bytes`` bytes
  (:data:`MAX_JSON_BYTES`, :data:`MAX_YAML_BYTES`, :data:`MAX_CSV_BYTES`) is ``LIMIT_EXCEEDED`` — read at most
  that many bytes, whatever the file claims.
* **Clean UTF-8 text.** Invalid UTF-8 is ``FILE_UNREADABLE``; a byte-order mark is ``INVALID_ENCODING`` except in
  CSV (spreadsheets write one); so is a lone surrogate (``"\\ud800"`` in JSON or YAML), which no UTF-8 writer or
  HTTP body can carry further — except in the kit's own records of model replies (``record=True``: receipts,
  ledgers, run manifests, cache entries), where it is the writer's escape of what a server sent.
* **JSON by the core's rules** (:mod:`routebr_kit.core.strict_json`, the same rules a model reply meets): a key
  repeated in one object is ``DUPLICATE_ID``; ``NaN``, ``Infinity`` and numbers overflowing to infinity are
  ``INVALID_JSON``; nesting deeper than :data:`MAX_DEPTH` is ``LIMIT_EXCEEDED``, never a
  ``RecursionError``.
* **YAML by a safe loader held to the same rules**: duplicate keys (``DUPLICATE_ID``), ``.nan``/``.inf``
  (``INVALID_VALUE``), nesting (``LIMIT_EXCEEDED``), and bounded expansion: more than :data:`MAX_YAML_ALIASES`
  uses of an anchored node (``*alias``, ``<<`` merges counted per merged entry), or a document that expands to more
  than :data:`MAX_NODES` values, is ``LIMIT_EXCEEDED`` — a 400-byte "billion laughs" file costs microseconds.

The same rules apply to text held in memory that came from a file or a command line (a JSON cell of a CSV row, a
line of a JSON-lines file, a ``--set KEY=VALUE`` value): :func:`parse_json` and :func:`parse_yaml`.  Code outside
:mod:`routebr_kit.store` never calls a parser itself (``tests/test_layout.py`` checks it).
"""

from __future__ import annotations

import codecs
import functools
import json
import math
import os
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import open_regular
from ..core.strict_json import MAX_FILE_DEPTH, JsonIssue, StrictJsonError, strict_loads

#: Nesting bound of every file (a scalar has depth 0, ``[]`` and ``{}`` depth 1).
MAX_DEPTH = MAX_FILE_DEPTH
#: Size bounds (bytes) per format: the kit's JSON files (receipts, manifests, cache entries, notebooks, prompts)
#: are kilobytes to a few megabytes; its YAML files (gates, params, sweep spaces, profiles) a few kilobytes.
MAX_JSON_BYTES = 64 * 2**20
MAX_YAML_BYTES = 4 * 2**20
MAX_CSV_BYTES = 256 * 2**20
#: Uses of an anchored YAML node (aliases) one document may make.
MAX_YAML_ALIASES = 16
#: Values (scalars and containers, aliases expanded) one YAML document may hold.
_MAX_NODES = 1_000_000

_BOM = codecs.BOM_UTF8
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LINE_IN_DETAIL = re.compile(r"line (\d+) column")


# --------------------------------------------------------------------------------------------- bytes and text


def read_bytes(path: str | Path, expected: str = "a file", *, max_bytes: int = MAX_JSON_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes`` bytes (see the module docstring for the errors)."""
    name = str(path)
    with open_regular(path, expected) as handle:
        size = os.fstat(handle.fileno()).st_size
        if size > max_bytes:
            raise _too_large(name, expected, max_bytes, size)
        try:
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise DataError(ErrorCode.FILE_UNREADABLE, expected, file=name, detail=exc.strerror or str(exc)) from None
    if len(data) > max_bytes:  # the file grew between stat and read
        raise _too_large(name, expected, max_bytes, len(data))
    return data


def read_body(response: Any, *, deadline: float, max_bytes: int, what: str) -> bytes:
    """A network body read under a **total** deadline (``time.monotonic()`` value) and a size bound.

    ``read1`` returns as soon as any bytes arrive, so a server that drips one byte a second, or sends forever,
    is cut off at ``deadline`` (plus at most one socket timeout) or at ``max_bytes``, whichever comes first — a
    per-read socket timeout alone never ends an endless body.  Past the deadline or the size: ``LIMIT_EXCEEDED``.
    """
    parts: list[bytes] = []
    total = 0
    reader = getattr(response, "read1", None) or response.read
    while True:
        if time.monotonic() > deadline:
            raise DataError(ErrorCode.LIMIT_EXCEEDED, f"{what} read completely within its deadline",
                            got=f"{total:,} bytes when the deadline passed")
        data = reader(1 << 16)
        if not data:
            break
        total += len(data)
        if total > max_bytes:
            raise _too_large(what, what, max_bytes, total)
        parts.append(data)
    return b"".join(parts)


def _too_large(name: str, expected: str, limit: int, size: int) -> DataError:
    return DataError(ErrorCode.LIMIT_EXCEEDED, f"{expected} of at most {limit:,} bytes", file=name,
                     got=f"{size:,} bytes")


def decode_text(data: bytes, *, file: str | None = None, expected: str = "UTF-8 text", bom: bool = False) -> str:
    """Strict UTF-8 (no encoded surrogates); a leading BOM is removed when ``bom`` allows one, else an error."""
    if data.startswith(_BOM):
        if not bom:
            raise DataError(ErrorCode.INVALID_ENCODING, f"{expected} in UTF-8 without a byte-order mark",
                            file=file, line=1, detail="remove the BOM (U+FEFF) at the start of the file")
        data = data[len(_BOM):]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, f"{expected} in UTF-8", file=file,
                        line=data.count(b"\n", 0, exc.start) + 1, detail=str(exc)) from None


def read_text(path: str | Path, expected: str = "a text file", *, bom: bool = False,
              max_bytes: int = MAX_JSON_BYTES) -> str:
    """A bounded, strictly decoded UTF-8 text file."""
    return decode_text(read_bytes(path, expected, max_bytes=max_bytes), file=str(path), expected=expected, bom=bom)


# --------------------------------------------------------------------------------------------- JSON


def read_json(path: str | Path, expected: str = "a JSON object", *, kind: type | None = dict,
              record: bool = False) -> Any:
    """One JSON document of type ``kind`` (``dict``, ``list`` or ``None`` for any value).

    ``record=True`` for the kit's own records of model replies (receipts, ledgers, run manifests, cache entries):
    there a lone surrogate is the escape the writer made of what a server sent (:mod:`routebr_kit.store.redact`),
    and reads back as written; every other rule holds."""
    text = read_text(path, expected)
    if not text.strip():
        raise DataError(ErrorCode.EMPTY_FILE, expected, file=str(path), line=1)
    return parse_json(text, expected, kind=kind, file=str(path), record=record)


def read_json_lines(path: str | Path, expected: str = "one JSON object per line", *,
                    record: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line, object)`` for every non-blank line of a JSON-lines file."""
    for number, line in enumerate(read_text(path, expected).split("\n"), start=1):
        if line.strip():
            yield number, parse_json(line, expected, kind=dict, file=str(path), line=number, record=record)


def parse_json(text: str, expected: str = "strict JSON", *, kind: type | None = None, file: str | None = None,
               line: int | None = None, field: str | None = None, record: bool = False) -> Any:
    """Parse JSON text by the file rules.  ``file``/``line``/``field`` locate text held in a larger record (a CSV
    cell, a line); without ``line`` the error's line is found in ``text`` itself.  ``record``: see
    :func:`read_json`."""
    try:
        value = strict_loads(text, max_depth=MAX_DEPTH)
    except StrictJsonError as exc:
        raise _json_error(exc, text, expected, file, line, field) from None
    if not record and _SURROGATE_ESCAPE.search(text):  # a pair decodes to one code point: only a lone half remains
        found = _first_problem(value, yaml=False)
        if found is not None:
            where, path = _scan_json(text, _SURROGATE)
            raise _located(DataError(ErrorCode.INVALID_ENCODING, f"{expected} without lone surrogates (a "
                                     "\\ud800-\\udfff escape must be one half of a pair)", got=found[2]),
                           file, line, field, where, path or found[1])
    _check_kind(value, kind, expected, file, line, field)
    return value


def _json_error(exc: StrictJsonError, text: str, expected: str, file: str | None, line: int | None,
                field: str | None) -> DataError:
    if exc.issue is JsonIssue.SYNTAX:
        match = _LINE_IN_DETAIL.search(exc.detail)
        error = DataError(ErrorCode.INVALID_JSON, f"{expected} in strict JSON", detail=exc.detail)
        return _located(error, file, line, field, int(match.group(1)) if match else None, None)
    where, path = _scan_json(text, exc.issue.value)
    if exc.issue is JsonIssue.DUPLICATE_KEY:
        error = DataError(ErrorCode.DUPLICATE_ID, "unique keys in every JSON object", got=exc.key,
                          detail=f"{exc.detail}; a repeated key never silently overrides the first")
    elif exc.issue is JsonIssue.NON_FINITE:
        error = DataError(ErrorCode.INVALID_JSON, f"{expected} in strict JSON (finite numbers only)",
                          detail=exc.detail)
    else:
        error = DataError(ErrorCode.LIMIT_EXCEEDED, f"{expected} nested at most {MAX_DEPTH} deep",
                          detail=exc.detail)
    return _located(error, file, line, field, where, path)


def _located(error: DataError, file: str | None, line: int | None, field: str | None, where: int | None,
             path: str | None) -> DataError:
    """Place an error: the caller's location (a CSV cell's line and column) wins; the position found in the text
    fills what it leaves open (the path becomes the field, or a detail when the caller named the field)."""
    if field is not None and path:
        error = DataError(error.code, error.expected, got=error.got,
                          detail="; ".join(p for p in (error.detail, f"at {path}") if p))
    return error.at(file=file, line=line if line is not None else where,
                    field=field if field is not None else (path or None))


def _check_kind(value: Any, kind: type | None, expected: str, file: str | None, line: int | None,
                field: str | None) -> None:
    if kind is not None and not isinstance(value, kind):
        raise DataError(ErrorCode.WRONG_TYPE, expected, file=file, line=line, field=field,
                        got=f"a {_kind_name(value)}")


def _kind_name(value: Any) -> str:
    return {dict: "JSON object", list: "JSON array", str: "string", bool: "boolean", type(None): "null",
            int: "number", float: "number"}.get(type(value), type(value).__name__)


_TOKEN = re.compile(r'\s*(?:(?P<string>"(?:[^"\\]|\\.)*")|(?P<punct>[{}\[\],:])|(?P<atom>[^\s{}\[\],:"]+))', re.S)


class _Frame:
    __slots__ = ("obj", "keys", "key", "index", "expect_key")

    def __init__(self, obj: bool) -> None:
        self.obj, self.keys, self.key, self.index, self.expect_key = obj, set(), None, 0, obj


def _path(stack: list[_Frame], last: Any = None) -> str:
    """``a.b[2].c`` (``last`` in place of the innermost step); deeper than 8 steps, the first 6 and the depth."""
    parts = [f.key if f.obj else f.index for f in stack]
    if last is not None:
        parts[-1] = last
    shown = parts if len(parts) <= 8 else parts[:6]
    out = ""
    for part in shown:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out if shown is parts else f"{out}… ({len(parts)} levels)"


_SURROGATE = "SURROGATE"


def _scan_json(text: str, issue: str) -> tuple[int | None, str | None]:
    """Where in ``text`` the first instance of ``issue`` (a :class:`JsonIssue` value, or ``_SURROGATE`` for a lone
    surrogate) sits: ``(line, field path)``.  Only called once a rule has failed: the verdict is the parser's,
    this scan only finds the place (a token scan, iterative, no value built)."""
    stack: list[_Frame] = []
    pos = 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            break
        kind, token, start, pos = match.lastgroup, match.group(match.lastgroup), match.start(match.lastgroup), \
            match.end()
        top = stack[-1] if stack else None
        if kind == "punct":
            if token in "{[":
                stack.append(_Frame(token == "{"))
                if issue == JsonIssue.TOO_DEEP.value and len(stack) > MAX_DEPTH:
                    return _line_at(text, start), _path(stack[:-1])
            elif token in "}]" and stack:
                stack.pop()
            elif token == "," and top is not None:
                top.expect_key = top.obj
                top.index += 0 if top.obj else 1
            elif token == ":" and top is not None:
                top.expect_key = False
            continue
        if kind == "string":
            try:
                decoded = json.loads(token)
            except ValueError:
                continue
            if top is not None and top.obj and top.expect_key:
                if issue == JsonIssue.DUPLICATE_KEY.value and decoded in top.keys:
                    return _line_at(text, start), _path(stack, decoded)
                top.keys.add(decoded)
                top.key = decoded
                if issue == _SURROGATE and _lone_surrogate(decoded):
                    return _line_at(text, start), _path(stack)
            elif issue == _SURROGATE and _lone_surrogate(decoded):
                return _line_at(text, start), _path(stack) if stack else None
            continue
        if issue == JsonIssue.NON_FINITE.value and _non_finite_token(token):
            return _line_at(text, start), _path(stack) if stack else None
    return None, None


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _non_finite_token(token: str) -> bool:
    if token in ("NaN", "Infinity", "-Infinity"):
        return True
    try:
        return math.isinf(float(token))
    except ValueError:
        return False


def _lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


# --------------------------------------------------------------------------------------------- YAML


def read_yaml(path: str | Path, expected: str = "a YAML file", *, kind: type | None = None) -> Any:
    """One YAML document (``None`` for an empty file) of type ``kind`` when given."""
    text = read_text(path, expected, max_bytes=MAX_YAML_BYTES)
    return parse_yaml(text, expected, kind=kind, file=str(path))


def parse_yaml(text: str, expected: str = "YAML", *, kind: type | None = None, file: str | None = None,
               field: str | None = None) -> Any:
    """Parse YAML text by the file rules (a safe loader; see the module docstring)."""
    import yaml

    loader = _strict_loader()(text)
    try:
        value = loader.get_single_data()
    except _Refused as exc:
        raise DataError(exc.code, exc.expected, file=file, line=exc.line, field=field or exc.field,
                        got=exc.got) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
        deep = "nesting depth" in str(exc)
        raise DataError(ErrorCode.LIMIT_EXCEEDED if deep else ErrorCode.INVALID_VALUE,
                        f"{expected} nested at most {MAX_DEPTH} deep" if deep else f"{expected} in valid YAML",
                        file=file, line=mark.line + 1 if mark is not None else None, field=field,
                        detail=" ".join(str(exc).split())[:200]) from None
    except RecursionError:
        raise DataError(ErrorCode.LIMIT_EXCEEDED, f"{expected} nested at most {MAX_DEPTH} deep", file=file,
                        field=field) from None
    except (ValueError, TypeError) as exc:  # e.g. an integer of more than 4,300 digits
        raise DataError(ErrorCode.INVALID_VALUE, f"{expected} of representable values", file=file, field=field,
                        detail=str(exc)[:200]) from None
    finally:
        loader.dispose()
    found = _first_problem(value, yaml=True)
    if found is not None:
        code, path, got = found
        expected_text = {ErrorCode.LIMIT_EXCEEDED: f"{expected} nested at most {MAX_DEPTH} deep and holding at "
                                                   f"most {_MAX_NODES:,} values",
                         ErrorCode.INVALID_VALUE: f"{expected} of finite numbers (no .nan or .inf)",
                         ErrorCode.INVALID_ENCODING: f"{expected} without lone surrogates"}[code]
        raise DataError(code, expected_text, file=file, field=field or path or None, got=got)
    _check_kind(value, kind, expected, file, None, field)
    return value


class _Refused(Exception):
    """Raised inside the loader; turned into a located DataError by :func:`parse_yaml`."""

    def __init__(self, code: ErrorCode, expected: str, mark: Any, got: Any = None, field: str | None = None) -> None:
        super().__init__(expected)
        self.code, self.expected, self.got, self.field = code, expected, got, field
        self.line = mark.line + 1 if mark is not None else None


@functools.cache
def _strict_loader() -> type:
    """A safe loader (libyaml's when present) that refuses repeated keys and counts alias uses."""
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class StrictLoader(base):  # type: ignore[misc, valid-type]
        def __init__(self, stream: str) -> None:
            super().__init__(stream)
            self.alias_uses = 0

        def construct_object(self, node: Any, deep: bool = False) -> Any:
            if node in self.constructed_objects or node in self.recursive_objects:
                self.alias_uses += 1
                if self.alias_uses > MAX_YAML_ALIASES:
                    raise _Refused(ErrorCode.LIMIT_EXCEEDED, f"at most {MAX_YAML_ALIASES} uses of YAML anchors "
                                   "(aliases and merges)", node.start_mark, got=f"more than {MAX_YAML_ALIASES}")
            return super().construct_object(node, deep=deep)

        def construct_mapping(self, node: Any, deep: bool = False) -> dict[Any, Any]:
            if not isinstance(node, yaml.MappingNode):
                raise yaml.constructor.ConstructorError(None, None, f"expected a mapping node, but found {node.id}",
                                                        node.start_mark)
            self.flatten_mapping(node)
            mapping: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self.construct_object(key_node, deep=deep)
                try:
                    repeated = key in mapping
                except TypeError:
                    raise _Refused(ErrorCode.WRONG_TYPE, "a hashable mapping key", key_node.start_mark,
                                   got=type(key).__name__) from None
                if repeated:
                    raise _Refused(ErrorCode.DUPLICATE_ID, "unique keys in every YAML mapping (a repeated key "
                                   "never silently overrides the first)", key_node.start_mark, got=key,
                                   field=str(key)[:60])
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    return StrictLoader


def _first_problem(value: Any, *, yaml: bool) -> tuple[ErrorCode, str, Any] | None:
    """The first value breaking a rule the parser cannot check: ``(code, field path, got)``.  Iterative and
    bounded: cycles exceed :data:`MAX_DEPTH`; in YAML, aliases expanded count toward :data:`MAX_NODES` and a
    non-finite float is refused."""
    stack: list[tuple[Any, int, str]] = [(value, 0, "")]
    nodes = 0
    while stack:
        item, depth, path = stack.pop()
        nodes += 1
        if yaml and nodes > _MAX_NODES:
            return ErrorCode.LIMIT_EXCEEDED, path, f"more than {_MAX_NODES:,} values"
        if isinstance(item, str):
            if _lone_surrogate(item):
                return ErrorCode.INVALID_ENCODING, path, item.encode("utf-8", "backslashreplace").decode()[:80]
        elif isinstance(item, float):
            if yaml and not math.isfinite(item):
                return ErrorCode.INVALID_VALUE, path, item
        elif isinstance(item, (Mapping, list, tuple, set, frozenset)):
            if depth + 1 > MAX_DEPTH:
                shown = path if len(path) <= 60 else path[:60] + "…"
                return ErrorCode.LIMIT_EXCEEDED, shown, f"nesting deeper than {MAX_DEPTH}"
            if isinstance(item, Mapping):
                for key, child in reversed(list(item.items())):
                    sub = f"{path}.{key}" if path else str(key)
                    stack.append((child, depth + 1, sub))
                    stack.append((key, depth + 1, sub))
            else:
                for index in reversed(range(len(item))) if isinstance(item, (list, tuple)) else ():
                    stack.append((item[index], depth + 1, f"{path}[{index}]"))
                if isinstance(item, (set, frozenset)):
                    stack.extend((child, depth + 1, path) for child in item)
    return None


# --------------------------------------------------------------------------------------------- either


def read_document(path: str | Path, expected: str = "a JSON or YAML file", *, kind: type | None = None) -> Any:
    """A ``.yaml``/``.yml`` file as YAML, anything else as JSON."""
    if Path(path).suffix.lower() in (".yaml", ".yml"):
        return read_yaml(path, expected, kind=kind)
    return read_json(path, expected, kind=kind)


__all__ = ["MAX_CSV_BYTES", "MAX_DEPTH", "MAX_JSON_BYTES", "MAX_YAML_ALIASES", "MAX_YAML_BYTES", "decode_text",
           "parse_json", "parse_yaml", "read_bytes", "read_document", "read_json", "read_json_lines", "read_text",
           "read_yaml"]


def read_pinned_pickle(path: str | Path, sha256: object, expected: str = "a pickled model") -> Any:
    """Unpickle a regular file only when its bytes hash to ``sha256`` (recorded beside it by the kit when it wrote
    both).  A pickle runs code when loaded: the hash ties the file to the card written with it, so an edited or
    swapped file is ``INVALID_VALUE`` and never unpickled.  Files at most :data:`MAX_CSV_BYTES` bytes."""
    import hashlib
    import pickle

    blob = read_bytes(path, expected, max_bytes=MAX_CSV_BYTES)
    if not isinstance(sha256, str) or hashlib.sha256(blob).hexdigest() != sha256:
        raise DataError(ErrorCode.INVALID_VALUE, f"{expected} matching its recorded SHA-256", file=str(path),
                        field="model_sha256")
    return pickle.loads(blob)  # noqa: S301 - the hash above ties it to the card the kit wrote with it
