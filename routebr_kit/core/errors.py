"""Typed errors.

Two families:

* :class:`DataError` — bad configuration or data (catalog, rules, registry, cases, profiles, predictions).
  Always raised, always one exception type, always naming file, 1-based line, field and what was expected.
* :class:`ContractError` — a model output that violates the proposal contract.  Never raised: validators
  return them as values, and the controller turns them into a recorded fail-closed terminal.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypeVar

from .strict_json import exceeds_depth

E = TypeVar("E", bound=enum.Enum)


class ErrorCode(str, enum.Enum):
    """Codes of :class:`DataError`."""

    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    FILE_UNREADABLE = "FILE_UNREADABLE"
    EMPTY_FILE = "EMPTY_FILE"
    MISSING_COLUMN = "MISSING_COLUMN"
    ROW_SHAPE = "ROW_SHAPE"
    EMPTY_VALUE = "EMPTY_VALUE"
    INVALID_JSON = "INVALID_JSON"
    WRONG_TYPE = "WRONG_TYPE"
    INVALID_INTEGER = "INVALID_INTEGER"
    INVALID_VALUE = "INVALID_VALUE"
    UNKNOWN_ENUM = "UNKNOWN_ENUM"
    DUPLICATE_ID = "DUPLICATE_ID"
    UNKNOWN_REFERENCE = "UNKNOWN_REFERENCE"
    # rule-program checks, done at start-up
    NO_RULES = "NO_RULES"
    NO_DEFAULT_RULE = "NO_DEFAULT_RULE"
    UNKNOWN_ACTION = "UNKNOWN_ACTION"
    INVALID_CONDITION = "INVALID_CONDITION"
    UNKNOWN_OPERATOR = "UNKNOWN_OPERATOR"
    INVALID_OPERAND = "INVALID_OPERAND"
    # CSV records
    FIELD_TOO_LARGE = "FIELD_TOO_LARGE"
    # the strict file reader (routebr_kit.store.files): bounded work, clean text
    LIMIT_EXCEEDED = "LIMIT_EXCEEDED"  # bytes, nesting, YAML aliases, nodes, sweep size: a bound the input passes
    INVALID_ENCODING = "INVALID_ENCODING"  # a BOM where none belongs, a lone surrogate
    # controller construction
    EMPTY_CATALOG = "EMPTY_CATALOG"
    DISPATCH_FALLBACK = "DISPATCH_FALLBACK"
    INCONSISTENT_ASSETS = "INCONSISTENT_ASSETS"
    # fetching the published artifact (routebr-kit fetch-artifact)
    DOWNLOAD_FAILED = "DOWNLOAD_FAILED"
    CHECKSUM_MISMATCH = "CHECKSUM_MISMATCH"
    UNSAFE_ARCHIVE = "UNSAFE_ARCHIVE"
    # the local model server (routebr-kit serve-model)
    MISSING_EXTRA = "MISSING_EXTRA"  # an optional extra (pyproject [project.optional-dependencies]) is not installed
    SERVER_FAILED = "SERVER_FAILED"  # a server the kit started exited or never answered


class KitError(Exception):
    """Base class of every error the kit raises on purpose."""


class DataError(KitError, ValueError):
    """Malformed configuration or data.  ``code`` is the stable identity; the message is for people."""

    def __init__(self, code: ErrorCode, expected: str, *, file: str | None = None, line: int | None = None,
                 field: str | None = None, got: object = None, detail: str | None = None) -> None:
        self.code, self.expected, self.got, self.detail = code, expected, got, detail
        self.file, self.line, self.field = file, line, field
        super().__init__(self._render())

    def at(self, *, file: str | None = None, line: int | None = None, field: str | None = None) -> DataError:
        """The same error, located (fields already set are kept)."""
        return DataError(self.code, self.expected, file=self.file or file,
                         line=self.line if self.line is not None else line, field=self.field or field, got=self.got,
                         detail=self.detail)

    def _render(self) -> str:
        where = []  # "file:line" (or "line N" without a file), then "field 'name'"
        if self.file is not None:
            where.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            where.append(f"line {self.line}")
        if self.field is not None:
            where.append(f"field {self.field!r}")
        text = f"[{self.code.value}] " + (f"{', '.join(where)}: " if where else "") + f"expected {self.expected}"
        if self.got is not None:
            text += f", got {short_repr(self.got)}"
        if self.detail:
            text += f" ({self.detail})"
        return text


def parse_choice(kind: type[E], value: object, *, field: str, expected: str) -> E:
    """``value`` as a member of the string enum ``kind`` (a member passes through); anything else is one
    ``UNKNOWN_ENUM`` :class:`DataError` naming ``field`` and what was ``expected``."""
    if isinstance(value, kind):
        return value
    try:
        return kind(str(value))
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, expected, field=field, got=value) from None


class ContractErrorCode(str, enum.Enum):
    """Codes of proposal-contract violations (RouteBR proposals and the B1/B2 one-call routes)."""

    # parse
    INVALID_JSON = "INVALID_JSON"
    NOT_AN_OBJECT = "NOT_AN_OBJECT"
    # enumerated identifiers
    ACTION_OUTSIDE_CATALOG = "ACTION_OUTSIDE_CATALOG"
    TOPK_LENGTH = "TOPK_LENGTH"
    TOPK_OUTSIDE_CATALOG = "TOPK_OUTSIDE_CATALOG"
    OBJECT_OUTSIDE_REGISTRY = "OBJECT_OUTSIDE_REGISTRY"
    TERMINAL_INVALID = "TERMINAL_INVALID"
    BOUNDARY_INVALID = "BOUNDARY_INVALID"
    RULE_IDS_UNKNOWN = "RULE_IDS_UNKNOWN"
    # cross-field relations
    TOPK_NOT_UNIQUE = "TOPK_NOT_UNIQUE"
    TOPK_NOT_PRIMARY_FIRST = "TOPK_NOT_PRIMARY_FIRST"
    OBJECT_REQUIRED = "OBJECT_REQUIRED"
    OBJECT_TYPE_MISMATCH = "OBJECT_TYPE_MISMATCH"
    OBJECT_FREE_REQUIRES_NONE = "OBJECT_FREE_REQUIRES_NONE"
    DISPATCH_REQUIRES_ALLOW = "DISPATCH_REQUIRES_ALLOW"
    TERMINAL_BOUNDARY_MISMATCH = "TERMINAL_BOUNDARY_MISMATCH"
    # repair guard (the paper's rule: a repair may not change the semantic choice)
    REPAIR_CHANGED_ACTION = "REPAIR_CHANGED_ACTION"
    REPAIR_CHANGED_OBJECT = "REPAIR_CHANGED_OBJECT"
    # (kit) the repair states an object where the first reply gave none (empty, whitespace-only, null or missing)
    REPAIR_ADDED_OBJECT = "REPAIR_ADDED_OBJECT"
    # strict JSON and bounded values (kit additions; see routebr_kit.core.strict_json)
    DUPLICATE_KEY = "DUPLICATE_KEY"
    NON_FINITE_NUMBER = "NON_FINITE_NUMBER"
    NESTING_TOO_DEEP = "NESTING_TOO_DEEP"
    # the repair cannot be held to the first reply: it exposes no primary action_id, or contradictory ones
    REPAIR_UNANCHORED = "REPAIR_UNANCHORED"
    # the composite contract (kit, issue 32: routebr_kit.core.composite): an ordered list of 1-3 items
    ITEMS_NOT_A_LIST = "ITEMS_NOT_A_LIST"
    ITEMS_EMPTY = "ITEMS_EMPTY"
    ITEMS_TOO_LONG = "ITEMS_TOO_LONG"
    ITEM_NOT_AN_OBJECT = "ITEM_NOT_AN_OBJECT"
    ITEMS_DUPLICATE = "ITEMS_DUPLICATE"

    @property
    def message(self) -> str:
        """The published human-readable message where one exists."""
        return _CONTRACT_MESSAGES[self]


_TOPK_PUBLISHED = "topk must be unique, closed-list, and primary-first"
_CONTRACT_MESSAGES = {
    ContractErrorCode.INVALID_JSON: "invalid JSON",
    ContractErrorCode.NOT_AN_OBJECT: "output must be one JSON object",
    ContractErrorCode.ACTION_OUTSIDE_CATALOG: "action_id is outside the closed catalog",
    ContractErrorCode.TOPK_LENGTH: "topk must contain one to three action IDs",
    ContractErrorCode.TOPK_OUTSIDE_CATALOG: _TOPK_PUBLISHED,
    ContractErrorCode.TOPK_NOT_UNIQUE: _TOPK_PUBLISHED,
    ContractErrorCode.TOPK_NOT_PRIMARY_FIRST: _TOPK_PUBLISHED,
    ContractErrorCode.OBJECT_OUTSIDE_REGISTRY: "object_id is outside the closed entity list",
    ContractErrorCode.OBJECT_REQUIRED: "object_id is outside the closed entity list",
    ContractErrorCode.OBJECT_TYPE_MISMATCH: "object type violates the primary action contract",
    ContractErrorCode.OBJECT_FREE_REQUIRES_NONE: "object-free primary action must use NONE",
    ContractErrorCode.TERMINAL_INVALID: "invalid terminal",
    ContractErrorCode.BOUNDARY_INVALID: "invalid boundary",
    ContractErrorCode.RULE_IDS_UNKNOWN: "rule_ids must cite known rules",
    ContractErrorCode.DISPATCH_REQUIRES_ALLOW: "DISPATCH requires ALLOW",
    ContractErrorCode.TERMINAL_BOUNDARY_MISMATCH: "non-ALLOW terminal must equal boundary",
    ContractErrorCode.REPAIR_CHANGED_ACTION: "repair changed the primary action_id",
    ContractErrorCode.REPAIR_CHANGED_OBJECT: "repair changed the object_id",
    ContractErrorCode.REPAIR_ADDED_OBJECT: "repair supplied an object_id the first output did not give",
    ContractErrorCode.DUPLICATE_KEY: "a key is repeated in one JSON object",
    ContractErrorCode.NON_FINITE_NUMBER: "NaN and Infinity are not JSON",
    ContractErrorCode.NESTING_TOO_DEEP: "output nests too deeply",
    ContractErrorCode.REPAIR_UNANCHORED: "no repair: the output exposes no single primary action_id/object_id",
    ContractErrorCode.ITEMS_NOT_A_LIST: "a composite output must be one JSON object with an items list",
    ContractErrorCode.ITEMS_EMPTY: "a composite output must propose at least one item",
    ContractErrorCode.ITEMS_TOO_LONG: "a composite output may propose at most three items",
    ContractErrorCode.ITEM_NOT_AN_OBJECT: "each composite item must be one JSON object",
    ContractErrorCode.ITEMS_DUPLICATE: "a composite output may not repeat an (action_id, object_id) item",
}


@dataclass(frozen=True, slots=True)
class ContractError:
    """One violation found in a model output."""

    code: ContractErrorCode
    field: str
    got: str = ""  # a bounded repr of the offending value

    @property
    def message(self) -> str:
        if self.code is ContractErrorCode.INVALID_JSON and self.got:
            return f"invalid JSON: {self.got}"
        return self.code.message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "field": self.field, "message": self.message, "got": self.got}


#: Containers nested deeper than this are not rendered by :func:`short_repr` (``repr`` would recurse).
_REPR_DEPTH = 32


def short_repr(value: object, limit: int = 80) -> str:
    """A bounded ``repr``; never raises (deep or self-containing containers and broken ``__repr__`` included)."""
    try:
        if isinstance(value, (Mapping, list, tuple)) and exceeds_depth(value, _REPR_DEPTH):
            return f"<{type(value).__name__} nested deeper than {_REPR_DEPTH}>"
        text = str.__str__(repr(value))  # (exactly a str, even from a repr returning a str subclass)
    except Exception as exc:  # noqa: BLE001 - a repr for a record must never end a decision
        text = f"<{type(value).__name__}: repr failed with {type(exc).__name__}>"
    return text if len(text) <= limit else text[: limit - 1] + "…"
