"""The RouteBR controller — the paper's Algorithm 1, stated in one function (:meth:`Controller.run`).

1. The runtime state is checked against its schema; a violation ends in the configured fail-closed terminal before
   any model call (``FAIL_CLOSED_INVALID_STATE``).
2. One proposal call; its reply is read once (:func:`~routebr_kit.core.contract.read_output`) and checked against the
   contract; at most one format-only repair, held to the identifiers the first reply gives and allowed to add none
   (``FAIL_CLOSED_REPAIR_UNANCHORED`` when the first reply gives no single primary action, so no repair is asked
   for; ``FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL`` when the repair changes or adds an identifier); otherwise the
   configured fail-closed terminal.  This call protocol (:meth:`OneCallRouter.propose`) is shared with the B1/B2
   baselines.
3. Commitment to the primary action (``topk[1:]`` is diagnostic only).
4. The state gate: the first rule that applies to the action and holds on the runtime state.
5. The object gate (``UNRESOLVED`` → CLARIFY).
6. ``DISPATCH(action, object)`` or a bounded terminal, as an immutable :class:`~routebr_kit.core.decision.Decision`
   with a replayable trace.

The one algorithm runs three ways, all of them :meth:`Controller.run` on a source of replies
(:class:`Replies`): :meth:`Controller.aroute` (async, a backend's replies), :meth:`Controller.route` (its sync
wrapper) and :meth:`Controller.decide` (stored outputs, no backend and no event loop — replay and the A-state /
A-ground interventions: :class:`StoredReplies`).  Each reply is read once, clean or not
(:func:`~routebr_kit.core.contract.read_output`: one snapshot, one parse).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Protocol

from .aio import run_ready, run_sync
from .calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .contract import (
    PROPOSAL_SCHEMA,
    ContractResult,
    anchor_errors,
    check_proposal,
    guard_repair,
    held_identifiers,
    read_output,
    repair_payload,
)
from .decision import (
    ContractLog,
    ControllerOptions,
    Decision,
    DecisionContext,
    Outcome,
    SessionDecision,
    TraceEvent,
    TraceStep,
    jsonable,
)
from .errors import DataError, ErrorCode, short_repr
from .records import (
    NONE,
    UNRESOLVED,
    AssetHashes,
    Boundary,
    Catalog,
    ObjectResolution,
    ReasonCode,
    RouteRequest,
    Stage,
    Terminal,
)
from .rules import PolicyEngine
from .session import SessionValues, check_session
from .state import StateErrorCode, StateViolation

#: The contract flags sent with every proposal payload (the published shape).
CONTRACT_FLAGS = {
    "primary_action_only": True,
    "lower_ranked_candidates_are_diagnostic_only": True,
    "object_ids_are_closed_list": True,
}


class _Sentinel(enum.Enum):
    NO_REPAIR = "NO_REPAIR"


#: ``decide(..., repair_output=NO_REPAIR)``: no repair output was recorded.
NO_REPAIR = _Sentinel.NO_REPAIR

_FAILURE_REASON = {
    FailureKind.TIMEOUT: ReasonCode.FAIL_CLOSED_BACKEND_TIMEOUT,
    FailureKind.DEADLINE: ReasonCode.FAIL_CLOSED_BACKEND_TIMEOUT,
    FailureKind.MODEL_IDENTITY: ReasonCode.FAIL_CLOSED_MODEL_IDENTITY,
}


def failure_reason(failure: BackendFailure) -> ReasonCode:
    """The fail-closed reason code of a backend failure."""
    return _FAILURE_REASON.get(failure.kind, ReasonCode.FAIL_CLOSED_BACKEND_ERROR)


async def ask_backend(backend: Backend, call: ModelCall) -> ModelReply:
    """Call a backend; any exception or malformed return value becomes a failure reply."""
    try:
        reply = await backend.complete(call)
    except TimeoutError as exc:
        return ModelReply.failed(FailureKind.TIMEOUT, f"{type(exc).__name__}: {exc}"[:300])
    except Exception as exc:  # noqa: BLE001 - every backend problem must end fail-closed, never crash a run
        return ModelReply.failed(FailureKind.EXCEPTION, f"{type(exc).__name__}: {exc}"[:300])
    if not isinstance(reply, ModelReply):
        return ModelReply.failed(FailureKind.MALFORMED_RESPONSE, f"backend returned {short_repr(reply)}")
    return reply


# --------------------------------------------------------------------------------------------- where replies come from


class Replies(Protocol):
    """Where the protocol's model replies come from: ``ask(stage, payload)`` gives the reply to one call (``payload``
    builds the call's payload when it is needed), or ``None`` when nothing was recorded for a repair."""

    async def ask(self, stage: Stage, payload: Callable[[], dict[str, Any]]) -> ModelReply | None:
        ...  # pragma: no cover - protocol


