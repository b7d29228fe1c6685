"""The ledger: one record shape for every source (published artifact, replay, simulated, local, live).

``predictions.csv`` keeps the published columns in the published order and appends ``first_pass_valid``,
``repair_count`` and ``calls``.  Reading tolerates their absence (published files), in which case they are
``None`` and consumers derive what they can (documented where used).

A run directory (:class:`RunLedger`) holds ``predictions.csv``, one receipt per case (``raw/<case_id>.json``) and
``run_manifest.json``.  A finished case is committed as: receipt written atomically (temporary file, fsync,
rename), then its row appended with a single write, flushed and fsynced — so ``kill -9`` at any moment loses no
committed case, a row never points at a missing receipt, and a torn last line (an append cut short) is dropped on
resume.  Every file goes through :mod:`routebr_kit.store.redact` (secrets redacted; any value encodable, so no
reply can make a case unwritable).  Standard library only.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..core.controller import Decision
from ..core.errors import DataError, ErrorCode
from ..core.hashing import open_regular, sha256_bytes
from ..core.records import Boundary, Terminal
from .assets import CsvRecords, checked_header, read_csv
from .files import parse_json, read_json
from .redact import csv_cells, encode_json

PUBLISHED_FIELDS = (
    "case_id", "system_id", "repeat_id", "pred_action", "pred_object_id", "pred_boundary", "pred_final_path",
    "topk_json", "valid_json", "retry_count", "fallback_used", "input_tokens", "output_tokens", "latency_ms",
    "estimated_cost_usd", "error_code", "raw_output_path",
)
_EXTRA_FIELDS = ("first_pass_valid", "repair_count", "calls")
PREDICTION_FIELDS = PUBLISHED_FIELDS + _EXTRA_FIELDS


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
    line: int = field(default=0, compare=False)  # where it was read from; not part of the row's content

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


#: The columns every ledger has.
_LEDGER_REQUIRED = ("case_id", "system_id", "pred_action", "pred_object_id", "pred_boundary", "pred_final_path",
                   "topk_json", "valid_json", "fallback_used")


def read_predictions(path: str | Path) -> tuple[PredictionRow, ...]:
    """Read a ``predictions.csv`` (published or kit); malformed values raise a located :class:`DataError`."""
    table = read_csv(path, _LEDGER_REQUIRED)
    if table.rows:
        with open(path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            if handle.read(1) != b"\n":
                raise DataError(ErrorCode.ROW_SHAPE, "a complete last row (the file ends mid-row: a truncated "
                                "ledger)", file=table.path, line=table.rows[-1][0])
    return tuple(_parse_row(table.path, line, values) for line, values in table.rows)


@dataclass(frozen=True)
class LedgerSample:
    """What :func:`sample_predictions` kept of a ledger over a row cap, and the summary of all its rows."""

    total: int  # data rows in the file
    kept: int  # rows kept (every ``every``-th, starting with the first)
    every: int
    cap: int
    final_paths: Mapping[str, int]  # pred_final_path -> rows, over every row of the file
    valid_json: int  # rows with valid_json true, over every row

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "final_paths": dict(self.final_paths)}


def count_lines(path: str | Path) -> int:
    """Physical lines of a file, streamed in 1 MiB blocks (an upper bound on its CSV records; a regular file
    only)."""
    lines = 0
    last = b"\n"
    with open_regular(path, "a predictions.csv ledger") as handle:
        while block := handle.read(1 << 20):
            lines += block.count(b"\n")
            last = block[-1:]
    return lines + (last != b"\n")


def sample_predictions(path: str | Path, cap: int) -> tuple[tuple[PredictionRow, ...], LedgerSample]:
    """A ledger too large to load whole, streamed once: every row is checked and counted (its final path, its
    ``valid_json``), and every ``k``-th row kept, ``k`` chosen from the line count so that at most ``cap`` rows
    are kept.  Memory is bounded by ``cap`` rows whatever the file's size."""
    name = str(path)
    every = max(1, -(-max(count_lines(path) - 1, 0) // cap))
    kept: list[PredictionRow] = []
    paths: dict[str, int] = {}
    valid = total = 0
    with open_regular(path, "a predictions.csv ledger") as raw:
        text = io.TextIOWrapper(raw, encoding="utf-8-sig", errors="strict", newline="")
        reader = csv.reader(text, strict=True)
        try:
            header = checked_header(next(reader), _LEDGER_REQUIRED, name)
        except StopIteration:
            raise DataError(ErrorCode.EMPTY_FILE, "a header line", file=name, line=1) from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(ErrorCode.ROW_SHAPE, "a CSV header line", file=name, line=1, detail=str(exc)) from None
        records = CsvRecords(reader, header, name)
        try:
            for line, record in records:
                row = _parse_row(name, line, dict(zip(header, record)))
                paths[row.pred_final_path] = paths.get(row.pred_final_path, 0) + 1
                valid += bool(row.valid_json)
                if total % every == 0 and len(kept) < cap:
                    kept.append(row)
                total += 1
        except (csv.Error, UnicodeDecodeError) as exc:
            raise DataError(ErrorCode.ROW_SHAPE, "a well-formed CSV record", file=name, line=records.start,
                            detail=str(exc)) from None
    return tuple(kept), LedgerSample(total, len(kept), every, cap, dict(sorted(paths.items())), valid)


def check_rows_match_manifest(rows: Sequence[PredictionRow], manifest: Mapping[str, Any], file: str) -> None:
    """A finished ledger holds exactly the cases its manifest lists (``case_ids``), each once per repeat: a ledger
    cut short at a row boundary, or padded with other cases, is a located error instead of a smaller table."""
    listed = manifest.get("case_ids")
    if not isinstance(listed, list):
        return
    by_repeat: dict[str, list[str]] = {}
    for row in rows:
        by_repeat.setdefault(row.repeat_id, []).append(row.case_id)
    for repeat, ids in sorted(by_repeat.items()):
        if sorted(ids) != sorted(map(str, listed)):
            missing = sorted(set(map(str, listed)) - set(ids))
            extra = sorted(set(ids) - set(map(str, listed)))
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "one row per case the run manifest lists", file=file,
                            field="case_id", got=f"{len(ids)} rows for {len(listed)} listed cases (repeat {repeat})",
                            detail=(f"missing {missing[:3]}" if missing else "") + (f" extra {extra[:3]}" if extra
                                                                                     else ""))


_BOUNDARIES = tuple(b.value for b in Boundary)
_NUMBER = re.compile(r"[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?")


def _parse_row(file: str, line: int, values: Any) -> PredictionRow:
    """One ledger row checked against the ledger schema: required columns non-empty, flags ``true``/``false``,
    counts ASCII digits, latency and cost finite and non-negative, ``topk_json`` a strict JSON array of strings,
    ``pred_boundary`` a boundary name, ``pred_final_path`` a known terminal consistent with its boundary
    (:func:`check_path`).  Whether a dispatched action is in the catalog needs the catalog:
    :func:`check_catalog`."""
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
        """A count: ASCII digits only (``int()`` also takes ``"+1"``, ``"1_0"`` and ``"１"``: not here)."""
        value = text(name, required=False)
        if not value:
            return None if optional else 0
        if not (value.isascii() and value.isdigit()):
            raise err(ErrorCode.INVALID_INTEGER, "a non-negative integer of ASCII digits", name, value)
        return int(value)

    def number(name: str, expected: str) -> float | None:
        value = text(name, required=False)
        if not value:
            return None
        parsed = float(value) if _NUMBER.fullmatch(value) else math.nan  # the pattern admits only what float() reads
        if not math.isfinite(parsed) or parsed < 0:
            raise err(ErrorCode.WRONG_TYPE, expected, name, value)
        return parsed

    raw_topk = text("topk_json")
    topk = parse_json(raw_topk, "a JSON array", file=file, line=line, field="topk_json", record=True)
    if not isinstance(topk, list) or not all(isinstance(t, str) for t in topk):
        raise err(ErrorCode.WRONG_TYPE, "a JSON array of action IDs", "topk_json", topk)
    boundary = text("pred_boundary")
    if boundary not in _BOUNDARIES:
        raise err(ErrorCode.UNKNOWN_ENUM, "a boundary (" + ", ".join(_BOUNDARIES) + ")", "pred_boundary", boundary)
    _check_path(file, line, boundary, text("pred_final_path"), text("pred_action"))
    latency_ms = number("latency_ms", "a finite, non-negative number of milliseconds") or 0.0
    number("estimated_cost_usd", "empty or a finite, non-negative cost in USD")
    return PredictionRow(
        case_id=text("case_id"), system_id=text("system_id"), pred_action=text("pred_action"),
        pred_object_id=text("pred_object_id"), pred_boundary=boundary,
        pred_final_path=text("pred_final_path"), topk=tuple(topk), valid_json=bool(flag("valid_json")),
        fallback_used=bool(flag("fallback_used")), repeat_id=text("repeat_id", required=False) or "0",
        retry_count=integer("retry_count") or 0, input_tokens=integer("input_tokens") or 0,
        output_tokens=integer("output_tokens") or 0, latency_ms=latency_ms,
        estimated_cost_usd=text("estimated_cost_usd", required=False), error_code=text("error_code", required=False),
        raw_output_path=text("raw_output_path", required=False),
        first_pass_valid=flag("first_pass_valid", optional=True), repair_count=integer("repair_count", optional=True),
        calls=integer("calls", optional=True), line=line,
    )


_TERMINALS = tuple(t.value for t in Terminal if t is not Terminal.DISPATCH)


def _check_path(file: str, line: int, boundary: str, final_path: str, action: str) -> None:
    """A row's path is one the controller can write: ``T_<TERMINAL>`` (a known bounded terminal) with that
    boundary, or a dispatched action with boundary ``ALLOW`` equal to ``pred_action``."""
    def err(expected: str, name: str, got: Any) -> DataError:
        code = ErrorCode.UNKNOWN_ENUM if name == "pred_final_path" else ErrorCode.INVALID_VALUE
        return DataError(code, expected, file=file, line=line, field=name, got=got)

    if final_path.startswith("T_"):
        terminal = final_path[2:]
        if terminal not in _TERMINALS:
            raise err("a terminal (" + ", ".join("T_" + t for t in _TERMINALS) + ")", "pred_final_path", final_path)
        if boundary != terminal:
            raise err(f"pred_boundary {terminal} (the boundary of {final_path})", "pred_boundary", boundary)
    else:
        if final_path in _TERMINALS or final_path == Terminal.DISPATCH.value or final_path == "NONE":
            raise err("a dispatched action ID or T_<TERMINAL>", "pred_final_path", final_path)
        if boundary != Boundary.ALLOW.value:
            raise err(f"pred_boundary ALLOW (the boundary of a dispatch to {final_path})", "pred_boundary", boundary)
        if action != final_path:
            raise err(f"pred_action {final_path} (the action pred_final_path dispatches)", "pred_action", action)


def check_catalog(rows: Iterable[PredictionRow], actions: Iterable[str], file: str) -> None:
    """Every dispatched ``pred_final_path`` names an action of the catalog."""
    known = frozenset(actions)
    for r in rows:
        if not r.pred_final_path.startswith("T_") and r.pred_final_path not in known:
            raise DataError(ErrorCode.UNKNOWN_ACTION, "an action of the catalog (" + ", ".join(sorted(known)) + ")",
                            file=file, line=r.line, field="pred_final_path", got=r.pred_final_path)


def _typed(file: str, line: int | None, name: str, value: Any, types: tuple[type, ...], expected: str) -> None:
    if value is not None and (not isinstance(value, types) or isinstance(value, bool) and bool not in types):
        raise DataError(ErrorCode.WRONG_TYPE, expected, file=file, line=line, field=name,
                        got=f"{type(value).__name__} {str(value)[:60]!r}")


def check_run_manifest(manifest: Any, file: str) -> dict[str, Any]:
    """The fields of a ``run_manifest.json`` the review and report read, typed (absent fields are allowed: a
    published manifest records fewer): ``system``/``split``/``backend`` strings, ``repeat_id`` a string or integer,
    ``options`` an object (flags booleans, ``fallback`` a bounded terminal), ``hashes``/``shadow`` objects,
    ``case_ids`` a list."""
    if not isinstance(manifest, dict):
        raise DataError(ErrorCode.WRONG_TYPE, "a run_manifest.json object", file=file, got=type(manifest).__name__)
    for name in ("system", "split", "backend", "kit_version"):
        _typed(file, None, name, manifest.get(name), (str,), "a string")
    _typed(file, None, "repeat_id", manifest.get("repeat_id"), (str, int), "a string or integer")
    for name in ("options", "hashes", "shadow"):
        _typed(file, None, name, manifest.get(name), (dict,), "a JSON object")
    _typed(file, None, "case_ids", manifest.get("case_ids"), (list,), "a JSON array of case IDs")
    options = manifest.get("options") or {}
    for name in ("enforce_state", "enable_grounding", "repair"):
        _typed(file, None, f"options.{name}", options.get(name), (bool,), "true or false")
    fallback = options.get("fallback")
    if fallback is not None and fallback not in _TERMINALS:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "a fallback terminal (" + ", ".join(_TERMINALS) + ")", file=file,
                        field="options.fallback", got=fallback)
    shadow = manifest.get("shadow") or {}
    _typed(file, None, "shadow.cases_path", shadow.get("cases_path"), (str,), "a path string")
    _typed(file, None, "shadow.needs_live_rerun", shadow.get("needs_live_rerun"), (list,), "a JSON array")
    return manifest


