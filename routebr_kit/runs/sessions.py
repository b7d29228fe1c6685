"""Sessions run end to end (issue 32): each request of a session decided in order, its history made of the
external events and of the *same controller's* earlier decisions (closed loop), and the replies recorded in a
session ledger that a release review replays (:mod:`routebr_kit.review.sessions`).

A session ledger is JSON Lines, one recorded request a line, sessions contiguous and in order::

    {"session_id": "SEN-0001", "index": 0, "step": {...SessionStep...}, "first_output": "{...}",
     "repair_output": null, "decision": {"final_path": "A5_PROTECTED_ACTION", "rule_id": "R999", ...}}

``repair_output`` is ``null`` when no repair call was made.  The model never sees the session (the proposal payload
is the request, its conversation history, the catalog and the candidates), so a recorded reply is what the model
would answer under any rule program: only the decisions, and so the histories, change.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.aio import run_sync
from ..core.controller import NO_REPAIR, Controller
from ..core.errors import DataError, ErrorCode
from ..core.records import Entity, Stage
from ..core.session import Event, event_of_decision
from ..dataset.sessions import SessionStep
from .runner import CaseRecorder


def decision_summary(d: Any) -> dict[str, Any]:
    """What a ledger keeps of a decision (and what a diff compares)."""
    return {"final_path": d.final_path, "object_id": d.object_id, "terminal": d.terminal.value,
            "rule_id": d.rule_id, "reason": d.reason.value}


@dataclass(frozen=True)
class RecordedRequest:
    """One request of a session ledger: its inputs, the model's recorded replies and the recorded decision."""

    session_id: str
    index: int
    step: SessionStep
    first_output: Any
    repair_output: Any = NO_REPAIR
    decision: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        step = self.step.as_dict()
        step["candidates"] = [{**e.prompt_view(), "attributes": dict(e.attributes)} for e in self.step.candidates]
        return {"session_id": self.session_id, "index": self.index, "step": step, "first_output": self.first_output,
                "repair_output": None if self.repair_output is NO_REPAIR else self.repair_output,
                "decision": dict(self.decision)}


@dataclass(frozen=True)
class SessionLedger:
    """Recorded sessions: ``session_id -> requests in order``."""

    sessions: Mapping[str, tuple[RecordedRequest, ...]]

    @property
    def requests(self) -> int:
        return sum(len(r) for r in self.sessions.values())

    def write(self, path: str | Path) -> Path:
        lines = [json.dumps(r.as_dict(), ensure_ascii=False, separators=(",", ":"))
                 for rs in self.sessions.values() for r in rs]
        Path(path).write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        return Path(path)

    @classmethod
    def read(cls, path: str | Path) -> SessionLedger:
        """A ledger written by :meth:`write`; a located :class:`DataError` on a malformed line."""
        sessions: dict[str, list[RecordedRequest]] = {}
        for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
            try:
                record = _recorded(json.loads(line))
            except (ValueError, KeyError, TypeError) as exc:
                raise DataError(ErrorCode.INVALID_VALUE, "a recorded session request", file=str(path),
                                field=f"line {n}", got=str(exc)) from None
            got = sessions.setdefault(record.session_id, [])
            if record.index != len(got):
                raise DataError(ErrorCode.INVALID_VALUE, f"request index {len(got)} of {record.session_id}",
                                file=str(path), field=f"line {n}", got=record.index)
            got.append(record)
        return cls(MappingProxyType({k: tuple(v) for k, v in sessions.items()}))


def _recorded(raw: Mapping[str, Any]) -> RecordedRequest:
    s = raw["step"]
    step = SessionStep(
        s["request_id"], int(s["now"]), tuple(Event(**e) for e in s["external_events"]), s["utterance"],
        tuple(Entity(c["object_id"], c["object_type"], c["display_name"], tuple(c.get("aliases", ())),
                     MappingProxyType(c.get("attributes", {}))) for c in s["candidates"]),
        s["gold_proposal"]["action_id"], s["gold_proposal"]["object_id"], MappingProxyType(s["attributes"]),
        MappingProxyType(s["state"]))
    repair = raw.get("repair_output")
    return RecordedRequest(str(raw["session_id"]), int(raw["index"]), step, raw["first_output"],
                           NO_REPAIR if repair is None else repair, MappingProxyType(dict(raw["decision"])))


def replay_session(controller: Controller, recorded: Sequence[RecordedRequest]) -> list[Any]:
    """Every request of one session re-decided by ``controller`` from its recorded replies, the history made of
    the external events and of *this* controller's earlier decisions."""
    history: list[Event] = []
    out = []
    for r in recorded:
        request = r.step.request(history, r.session_id)
        d = controller.decide(request, r.first_output, r.repair_output)
        out.append(d)
        history.extend(r.step.externals)
        history.append(event_of_decision(d, r.step.now, r.step.attributes))
    return out


def run_session(controller: Controller, session_id: str, steps: Sequence[SessionStep], backend: Any
                ) -> tuple[tuple[RecordedRequest, ...], list[Any]]:
    """One session through ``controller`` with a live (or simulated, or learned) ``backend``, closed loop; the
    recorded requests and the decisions."""
    history: list[Event] = []
    recorded, decisions = [], []
    for i, step in enumerate(steps):
        request = step.request(history, session_id)
        recorder = CaseRecorder(backend)
        d = run_sync(controller.aroute(request, recorder))
        outputs = {x.call.stage: x.reply.content for x in recorder.exchanges}
        first = outputs.get(Stage.ROUTEBR)
        repair = next((c for s, c in outputs.items() if s.is_repair), NO_REPAIR)
        recorded.append(RecordedRequest(session_id, i, step, first, repair, MappingProxyType(decision_summary(d))))
        decisions.append(d)
        history.extend(step.externals)
        history.append(event_of_decision(d, step.now, step.attributes))
    return tuple(recorded), decisions


def run_sessions(controller: Controller, sessions: Iterable[tuple[str, Sequence[SessionStep]]], backend: Any
                 ) -> tuple[SessionLedger, dict[str, list[Any]]]:
    """Every session (``(session_id, steps)``) run closed loop; the ledger and the decisions per session."""
    ledger: dict[str, tuple[RecordedRequest, ...]] = {}
    decisions: dict[str, list[Any]] = {}
    for session_id, steps in sessions:
        ledger[session_id], decisions[session_id] = run_session(controller, session_id, steps, backend)
    return SessionLedger(MappingProxyType(ledger)), decisions


__all__ = ["RecordedRequest", "SessionLedger", "decision_summary", "replay_session", "run_session", "run_sessions"]