@dataclass(frozen=True, slots=True)
class BackendReplies:
    """Replies from a backend, one call each (:func:`ask_backend`: any backend problem becomes a failure reply)."""

    backend: Backend
    request_id: str

    async def ask(self, stage: Stage, payload: Callable[[], dict[str, Any]]) -> ModelReply:
        return await ask_backend(self.backend, ModelCall(self.request_id, stage, payload()))


@dataclass(frozen=True, slots=True)
class StoredReplies:
    """Recorded outputs: ``first`` answers the proposal call, ``repair`` the repair call (``NO_REPAIR``: nothing
    recorded, and the protocol fails closed instead of asking).  Nothing is awaited, so a decision on stored outputs
    runs without an event loop (:func:`~routebr_kit.core.aio.run_ready`)."""

    first: Any
    repair: Any = NO_REPAIR

    async def ask(self, stage: Stage, payload: Callable[[], dict[str, Any]]) -> ModelReply | None:
        if not stage.is_repair:
            return ModelReply(self.first)
        return None if self.repair is NO_REPAIR else ModelReply(self.repair)


@dataclass(frozen=True, slots=True)
class Proposed:
    """What the call protocol hands on: the accepted check result (``reason is None``), or the fail-closed reason;
    with the first output as read and the contract log (``None`` on a clean first pass)."""

    checked: Any
    first_output: Any
    log: ContractLog | None
    reason: ReasonCode | None = None


# --------------------------------------------------------------------------------------------- the call protocol


class OneCallRouter:
    """Algorithm 1's call protocol, shared by the RouteBR controller and the B1/B2 baselines (:meth:`propose`).

    Subclasses say what is sent (:meth:`payload`), how an output is checked (:meth:`check`, returning a result with
    ``ok``, ``errors`` and ``as_contract()``), and what an accepted or a failed case becomes (:meth:`_emit`,
    :meth:`_fail_closed`) — or override :meth:`run` whole, as the controller does.
    """

    __slots__ = ()
    stage: Stage
    schema: Mapping[str, Any]
    repair_enabled: bool

    def payload(self, request: RouteRequest) -> dict[str, Any]:  # pragma: no cover - abstract
        raise NotImplementedError

    def check(self, raw: Any, request: RouteRequest) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def _emit(self, request: RouteRequest, checked: Any, first_output: Any, log: ContractLog | None) -> Any:
        raise NotImplementedError  # pragma: no cover - abstract

    def _fail_closed(self, request: RouteRequest, reason: ReasonCode, first_output: Any,
                     log: ContractLog) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    async def aroute(self, request: RouteRequest, backend: Backend) -> Any:
        """The protocol with a live (or simulated, or scripted, or replaying) backend."""
        return await self.run(request, BackendReplies(backend, request.request_id))

    def route(self, request: RouteRequest, backend: Backend) -> Any:
        """Synchronous :meth:`aroute` (also safe inside Jupyter's running event loop)."""
        return run_sync(self.aroute(request, backend))

    def decide(self, request: RouteRequest, first_output: Any, repair_output: Any = NO_REPAIR) -> Any:
        """The protocol on stored outputs, without a backend.

        ``first_output`` is the first-pass model output (a JSON string or an already-parsed object);
        ``repair_output`` the recorded repair output, if there was one.  An invalid first pass with no recorded
        repair fails closed.
        """
        return run_ready(self.run(request, StoredReplies(first_output, repair_output)))

    async def run(self, request: RouteRequest, replies: Replies) -> Any:
        """The protocol, then what the subclass makes of its outcome."""
        proposed = await self.propose(request, replies)
        if proposed.reason is not None:
            return self._fail_closed(request, proposed.reason, proposed.first_output, proposed.log)  # type: ignore[arg-type]
        return self._emit(request, proposed.checked, proposed.first_output, proposed.log)

    async def propose(self, request: RouteRequest, replies: Replies) -> Proposed:
        """One model call; the contract; at most one format-only repair, held to the identifiers of the first reply
        (see :mod:`routebr_kit.core.contract`, "repair guard"); otherwise the fail-closed reason.  Backend failures
        (exceptions, timeouts, identity mismatches) fail closed too.  Each reply is read once
        (:func:`~routebr_kit.core.contract.read_output`: one snapshot, one parse): the check, the repair guard and
        the record see that one read."""
        first = await replies.ask(self.stage, lambda: self.payload(request))
        assert first is not None  # (only a repair can be missing)
        if first.failure is not None:
            return Proposed(None, None, ContractLog(failure=first.failure), failure_reason(first.failure))
        read = read_output(first.content)
        checked = self.check(read, request)
        output = read.value
        if checked.ok:
            return Proposed(checked, output, None)
        if not self.repair_enabled:
            return Proposed(None, output, ContractLog(checked.errors), ReasonCode.FAIL_CLOSED_INVALID_OUTPUT)
        held = self.repair_hold(read)
        refused = self.repair_anchor(held)
        if refused:  # nothing in the first reply to hold a repair to: fail closed without asking for one
            return Proposed(None, output, ContractLog(checked.errors, False, None, refused),
                            ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED)
        second = await replies.ask(self.stage.repair_stage, lambda: repair_payload(
            self.stage, output, checked.errors, self.payload(request), self.schema))
        if second is None:  # stored outputs without a recorded repair
            return Proposed(None, output, ContractLog(checked.errors), ReasonCode.FAIL_CLOSED_INVALID_OUTPUT)
        if second.failure is not None:
            return Proposed(None, output, ContractLog(checked.errors, True, None, (), second.failure),
                            failure_reason(second.failure))
        repaired_read = read_output(second.content)
        repaired_output = repaired_read.value
        repaired = self.check(repaired_read, request)
        changed = self.repair_guard(held, repaired)
        if changed or not repaired.ok:
            reason = (ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL if changed
                      else ReasonCode.FAIL_CLOSED_INVALID_OUTPUT)
            return Proposed(None, output, ContractLog(checked.errors, True, repaired_output,
                                                      changed or repaired.errors), reason)
        return Proposed(repaired, output, ContractLog(checked.errors, True, repaired_output))

    # The repair rule's three steps (see :mod:`routebr_kit.core.contract`, "repair guard"): what a first reply
    # holds, why no repair can be held to it, and what a repaired reply changed.  A composite router
    # (:mod:`routebr_kit.core.composite`) holds each item of a list to the same rule.
    repair_hold = staticmethod(held_identifiers)
    repair_anchor = staticmethod(anchor_errors)

    def repair_guard(self, held: Any, repaired: Any) -> tuple:
        return guard_repair(held, repaired.as_contract())


