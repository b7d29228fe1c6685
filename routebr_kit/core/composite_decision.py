"""Composite requests (issue 32, item 3): one call, an ordered list of items, each decided by Algorithm 1.

:class:`CompositeController` wraps a :class:`~routebr_kit.core.controller.Controller`:

1. the runtime state and session are checked by the controller itself before any model call (a violation ends
   the request in the controller's own fail-closed decision, no call made);
2. one composite proposal call through the shared call protocol (:meth:`OneCallRouter.propose`) under the
   composite contract (:mod:`routebr_kit.core.composite`), at most one format-only repair held item by item,
   otherwise the configured fail-closed terminal for the whole request, no item decided;
3. each accepted item, in order, is one :meth:`Controller.run` on that item as a stored single-item output — the
   same contract, commitment, state gate, object gate and terminals as a single-item request.  With a session,
   each item's decision enters the history the next item's rules read (an event at ``now`` carrying the request's
   own attributes: ``dispatch`` or ``non_dispatch``), so ``count``/``sum`` rules see earlier items of the request;
4. the request's mode: ``independent`` — each item emits its own terminal; ``atomic`` — items are decided until
   the first one that does not dispatch; if there is one, its terminal is the request's, no item is dispatched
   (earlier items are ``WITHHELD``, later ones ``SKIPPED``, never decided).

:class:`CompositeRouter` is the shared loop; the B1/B2 one-call variant is
:class:`~routebr_kit.systems.baselines.CompositeBaseline`.  A :class:`CompositeDecision` records every item's
decision and a trace.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .calls import FailureKind, ModelReply
from .composite import (
    COMPOSITE_CONTRACT_VERSION,
    COMPOSITE_FLAGS,
    CompositeMode,
    CompositeResult,
    anchor_items,
    check_composite,
    composite_schema,
    guard_items,
    hold_items,
)
from .contract import PROPOSAL_SCHEMA
from .controller import Controller, OneCallRouter, Replies, StoredReplies
from .decision import ContractLog, TraceEvent, TraceStep, escaped, jsonable
from .errors import short_repr
from .records import ReasonCode, RouteRequest, Stage, Terminal
from .session import Event, Session, check_session, event_of_decision
from .strict_json import encodable


class CompositeStep(str, enum.Enum):
    """The trace step a composite record adds (kept out of :class:`~routebr_kit.core.decision.TraceStep`, whose
    members are Algorithm 1's steps, drawn as such in the decision-path figure)."""

    ITEM = "ITEM"  # one item: what became of it and what it emits; its own decision's steps follow


class ItemStatus(str, enum.Enum):
    """What became of one item."""

    DISPATCHED = "DISPATCHED"  # its decision dispatched and was emitted
    NOT_DISPATCHED = "NOT_DISPATCHED"  # its decision ended in a bounded terminal, which it emits
    WITHHELD = "WITHHELD"  # atomic: it would dispatch, but a later item did not, so it emits that item's terminal
    SKIPPED = "SKIPPED"  # atomic: after the first item that did not dispatch; never decided


@dataclass(frozen=True, slots=True)
class ItemOutcome:
    """One item of a composite request: the output it was decided from, its decision (``None`` when skipped), what
    became of it, and the terminal it emits."""

    index: int
    output: Mapping[str, Any]
    decision: Any
    status: ItemStatus
    emitted: Terminal

    @property
    def dispatched(self) -> bool:
        return self.status is ItemStatus.DISPATCHED

    def as_dict(self) -> dict[str, Any]:
        return {"index": self.index, "status": self.status.value, "emitted": self.emitted.value,
                "output": jsonable(self.output),
                "decision": None if self.decision is None else self.decision.as_dict()}


def assemble(mode: CompositeMode, outputs: tuple[Mapping[str, Any], ...], decisions: list[Any]
             ) -> tuple[ItemOutcome, ...]:
    """The items' outcomes under ``mode`` (``decisions``: in order; under ``atomic`` they stop at the first item
    that did not dispatch)."""
    if mode is CompositeMode.INDEPENDENT:
        return tuple(ItemOutcome(i, outputs[i], d, ItemStatus.DISPATCHED if d.dispatched
                                 else ItemStatus.NOT_DISPATCHED, d.terminal) for i, d in enumerate(decisions))
    blocking = next((i for i, d in enumerate(decisions) if not d.dispatched), None)
    if blocking is None:
        return tuple(ItemOutcome(i, outputs[i], d, ItemStatus.DISPATCHED, d.terminal) for i, d in enumerate(decisions))
    winner = decisions[blocking].terminal
    out = []
    for i, output in enumerate(outputs):
        status = (ItemStatus.WITHHELD if i < blocking else ItemStatus.NOT_DISPATCHED if i == blocking
                  else ItemStatus.SKIPPED)
        out.append(ItemOutcome(i, output, decisions[i] if i <= blocking else None, status, winner))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class CompositeDecision:
    """The result of one composite request: each item's decision, or the request's fail-closed end.

    ``reason`` is ``None`` when the items were decided; otherwise the fail-closed reason of the whole request
    (``state_decision``: the controller's own decision when the state or session broke its schema)."""

    request_id: str
    system: str
    mode: CompositeMode
    items: tuple[ItemOutcome, ...]
    fallback_terminal: Terminal
    reason: ReasonCode | None = None
    first_output: Any = None
    log: ContractLog | None = None
    state_decision: Any = None
    contract_version: str = COMPOSITE_CONTRACT_VERSION

    @property
    def failed_closed(self) -> bool:
        return self.reason is not None

    @property
    def terminal(self) -> Terminal:
        """The request's terminal: the fallback when it failed closed; ``DISPATCH`` when every item dispatched;
        else the first non-dispatched item's terminal (under ``atomic``, what every item emits)."""
        if self.reason is not None:
            return self.fallback_terminal
        return next((o.emitted for o in self.items if not o.dispatched), Terminal.DISPATCH)

    @property
    def terminals(self) -> tuple[Terminal, ...]:
        """What each item emits (empty when the request failed closed)."""
        return tuple(o.emitted for o in self.items)

    @property
    def dispatched(self) -> tuple[tuple[str, str], ...]:
        """``(action_id, object_id)`` of each dispatched item, in order."""
        return tuple((o.decision.action_id, o.decision.object_id) for o in self.items if o.dispatched)

    @property
    def errors(self) -> tuple:
        return (self.log.first_errors + self.log.repair_errors) if self.log else ()

    @property
    def repair_attempted(self) -> bool:
        return self.log.repair_attempted if self.log else False

    @property
    def calls(self) -> int:
        return 0 if self.state_decision is not None else 1 + int(self.repair_attempted)

    def events(self, at: int, attributes: Mapping[str, Any] | None = None) -> tuple[Event, ...]:
        """The history this request leaves for the next one: one event per decided item (``dispatch`` for a
        dispatched item, else ``non_dispatch`` with the terminal it emits); none when it failed closed."""
        return tuple(Event(at, "dispatch" if o.dispatched else "non_dispatch", o.decision.action_id,
                           o.decision.object_id, o.emitted.value, attributes or {})
                     for o in self.items if o.decision is not None)

    def session_after(self, session: Session) -> Session:
        """``session`` with :meth:`events` appended (at ``session.now``, with the request's attributes)."""
        for event in self.events(session.now, session.attributes):
            session = session.with_event(event)
        return session

    def trace(self) -> tuple[TraceEvent, ...]:
        return escaped(_composite_events(self))

    def as_dict(self) -> dict[str, Any]:
        return encodable({
            "request_id": self.request_id, "system": self.system, "contract_version": self.contract_version,
            "mode": self.mode.value, "terminal": self.terminal.value,
            "terminals": [t.value for t in self.terminals],
            "reason": None if self.reason is None else self.reason.value,
            "dispatched": [list(pair) for pair in self.dispatched],
            "items": [o.as_dict() for o in self.items],
            "first_output": jsonable(self.first_output),
            "repair_output": jsonable(self.log.repair_output if self.log else None),
            "repair_attempted": self.repair_attempted, "errors": [e.as_dict() for e in self.errors],
            "failure": None if self.log is None or self.log.failure is None else self.log.failure.as_dict(),
            "state_decision": None if self.state_decision is None else self.state_decision.as_dict(),
            "trace": [t.as_dict() for t in self.trace()],
        })


def _composite_events(d: CompositeDecision) -> list[TraceEvent]:
    if d.state_decision is not None:
        return list(d.state_decision.trace())
    log, events = d.log, []
    if log is not None and log.failure is not None and not log.repair_attempted:
        failure = log.failure
        events.append(TraceEvent(TraceStep.PROPOSE, "backend failure", f"{failure.kind.value}: {failure.message}"))
    else:
        events.append(TraceEvent(TraceStep.PROPOSE, f"composite output received ({d.contract_version})",
                                 short_repr(d.first_output, 160)))
        first = log.first_errors if log else ()
        events.append(TraceEvent(TraceStep.VALIDATE, "invalid" if first else "valid",
                                 ", ".join(f"{e.field}: {e.code.value}" for e in first)))
    if log is not None and (log.repair_attempted or log.repair_errors):
        outcome = ("backend failure" if log.failure is not None else "not attempted (unanchored)"
                   if not log.repair_attempted else "rejected" if log.repair_errors else "accepted")
        events.append(TraceEvent(TraceStep.REPAIR, outcome,
                                 ", ".join(f"{e.field}: {e.code.value}" for e in log.repair_errors)))
    for o in d.items:
        head = f"items[{o.index}] {o.output.get('action_id')}@{o.output.get('object_id')}"
        events.append(TraceEvent(CompositeStep.ITEM, f"{head}: {o.status.value}",  # type: ignore[arg-type]
                                 f"emits {o.emitted.value}"))
        if o.decision is None:
            continue
        if hasattr(o.decision, "trace"):
            events += [TraceEvent(t.step, f"items[{o.index}] {t.outcome}", t.detail) for t in o.decision.trace()]
        else:  # a baseline's route: the model's own terminal, trusted as published
            events.append(TraceEvent(TraceStep.EMIT, f"items[{o.index}] {o.decision.final_path}",
                                     o.decision.reason.value))
    emitted = ", ".join(t.value for t in d.terminals) or d.terminal.value
    events.append(TraceEvent(TraceStep.EMIT, f"{d.mode.value}: {d.terminal.value}",
                             f"items: {emitted}" + (f"; {d.reason.value}" if d.reason else "")))
    return events


# --------------------------------------------------------------------------------------------- the routers


class CompositeRouter(OneCallRouter):
    """The composite request loop over a single-item router: one call, then each item in order
    (:meth:`decide_item`), assembled under the request's mode.  Subclasses give the single-item check, the
    payload, :meth:`decide_item` and optionally :meth:`admit`."""

    __slots__ = ("mode",)
    system: str
    fallback_terminal: Terminal
    # The call protocol's repair rule, held item by item (:mod:`routebr_kit.core.composite`).
    repair_hold = staticmethod(hold_items)
    repair_anchor = staticmethod(anchor_items)
    repair_guard = staticmethod(guard_items)

    async def admit(self, request: RouteRequest) -> Any:
        """A fail-closed decision made before any model call, or ``None``."""
        return None

    def initial_carry(self, request: RouteRequest) -> Any:
        return None

    async def decide_item(self, request: RouteRequest, result: Any, output: dict[str, Any], carry: Any
                          ) -> tuple[Any, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    async def run(self, request: RouteRequest, replies: Replies) -> CompositeDecision:
        refused = await self.admit(request)
        if refused is not None:
            return CompositeDecision(request.request_id, self.system, self.mode, (), self.fallback_terminal,
                                     refused.reason, state_decision=refused)
        proposed = await self.propose(request, replies)
        if proposed.reason is not None:
            return CompositeDecision(request.request_id, self.system, self.mode, (), self.fallback_terminal,
                                     proposed.reason, proposed.first_output, proposed.log)
        checked: CompositeResult = proposed.checked
        carry, decisions = self.initial_carry(request), []
        for result, output in zip(checked.results, checked.outputs):  # type: ignore[arg-type]
            if self.mode is CompositeMode.ATOMIC and decisions and not decisions[-1].dispatched:
                break
            decision, carry = await self.decide_item(request, result, output, carry)
            decisions.append(decision)
        return CompositeDecision(request.request_id, self.system, self.mode,
                                 assemble(self.mode, checked.outputs, decisions), self.fallback_terminal, None,
                                 proposed.first_output, proposed.log)


@dataclass(slots=True)
class _AdmissionProbe:
    """Replies that note whether the controller got as far as asking for a proposal (it does not when the state or
    session breaks its schema)."""

    asked: bool = False

    async def ask(self, stage: Stage, payload: Any) -> ModelReply:
        self.asked = True
        return ModelReply.failed(FailureKind.EXCEPTION, "admission probe: no model call is made")


class CompositeController(CompositeRouter):
    """RouteBR for composite requests: each item is one :meth:`Controller.run` (see the module docstring)."""

    __slots__ = ("controller",)
    stage = Stage.ROUTEBR_COMPOSITE
    schema = composite_schema(PROPOSAL_SCHEMA)
    system = "routebr"

    def __init__(self, controller: Controller, mode: CompositeMode | str = CompositeMode.ATOMIC) -> None:
        self.controller = controller
        self.mode = CompositeMode.parse(mode)

    @property
    def fallback_terminal(self) -> Terminal:  # type: ignore[override]
        return self.controller.options.fallback

    @property
    def repair_enabled(self) -> bool:
        return self.controller.options.repair

    def payload(self, request: RouteRequest) -> dict[str, Any]:
        return {**self.controller.proposal_payload(request), "contract": dict(COMPOSITE_FLAGS)}

    def check(self, raw: Any, request: RouteRequest) -> CompositeResult:
        return check_composite(raw, lambda output: self.controller.check(output, request))

    async def admit(self, request: RouteRequest) -> Any:
        probe = _AdmissionProbe()
        decision = await self.controller.run(request, probe)
        return None if probe.asked else decision

    def initial_carry(self, request: RouteRequest) -> Session | None:
        if request.session is None:
            return None
        session, _ = check_session(request.session, self.controller.catalog.ids)  # (admitted: valid)
        return session

    async def decide_item(self, request: RouteRequest, result: Any, output: dict[str, Any],
                          carry: Session | None) -> tuple[Any, Session | None]:
        item_request = request if carry is None else request.with_session(carry)
        decision = await self.controller.run(item_request, StoredReplies(output))
        if carry is not None:
            carry = carry.with_event(event_of_decision(decision, carry.now, carry.attributes))
        return decision, carry

    def __repr__(self) -> str:
        return f"CompositeController({self.mode.value}, {self.controller!r})"


__all__ = ["CompositeController", "CompositeDecision", "CompositeRouter", "CompositeStep", "ItemOutcome", "ItemStatus",
           "assemble"]
