"""Sessions run end to end (issue 32): each request of a session decided in order, its history made of the
external events and of the *same controller's* earlier decisions (closed loop), and the replies recorded in a
session ledger that a release review replays (:mod:`routebr_kit.review.sessions`).

A session ledger is JSON Lines, one recorded request a line, sessions contiguous and in order::

    {"session_id": "SEN-0001", "index": 0, "step": {...SessionStep...}, "first_output": "{...}",
     "repair_output": null, "decision": {"final_path": "A5_PROTECTED_ACTION", "rule_id": "R999", ...}}

``repair_output`` is ``null`` when no repair call was made.  A composite request (``step.items``, ``step.mode``) is
decided by :class:`~routebr_kit.core.composite_decision.CompositeController` in its mode from one composite reply,
and leaves one history event per decided item.  The model never sees the session (the proposal payload
is the request, its conversation history, the catalog and the candidates), so a recorded reply is what the model
would answer under any rule program: only the decisions, and so the histories, change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.aio import run_sync
from ..core.calls import ModelCall, ModelReply
from ..core.composite_decision import CompositeController
from ..core.controller import CONTRACT_FLAGS, NO_REPAIR, Controller
from ..core.errors import DataError, ErrorCode
from ..core.records import Entity
from ..core.session import Event, event_of_decision
from ..core.strict_json import StrictJsonError, strict_loads
from ..dataset.sessions import SessionStep
from ..store.files import parse_json, read_text
from .runner import CaseRecorder


def decision_summary(d: Any) -> dict[str, Any]:
    """What a ledger keeps of a decision (and what a diff compares); a composite decision: per item, joined by
    ``" + "`` (an item not dispatched shows the terminal it emits)."""
    if not hasattr(d, "items"):
        return {"final_path": d.final_path, "object_id": d.object_id, "terminal": d.terminal.value,
                "rule_id": d.rule_id, "reason": d.reason.value}
    items = d.items
    return {"final_path": " + ".join(o.decision.final_path if o.dispatched else f"T_{o.emitted.value}"
                                     for o in items) or f"T_{d.terminal.value}",
            "object_id": " + ".join(str(o.output.get("object_id")) for o in items),
            "terminal": d.terminal.value,
            "rule_id": " + ".join(str(getattr(o.decision, "rule_id", "-")) if o.decision else "-" for o in items),
            "reason": d.reason.value if d.reason is not None else "ITEMS_DECIDED"}


def router_for(controller: Controller, step: SessionStep) -> Any:
    return CompositeController(controller, step.mode) if step.composite else controller


def step_events(d: Any, step: SessionStep) -> tuple[Event, ...]:
    """The history a decided step leaves: its external events, then its decision's event(s)."""
    own = d.events(step.now, step.attributes) if hasattr(d, "items") else (
        event_of_decision(d, step.now, step.attributes),)
    return (*step.externals, *own)


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
        for n, line in enumerate(read_text(path, "a session ledger (JSONL)").splitlines(), start=1):
            try:
                record = _recorded(parse_json(line, "a recorded session request", kind=dict, file=str(path), line=n))
            except (KeyError, TypeError) as exc:
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
        MappingProxyType(s["state"]), tuple((str(a), str(o)) for a, o in s.get("gold_items", ())), s.get("mode", ""))
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
        d = router_for(controller, r.step).decide(request, r.first_output, r.repair_output)
        out.append(d)
        history.extend(step_events(d, r.step))
    return out


def run_sessions(controller: Controller, sessions: Iterable[tuple[str, Sequence[SessionStep]]], backend: Any
                 ) -> tuple[SessionLedger, dict[str, list[Any]]]:
    """Every session (``(session_id, steps)``) through ``controller`` with a live (or simulated, or learned)
    ``backend``, closed loop; the ledger and the decisions per session."""
    ledger: dict[str, tuple[RecordedRequest, ...]] = {}
    decisions: dict[str, list[Any]] = {}
    for session_id, steps in sessions:
        history: list[Event] = []
        recorded: list[RecordedRequest] = []
        decisions[session_id] = decided = []
        for i, step in enumerate(steps):
            recorder = CaseRecorder(backend)
            d = run_sync(router_for(controller, step).aroute(step.request(history, session_id), recorder))
            outputs = {x.call.stage: x.reply.content for x in recorder.exchanges}
            first = next((c for s, c in outputs.items() if not s.is_repair), None)
            repair = next((c for s, c in outputs.items() if s.is_repair), NO_REPAIR)
            recorded.append(RecordedRequest(session_id, i, step, first, repair, MappingProxyType(decision_summary(d))))
            decided.append(d)
            history.extend(step_events(d, step))
        ledger[session_id] = tuple(recorded)
    return SessionLedger(MappingProxyType(ledger)), decisions


#: Where a composite request's utterance is split into one clause per item (the kit's en/zh composite wording).
_CLAUSE_BREAK = re.compile(r"\?\s*And\s+|,\s*then\s+|，然后|？再帮我|？再")


class ItemwiseProposer:
    """A composite answer from a single-item proposer (an offline stand-in for a model that answers the composite
    stage itself): the request is split into clauses at :data:`CLAUSE_BREAK`, each clause is one single-item call
    to ``backend`` (request ID ``<id>.<n>``, the single-item contract), and the answers are returned as one
    ``{"items": [...]}`` reply.  Single-item stages pass through.  The calls it makes are the wrapped backend's:
    a composite request costs one call per clause here, one call with a model that answers the composite stage."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        self.name = f"{getattr(backend, 'name', 'backend')}+itemwise"

    async def complete(self, call: ModelCall) -> ModelReply:
        if not call.stage.is_composite or call.stage.is_repair:
            return await self.backend.complete(call)
        clauses = [c for c in _CLAUSE_BREAK.split(str(call.payload.get("request", ""))) if c.strip()]
        items = []
        for n, clause in enumerate(clauses, start=1):
            payload = {**call.payload, "request": clause, "contract": dict(CONTRACT_FLAGS)}
            reply = await self.backend.complete(ModelCall(f"{call.request_id}.{n}", call.stage.single, payload))
            if reply.failure is not None:
                return reply
            content = reply.content
            try:  # a clause answer that is not JSON stays a string: the composite contract refuses it, typed
                items.append(strict_loads(content) if isinstance(content, str) else content)
            except StrictJsonError:
                items.append(content)
        return ModelReply(content=json.dumps({"items": items}, ensure_ascii=False), model=self.name)


__all__ = ["ItemwiseProposer", "RecordedRequest", "SessionLedger", "decision_summary", "router_for", "replay_session",
           "run_sessions", "step_events"]
