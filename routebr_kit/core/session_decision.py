"""A decision made for a request with a session: the :class:`~routebr_kit.core.decision.Decision` plus the
session it read, whose trace shows each temporal predicate of the deciding rule with the events that decided it.

A request without a session gets a plain :class:`~routebr_kit.core.decision.Decision`, as before sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from .decision import Decision, TraceEvent, TraceStep
from .records import RouteRequest
from .session import Session, check_session
from .state import StateErrorCode, StateViolation
from .strict_json import encodable, escape_surrogates
from .temporal import explain


@dataclass(frozen=True, slots=True)
class SessionDecision(Decision):
    """A :class:`Decision` with the (validated) session it was made on (``None`` when the session was invalid)."""

    session: Session | None = None

    def temporal_evidence(self) -> list[tuple[str, str]]:
        """``(outcome, detail)`` for each temporal predicate of the deciding rule."""
        if self.rule is None or not self.rule.condition.temporal:
            return []
        return explain(self.rule.condition.temporal, self.session)

    def trace(self) -> tuple[TraceEvent, ...]:
        events = list(Decision.trace(self))
        extra = [TraceEvent(TraceStep.STATE_GATE, "temporal: " + escape_surrogates(outcome), escape_surrogates(detail))
                 for outcome, detail in self.temporal_evidence()]
        if extra:
            at = next(i for i, e in enumerate(events) if e.step is TraceStep.STATE_GATE) + 1
            events[at:at] = extra
        return tuple(events)

    def as_dict(self) -> dict[str, Any]:
        out = Decision.as_dict(self)
        out["trace"] = [{"step": t.step.value, "outcome": t.outcome, "detail": t.detail} for t in self.trace()]
        out["session"] = None if self.session is None else self.session.as_dict()
        return encodable(out)


def with_session(decision: Decision, session: Session | None) -> SessionDecision:
    """``decision`` as a :class:`SessionDecision` carrying ``session``."""
    return SessionDecision(**{f.name: getattr(decision, f.name) for f in fields(Decision)}, session=session)


def session_of(request: RouteRequest, catalog_ids: Any) -> tuple[Session | None, tuple[StateViolation, ...]]:
    """The request's validated session and the violations (a missing session: ``session: MISSING_FIELD``)."""
    if request.session is None:
        return None, (StateViolation(StateErrorCode.MISSING_FIELD, "session"),)
    return check_session(request.session, catalog_ids)


__all__ = ["SessionDecision", "session_of", "with_session"]
