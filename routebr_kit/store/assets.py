"""Loaders for the frozen assets and the benchmark cases.

Reads the published CSV schemas (``catalog.csv``, ``boundary_rules.csv``, ``entity_catalog.csv``, the cases CSV
with its JSON columns) and the kit's own registry format.  Every malformed input raises one
:class:`~routebr_kit.core.errors.DataError` naming the file, the 1-based line, the field and what was expected —
never a raw ``KeyError``, ``TypeError`` or ``JSONDecodeError``.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from ..core.controller import Controller, ControllerOptions
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_bytes
from ..core.records import Boundary, Catalog, CatalogAction, Entity, Registry
from ..core.rules import PolicyEngine, Rule, rule
from ..core.state import StateSchema
from .files import MAX_CSV_BYTES, decode_text, parse_json, read_bytes, read_json

E = TypeVar("E")

_CATALOG_COLUMNS = ("action_id", "service_name", "description", "required_object_types")
_RULE_COLUMNS = ("rule_id", "priority", "applies_to", "condition_json", "decision")
_PUBLISHED_REGISTRY_COLUMNS = ("object_id", "exchange", "security_code", "official_short_name", "asset_group",
                              "source_url", "source_effective_date", "verified_on")
_KIT_REGISTRY_COLUMNS = ("object_id", "object_type", "display_name", "aliases")


# --------------------------------------------------------------------------------------------- CSV reading


@dataclass(frozen=True, slots=True)
class CsvTable:
    """A parsed CSV file: its header, its records (with the 1-based line each starts on) and its SHA-256."""

    path: str
    header: tuple[str, ...]
    rows: tuple[tuple[int, Mapping[str, str]], ...]
    sha256: str


def read_csv(path: str | Path, required: Sequence[str], *, multiline: Sequence[str] = ()) -> CsvTable:
    """Read a UTF-8 CSV (BOM and CRLF tolerated), checking the header and the shape of every record.

    Strict: a repeated header column, a stray or unterminated quote (``strict`` dialect), a line break inside a
    field (what an unterminated quote that swallows the following rows looks like; only the ``multiline``
    columns may hold one) and a field over :data:`MAX_FIELD` characters are located :class:`DataError` s.
    """
    name = str(path)
    data = read_bytes(path, "an existing CSV file", max_bytes=MAX_CSV_BYTES)
    text = decode_text(data, file=name, expected="UTF-8 text", bom=True)
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        header_cells = next(reader)
    except StopIteration:
        raise DataError(ErrorCode.EMPTY_FILE, "a header line", file=name, line=1) from None
    except csv.Error as exc:
        raise _csv_error(exc, text, name, 1, ()) from None
    header = checked_header(header_cells, required, name)
    records = CsvRecords(reader, header, name, single_line=[i for i, h in enumerate(header) if h not in multiline])
    try:
        rows = [(line, MappingProxyType(dict(zip(header, record)))) for line, record in records]
    except csv.Error as exc:
        raise _csv_error(exc, text, name, records.start, header) from None
    return CsvTable(name, tuple(header), tuple(rows), sha256_bytes(data))


def checked_header(cells: Sequence[str], required: Iterable[str], file: str) -> list[str]:
    """A CSV header's column names (stripped): unique, and holding every ``required`` column (located errors)."""
    header = [h.strip() for h in cells]
    seen: dict[str, int] = {}
    for index, column in enumerate(header):
        if column in seen:
            raise DataError(ErrorCode.DUPLICATE_ID, "unique column names", file=file, line=1, field=column,
                            detail=f"columns {seen[column] + 1} and {index + 1}")
        seen[column] = index
    for column in required:
        if column not in header:
            raise DataError(ErrorCode.MISSING_COLUMN, f"a column named {column!r}", file=file, line=1,
                            field=column, got=header)
    return header


