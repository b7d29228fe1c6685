"""Replay stored model outputs as a backend (no network).

Two sources, by fidelity:

* **receipts** (``raw/<case_id>.json``): the recorded content of every call, per stage — exact;
* **predictions rows**: the accepted proposal rebuilt from ``pred_action``, ``pred_object_id`` and
  ``topk_json``.  The repair stage answers with the same rebuilt output, which is what the published repair
  model did for its one fallback (MAIN-0158 came back unchanged); a fallback row (``NONE``/``NONE``/``[]``)
  therefore replays as an invalid proposal that stays invalid and ends fail-closed.

A request the backend holds no output for is answered with a ``CACHE_MISS`` failure (fail loudly, never guess).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.errors import DataError, ErrorCode
from ..core.records import Stage
from .base import FailureKind, ModelCall, ModelReply


class ReplayBackend:
    def __init__(self, outputs: Mapping[str, Mapping[Stage, list[Any]]], *, name: str = "replay") -> None:
        self._outputs = outputs
        self._served: dict[tuple[str, Stage], int] = {}
        self.name = name
        self.calls: list[ModelCall] = []

    @classmethod
    def from_predictions(cls, rows: Iterable[Any], *, name: str = "replay:predictions") -> "ReplayBackend":
        """One rebuilt proposal per case, answered to the proposal stage and to its repair."""
        outputs: dict[str, dict[Stage, list[Any]]] = {}
        for row in rows:
            proposal = row.proposal_output
            outputs[row.case_id] = {Stage.ROUTEBR: [proposal], Stage.REPAIR_ROUTEBR: [proposal]}
        return cls(outputs, name=name)

    @classmethod
    def from_receipts(cls, paths: Iterable[str | Path], *, name: str = "replay:receipts") -> "ReplayBackend":
        """Every recorded response content, per case and stage, in call order."""
        outputs: dict[str, dict[Stage, list[Any]]] = {}
        for path in paths:
            try:
                receipt = json.loads(Path(path).read_text(encoding="utf-8"))
                case_id = receipt["case_id"]
                per_stage: dict[Stage, list[Any]] = {}
                for response in receipt["responses"]:
                    per_stage.setdefault(Stage(response["stage"]), []).append(response["content"])
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise DataError(ErrorCode.INVALID_VALUE, "a receipt with case_id and responses[stage, content]",
                                file=str(path), detail=f"{type(exc).__name__}: {exc}") from None
            outputs[case_id] = per_stage
        return cls(outputs, name=name)

    @classmethod
    def from_sources(cls, rows: Iterable[Any], receipts: Iterable[str | Path] = (), *,
                     name: str = "replay") -> "ReplayBackend":
        """Rebuilt proposals from predictions rows, overridden by exact receipts where those exist."""
        outputs = dict(cls.from_predictions(rows)._outputs)
        outputs.update(cls.from_receipts(receipts)._outputs)
        return cls(outputs, name=name)

    def outputs_for(self, case_id: str) -> Mapping[Stage, list[Any]] | None:
        return self._outputs.get(case_id)

    async def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        recorded = self._outputs.get(call.request_id, {}).get(call.stage)
        if not recorded:
            return ModelReply.failed(FailureKind.CACHE_MISS,
                                     f"no recorded output for {call.request_id} at stage {call.stage.value}")
        key = (call.request_id, call.stage)
        served = self._served.get(key, 0)
        self._served[key] = served + 1
        return ModelReply(content=recorded[min(served, len(recorded) - 1)], model=self.name)
