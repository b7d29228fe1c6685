"""The one replay path: stored model outputs + assets + controller options → decisions and ledger rows.

Everything in the kit that re-decides recorded proposals goes through :func:`replay_rows` — the artifact replay
(:mod:`routebr_kit.experiments.replication`), the offline A-state / A-ground derivation
(:func:`routebr_kit.runs.runner.derive_interventions`), the ablations (:mod:`routebr_kit.experiments.ablations`)
and the study's decision traces.  No model is called.

The stored outputs of a row are, by fidelity:

* its **receipt** (``raw/<case_id>.json``, published or written by the runner): every recorded reply per stage in
  call order, failures included, so a replayed decision ends with the recorded reason;
* otherwise the **ledger row**: the accepted proposal rebuilt from ``pred_action``/``pred_object_id``/
  ``topk_json`` (see :class:`~routebr_kit.backends.replay.ReplayBackend`).

Each output row keeps the source row's repeat, retries, tokens, latency and file line: they describe the calls
that produced the stored proposal, which a replay does not repeat.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..backends.replay import ReplayBackend
from ..core.aio import run_sync
from ..core.controller import Controller, Decision
from ..core.errors import DataError, ErrorCode
from ..store.cases import Case
from ..store.ledger import PredictionRow, prediction_from_decision


@dataclass(frozen=True, slots=True)
class Replayed:
    """Decisions and ledger rows of one replay, in the order of the source rows."""

    decisions: tuple[Decision, ...]
    rows: tuple[PredictionRow, ...]


def replay_rows(controller: Controller, rows: Sequence[PredictionRow], cases: Mapping[str, Case], *,
                receipts: Iterable[str | Path] = (), system_id: str | None = None,
                name: str = "replay") -> Replayed:
    """Re-decide every stored output of ``rows`` with ``controller`` (see the module docstring).

    ``system_id`` names the system of the output rows (default: each source row's own).  A row whose case is not
    in ``cases`` raises a located :class:`~routebr_kit.core.errors.DataError`; a stored output that runs out
    (nothing recorded for a repair the controller asks for) ends in the recorded ``CACHE_MISS`` fail-closed
    terminal, never in a guess.
    """
    rows = tuple(rows)
    missing = next((row for row in rows if row.case_id not in cases), None)
    if missing is not None:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a gold case for every replayed row", field="case_id",
                        line=missing.line or None, got=missing.case_id)
    backend = ReplayBackend.from_sources(rows, receipts, name=name)

    async def every() -> list[Decision]:
        return [await controller.aroute(cases[row.case_id].request, backend) for row in rows]

    decisions = tuple(run_sync(every()))
    out = tuple(
        replace(prediction_from_decision(d, system_id or row.system_id, repeat_id=row.repeat_id,
                                         retry_count=row.retry_count, input_tokens=row.input_tokens,
                                         output_tokens=row.output_tokens, latency_ms=row.latency_ms),
                line=row.line)
        for d, row in zip(decisions, rows)
    )
    return Replayed(decisions, out)


__all__ = ["Replayed", "replay_rows"]
