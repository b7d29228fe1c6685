"""Baselines B1 Direct and B2 Direct+Guard: one model call predicts the final route itself.

B1 sees the request, history, runtime state, catalog and entities (no rules); B2 also sees the full rule table and
cites the first winning rule.  Their outputs ``{terminal, action_id, object_id, boundary, topk[, rule_ids]}`` are
validated at least as strictly as RouteBR proposals — the same closed-catalog, closed-entity, object-type and
NONE-for-object-free checks (which the published baseline validator lacked) — plus the baseline checks of the
reference (terminal and boundary enums, DISPATCH requires ALLOW, a non-ALLOW terminal equals the boundary, B2's
``rule_ids`` cite known rules).  One format-only repair through the same repair payload, guarded against
changing the action or object; otherwise the configured fail-closed terminal with the published error code
``FAIL_CLOSED_<STAGE>``.  Scoring trusts the baseline's own terminal, as published: the path is the action on
DISPATCH, else ``T_<terminal>``.

B2 diagnostic: :func:`rule_citation` checks whether the cited rule is the true first match of the rule engine.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from ..core.contract import ContractResult, check_action, check_object, check_topk, parse_output

# The controller's private call helpers are shared on purpose: one exception-to-failure policy for every caller.
from ..core.controller import ContractLog, OneCallRouter, Outcome, jsonable
from ..core.errors import ContractError, DataError, ErrorCode, short_repr
from ..core.errors import ContractErrorCode as C
from ..core.records import NONE, Boundary, Catalog, Entity, Proposal, ReasonCode, RouteRequest, Stage, System, Terminal
from ..core.rules import PolicyEngine
from ..store.ledger import PredictionRow

#: Target schema restated to the repair model (B1); B2 adds ``rule_ids``.
DIRECT_SCHEMA: Mapping[str, Any] = {
    "terminal": "DISPATCH|CLARIFY|DEFER|HANDOFF|REJECT",
    "action_id": "one catalog action_id",
    "object_id": "one entities object_id, or UNRESOLVED, or NONE (object-free action)",
    "boundary": "ALLOW|CLARIFY|DEFER|HANDOFF|REJECT",
    "topk": "list of 1-3 unique catalog action_ids, topk[0] == action_id",
}
GUARD_SCHEMA: Mapping[str, Any] = {**DIRECT_SCHEMA, "rule_ids": "[the first winning rule_id]"}

_STAGE_OF = {System.B1_DIRECT: Stage.B1_DIRECT, System.B2_DIRECT_GUARD: Stage.B2_DIRECT_GUARD}


def direct_payload(request: RouteRequest, catalog: Catalog, policy: PolicyEngine | None = None) -> dict[str, Any]:
    """What a baseline model sees: request, history, runtime state, catalog, entities (+ the rule table for B2)."""
    payload: dict[str, Any] = {
        "request": request.utterance,
        "history": list(request.history),
        "runtime_context": request.state.as_dict(),
        "catalog": catalog.prompt_view(),
        "entities": [e.prompt_view() for e in request.candidates],
    }
    if policy is not None:
        payload["rules"] = [r.as_dict() for r in policy.rules]  # already sorted by (priority, rule_id)
    return payload


# --------------------------------------------------------------------------------------------- validation


@dataclass(frozen=True, slots=True)
class DirectRoute:
    """An accepted baseline route."""

    terminal: Terminal
    action_id: str
    object_id: str
    boundary: Boundary
    topk: tuple[str, ...]
    rule_ids: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        out = {"terminal": self.terminal.value, "action_id": self.action_id, "object_id": self.object_id,
               "boundary": self.boundary.value, "topk": list(self.topk)}
        if self.rule_ids:
            out["rule_ids"] = list(self.rule_ids)
        return out


@dataclass(frozen=True, slots=True)
class DirectResult:
    """Outcome of validating one baseline output."""

    route: DirectRoute | None
    errors: tuple[ContractError, ...]
    parsed: Mapping[str, Any] | None

    @property
    def ok(self) -> bool:
        return self.route is not None

    @property
    def codes(self) -> tuple[C, ...]:
        return tuple(e.code for e in self.errors)

    def as_contract(self) -> ContractResult:
        """The action/object view the shared repair guard reads."""
        route = self.route
        proposal = Proposal(route.action_id, route.object_id, route.topk) if route else None
        return ContractResult(proposal, self.errors, self.parsed)


def check_direct(raw: Any, catalog: Catalog, candidates: Mapping[str, Entity],
                 policy: PolicyEngine | None = None) -> DirectResult:
    """Validate one B1 (``policy=None``) or B2 output, collecting every violation.  Never raises."""
    parsed, parse_errors = parse_output(raw)
    if parsed is None:
        return DirectResult(None, parse_errors, None)
    errors: list[ContractError] = []
    terminal = _enum(parsed, "terminal", Terminal, C.TERMINAL_INVALID, errors)
    boundary = _enum(parsed, "boundary", Boundary, C.BOUNDARY_INVALID, errors)
    action = check_action(parsed, catalog, errors)
    topk = check_topk(parsed, catalog, action.action_id if action else None, errors)
    object_id = check_object(parsed, action, candidates, errors)
    if terminal is not None and boundary is not None:
        if terminal is Terminal.DISPATCH and boundary is not Boundary.ALLOW:
            errors.append(ContractError(C.DISPATCH_REQUIRES_ALLOW, "terminal", f"DISPATCH with {boundary.value}"))
        elif boundary is not Boundary.ALLOW and terminal.value != boundary.value:
            errors.append(ContractError(C.TERMINAL_BOUNDARY_MISMATCH, "terminal",
                                        f"{terminal.value} with {boundary.value}"))
    rule_ids: tuple[str, ...] = ()
    if policy is not None:
        cited = parsed.get("rule_ids")
        known = {r.rule_id for r in policy.rules}
        if type(cited) is not list or not cited or any(type(r) is not str or r not in known for r in cited):
            errors.append(ContractError(C.RULE_IDS_UNKNOWN, "rule_ids", short_repr(cited)))
        else:
            rule_ids = tuple(cited)
    if errors:
        return DirectResult(None, tuple(errors), parsed)
    route = DirectRoute(terminal, action.action_id, object_id, boundary, topk, rule_ids)  # type: ignore[arg-type,union-attr]
    return DirectResult(route, (), parsed)


def _enum(parsed: Mapping[str, Any], field: str, kind: type, code: C, errors: list[ContractError]) -> Any:
    value = parsed.get(field)
    if type(value) is str:
        try:
            return kind(value)
        except ValueError:
            pass
    errors.append(ContractError(code, field, short_repr(value)))
    return None


# --------------------------------------------------------------------------------------------- decisions


@dataclass(frozen=True, slots=True)
class DirectDecision(Outcome):
    """A baseline's result for one request (accepted route or fail-closed terminal), with its contract log."""

    request_id: str
    system: System
    terminal: Terminal
    action_id: str
    object_id: str
    boundary: str
    reason: ReasonCode
    route: DirectRoute | None = None
    first_output: Any = None
    log: ContractLog | None = None

    @property
    def stage(self) -> Stage:
        return _STAGE_OF[self.system]

    @property
    def topk(self) -> tuple[str, ...]:
        return self.route.topk if self.route else ()

    @property
    def rule_ids(self) -> tuple[str, ...]:
        return self.route.rule_ids if self.route else ()

    @property
    def valid(self) -> bool:
        return self.route is not None

    @property
    def error_code(self) -> str:
        """The published ``error_code``: ``FAIL_CLOSED_B1_DIRECT`` / ``FAIL_CLOSED_B2_DIRECT_GUARD`` or empty."""
        return f"FAIL_CLOSED_{self.stage.value}" if self.fallback else ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "request_id": self.request_id, "system": self.system.value, "terminal": self.terminal.value,
            "action_id": self.action_id, "object_id": self.object_id, "boundary": self.boundary,
            "final_path": self.final_path, "strict_path": self.strict_path, "reason": self.reason.value,
            "route": None if self.route is None else self.route.as_dict(),
            "first_output": jsonable(self.first_output),
            "repair_output": jsonable(self.repair_output),
            "repair_attempted": self.repair_attempted, "first_pass_valid": self.first_pass_valid,
            "fallback": self.fallback, "error_code": self.error_code,
            "errors": [e.as_dict() for e in self.errors],
            "failure": None if self.failure is None else self.failure.as_dict(),
        }