# --------------------------------------------------------------------------------------------- the controller


class Controller(OneCallRouter):
    """Deterministic pre-response routing over a closed catalog, a rule program and a request's entity list."""

    __slots__ = ("catalog", "policy", "options", "hashes", "_context")

    def __init__(self, catalog: Catalog, policy: PolicyEngine, options: ControllerOptions | None = None, *,
                 registry_sha256: str = "") -> None:
        if not isinstance(catalog, Catalog) or len(catalog) == 0:
            raise DataError(ErrorCode.EMPTY_CATALOG, "a non-empty Catalog", got=catalog)
        if not isinstance(policy, PolicyEngine):
            raise DataError(ErrorCode.WRONG_TYPE, "a PolicyEngine", got=policy)
        if not policy.covers(catalog.ids):
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "a rule program built for this catalog",
                            got=list(catalog.ids), field="catalog")
        options = options if options is not None else ControllerOptions()
        if not isinstance(options, ControllerOptions):
            raise DataError(ErrorCode.WRONG_TYPE, "ControllerOptions", got=options, field="options")
        self.catalog = catalog
        self.policy = policy
        self.options = options
        self.hashes = AssetHashes(catalog.sha256, policy.sha256, registry_sha256, policy.state_schema.sha256)
        self._context = DecisionContext(self.hashes, options)

    def with_options(self, **changes: Any) -> Controller:
        """A controller over the same assets with some options changed (e.g. ``enforce_state=False``)."""
        return Controller(self.catalog, self.policy, replace(self.options, **changes),
                          registry_sha256=self.hashes.registry)

    # ------------------------------------------------------------------------------------------ Algorithm 1
    async def run(self, request: RouteRequest, replies: Replies) -> Decision:
        """Algorithm 1, top to bottom, for one request (the replies from a backend or from stored outputs).

        A request with a session (or any request, on a program with a temporal rule) has its session checked with
        its state, and the rules read it (:mod:`routebr_kit.core.session`); the decision is then a
        :class:`~routebr_kit.core.decision.SessionDecision`.  Without a session, nothing changes."""
        if request.session is None:
            if not self.policy.temporal:
                return await self._run(request, replies, None, ())
            return await self._run(request, replies, None, (StateViolation(StateErrorCode.MISSING_FIELD, "session"),))
        session, session_errors = check_session(request.session, self.catalog.ids)
        return SessionDecision.of(await self._run(request, replies, session, session_errors), session)

    async def _run(self, request: RouteRequest, replies: Replies, session: Any, session_errors: tuple) -> Decision:
        options, context, request_id = self.options, self._context, request.request_id

        # 1. The runtime state (and session) against its schema, before any model call (skipped under A-state).
        if options.enforce_state:
            violations = self.policy.state_schema.check(request.state.values) + session_errors
            if violations:
                return Decision(request_id, options.fallback, NONE, NONE, ReasonCode.FAIL_CLOSED_INVALID_STATE,
                                context, state_errors=violations)

        # 2. One proposal call; the contract; at most one format-only repair; otherwise fail closed.
        proposed = await self.propose(request, replies)
        if proposed.reason is not None:
            return Decision(request_id, options.fallback, NONE, NONE, proposed.reason, context,
                            first_output=proposed.first_output, log=proposed.log)
        proposal, first_output, log = proposed.checked.proposal, proposed.first_output, proposed.log

        # 3. Commit to the primary action: topk[1:] is never read again.
        action = self.catalog[proposal.action_id]
        object_id = proposal.object_id

        # 4. The state gate: the first rule that applies to the action and holds on the runtime state.
        values = request.state.values if session is None else SessionValues(request.state.values, session)
        rule = self.policy.evaluate(action.action_id, values)
        blocked = rule.decision is not Boundary.ALLOW
        if blocked and options.enforce_state:  # a blocking rule ends the request; the object is not evaluated
            terminal, reason = Terminal.from_boundary(rule.decision), ReasonCode.BOUNDARY_TERMINAL
            resolution = ObjectResolution.NOT_EVALUATED
        else:
            allowed = ReasonCode.DISPATCH_STATE_NOT_ENFORCED if blocked else ReasonCode.DISPATCH_OK

            # 5. The object gate.
            if not action.requires_object:  # object-free: dispatched with NONE
                terminal, reason, resolution = Terminal.DISPATCH, allowed, ObjectResolution.NOT_REQUIRED
            elif not options.enable_grounding:  # A-ground: no grounded object, so the action clarifies
                terminal, reason = Terminal.CLARIFY, ReasonCode.OBJECT_GROUNDING_DISABLED
                resolution, object_id = ObjectResolution.GROUNDING_DISABLED, UNRESOLVED
            elif object_id == UNRESOLVED:  # the object could not be resolved uniquely: ask
                terminal, reason = Terminal.CLARIFY, ReasonCode.OBJECT_UNRESOLVED
                resolution = ObjectResolution.UNRESOLVED
            else:
                terminal, reason, resolution = Terminal.DISPATCH, allowed, ObjectResolution.RESOLVED

        # 6. DISPATCH(action, object) or the bounded terminal, with everything needed to replay it.
        return Decision(request_id, terminal, action.action_id, object_id, reason, context, proposal, rule,
                        resolution, first_output, log)

    # ------------------------------------------------------------------------------------------ payloads, hooks
    def proposal_payload(self, request: RouteRequest) -> dict[str, Any]:
        """What the proposal model sees: request, history, catalog, entities, contract — never state or rules."""
        return {
            "request": request.utterance,
            "history": list(request.history),
            "catalog": self.catalog.prompt_view(),
            "entities": [e.prompt_view() for e in request.candidates],
            "contract": dict(CONTRACT_FLAGS),
        }

    payload = proposal_payload  # (the call protocol's hook)
    stage = Stage.ROUTEBR
    schema = PROPOSAL_SCHEMA

    @property
    def repair_enabled(self) -> bool:
        return self.options.repair

    def check(self, raw: Any, request: RouteRequest) -> ContractResult:
        return check_proposal(raw, self.catalog, request.candidate_index)

    def __repr__(self) -> str:
        return f"Controller({len(self.catalog)} actions, {len(self.policy.rules)} rules, {self.options})"


__all__ = ["CONTRACT_FLAGS", "NO_REPAIR", "BackendReplies", "ContractLog", "Controller", "ControllerOptions",
           "Decision", "DecisionContext", "OneCallRouter", "Outcome", "Proposed", "Replies", "StoredReplies",
           "TraceEvent", "TraceStep", "ask_backend", "failure_reason", "jsonable"]
