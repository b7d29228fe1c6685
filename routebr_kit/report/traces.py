"""Each row's decision record and recorded calls, by fidelity, for the trace explorer.

For every row of a task, :func:`task_traces` finds

* the **receipt** (``raw/<case_id>.json``) when the folder holds one — every call's request body as sent and every
  reply as received; a shadow row's calls are its source row's receipt (a shadow makes no call);
* the **decision record** (:meth:`Decision.as_dict`, or a B1/B2 route's ``as_dict``): the receipt's
  ``summary.decision`` as recorded when there is one; otherwise, for a controller system whose assets sit beside
  its cases file (the published artifact, a kit run), a replay of the row through those assets by the one replay
  function (:func:`routebr_kit.runs.replay.replay_rows`); otherwise (a shadow written without ``--receipts``) the
  shadow's own per-row record (winning rule, object gate, reason), never a guess.

:class:`TraceSource` says which of these each row's stages were built from, and the report shows it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.controller import ControllerOptions
from ..review.ledgers import SHADOW_KEY, LedgerTask, RowDetail, RowKey, controller_overrides
from ..runs.replay import replay_rows
from ..store.assets import Assets, assets_beside, read_json
from ..store.ledger import RAW


class TraceSource(str, enum.Enum):
    """Where a row's decision record comes from."""

    RECEIPT = "receipt"  # summary.decision of the row's receipt, as recorded
    REPLAY_RECEIPT = "replay of the receipt"  # the receipt's recorded replies re-decided now (assets beside the cases)
    REPLAY_ROW = "replay of the row"  # no receipt: the proposal rebuilt from the ledger row re-decided now
    SHADOW_RECORD = "shadow record"  # the shadow's per-row record (rule, object gate, reason) only
    LEDGER_ROW = "ledger row"  # nothing but the row (a published B1/B2 row without a receipt)


@dataclass(frozen=True)
class RowTrace:
    """What the explorer knows about one row beyond its ledger values."""

    source: TraceSource
    decision: Mapping[str, Any] | None = None
    receipt: Mapping[str, Any] | None = None
    receipt_path: Path | None = None
    detail: RowDetail | None = None
    calls_from: str = ""  # "" (the row's own receipt), or the source folder of a shadow row


AssetsCache = dict[Path, Assets]


def _receipts(paths: tuple[Path, ...] | list[Path]) -> dict[RowKey, tuple[Path, dict[str, Any]]]:
    out = {}
    for path in paths:
        receipt = read_json(path, "a receipt JSON object")
        out[(str(receipt.get("case_id", path.stem)), str(receipt.get("repeat_id", "0")))] = (path, receipt)
    return out


def _shadow_source(task: LedgerTask) -> Path | None:
    shadow = task.manifest.get(SHADOW_KEY)
    source = shadow.get("source") if isinstance(shadow, dict) else None
    return Path(source) if isinstance(source, str) and source else None


def _assets_for(task: LedgerTask, cache: AssetsCache) -> Assets | None:
    if task.cases_path is None:
        return None
    here = Path(task.cases_path).parent.resolve()
    if here not in cache:
        if not (here / "catalog.csv").is_file() or not (here / "boundary_rules.csv").is_file():
            return None
        cache[here] = assets_beside(task.cases_path)
    return cache[here]


def task_traces(task: LedgerTask, cache: AssetsCache | None = None, *,
                only: set[RowKey] | None = None) -> dict[RowKey, RowTrace]:
    """Every row's :class:`RowTrace` (see the module docstring); ``only``: just these rows."""
    cache = cache if cache is not None else {}
    rows = [r for r in task.rows if only is None or (r.case_id, r.repeat_id) in only]
    names = {f"{r.case_id}.json" for r in rows}
    own = _receipts([p for p in task.receipts if p.name in names])
    source = _shadow_source(task)
    calls: dict[RowKey, tuple[Path, dict[str, Any]]] = {}
    if source is not None and (source / RAW).is_dir():
        wanted = {(r.case_id, r.repeat_id) for r in rows}
        paths = [source / RAW / f"{case_id}.json" for case_id, _ in sorted(wanted)]
        calls = _receipts([p for p in paths if p.is_file()])
    out: dict[RowKey, RowTrace] = {}
    pending = []
    for row in rows:
        key = (row.case_id, row.repeat_id)
        path, receipt = own.get(key, (None, None))
        decision = ((receipt.get("summary") or {}).get("decision") if isinstance(receipt, dict) else None)
        call_path, call_receipt = calls.get(key, (None, None)) if source is not None else (path, receipt)
        if source is not None and call_receipt is None and receipt is not None and receipt.get("calls"):
            call_path, call_receipt = path, receipt
        trace = RowTrace(TraceSource.RECEIPT if isinstance(decision, dict) else TraceSource.LEDGER_ROW,
                         decision if isinstance(decision, dict) else None, call_receipt, call_path,
                         task.details.get(key), str(source) if source is not None else "")
        if trace.decision is None and task.system.uses_controller:
            if source is not None:
                trace = RowTrace(TraceSource.SHADOW_RECORD if trace.detail else TraceSource.LEDGER_ROW, None,
                                 call_receipt, call_path, trace.detail, trace.calls_from)
            else:
                pending.append(row)
        out[key] = trace
    if pending:
        assets = _assets_for(task, cache)
        if assets is not None:
            options = ControllerOptions.for_system(task.system, **controller_overrides(task.manifest))
            pending_names = {f"{r.case_id}.json" for r in pending}
            replayed = replay_rows(assets.controller(options), pending, task.cases,
                                   receipts=[p for p in task.receipts if p.name in pending_names],
                                   name=f"report:{task.key}")
            for row, decision in zip(pending, replayed.decisions):
                key = (row.case_id, row.repeat_id)
                old = out[key]
                how = TraceSource.REPLAY_RECEIPT if old.receipt is not None else TraceSource.REPLAY_ROW
                out[key] = RowTrace(how, decision.as_dict(), old.receipt, old.receipt_path, old.detail,
                                    old.calls_from)
    return out


__all__ = ["RowTrace", "TraceSource", "task_traces"]
