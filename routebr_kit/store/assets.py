"""Loaders for the frozen assets and the benchmark cases.

Reads the published CSV schemas (``catalog.csv``, ``boundary_rules.csv``, ``entity_catalog.csv``, the cases CSV
with its JSON columns) and the kit's own registry format.  Every malformed input raises one
:class:`~routebr_kit.core.errors.DataError` naming the file, the 1-based line, the field and what was expected —
never a raw ``KeyError``, ``TypeError`` or ``JSONDecodeError``.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, TypeVar

from ..core.controller import Controller, ControllerOptions
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_bytes
from ..core.records import Boundary, Catalog, CatalogAction, Entity, Registry
from ..core.rules import PolicyEngine, Rule, rule

E = TypeVar("E")

CATALOG_COLUMNS = ("action_id", "service_name", "description", "required_object_types")
RULE_COLUMNS = ("rule_id", "priority", "applies_to", "condition_json", "decision")
PUBLISHED_REGISTRY_COLUMNS = ("object_id", "exchange", "security_code", "official_short_name", "asset_group",
                              "source_url", "source_effective_date", "verified_on")
KIT_REGISTRY_COLUMNS = ("object_id", "object_type", "display_name", "aliases")


# --------------------------------------------------------------------------------------------- CSV reading


@dataclass(frozen=True, slots=True)
class CsvTable:
    """A parsed CSV file: its header, its records (with the 1-based line each starts on) and its SHA-256."""

    path: str
    header: tuple[str, ...]
    rows: tuple[tuple[int, Mapping[str, str]], ...]
    sha256: str


def read_csv(path: str | Path, required: Sequence[str]) -> CsvTable:
    """Read a UTF-8 CSV (BOM and CRLF tolerated), checking the header and the shape of every record."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except FileNotFoundError:
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing file", file=name) from None
    except OSError as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, "a readable file", file=name, detail=str(exc)) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, "UTF-8 text", file=name, detail=str(exc)) from None
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise DataError(ErrorCode.EMPTY_FILE, "a header line", file=name, line=1) from None
    except csv.Error as exc:
        raise DataError(ErrorCode.ROW_SHAPE, "well-formed CSV", file=name, line=1, detail=str(exc)) from None
    header = [h.strip() for h in header]
    for column in required:
        if column not in header:
            raise DataError(ErrorCode.MISSING_COLUMN, f"a column named {column!r}", file=name, line=1,
                            field=column, got=header)
    rows = []
    start = reader.line_num + 1
    try:
        for record in reader:
            line, start = start, reader.line_num + 1
            if not record or all(not cell.strip() for cell in record):
                continue
            if len(record) != len(header):
                raise DataError(ErrorCode.ROW_SHAPE, f"{len(header)} fields", file=name, line=line,
                                got=f"{len(record)} fields")
            rows.append((line, MappingProxyType(dict(zip(header, record)))))
    except csv.Error as exc:
        raise DataError(ErrorCode.ROW_SHAPE, "well-formed CSV", file=name, line=start, detail=str(exc)) from None
    return CsvTable(name, tuple(header), tuple(rows), sha256_bytes(data))


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
        value = self.text(field)
        try:
            return int(value)
        except ValueError:
            raise self.error(ErrorCode.INVALID_INTEGER, "an integer", field, value) from None

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
        try:
            value = json.loads(raw)
        except ValueError as exc:
            raise self.error(ErrorCode.INVALID_JSON, f"valid JSON ({expected.__name__})", field,
                             detail=str(exc)) from None
        except RecursionError:
            raise self.error(ErrorCode.INVALID_JSON, "valid JSON", field, detail="nesting too deep") from None
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


def read_json(path: str | Path, expected: str = "a JSON object") -> dict[str, Any]:
    """Read one JSON object; a missing or malformed file is a located :class:`DataError`."""
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(ErrorCode.FILE_NOT_FOUND, expected, file=str(path)) from None
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise DataError(ErrorCode.INVALID_JSON, expected, file=str(path), detail=str(exc)) from None
    if not isinstance(value, dict):
        raise DataError(ErrorCode.WRONG_TYPE, expected, file=str(path), got=type(value).__name__)
    return value


# --------------------------------------------------------------------------------------------- assets


def load_catalog(path: str | Path) -> Catalog:
    """The closed service catalog (published ``catalog.csv`` schema)."""
    table = read_csv(path, CATALOG_COLUMNS)
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


def load_rules(path: str | Path, catalog: Catalog) -> PolicyEngine:
    """The boundary-rule program (published ``boundary_rules.csv`` schema), validated against ``catalog``."""
    table = read_csv(path, RULE_COLUMNS)
    rules: list[Rule] = []
    seen: dict[str, int] = {}
    lines: dict[str, int] = {}
    for row in _rows(table):
        rule_id = row.text("rule_id")
        _unique(row, "rule_id", rule_id, seen)
        lines[rule_id] = row.line
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
        return PolicyEngine(rules, catalog.ids, sha256=table.sha256)
    except DataError as exc:
        culprit = exc.detail.removeprefix("rule ") if exc.detail and exc.detail.startswith("rule ") else None
        raise exc.at(file=table.path, line=lines.get(culprit or "")) from None


def load_registry(path: str | Path) -> Registry:
    """The entity registry: the published ``entity_catalog.csv`` or the kit's own format.

    Kit format columns: ``object_id, object_type, display_name, aliases`` (``|``-separated) and any number of
    attribute columns (exchange, security_code, asset_group, language, ...).  Published format: every row is an
    ``ETF`` whose display name is ``official_short_name`` and whose alias is its ``security_code``.
    """
    table = read_csv(path, ("object_id",))
    kit = "display_name" in table.header
    for column in KIT_REGISTRY_COLUMNS if kit else PUBLISHED_REGISTRY_COLUMNS:
        if column not in table.header:
            raise DataError(ErrorCode.MISSING_COLUMN, f"a column named {column!r}", file=table.path, line=1,
                            field=column, got=list(table.header))
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
        core = set(KIT_REGISTRY_COLUMNS)
        return Entity(object_id, row.text("object_type"), row.text("display_name"),
                      row.tokens("aliases", required=False),
                      MappingProxyType({k: v for k, v in row.values.items() if k not in core}))
    attrs = {k: row.text(k) for k in PUBLISHED_REGISTRY_COLUMNS[1:]}
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


def load_assets(catalog: str | Path, rules: str | Path, registry: str | Path | None = None) -> Assets:
    cat = load_catalog(catalog)
    return Assets(cat, load_rules(rules, cat), load_registry(registry) if registry is not None else None)


REGISTRY_NAMES = ("entity_catalog.csv", "registry.csv")


def assets_beside(cases_path: str | Path) -> Assets:
    """The assets stored next to a cases file: ``catalog.csv``, ``boundary_rules.csv`` and, when present, the
    registry (``entity_catalog.csv`` as published, or ``registry.csv`` as the kit's generator writes it)."""
    here = Path(cases_path).parent
    registry = next((here / name for name in REGISTRY_NAMES if (here / name).exists()), None)
    return load_assets(here / "catalog.csv", here / "boundary_rules.csv", registry)
