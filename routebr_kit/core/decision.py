"""The controller's records: its options, the immutable :class:`Decision` it emits, and the trace derived from it.

A :class:`Decision` holds what the controller emitted (``DISPATCH(action, object)`` or a bounded terminal), why (a
:class:`~routebr_kit.core.records.ReasonCode`, the winning rule, the object gate's outcome, the runtime-state
violations) and everything needed to replay it (the outputs as read, the contract log, the asset hashes and
options); a :class:`SessionDecision` adds the session a request carried.  :meth:`Decision.as_dict` and
:meth:`Decision.trace` are always UTF-8 encodable: lone surrogates are escaped by the kit's one rule
(:func:`~routebr_kit.core.strict_json.escape_surrogates`), as the writer does.  :class:`Outcome` holds the views a
RouteBR decision shares with a B1/B2 route.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from .calls import BackendFailure
from .contract import MAX_DEPTH, OpaqueValue
from .errors import ContractError, DataError, ErrorCode, short_repr
from .records import (
    AssetHashes,
    ObjectResolution,
    Proposal,
    ReasonCode,
    System,
    Terminal,
    final_path_of,
    strict_path_of,
)
from .rules import Rule
from .session import Session
from .state import StateViolation
from .strict_json import encodable, escape_surrogates, is_finite_number
from .temporal import explain


@dataclass(frozen=True, slots=True)
class ControllerOptions:
    """Configuration of one controller.  ``enforce_state=False`` is A-state, ``enable_grounding=False`` A-ground."""

    fallback: Terminal = Terminal.CLARIFY
    enforce_state: bool = True
    enable_grounding: bool = True
    repair: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.fallback, Terminal):
            raise DataError(ErrorCode.UNKNOWN_ENUM, "a Terminal", got=self.fallback, field="fallback")
        if self.fallback is Terminal.DISPATCH:
            raise DataError(ErrorCode.DISPATCH_FALLBACK, "a bounded fail-closed terminal (not DISPATCH)",
                            got="DISPATCH", field="fallback")

    @classmethod
    def for_system(cls, system: System | str, **overrides: Any) -> ControllerOptions:
        system = System(system)
        if not system.uses_controller:
            raise DataError(ErrorCode.INVALID_VALUE, "routebr, a_state or a_ground", got=system.value,
                            field="system")
        base = {System.A_STATE: {"enforce_state": False}, System.A_GROUND: {"enable_grounding": False}}
        return cls(**{**base.get(system, {}), **overrides})


class TraceStep(str, enum.Enum):
    PROPOSE = "PROPOSE"
    VALIDATE = "VALIDATE"
    REPAIR = "REPAIR"
    COMMIT = "COMMIT"
    STATE_GATE = "STATE_GATE"
    OBJECT_GATE = "OBJECT_GATE"
    EMIT = "EMIT"


@dataclass(frozen=True, slots=True)
class TraceEvent:
    step: TraceStep
    outcome: str
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"step": self.step.value, "outcome": self.outcome, "detail": self.detail}


def escaped(events: Iterable[TraceEvent]) -> tuple[TraceEvent, ...]:
    """The events with every text UTF-8 encodable (:func:`~routebr_kit.core.strict_json.escape_surrogates`)."""
    return tuple(TraceEvent(e.step, escape_surrogates(e.outcome), escape_surrogates(e.detail)) for e in events)


@dataclass(frozen=True, slots=True)
class DecisionContext:
    """What a controller adds to each of its decisions: the asset hashes and its options (shared, not copied)."""

    hashes: AssetHashes
    options: ControllerOptions


@dataclass(frozen=True, slots=True)
class ContractLog:
    """Everything irregular before a proposal was accepted.  Absent (``None``) on a clean first pass."""

    first_errors: tuple[ContractError, ...] = ()
    repair_attempted: bool = False
    repair_output: Any = None
    repair_errors: tuple[ContractError, ...] = ()
    failure: BackendFailure | None = None


class Outcome:
    """Views derived from a routed result's stored facts; shared by RouteBR decisions and the B1/B2 routes.

    Subclasses provide ``terminal``, ``action_id``, ``object_id``, ``reason`` and ``log``.
    """

    __slots__ = ()
    terminal: Terminal
    action_id: str
    object_id: str
    reason: ReasonCode
    log: ContractLog | None

    @property
    def first_errors(self) -> tuple[ContractError, ...]:
        return self.log.first_errors if self.log else ()

    @property
    def repair_attempted(self) -> bool:
        return self.log.repair_attempted if self.log else False

    @property
    def repair_output(self) -> Any:
        return self.log.repair_output if self.log else None

    @property
    def repair_errors(self) -> tuple[ContractError, ...]:
        return self.log.repair_errors if self.log else ()

    @property
    def failure(self) -> BackendFailure | None:
        return self.log.failure if self.log else None

    @property
    def errors(self) -> tuple[ContractError, ...]:
        return self.first_errors + self.repair_errors

    @property
    def dispatched(self) -> bool:
        return self.terminal is Terminal.DISPATCH

    @property
    def final_path(self) -> str:
        """The action on DISPATCH, else ``T_<TERMINAL>`` (the published scoring path)."""
        return final_path_of(self.terminal, self.action_id)

    @property
    def strict_path(self) -> str:
        """``action@object`` on DISPATCH, else ``T_<TERMINAL>`` (the paper's object-aware path)."""
        return strict_path_of(self.terminal, self.action_id, self.object_id)

    @property
    def fallback(self) -> bool:
        return self.reason.fail_closed

    @property
    def first_pass_valid(self) -> bool:
        """The first output was accepted as it came (a clean first pass leaves no contract log)."""
        return self.log is None

    @property
    def repair_count(self) -> int:
        return int(self.repair_attempted)

    @property
    def calls(self) -> int:
        """Model calls made: none when the state failed its schema (checked before the proposal call)."""
        if self.reason is ReasonCode.FAIL_CLOSED_INVALID_STATE:
            return 0
        return 1 + self.repair_count


@dataclass(frozen=True, slots=True)
class Decision(Outcome):
    """The controller's result for one request: what it emitted, why, and everything needed to replay it."""

    request_id: str
    terminal: Terminal
    action_id: str
    object_id: str
    reason: ReasonCode
    context: DecisionContext
    proposal: Proposal | None = None
    rule: Rule | None = None
    object_resolution: ObjectResolution = ObjectResolution.NOT_EVALUATED
    first_output: Any = None
    log: ContractLog | None = None
    state_errors: tuple[StateViolation, ...] = ()  # why the runtime state failed its schema (fail-closed)

    @property
    def hashes(self) -> AssetHashes:
        return self.context.hashes

    @property
    def options(self) -> ControllerOptions:
        return self.context.options

    @property
    def boundary(self) -> str:
        """``ALLOW`` on DISPATCH, else the terminal (the published ``pred_boundary``)."""
        return "ALLOW" if self.terminal is Terminal.DISPATCH else self.terminal.value

    @property
    def valid(self) -> bool:
        """Accepted after at most one repair (the published ``valid_json``)."""
        return self.proposal is not None

    @property
    def rule_id(self) -> str | None:
        return self.rule.rule_id if self.rule else None

    @property
    def topk(self) -> tuple[str, ...]:
        return self.proposal.topk if self.proposal else ()

    @property
    def legacy_reason_codes(self) -> list[str]:
        """The published ``reason_codes`` list (a code plus, for gate outcomes, the rule ID)."""
        codes = [self.reason.legacy]
        if self.rule is not None and self.reason in (ReasonCode.BOUNDARY_TERMINAL, ReasonCode.DISPATCH_OK,
                                                     ReasonCode.DISPATCH_STATE_NOT_ENFORCED):
            codes.append(self.rule.rule_id)
        return codes

    def trace(self) -> tuple[TraceEvent, ...]:
        """The decision as an ordered list of steps (derived from the record, so it always agrees with it; every
        text UTF-8 encodable)."""
        return escaped(_events(self))

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready, UTF-8 encodable record (the outputs as read, lone surrogates escaped; used by receipts
        and reports)."""
        return encodable({
            "request_id": self.request_id,
            "terminal": self.terminal.value,
            "action_id": self.action_id,
            "object_id": self.object_id,
            "final_path": self.final_path,
            "strict_path": self.strict_path,
            "boundary": self.boundary,
            "reason": self.reason.value,
            "legacy_reason_codes": self.legacy_reason_codes,
            "rule": None if self.rule is None else {"rule_id": self.rule.rule_id, "decision": self.rule.decision.value,
                                                    "priority": self.rule.priority, "version": self.rule.version},
            "gate_enforced": self.options.enforce_state,
            "grounding_enabled": self.options.enable_grounding,
            "object_resolution": self.object_resolution.value,
            "proposal": None if self.proposal is None else self.proposal.as_dict(),
            "first_output": jsonable(self.first_output),
            "repair_output": jsonable(self.repair_output),
            "repair_attempted": self.repair_attempted,
            "first_pass_valid": self.first_pass_valid,
            "fallback": self.fallback,
            "errors": [e.as_dict() for e in self.errors],
            "failure": None if self.failure is None else self.failure.as_dict(),
            "state_errors": [v.as_dict() for v in self.state_errors],
            "hashes": self.hashes.as_dict(),
            "trace": [t.as_dict() for t in self.trace()],
        })


@dataclass(frozen=True, slots=True)
class SessionDecision(Decision):
    """A decision made for a request with a session: the :class:`Decision` plus the (validated) session it read
    (``None`` when the session was invalid), whose trace shows each temporal predicate of the deciding rule with
    the events that decided it.  A request without a session gets a plain :class:`Decision`, as before sessions."""

    session: Session | None = None

    @classmethod
    def of(cls, decision: Decision, session: Session | None) -> SessionDecision:
        """``decision`` as a :class:`SessionDecision` carrying ``session``."""
        return cls(**{f.name: getattr(decision, f.name) for f in fields(Decision)}, session=session)

    def temporal_evidence(self) -> list[tuple[str, str]]:
        """``(outcome, detail)`` for each temporal predicate of the deciding rule."""
        if self.rule is None or not self.rule.condition.temporal:
            return []
        return explain(self.rule.condition.temporal, self.session)

    def trace(self) -> tuple[TraceEvent, ...]:
        events = list(Decision.trace(self))
        extra = escaped(TraceEvent(TraceStep.STATE_GATE, "temporal: " + outcome, detail)
                        for outcome, detail in self.temporal_evidence())
        if extra:
            at = next(i for i, e in enumerate(events) if e.step is TraceStep.STATE_GATE) + 1
            events[at:at] = extra
        return tuple(events)

    def as_dict(self) -> dict[str, Any]:
        out = Decision.as_dict(self)
        out["trace"] = [t.as_dict() for t in self.trace()]
        out["session"] = None if self.session is None else self.session.as_dict()
        return encodable(out)


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-ready copy of a model output: mappings, sequences and finite scalars kept; an
    :class:`~routebr_kit.core.contract.OpaqueValue` as its text; anything else, a non-finite float, or a container
    nested deeper than :data:`~routebr_kit.core.contract.MAX_DEPTH` levels below the top becomes a bounded repr
    string.  Never raises, so every record serialises (:func:`~routebr_kit.core.strict_json.encodable` then makes
    its strings encodable)."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if type(value) is OpaqueValue:
        return value.text
    if isinstance(value, float):
        return value if is_finite_number(value) else repr(value)
    if isinstance(value, (Mapping, list, tuple)):
        if _depth >= MAX_DEPTH:
            return f"<{type(value).__name__} nested deeper than {MAX_DEPTH}>"
        if isinstance(value, Mapping):
            return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
        return [jsonable(v, _depth + 1) for v in value]
    return short_repr(value, 1000)


def _events(d: Decision) -> list[TraceEvent]:
    events: list[TraceEvent] = []
    if d.state_errors:
        detail = "; ".join(v.describe() for v in d.state_errors)
        events.append(TraceEvent(TraceStep.STATE_GATE, "state breaks its schema; rules not evaluated", detail))
        events.append(TraceEvent(TraceStep.EMIT, d.final_path, d.reason.value))
        return events
    if d.failure is not None and not d.repair_attempted:
        events.append(TraceEvent(TraceStep.PROPOSE, "backend failure", f"{d.failure.kind.value}: {d.failure.message}"))
    else:
        events.append(TraceEvent(TraceStep.PROPOSE, "output received", short_repr(d.first_output, 120)))
        codes = ", ".join(e.code.value for e in d.first_errors)
        events.append(TraceEvent(TraceStep.VALIDATE, "invalid" if d.first_errors else "valid", codes))
    if d.repair_attempted:
        if d.failure is not None:
            events.append(TraceEvent(TraceStep.REPAIR, "backend failure",
                                     f"{d.failure.kind.value}: {d.failure.message}"))
        else:
            codes = ", ".join(e.code.value for e in d.repair_errors)
            events.append(TraceEvent(TraceStep.REPAIR, "rejected" if d.repair_errors else "accepted", codes))
    elif d.repair_errors:  # refused before the call: nothing in the first reply to hold a repair to
        events.append(TraceEvent(TraceStep.REPAIR, "not attempted (unanchored)",
                                 "; ".join(f"{e.field}: {e.got}" for e in d.repair_errors)))
    if d.proposal is not None:
        rest = list(d.proposal.topk[1:])
        events.append(TraceEvent(TraceStep.COMMIT, d.proposal.action_id,
                                 f"object {d.proposal.object_id}; lower-ranked {rest} are diagnostic only"))
    if d.rule is not None:
        enforced = "enforced" if d.options.enforce_state else "recorded, not enforced (A-state)"
        events.append(TraceEvent(TraceStep.STATE_GATE, f"{d.rule.rule_id} -> {d.rule.decision.value}",
                                 f"priority {d.rule.priority}, {d.rule.version}; {d.rule.condition.describe()}; "
                                 f"{enforced}"))
    if d.object_resolution is not ObjectResolution.NOT_EVALUATED:
        events.append(TraceEvent(TraceStep.OBJECT_GATE, d.object_resolution.value, d.object_id))
    emitted = f"DISPATCH({d.action_id}, {d.object_id})" if d.dispatched else d.final_path
    events.append(TraceEvent(TraceStep.EMIT, emitted, d.reason.value))
    return events


__all__ = ["ContractLog", "ControllerOptions", "Decision", "DecisionContext", "Outcome", "SessionDecision",
           "TraceEvent", "TraceStep", "jsonable"]
