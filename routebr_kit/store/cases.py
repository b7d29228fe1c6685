"""The benchmark vocabulary: languages, splits, object difficulties, gold labels, cases — and the cases loader.

None of this is on the online path: the controller sees a :class:`~routebr_kit.core.records.RouteRequest`; a
:class:`Case` wraps one with its partition and its reference labels, which never reach a model.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.records import Boundary, Entity, RouteRequest, RuntimeState
from .assets import _Row, _rows, _unique, read_csv

CASE_COLUMNS = ("case_id", "split", "pair_id", "scenario_cell", "utterance", "history_json", "runtime_context_json",
                "candidate_entities_json", "gold_cues_json", "gold_action", "gold_object_difficulty",
                "gold_object_id", "gold_boundary", "gold_final_path", "gold_rule_ids_json")
CASE_REQUIRED_VALUES = ("case_id", "split", "scenario_cell", "utterance", "runtime_context_json",
                        "candidate_entities_json", "gold_cues_json", "gold_action", "gold_object_difficulty",
                        "gold_boundary", "gold_final_path", "gold_rule_ids_json")
#: A case ID names its receipt file ``raw/<case_id>.json``: a portable file name on every platform (letters,
#: digits, ``_ . -``, at most 128 characters, starting with a letter or digit, not ending with a dot), never a path.
_CASE_ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}")


class Language(str, enum.Enum):
    """Language of a benchmark's requests and of the prompts that go with it."""

    EN = "en"
    ZH = "zh"


class Split(str, enum.Enum):
    DEV = "DEV"
    MAIN = "MAIN"
    FLIP = "FLIP"
    ENTITY = "ENTITY"


class ObjectDifficulty(str, enum.Enum):
    """How the request refers to its object."""

    NONE = "NONE"  # the action is object-free
    EXPLICIT_NAME = "EXPLICIT_NAME"
    CODE_ONLY = "CODE_ONLY"
    ANAPHORA = "ANAPHORA"  # the history is needed
    UNDERSPECIFIED = "UNDERSPECIFIED"
    CONFLICTING = "CONFLICTING"


@dataclass(frozen=True, slots=True)
class Gold:
    """Reference labels of one case (never shown to a model)."""

    action: str
    object_difficulty: ObjectDifficulty
    object_id: str
    boundary: Boundary
    final_path: str
    rule_ids: tuple[str, ...]
    cues: tuple[Mapping[str, Any], ...] = ()

    @property
    def dispatchable(self) -> bool:
        """Decided from the final path, as the published scorer does."""
        return not self.final_path.startswith("T_")

    @property
    def strict_path(self) -> str:
        return f"{self.final_path}@{self.object_id}" if self.dispatchable else self.final_path


@dataclass(frozen=True, slots=True)
class Case:
    """One benchmark scenario: the request, its partition and its gold labels."""

    request: RouteRequest
    split: Split
    gold: Gold
    pair_id: str = ""
    scenario_cell: str = ""
    line: int = field(default=0, compare=False)  # 1-based line in the file it was read from

    @property
    def case_id(self) -> str:
        return self.request.request_id


# --------------------------------------------------------------------------------------------- cases


def load_cases(path: str | Path) -> tuple[Case, ...]:
    """Benchmark cases in the published schema (JSON columns parsed and type-checked)."""
    table = read_csv(path, CASE_COLUMNS)
    cases, seen, folded = [], {}, {}
    for row in _rows(table):
        for name in CASE_REQUIRED_VALUES:
            row.text(name)
        case_id = row.text("case_id")
        if not _CASE_ID_PATTERN.fullmatch(case_id) or case_id.endswith("."):
            raise row.error(ErrorCode.INVALID_VALUE, "a case ID usable as a file name (letters, digits, '_', '.', "
                            "'-'; at most 128; no path)", "case_id", case_id)
        _unique(row, "case_id", case_id, seen)
        _unique(row, "case_id", case_id.casefold(), folded)  # raw/<case_id>.json must not collide on any disk
        cases.append(_case(row, case_id))
    return tuple(cases)


def _case(row: _Row, case_id: str) -> Case:
    history = row.json("history_json", list, required=False, default=[])
    if not all(isinstance(h, str) for h in history):
        raise row.error(ErrorCode.WRONG_TYPE, "a JSON array of strings", "history_json", history)
    state = row.json("runtime_context_json", dict)
    candidates = tuple(_entity(row, i, item)
                       for i, item in enumerate(row.json("candidate_entities_json", list)))
    first_seen: dict[str, int] = {}
    for i, entity in enumerate(candidates):
        if entity.object_id in first_seen:
            raise row.error(ErrorCode.DUPLICATE_ID, "unique candidate object IDs", "candidate_entities_json",
                            entity.object_id, f"candidate #{i + 1} repeats #{first_seen[entity.object_id] + 1}")
        first_seen[entity.object_id] = i
    cues = row.json("gold_cues_json", list)
    if not all(isinstance(c, dict) for c in cues):
        raise row.error(ErrorCode.WRONG_TYPE, "a JSON array of objects", "gold_cues_json", cues)
    rule_ids = row.json("gold_rule_ids_json", list)
    if not all(isinstance(r, str) and r for r in rule_ids):
        raise row.error(ErrorCode.WRONG_TYPE, "a JSON array of rule-ID strings", "gold_rule_ids_json", rule_ids)
    gold = Gold(
        action=row.text("gold_action"),
        object_difficulty=row.enum("gold_object_difficulty", ObjectDifficulty, [d.value for d in ObjectDifficulty]),
        object_id=row.text("gold_object_id", required=False) or "NONE",
        boundary=row.enum("gold_boundary", Boundary, [b.value for b in Boundary]),
        final_path=row.text("gold_final_path"),
        rule_ids=tuple(rule_ids),
        cues=tuple(MappingProxyType(c) for c in cues),
    )
    split_raw = row.text("split").upper()
    try:
        split = Split(split_raw)
    except ValueError:
        raise row.error(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(s.value for s in Split), "split",
                        split_raw) from None
    request = RouteRequest(case_id, row.text("utterance"), tuple(history), RuntimeState(state), candidates)
    return Case(request, split, gold, row.text("pair_id", required=False), row.text("scenario_cell"), row.line)


def _entity(row: _Row, index: int, item: Any) -> Entity:
    field = "candidate_entities_json"
    where = f"candidate #{index + 1}"
    if not isinstance(item, dict):
        raise row.error(ErrorCode.WRONG_TYPE, "a JSON object per candidate", field, item, where)
    for key in ("object_id", "object_type", "display_name"):
        if not isinstance(item.get(key), str) or not item[key]:
            raise row.error(ErrorCode.WRONG_TYPE, f"a non-empty string {key!r}", field, item.get(key), where)
    aliases = item.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise row.error(ErrorCode.WRONG_TYPE, "'aliases' as a JSON array of strings", field, aliases, where)
    extra = {k: str(v) for k, v in item.items() if k not in ("object_id", "object_type", "display_name", "aliases")}
    try:
        return Entity(item["object_id"], item["object_type"], item["display_name"], tuple(aliases),
                      MappingProxyType(extra))
    except DataError as exc:
        raise row.error(exc.code, exc.expected, field, exc.got, f"{where}, object_id") from None