def check_detail_record(record: Any, file: str, line: int | None, *, keyed: bool) -> dict[str, Any]:
    """A decision record (a ``shadow_rows.jsonl`` line when ``keyed``, or a receipt's ``summary.decision``): an
    object; ``case_id``/``repeat_id`` present when ``keyed``; ``reason`` a string; ``rule`` null or an object of
    strings; ``state_errors`` a list; ``repair_attempted`` a boolean."""
    if not isinstance(record, dict):
        raise DataError(ErrorCode.WRONG_TYPE, "a JSON object", file=file, line=line, got=type(record).__name__)
    if keyed:
        for name in ("case_id", "repeat_id"):
            value = record.get(name)
            if value is None or value == "":
                raise DataError(ErrorCode.EMPTY_VALUE, "a non-empty value", file=file, line=line, field=name)
            _typed(file, line, name, value, (str, int), "a string")
        _typed(file, line, "replayed", record.get("replayed"), (bool,), "true or false")
        _typed(file, line, "flags", record.get("flags"), (list,), "a JSON array")
    _typed(file, line, "reason", record.get("reason"), (str,), "a reason code string")
    rule = record.get("rule")
    _typed(file, line, "rule", rule, (dict,), "null or a JSON object")
    for name in ("rule_id", "version", "decision"):
        _typed(file, line, f"rule.{name}", (rule or {}).get(name), (str,), "a string")
    _typed(file, line, "object_resolution", record.get("object_resolution"), (str,), "a string")
    _typed(file, line, "repair_attempted", record.get("repair_attempted"), (bool,), "true or false")
    errors = record.get("state_errors")
    _typed(file, line, "state_errors", errors, (list,), "a JSON array")
    for e in errors or ():
        _typed(file, line, "state_errors[]", e, (dict, str), "an object or string")
    return record


