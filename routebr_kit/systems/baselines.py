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

**Two acceptance rules**, chosen by the request protocol (:class:`~routebr_kit.prompts.Protocol`):
:func:`check_direct` (``kit``, the default, described above) and :func:`check_direct_published` (``published``):
the published validator exactly — no object-type check, no NONE-for-object-free check, each check's published
message — and, as published, the one repair call for every rejected reply with no guard on what it changes.  The
published rules accept what the published run accepted: FLIP-0048's B2 route ``A4_SUPPORT_RESPONSE`` with object
``SSE:510880`` (an object on an object-free action), which the kit's rules send to repair.  Whatever the kit
accepts, the published rules accept too, with the same route (property-tested).

Composite requests: :class:`CompositeBaseline`.  B2 diagnostic: :func:`rule_citation` checks whether the cited rule
is the true first match of the rule engine.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..core.composite import COMPOSITE_FLAGS, CompositeMode, CompositeResult, check_composite, composite_schema
from ..core.composite_decision import CompositeRouter
from ..core.contract import ContractResult, check_action, check_object, check_topk, parse_output, repair_payload
from ..core.controller import ContractLog, OneCallRouter, Outcome, Replies, failure_reason, jsonable
from ..core.errors import ContractError, DataError, ErrorCode, short_repr
from ..core.errors import ContractErrorCode as C
from ..core.records import NONE, Boundary, Catalog, Entity, Proposal, ReasonCode, RouteRequest, Stage, System, Terminal
from ..core.rules import PolicyEngine
from ..core.strict_json import encodable
from ..prompts.published import Protocol, direct_errors
from ..prompts.published import parse as published_parse
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


def check_direct_published(raw: Any, catalog: Catalog, candidates: Mapping[str, Entity],
                           policy: PolicyEngine | None = None) -> DirectResult:
    """The published B1 (``policy=None``) / B2 acceptance rule; errors carry the kit's codes.  Never raises.

    The published error strings (what a published repair request carries) are
    :func:`routebr_kit.prompts.published.direct_errors`; this wraps the same function, so the two cannot drift.
    """
    parsed, parse_errors = published_parse(raw)
    if parsed is None:
        return DirectResult(None, tuple(e.error for e in parse_errors), None)
    rules = None if policy is None else [r.rule_id for r in policy.rules]
    errors = direct_errors(parsed, catalog.ids, candidates, rules)
    if errors:
        return DirectResult(None, tuple(e.error for e in errors), parsed)
    cited = tuple(parsed["rule_ids"]) if policy is not None else ()
    route = DirectRoute(Terminal(parsed["terminal"]), parsed["action_id"], parsed["object_id"],
                        Boundary(parsed["boundary"]), tuple(parsed["topk"]), cited)
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
        """A JSON-ready, UTF-8 encodable record (lone surrogates escaped, as in a RouteBR decision's)."""
        return encodable({
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
        })


class DirectBaseline(OneCallRouter):
    """B1 Direct (``guard=False``) or B2 Direct+Guard (``guard=True``) over one catalog and rule program.

    ``protocol`` selects the acceptance rule: the kit's (:func:`check_direct`, repairs guarded against changing the
    action or object) or the published one (:func:`check_direct_published`, repairs unguarded, as published).
    """

    __slots__ = ("catalog", "policy", "guard", "fallback", "repair", "protocol")

    def __init__(self, catalog: Catalog, policy: PolicyEngine, *, guard: bool,
                 fallback: Terminal = Terminal.CLARIFY, repair: bool = True,
                 protocol: Protocol | str = Protocol.KIT) -> None:
        if not isinstance(fallback, Terminal) or fallback is Terminal.DISPATCH:
            raise DataError(ErrorCode.DISPATCH_FALLBACK, "a bounded fail-closed terminal (not DISPATCH)",
                            got=fallback, field="fallback")
        self.catalog, self.policy, self.guard, self.fallback, self.repair = catalog, policy, guard, fallback, repair
        self.protocol = Protocol.parse(protocol)

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
        validate = check_direct if self.protocol is Protocol.KIT else check_direct_published
        return validate(raw, self.catalog, request.candidate_index, self.policy if self.guard else None)

    async def run(self, request: RouteRequest, replies: Replies) -> DirectDecision:
        """The kit protocol keeps :class:`OneCallRouter`'s repair rule.  The published one (``protocol=published``):
        every rejected first reply gets its one repair call (no anchoring precondition), and the repaired reply is
        only re-validated (no guard on what it changes)."""
        if self.protocol is Protocol.KIT:
            return await super().run(request, replies)
        first = await replies.ask(self.stage, lambda: self.payload(request))
        assert first is not None  # (only a repair can be missing)
        if first.failure is not None:
            return self._fail_closed(request, failure_reason(first.failure), None, ContractLog(failure=first.failure))
        output, checked = first.content, self.check(first.content, request)
        second = None
        if not checked.ok and self.repair:  # the published repair payload
            second = await replies.ask(self.stage.repair_stage, lambda: repair_payload(
                self.stage, output, checked.errors, self.payload(request), self.schema))
        if second is None:  # accepted, no repair, or none recorded
            if not checked.ok:
                return self._fail_closed(request, ReasonCode.FAIL_CLOSED_INVALID_OUTPUT, output,
                                         ContractLog(checked.errors))
            return self._emit(request, checked, output, None)
        if second.failure is not None:
            return self._fail_closed(request, failure_reason(second.failure), output,
                                     ContractLog(checked.errors, True, None, (), second.failure))
        repaired = self.check(second.content, request)
        log = ContractLog(checked.errors, True, second.content, repaired.errors)
        if not repaired.ok:
            return self._fail_closed(request, ReasonCode.FAIL_CLOSED_INVALID_OUTPUT, output, log)
        return self._emit(request, repaired, output, log)

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
        return (f"DirectBaseline({self.system.value}, {len(self.catalog)} actions, fallback={self.fallback.value}, "
                f"protocol={self.protocol.value})")


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


