"""The ledger: one record shape for every source (published artifact, replay, simulated, local, live).

``predictions.csv`` keeps the published columns in the published order and appends ``first_pass_valid``,
``repair_count`` and ``calls``.  Reading tolerates their absence (published files), in which case they are
``None`` and consumers derive what they can (documented where used).  Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable

from .core.assets import read_csv
from .core.controller import Decision
from .core.errors import DataError, ErrorCode

PUBLISHED_FIELDS = (
    "case_id", "system_id", "repeat_id", "pred_action", "pred_object_id", "pred_boundary", "pred_final_path",
    "topk_json", "valid_json", "retry_count", "fallback_used", "input_tokens", "output_tokens", "latency_ms",
    "estimated_cost_usd", "error_code", "raw_output_path",
)
EXTRA_FIELDS = ("first_pass_valid", "repair_count", "calls")
PREDICTION_FIELDS = PUBLISHED_FIELDS + EXTRA_FIELDS


@dataclass(frozen=True, slots=True)
class PredictionRow:
    """One ledger row (one case of one system), typed."""

    case_id: str
    system_id: str
    pred_action: str
    pred_object_id: str
    pred_boundary: str
    pred_final_path: str
    topk: tuple[str, ...]
    valid_json: bool
    fallback_used: bool
    repeat_id: str = "0"
    retry_count: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    estimated_cost_usd: str = ""
    error_code: str = ""
    raw_output_path: str = ""
    first_pass_valid: bool | None = None
    repair_count: int | None = None
    calls: int | None = None
    line: int = 0

    @property
    def strict_path(self) -> str:
        if self.pred_final_path.startswith("T_"):
            return self.pred_final_path
        return f"{self.pred_final_path}@{self.pred_object_id}"

    @property
    def proposal_output(self) -> dict[str, Any]:
        """The accepted proposal rebuilt from the row (``pred_action``, ``pred_object_id``, ``topk_json``)."""
        return {"action_id": self.pred_action, "object_id": self.pred_object_id, "topk": list(self.topk)}

    def as_csv_row(self) -> dict[str, str]:
        def flag(value: bool | None) -> str:
            return "" if value is None else ("true" if value else "false")

        return {
            "case_id": self.case_id, "system_id": self.system_id, "repeat_id": self.repeat_id,
            "pred_action": self.pred_action, "pred_object_id": self.pred_object_id,
            "pred_boundary": self.pred_boundary, "pred_final_path": self.pred_final_path,
            "topk_json": json.dumps(list(self.topk), ensure_ascii=False, separators=(",", ":")),
            "valid_json": flag(self.valid_json), "retry_count": str(self.retry_count),
            "fallback_used": flag(self.fallback_used), "input_tokens": str(self.input_tokens),
            "output_tokens": str(self.output_tokens), "latency_ms": f"{self.latency_ms:.3f}",
            "estimated_cost_usd": self.estimated_cost_usd, "error_code": self.error_code,
            "raw_output_path": self.raw_output_path, "first_pass_valid": flag(self.first_pass_valid),
            "repair_count": "" if self.repair_count is None else str(self.repair_count),
            "calls": "" if self.calls is None else str(self.calls),
        }


def prediction_from_decision(decision: Decision, system_id: str, *, repeat_id: str = "0", retry_count: int = 0,
                             input_tokens: int = 0, output_tokens: int = 0, latency_ms: float = 0.0) -> PredictionRow:
    """The ledger row of one controller decision (RouteBR, A-state, A-ground)."""
    return PredictionRow(
        case_id=decision.request_id, system_id=system_id, pred_action=decision.action_id,
        pred_object_id=decision.object_id, pred_boundary=decision.boundary, pred_final_path=decision.final_path,
        topk=decision.topk, valid_json=decision.valid, fallback_used=decision.fallback, repeat_id=repeat_id,
        retry_count=retry_count, input_tokens=input_tokens, output_tokens=output_tokens, latency_ms=latency_ms,
        error_code=decision.reason.legacy if decision.fallback else "",
        raw_output_path=f"raw/{decision.request_id}.json", first_pass_valid=decision.first_pass_valid,
        repair_count=decision.repair_count, calls=decision.calls,
    )


def read_predictions(path: str | Path) -> tuple[PredictionRow, ...]:
    """Read a ``predictions.csv`` (published or kit); malformed values raise a located :class:`DataError`."""
    table = read_csv(path, ("case_id", "system_id", "pred_action", "pred_object_id", "pred_boundary",
                            "pred_final_path", "topk_json", "valid_json", "fallback_used"))
    rows = []
    for line, values in table.rows:
        rows.append(_parse_row(table.path, line, values))
    return tuple(rows)


def _parse_row(file: str, line: int, values: Any) -> PredictionRow:
    def err(code: ErrorCode, expected: str, name: str, got: Any) -> DataError:
        return DataError(code, expected, file=file, line=line, field=name, got=got)

    def text(name: str, required: bool = True) -> str:
        value = (values.get(name) or "").strip()
        if required and not value:
            raise err(ErrorCode.EMPTY_VALUE, "a non-empty value", name, value)
        return value

    def flag(name: str, optional: bool = False) -> bool | None:
        value = text(name, required=not optional)
        if optional and not value:
            return None
        if value not in ("true", "false"):
            raise err(ErrorCode.WRONG_TYPE, "'true' or 'false'", name, value)
        return value == "true"

    def integer(name: str, optional: bool = False) -> int | None:
        value = text(name, required=False)
        if not value:
            return None if optional else 0
        try:
            return int(value)
        except ValueError:
            raise err(ErrorCode.INVALID_INTEGER, "an integer", name, value) from None

    raw_topk = text("topk_json")
    try:
        topk = json.loads(raw_topk)
    except ValueError:
        raise err(ErrorCode.INVALID_JSON, "a JSON array", "topk_json", raw_topk) from None
    if not isinstance(topk, list) or not all(isinstance(t, str) for t in topk):
        raise err(ErrorCode.WRONG_TYPE, "a JSON array of action IDs", "topk_json", topk)
    latency = text("latency_ms", required=False)
    try:
        latency_ms = float(latency) if latency else 0.0
    except ValueError:
        raise err(ErrorCode.WRONG_TYPE, "a number of milliseconds", "latency_ms", latency) from None
    return PredictionRow(
        case_id=text("case_id"), system_id=text("system_id"), pred_action=text("pred_action"),
        pred_object_id=text("pred_object_id"), pred_boundary=text("pred_boundary"),
        pred_final_path=text("pred_final_path"), topk=tuple(topk), valid_json=bool(flag("valid_json")),
        fallback_used=bool(flag("fallback_used")), repeat_id=text("repeat_id", required=False) or "0",
        retry_count=integer("retry_count") or 0, input_tokens=integer("input_tokens") or 0,
        output_tokens=integer("output_tokens") or 0, latency_ms=latency_ms,
        estimated_cost_usd=text("estimated_cost_usd", required=False), error_code=text("error_code", required=False),
        raw_output_path=text("raw_output_path", required=False),
        first_pass_valid=flag("first_pass_valid", optional=True), repair_count=integer("repair_count", optional=True),
        calls=integer("calls", optional=True), line=line,
    )


def write_predictions(path: str | Path, rows: Iterable[PredictionRow]) -> None:
    """Write a complete ``predictions.csv`` (published columns, then the kit's extras)."""
    import csv

    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=PREDICTION_FIELDS)
        writer.writeheader()
        for row in rows:
            writer.writerow(row.as_csv_row())