def write_predictions(path: str | Path, rows: Iterable[PredictionRow]) -> None:
    """Write a complete ``predictions.csv`` (published columns, then the kit's extras)."""
    with open(path, "w", encoding="utf-8", newline="") as handle:
        handle.write(_csv_lines(rows, header=True))


def _csv_lines(rows: Iterable[PredictionRow], *, header: bool) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=PREDICTION_FIELDS)
    if header:
        writer.writeheader()
    for row in rows:
        writer.writerow(csv_cells(row.as_csv_row()))
    return buffer.getvalue()


# --------------------------------------------------------------------------------------------- durable writes


def append_prediction(path: str | Path, row: PredictionRow) -> None:
    """Append one row (the header first if the file is new) with one write, then flush and fsync."""
    path = Path(path)
    new = not path.exists() or path.stat().st_size == 0
    with open(path, "a", encoding="utf-8", newline="") as handle:
        handle.write(_csv_lines([row], header=new))
        handle.flush()
        os.fsync(handle.fileno())


def write_json_atomic(path: str | Path, value: Any, *, indent: int | None = 1) -> None:
    """Write JSON (UTF-8, keys in insertion order) via a fsynced temporary file and an atomic rename.

    The text is :func:`~routebr_kit.store.redact.encode_json`'s: secrets redacted, strict JSON whatever ``value``
    holds (lone surrogates escaped, non-finite floats as strings), so any reply a server sends can be written and
    read back.  ``indent=None`` writes compact JSON (receipts and cache entries, written once per call).
    """
    _write_atomic(Path(path), encode_json(value, indent=indent))