# --------------------------------------------------------------------------------------------- composite requests


class CompositeBaseline(CompositeRouter):
    """B1 or B2 for composite requests (issue 32, item 3), over a kit-protocol :class:`DirectBaseline`.

    One call proposes an ordered list of one to three baseline routes under the composite contract
    (:mod:`routebr_kit.core.composite`): each item is what B1 (resp. B2) answers for one request, ``topk``
    optional, validated by the baseline's own check, one format-only repair held item by item, otherwise the
    baseline's fail-closed terminal for the whole request.  Each accepted item becomes the baseline's route as for
    a single request (its own terminal trusted, as published); the request's mode (``atomic`` / ``independent``)
    assembles them exactly as for RouteBR (:func:`~routebr_kit.core.composite_decision.assemble`).  The baselines
    read no session, so earlier items change nothing for later ones.  Kit request protocol only.
    """

    __slots__ = ("baseline",)

    def __init__(self, baseline: DirectBaseline, mode: CompositeMode | str = CompositeMode.ATOMIC) -> None:
        if not isinstance(baseline, DirectBaseline) or baseline.protocol is not Protocol.KIT:
            raise DataError(ErrorCode.INVALID_VALUE, "a DirectBaseline of the kit request protocol",
                            got=baseline, field="baseline")
        self.baseline = baseline
        self.mode = CompositeMode.parse(mode)

    @classmethod
    def for_system(cls, system: System | str, catalog: Catalog, policy: PolicyEngine,
                   mode: CompositeMode | str = CompositeMode.ATOMIC, **options: Any) -> CompositeBaseline:
        return cls(DirectBaseline.for_system(system, catalog, policy, **options), mode)

    @property
    def stage(self) -> Stage:  # type: ignore[override]
        return Stage(self.baseline.stage.value + "_COMPOSITE")

    @property
    def schema(self) -> Mapping[str, Any]:  # type: ignore[override]
        return composite_schema(self.baseline.schema)

    @property
    def system(self) -> str:  # type: ignore[override]
        return self.baseline.system.value

    @property
    def fallback_terminal(self) -> Terminal:  # type: ignore[override]
        return self.baseline.fallback

    @property
    def repair_enabled(self) -> bool:
        return self.baseline.repair

    def payload(self, request: RouteRequest) -> dict[str, Any]:
        return {**self.baseline.payload(request), "contract": dict(COMPOSITE_FLAGS)}

    def check(self, raw: Any, request: RouteRequest) -> CompositeResult:
        return check_composite(raw, lambda output: self.baseline.check(output, request))

    async def decide_item(self, request: RouteRequest, result: DirectResult, output: dict[str, Any],
                          carry: Any) -> tuple[DirectDecision, Any]:
        return self.baseline._emit(request, result, output, None), carry

    def __repr__(self) -> str:
        return f"CompositeBaseline({self.mode.value}, {self.baseline!r})"


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


def rule_citation(decision: DirectDecision, request: RouteRequest, policy: PolicyEngine) -> RuleCitation | None:
    """Is the cited rule the true first match (``PolicyEngine.evaluate``)?  ``None`` when nothing was cited."""
    if not decision.rule_ids:
        return None
    truth = policy.evaluate(decision.action_id, request.state.values).rule_id
    return RuleCitation(decision.request_id, decision.rule_ids[0], truth)


__all__ = ["DIRECT_SCHEMA", "GUARD_SCHEMA", "CompositeBaseline", "DirectBaseline", "DirectDecision", "DirectResult",
           "DirectRoute", "RuleCitation", "check_direct", "check_direct_published", "direct_payload",
           "prediction_from_direct", "rule_citation"]
