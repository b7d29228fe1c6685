"""Replay stored model replies as a backend (no network).

Two sources, by fidelity:

* **receipts** (``raw/<case_id>.json``, published or written by the kit's runner): every recorded reply per
  stage, in call order — content, reported model, and recorded failures (a failed call replays as the same
  failure, so a replayed decision ends with the same reason code);
* **predictions rows**: the accepted proposal rebuilt from ``pred_action``, ``pred_object_id`` and
  ``topk_json``.  The repair stage answers with the same rebuilt output, which is what the published repair
  model did for its one fallback (MAIN-0158 came back unchanged); a fallback row (``NONE``/``NONE``/``[]``)
  therefore replays as an invalid proposal that stays invalid and ends fail-closed.

Replies are served per (case, stage) in order; a call with nothing left to serve is answered with a
``CACHE_MISS`` failure (fail loudly, never guess).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.calls import BackendFailure, FailureKind, ModelCall, ModelReply
from ..core.errors import DataError, ErrorCode
from ..core.records import Stage
from ..store.assets import read_json

Replies = Mapping[str, Mapping[Stage, Sequence[ModelReply]]]


class ReplayBackend:
    def __init__(self, replies: Replies, *, name: str = "replay") -> None:
        self._replies = replies
        self._served: dict[tuple[str, Stage], int] = {}
        self.name = name
        self.calls: list[ModelCall] = []

    @classmethod
    def from_predictions(cls, rows: Iterable[Any], *, name: str = "replay:predictions") -> ReplayBackend:
        """One rebuilt proposal per case, answered to the proposal stage and to its repair."""
        return cls({row.case_id: _rebuilt(row) for row in rows}, name=name)

    @classmethod
    def from_receipts(cls, paths: Iterable[str | Path], *, name: str = "replay:receipts") -> ReplayBackend:
        """Every recorded reply of each receipt file, read with the kit's strict reader (a duplicate key, ``NaN`` or
        nesting past the file bound is a located :class:`DataError`, like a missing field)."""
        replies = {}
        for path in paths:
            receipt = read_json(path, "a receipt JSON object", record=True)
            try:
                replies[receipt["case_id"]] = _replies_of_receipt(receipt)
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(ErrorCode.INVALID_VALUE, "a receipt with case_id and responses[stage, content]",
                                file=str(path), detail=f"{type(exc).__name__}: {exc}") from None
        return cls(replies, name=name)

    @classmethod
    def from_sources(cls, rows: Iterable[Any], receipts: Iterable[str | Path] = (), *,
                     name: str = "replay") -> ReplayBackend:
        """Rebuilt proposals from predictions rows, overridden by exact receipts where those exist."""
        replies = {row.case_id: _rebuilt(row) for row in rows}
        replies.update(cls.from_receipts(receipts)._replies)
        return cls(replies, name=name)

    def recorded(self, case_id: str) -> Mapping[Stage, Sequence[ModelReply]] | None:
        return self._replies.get(case_id)

    async def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        recorded = self._replies.get(call.request_id, {}).get(call.stage, ())
        key = (call.request_id, call.stage)
        served = self._served.get(key, 0)
        if served >= len(recorded):
            return ModelReply.failed(FailureKind.CACHE_MISS,
                                     f"no recorded reply left for {call.request_id} at stage {call.stage.value}")
        self._served[key] = served + 1
        return recorded[served]


def _replies_of_receipt(receipt: Mapping[str, Any]) -> dict[Stage, list[ModelReply]]:
    """The replies of one receipt's ``responses`` list, per stage, failures included."""
    replies: dict[Stage, list[ModelReply]] = {}
    for entry in receipt["responses"]:
        failure = entry.get("failure")
        reply = ModelReply(
            content=entry.get("content"), model=entry.get("reported_model"),
            failure=BackendFailure(FailureKind(failure["kind"]), failure["message"]) if failure else None)
        replies.setdefault(Stage(entry["stage"]), []).append(reply)
    return replies


def _rebuilt(row: Any) -> dict[Stage, list[ModelReply]]:
    reply = ModelReply(content=row.proposal_output, model="replay:predictions")
    return {Stage.ROUTEBR: [reply], Stage.REPAIR_ROUTEBR: [reply]}