class CsvRecords:
    """The records after a ``csv.reader``'s header, each as ``(line it starts on, cells)``: blank records skipped,
    every other one exactly as wide as the header, and the columns ``single_line`` (indexes) on one physical line
    (an unterminated quote swallows the lines after it).  :attr:`start` is the line the next record starts on, so
    a ``csv.Error`` raised while iterating is located there by the caller."""

    def __init__(self, reader: Any, header: Sequence[str], file: str, single_line: Sequence[int] = ()) -> None:
        self.reader, self.header, self.file, self.single_line = reader, header, file, single_line
        self.start = reader.line_num + 1

    def __iter__(self) -> Iterator[tuple[int, list[str]]]:
        header, file = self.header, self.file
        for record in self.reader:
            line, self.start = self.start, self.reader.line_num + 1
            if not record or all(not cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                raise DataError(ErrorCode.ROW_SHAPE, f"{len(header)} fields", file=file, line=line,
                                got=f"{len(record)} fields")
            if self.start - line > 1:  # the record spans several physical lines
                broken = next((i for i in self.single_line if "\n" in record[i] or "\r" in record[i]), None)
                if broken is not None:
                    raise DataError(ErrorCode.ROW_SHAPE, "a field on one line (an unterminated quote swallows the "
                                    "lines after it)", file=file, line=line, field=header[broken],
                                    got=record[broken][:60])
            yield line, record


#: The ``csv`` module's field-size limit (kept: a larger field is an error, located by :func:`_csv_error`).
_MAX_FIELD = csv.field_size_limit()


def _csv_error(exc: csv.Error, text: str, file: str, line: int, header: Sequence[str]) -> DataError:
    """A located DataError for a ``csv.Error`` raised in the record starting on ``line``."""
    message = str(exc)
    if "field larger than field limit" in message:
        index = _oversized_field(text, line)
        column = (header[index] if index is not None and index < len(header)
                  else f"column {index + 1}" if index is not None else None)
        return DataError(ErrorCode.FIELD_TOO_LARGE, f"at most {_MAX_FIELD:,} characters per field", file=file,
                         line=line, field=column)
    if "unexpected end of data" in message:
        return DataError(ErrorCode.ROW_SHAPE, "a closing quote for the quoted field", file=file, line=line,
                         detail="an unterminated quote runs to the end of the file")
    return DataError(ErrorCode.ROW_SHAPE, "well-formed CSV", file=file, line=line, detail=message)


def _oversized_field(text: str, line: int) -> int | None:
    """The 0-based index of the first field longer than :data:`MAX_FIELD` in the record starting on ``line``."""
    chunk = "".join(text.splitlines(keepends=True)[line - 1:])
    index = size = i = 0
    quoted = False
    while i < len(chunk):
        ch = chunk[i]
        i += 1
        if ch == '"' and quoted and chunk[i:i + 1] == '"':  # an escaped quote: one character of the field
            i += 1
        elif ch == '"':
            quoted = not quoted
            continue
        elif not quoted and ch == ",":
            index, size = index + 1, 0
            continue
        elif not quoted and ch in "\r\n":
            return None
        size += 1
        if size > _MAX_FIELD:
            return index
    return None


class _Row:
    """Typed field access for one CSV record; every failure is a located DataError."""

    __slots__ = ("file", "line", "values")

    def __init__(self, file: str, line: int, values: Mapping[str, str]) -> None:
        self.file, self.line, self.values = file, line, values

    def error(self, code: ErrorCode, expected: str, field: str, got: Any = None, detail: str | None = None):
        return DataError(code, expected, file=self.file, line=self.line, field=field, got=got, detail=detail)

    def text(self, field: str, *, required: bool = True) -> str:
        value = (self.values.get(field) or "").strip()
        if required and not value:
            raise self.error(ErrorCode.EMPTY_VALUE, "a non-empty value", field)
        return value

    def integer(self, field: str) -> int:
        """ASCII digits with an optional leading ``-`` (``int()`` also takes ``"７０"`` and ``"7_0"``: not here)."""
        value = self.text(field)
        if not _INTEGER.fullmatch(value):
            raise self.error(ErrorCode.INVALID_INTEGER, "an integer of ASCII digits", field, value)
        return int(value)

    def enum(self, field: str, enum_type: Callable[[str], E], choices: Sequence[str]) -> E:
        value = self.text(field)
        try:
            return enum_type(value)
        except ValueError:
            raise self.error(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(choices), field, value) from None

    def json(self, field: str, expected: type, *, required: bool = True, default: Any = None) -> Any:
        raw = self.text(field, required=required)
        if not raw:
            return default
        value = parse_json(raw, f"strict JSON ({_json_name(expected)})", file=self.file, line=self.line,
                           field=field)
        if not isinstance(value, expected):
            raise self.error(ErrorCode.WRONG_TYPE, f"a JSON {_json_name(expected)}", field, value)
        return value

    def tokens(self, field: str, *, required: bool = True) -> tuple[str, ...]:
        """A ``|``-separated list of non-empty tokens."""
        raw = self.text(field, required=required)
        if not raw:
            return ()
        items = tuple(t.strip() for t in raw.split("|"))
        if any(not t for t in items):
            raise self.error(ErrorCode.INVALID_VALUE, "'|'-separated non-empty tokens", field, raw)
        return items


_INTEGER = re.compile(r"-?[0-9]+")


def _json_name(kind: type) -> str:
    return {list: "array", dict: "object", str: "string"}.get(kind, kind.__name__)


def _rows(table: CsvTable) -> Iterator[_Row]:
    for line, values in table.rows:
        yield _Row(table.path, line, values)


def _unique(row: _Row, field: str, value: str, seen: dict[str, int]) -> None:
    if value in seen:
        raise row.error(ErrorCode.DUPLICATE_ID, f"a unique {field}", field, value,
                        detail=f"first seen on line {seen[value]}")
    seen[value] = row.line


# --------------------------------------------------------------------------------------------- assets


def load_catalog(path: str | Path) -> Catalog:
    """The closed service catalog (published ``catalog.csv`` schema)."""
    table = read_csv(path, _CATALOG_COLUMNS)
    actions, seen = [], {}
    boundary_names = [b.value for b in Boundary]
    for row in _rows(table):
        action_id = row.text("action_id")
        _unique(row, "action_id", action_id, seen)
        allowed = []
        for token in row.tokens("allowed_boundary_states", required=False):
            if token not in boundary_names:
                raise row.error(ErrorCode.UNKNOWN_ENUM, "'|'-separated boundary names (" + "|".join(boundary_names)
                                + ")", "allowed_boundary_states", token)
            allowed.append(Boundary(token))
        actions.append(CatalogAction(
            action_id=action_id,
            service_name=row.text("service_name"),
            description=row.text("description", required=False),
            required_object_types=row.tokens("required_object_types"),
            allowed_boundaries=tuple(allowed) or tuple(Boundary),
            interface_version=row.text("interface_version", required=False) or "v1",
        ))
    if not actions:
        raise DataError(ErrorCode.EMPTY_CATALOG, "at least one catalog action", file=table.path)
    return Catalog(tuple(actions), table.sha256)


def load_state_schema(path: str | Path) -> StateSchema:
    """A runtime-state schema file (JSON; format in :mod:`routebr_kit.core.state`)."""
    return StateSchema.from_dict(read_json(path, "a state-schema JSON object"), file=str(path))


def load_rules(path: str | Path, catalog: Catalog, state_schema: StateSchema | None = None) -> PolicyEngine:
    """The boundary-rule program (published ``boundary_rules.csv`` schema), validated against ``catalog`` and the
    runtime-state schema (derived from the rules, with ``state_schema``'s fields overriding)."""
    table = read_csv(path, _RULE_COLUMNS)
    rules: list[Rule] = []
    seen: dict[str, int] = {}  # rule ID -> its line
    for row in _rows(table):
        rule_id = row.text("rule_id")
        _unique(row, "rule_id", rule_id, seen)
        priority = row.integer("priority")
        applies_to = row.tokens("applies_to")
        condition = row.json("condition_json", dict)
        decision = row.enum("decision", Boundary, [b.value for b in Boundary])
        try:
            rules.append(rule(rule_id, priority, applies_to, condition, decision,
                              row.text("version", required=False) or "v1",
                              row.text("explanation", required=False)))
        except DataError as exc:
            raise exc.at(file=table.path, line=row.line) from None
    try:
        return PolicyEngine(rules, catalog.ids, sha256=table.sha256, state_schema=state_schema)
    except DataError as exc:
        culprit = exc.detail.removeprefix("rule ") if exc.detail and exc.detail.startswith("rule ") else None
        raise exc.at(file=table.path, line=seen.get(culprit or "")) from None


def load_registry(path: str | Path) -> Registry:
    """The entity registry: the published ``entity_catalog.csv`` or the kit's own format.

    Kit format columns: ``object_id, object_type, display_name, aliases`` (``|``-separated) and any number of
    attribute columns (exchange, security_code, asset_group, language, ...).  Published format: every row is an
    ``ETF`` whose display name is ``official_short_name`` and whose alias is its ``security_code``.
    """
    table = read_csv(path, ("object_id",))
    kit = "display_name" in table.header
    checked_header(table.header, _KIT_REGISTRY_COLUMNS if kit else _PUBLISHED_REGISTRY_COLUMNS, table.path)
    entities, seen = [], {}
    for row in _rows(table):
        object_id = row.text("object_id")
        _unique(row, "object_id", object_id, seen)
        try:
            entity = _registry_entity(row, object_id, kit)
        except DataError as exc:
            raise exc.at(file=row.file, line=row.line, field="object_id") from None
        entities.append(entity)
    return Registry(tuple(entities), table.sha256)


def _registry_entity(row: _Row, object_id: str, kit: bool) -> Entity:
    if kit:
        core = set(_KIT_REGISTRY_COLUMNS)
        return Entity(object_id, row.text("object_type"), row.text("display_name"),
                      row.tokens("aliases", required=False),
                      MappingProxyType({k: v for k, v in row.values.items() if k not in core}))
    attrs = {k: row.text(k) for k in _PUBLISHED_REGISTRY_COLUMNS[1:]}
    return Entity(object_id, "ETF", attrs["official_short_name"], (attrs["security_code"],), MappingProxyType(attrs))


# --------------------------------------------------------------------------------------------- bundles


@dataclass(frozen=True, slots=True)
class Assets:
    """Catalog, rule program and (optionally) registry loaded together."""

    catalog: Catalog
    policy: PolicyEngine
    registry: Registry | None = None

    def controller(self, options: ControllerOptions | None = None) -> Controller:
        return Controller(self.catalog, self.policy, options,
                          registry_sha256=self.registry.sha256 if self.registry else "")


def load_assets(catalog: str | Path, rules: str | Path, registry: str | Path | None = None,
                state_schema: str | Path | None = None) -> Assets:
    """Catalog, rules (validated against the runtime-state schema: derived, or ``state_schema``'s file
    overriding it) and optionally the registry."""
    cat = load_catalog(catalog)
    schema = load_state_schema(state_schema) if state_schema is not None else None
    return Assets(cat, load_rules(rules, cat, schema), load_registry(registry) if registry is not None else None)


REGISTRY_NAMES = ("entity_catalog.csv", "registry.csv")
STATE_SCHEMA_NAME = "state_schema.json"


def assets_beside(cases_path: str | Path, state_schema: str | Path | None = None) -> Assets:
    """The assets stored next to a cases file: ``catalog.csv``, ``boundary_rules.csv``, when present the registry
    (``entity_catalog.csv`` as published, or ``registry.csv`` as the kit's generator writes it) and, unless
    ``state_schema`` names one, a ``state_schema.json`` when present."""
    here = Path(cases_path).parent
    registry = next((here / name for name in REGISTRY_NAMES if (here / name).exists()), None)
    if state_schema is None and (here / STATE_SCHEMA_NAME).exists():
        state_schema = here / STATE_SCHEMA_NAME
    return load_assets(here / "catalog.csv", here / "boundary_rules.csv", registry, state_schema)