def _write_atomic(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fd = os.open(path.parent, os.O_RDONLY)  # the rename itself made durable
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def drop_torn_tail(path: str | Path) -> bool:
    """Truncate a last line that lacks its newline (an append cut short by a kill).  True if one was dropped."""
    path = Path(path)
    if not path.exists():
        return False
    with open(path, "rb+") as handle:
        data = handle.read()
        if not data or data.endswith(b"\n"):
            return False
        handle.truncate(data.rfind(b"\n") + 1)
        handle.flush()
        os.fsync(handle.fileno())
    return True


def source_sha256(directory: str | Path) -> str:
    """SHA-256 over the ``*.py`` files of a source directory (relative names and bytes, in name order)."""
    directory = Path(directory)
    parts = [f"{p.relative_to(directory).as_posix()}\0".encode() + p.read_bytes()
             for p in sorted(directory.glob("*.py"))]
    return sha256_bytes(b"\0".join(parts))


# --------------------------------------------------------------------------------------------- run directories

PREDICTIONS = "predictions.csv"
MANIFEST = "run_manifest.json"
RAW = "raw"


class RunLedger:
    """One run directory being written: ``predictions.csv``, ``raw/<case_id>.json`` and ``run_manifest.json``.

    :meth:`commit` is thread-safe (the runner calls it from worker threads so fsync never blocks the event loop).
    """

    def __init__(self, out_dir: str | Path) -> None:
        self.dir = Path(out_dir)
        self.predictions_path = self.dir / PREDICTIONS
        self.manifest_path = self.dir / MANIFEST
        self.raw_dir = self.dir / RAW
        self._lock = threading.Lock()

    def exists(self) -> bool:
        """Whether the directory already holds a run (a manifest or any prediction)."""
        return self.manifest_path.exists() or self.predictions_path.exists()

    def prepare(self) -> None:
        self.raw_dir.mkdir(parents=True, exist_ok=True)

    def committed(self) -> tuple[PredictionRow, ...]:
        """The rows already committed (a torn last line is dropped first)."""
        if not self.predictions_path.exists() or self.predictions_path.stat().st_size == 0:
            return ()
        drop_torn_tail(self.predictions_path)
        return read_predictions(self.predictions_path)

    def receipt_path(self, case_id: str) -> Path:
        if not case_id or "/" in case_id or "\\" in case_id or case_id.startswith(".") or "\0" in case_id:
            raise DataError(ErrorCode.INVALID_VALUE, "a case ID usable as a file name", got=case_id,
                            field="case_id")
        return self.raw_dir / f"{case_id}.json"

    def commit(self, receipt: Mapping[str, Any], row: PredictionRow) -> None:
        """Receipt first (atomic; receipts of different cases are written in parallel), then the row (appended
        under the lock, fsynced)."""
        write_json_atomic(self.receipt_path(row.case_id), receipt, indent=None)
        with self._lock:
            append_prediction(self.predictions_path, row)

    def receipt(self, case_id: str) -> dict[str, Any]:
        return read_json(self.receipt_path(case_id), "a receipt JSON object", record=True)

    def finalize(self, rows: Sequence[PredictionRow]) -> None:
        """Rewrite ``predictions.csv`` atomically with exactly ``rows`` (the runner passes them in case order)."""
        with self._lock:
            _write_atomic(self.predictions_path, _csv_lines(rows, header=True).encode("utf-8"))

    def manifest(self) -> dict[str, Any]:
        return read_json(self.manifest_path, "a run_manifest.json object", record=True)

    def write_manifest(self, manifest: Mapping[str, Any]) -> None:
        write_json_atomic(self.manifest_path, manifest)