class DirectBaseline(OneCallRouter):
    """B1 Direct (``guard=False``) or B2 Direct+Guard (``guard=True``) over one catalog and rule program."""

    __slots__ = ("catalog", "policy", "guard", "fallback", "repair")

    def __init__(self, catalog: Catalog, policy: PolicyEngine, *, guard: bool,
                 fallback: Terminal = Terminal.CLARIFY, repair: bool = True) -> None:
        if not isinstance(fallback, Terminal) or fallback is Terminal.DISPATCH:
            raise DataError(ErrorCode.DISPATCH_FALLBACK, "a bounded fail-closed terminal (not DISPATCH)",
                            got=fallback, field="fallback")
        self.catalog, self.policy, self.guard, self.fallback, self.repair = catalog, policy, guard, fallback, repair

    @classmethod
    def for_system(cls, system: System | str, catalog: Catalog, policy: PolicyEngine, **options: Any
                   ) -> DirectBaseline:
        system = System(system)
        if system not in _STAGE_OF:
            raise DataError(ErrorCode.INVALID_VALUE, "b1_direct or b2_direct_guard", got=system.value, field="system")
        return cls(catalog, policy, guard=system is System.B2_DIRECT_GUARD, **options)

    @property
    def system(self) -> System:
        return System.B2_DIRECT_GUARD if self.guard else System.B1_DIRECT

    @property
    def stage(self) -> Stage:
        return _STAGE_OF[self.system]

    @property
    def schema(self) -> Mapping[str, Any]:
        return GUARD_SCHEMA if self.guard else DIRECT_SCHEMA

    def payload(self, request: RouteRequest) -> dict[str, Any]:
        return direct_payload(request, self.catalog, self.policy if self.guard else None)

    def check(self, raw: Any, request: RouteRequest) -> DirectResult:
        return check_direct(raw, self.catalog, request.candidate_index, self.policy if self.guard else None)

    @property
    def repair_enabled(self) -> bool:
        return self.repair

    def _emit(self, request: RouteRequest, checked: DirectResult, first_output: Any,
              log: ContractLog | None) -> DirectDecision:
        route = checked.route
        assert route is not None  # _emit is only reached with an accepted route
        if route.terminal is Terminal.DISPATCH:
            reason = ReasonCode.DISPATCH_OK
        elif route.boundary is Boundary.ALLOW:
            reason = ReasonCode.OBJECT_UNRESOLVED  # allowed, but the model itself asked to clarify
        else:
            reason = ReasonCode.BOUNDARY_TERMINAL
        return DirectDecision(request.request_id, self.system, route.terminal, route.action_id, route.object_id,
                              route.boundary.value, reason, route, first_output, log)

    def _fail_closed(self, request: RouteRequest, reason: ReasonCode, first_output: Any,
                     log: ContractLog) -> DirectDecision:
        return DirectDecision(request.request_id, self.system, self.fallback, NONE, NONE, self.fallback.value,
                              reason, None, first_output, log)

    def __repr__(self) -> str:
        return f"DirectBaseline({self.system.value}, {len(self.catalog)} actions, fallback={self.fallback.value})"


def prediction_from_direct(decision: DirectDecision, *, repeat_id: str = "0", retry_count: int = 0,
                           input_tokens: int = 0, output_tokens: int = 0, latency_ms: float = 0.0) -> PredictionRow:
    """The ledger row of one baseline decision (``pred_boundary`` is the route's terminal view, as published)."""
    return PredictionRow(
        case_id=decision.request_id, system_id=decision.system.value, pred_action=decision.action_id,
        pred_object_id=decision.object_id, pred_boundary=decision.boundary, pred_final_path=decision.final_path,
        topk=decision.topk, valid_json=decision.valid, fallback_used=decision.fallback, repeat_id=repeat_id,
        retry_count=retry_count, input_tokens=input_tokens, output_tokens=output_tokens, latency_ms=latency_ms,
        error_code=decision.error_code, raw_output_path=f"raw/{decision.request_id}.json",
        first_pass_valid=decision.first_pass_valid, repair_count=decision.repair_count, calls=decision.calls,
    )


# --------------------------------------------------------------------------------------------- B2 diagnostic


@dataclass(frozen=True, slots=True)
class RuleCitation:
    """B2's cited rule against the rule engine's first match for the cited action on the request's state."""

    request_id: str
    cited: str
    first_match: str

    @property
    def correct(self) -> bool:
        return self.cited == self.first_match

    def as_dict(self) -> dict[str, Any]:
        return {"cited": self.cited, "first_match": self.first_match, "correct": self.correct}


@dataclass(frozen=True, slots=True)
class CitationSummary:
    """Rule-citation accuracy over the accepted B2 routes (fail-closed rows cite nothing and are excluded)."""

    cited: int
    correct: int

    @property
    def accuracy(self) -> float:
        return self.correct / self.cited if self.cited else 0.0


def rule_citation(decision: DirectDecision, request: RouteRequest, policy: PolicyEngine) -> RuleCitation | None:
    """Is the cited rule the true first match (``PolicyEngine.evaluate``)?  ``None`` when nothing was cited."""
    if not decision.rule_ids:
        return None
    truth = policy.evaluate(decision.action_id, request.state.values).rule_id
    return RuleCitation(decision.request_id, decision.rule_ids[0], truth)


def rule_citation_accuracy(citations: Iterable[RuleCitation | None]) -> CitationSummary:
    given = [c for c in citations if c is not None]
    return CitationSummary(len(given), sum(c.correct for c in given))


__all__ = ["DIRECT_SCHEMA", "GUARD_SCHEMA", "CitationSummary", "DirectBaseline", "DirectDecision", "DirectResult",
           "DirectRoute", "RuleCitation", "check_direct", "direct_payload", "prediction_from_direct",
           "rule_citation", "rule_citation_accuracy"]
