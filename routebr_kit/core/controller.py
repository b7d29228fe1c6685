"""The RouteBR controller — the paper's Algorithm 1.

First the runtime state is checked against its schema (a violation ends in the configured fail-closed terminal
before any model call, ``FAIL_CLOSED_INVALID_STATE``).  Then one proposal call; the contract (at most one
format-only repair, held to the identifiers the first reply exposes and not requested when it exposes no single
primary action — ``FAIL_CLOSED_REPAIR_UNANCHORED`` — then the configured fail-closed terminal); commitment to the
primary action (``topk[1:]`` is diagnostic only); the state gate (first-match rules on runtime state); the
object gate (``UNRESOLVED`` → CLARIFY); and finally
``DISPATCH(action, object)`` or a bounded terminal, as an immutable :class:`Decision` with a replayable trace.

The same algorithm runs three ways: :meth:`Controller.aroute` (async, with a backend), :meth:`Controller.route`
(sync wrapper) and :meth:`Controller.decide` (stored outputs, no backend — replay and the A-state / A-ground
interventions).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from .aio import run_sync
from .calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .contract import (
    MAX_DEPTH,
    PROPOSAL_SCHEMA,
    ContractResult,
    anchor_errors,
    check_proposal,
    clean_proposal,
    guard_repair,
    held_identifiers,
    repair_payload,
)
from .errors import ContractError, DataError, ErrorCode, short_repr
from .records import (
    NONE,
    UNRESOLVED,
    AssetHashes,
    Boundary,
    Catalog,
    CatalogAction,
    ObjectResolution,
    Proposal,
    ReasonCode,
    RouteRequest,
    Stage,
    System,
    Terminal,
    final_path_of,
    record_builder,
    strict_path_of,
)
from .rules import PolicyEngine, Rule, RuleChain, first_match
from .state import StateViolation
from .strict_json import is_finite_number

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
    FailureKind.MODEL_IDENTITY: ReasonCode.FAIL_CLOSED_MODEL_IDENTITY,
}


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
        """The decision as an ordered list of steps (derived from the record, so it always agrees with it)."""
        return _trace_of(self)

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready record (raw outputs kept; used by receipts and reports)."""
        return {
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
            "trace": [{"step": t.step.value, "outcome": t.outcome, "detail": t.detail} for t in self.trace()],
        }


#: ``Decision(...)`` at plain-attribute speed, for the hot path (see :func:`~routebr_kit.core.records.record_builder`).
_new_decision = record_builder(Decision)


#: What the state and object gates emit once the winning rule is known: ``(terminal, reason, object resolution,
#: object override)`` — the override replaces the proposed object (``UNRESOLVED`` under A-ground) or is ``None``.
_Emission = tuple[Terminal, ReasonCode, ObjectResolution, "str | None"]


def gate_emissions(rule: Rule, requires_object: bool, options: ControllerOptions) -> tuple[_Emission, _Emission]:
    """Algorithm 1's state gate then object gate, for a committed action (``requires_object``) whose winning rule is
    ``rule``: what is emitted for a resolved object (index 0) and for ``UNRESOLVED`` (index 1).

    The gates' one statement.  A controller evaluates it once per (action, rule) when it is built; each decision
    then indexes the result with ``object_id == UNRESOLVED``.
    """
    blocked = rule.decision is not Boundary.ALLOW
    if blocked and options.enforce_state:  # a blocking rule ends the request; the object is not evaluated
        stop = (Terminal.from_boundary(rule.decision), ReasonCode.BOUNDARY_TERMINAL, ObjectResolution.NOT_EVALUATED,
                None)
        return stop, stop
    ok = ReasonCode.DISPATCH_STATE_NOT_ENFORCED if blocked else ReasonCode.DISPATCH_OK
    if not requires_object:  # the object gate: object-free actions dispatch with NONE
        free = (Terminal.DISPATCH, ok, ObjectResolution.NOT_REQUIRED, None)
        return free, free
    if not options.enable_grounding:  # A-ground: no grounded object, so the object-bearing action clarifies
        off = (Terminal.CLARIFY, ReasonCode.OBJECT_GROUNDING_DISABLED, ObjectResolution.GROUNDING_DISABLED, UNRESOLVED)
        return off, off
    return ((Terminal.DISPATCH, ok, ObjectResolution.RESOLVED, None),
            (Terminal.CLARIFY, ReasonCode.OBJECT_UNRESOLVED, ObjectResolution.UNRESOLVED, None))


@dataclass(frozen=True, slots=True)
class _ActionPlan:
    """What Algorithm 1 needs about one catalog action, compiled once from the frozen assets and the options when a
    controller is built (never from a request)."""

    chain: RuleChain  # the action's rules, first-match order, ending in an unconditional one
    emissions: dict[str, tuple[_Emission, _Emission]]  # by rule ID: :func:`gate_emissions`
    #: The state gate as a table — for every valid state's schema key, the winning rule and its emissions — where
    #: the policy compiles one (:meth:`PolicyEngine.decision_table`) and the gate is enforced (the key is read only
    #: from a state that passed the schema); ``None``: :func:`first_match` walks ``chain``.
    table: dict[tuple, tuple[Rule, tuple[_Emission, _Emission]]] | None

    @classmethod
    def compile(cls, action: CatalogAction, policy: PolicyEngine, options: ControllerOptions) -> _ActionPlan:
        chain = policy.chain(action.action_id)
        emissions = {entry[-1].rule_id: gate_emissions(entry[-1], action.requires_object, options)
                     for entry in chain}
        table = policy.decision_table(action.action_id) if options.enforce_state else None
        return cls(chain, emissions, None if table is None else
                   {key: (rule, emissions[rule.rule_id]) for key, rule in table.items()})


class OneCallRouter:
    """Algorithm 1's call protocol, shared by the RouteBR controller and the B1/B2 baselines.

    One model call; if its output breaks the contract, at most one format-only repair, whose output may not change
    the identifiers the first pass proposed; otherwise the configured fail-closed terminal.  Backend failures
    (exceptions, timeouts, identity mismatches) end fail-closed too.  Subclasses say what is sent (:meth:`payload`),
    how an output is checked (:meth:`check`, returning a result with ``ok``, ``errors`` and ``as_contract()``),
    and what an accepted or a failed case becomes (:meth:`_emit`, :meth:`_fail_closed`).
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

    def _precheck(self, request: RouteRequest) -> Any:
        """A decision reached before any model output is read (the controller's state-schema check), or None."""
        return None

    async def aroute(self, request: RouteRequest, backend: Backend) -> Any:
        """The protocol with a live (or simulated, or scripted) backend."""
        early = self._precheck(request)
        if early is not None:
            return early
        payload = self.payload(request)
        first = await ask_backend(backend, ModelCall(request.request_id, self.stage, payload))
        if first.failure is not None:
            return self._fail_closed(request, failure_reason(first.failure), None, ContractLog(failure=first.failure))
        checked = self.check(first.content, request)
        if checked.ok or not self.repair_enabled:
            return self._accept(request, first.content, checked)
        held = held_identifiers(first.content)
        refused = anchor_errors(held)
        if refused:
            return self._unanchored(request, first.content, checked, refused)
        call = ModelCall(request.request_id, self.stage.repair_stage,
                         repair_payload(self.stage, first.content, checked.errors, payload, self.schema))
        second = await ask_backend(backend, call)
        if second.failure is not None:
            return self._fail_closed(request, failure_reason(second.failure), first.content,
                                     ContractLog(checked.errors, True, None, (), second.failure))
        return self._after_repair(request, first.content, checked, second.content, held)

    def route(self, request: RouteRequest, backend: Backend) -> Any:
        """Synchronous :meth:`aroute` (also safe inside Jupyter's running event loop)."""
        return run_sync(self.aroute(request, backend))

    def decide(self, request: RouteRequest, first_output: Any, repair_output: Any = NO_REPAIR) -> Any:
        """The protocol on stored outputs, without a backend.

        ``first_output`` is the first-pass model output (a JSON string or an already-parsed object);
        ``repair_output`` the recorded repair output, if there was one.  An invalid first pass with no recorded
        repair fails closed.
        """
        early = self._precheck(request)
        if early is not None:
            return early
        checked = self.check(first_output, request)
        if checked.ok or not self.repair_enabled:
            return self._accept(request, first_output, checked)
        held = held_identifiers(first_output)
        refused = anchor_errors(held)
        if refused:
            return self._unanchored(request, first_output, checked, refused)
        if repair_output is NO_REPAIR:
            return self._accept(request, first_output, checked)
        return self._after_repair(request, first_output, checked, repair_output, held)

    def _accept(self, request: RouteRequest, first_output: Any, checked: Any) -> Any:
        if not checked.ok:
            return self._fail_closed(request, ReasonCode.FAIL_CLOSED_INVALID_OUTPUT, first_output,
                                     ContractLog(checked.errors))
        return self._emit(request, checked, first_output, None)

    def _unanchored(self, request: RouteRequest, first_output: Any, checked: Any,
                    refused: tuple[ContractError, ...]) -> Any:
        """No repair can be held to the first reply: fail closed without asking for one."""
        return self._fail_closed(request, ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED, first_output,
                                 ContractLog(checked.errors, False, None, refused))

    def _after_repair(self, request: RouteRequest, first_output: Any, first: Any, repaired_output: Any,
                      held: Any = None) -> Any:
        repaired = self.check(repaired_output, request)
        changed = guard_repair(held if held is not None else first_output, repaired.as_contract())
        if changed or not repaired.ok:
            reason = (ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL if changed
                      else ReasonCode.FAIL_CLOSED_INVALID_OUTPUT)
            return self._fail_closed(request, reason, first_output,
                                     ContractLog(first.errors, True, repaired_output, changed or repaired.errors))
        return self._emit(request, repaired, first_output, ContractLog(first.errors, True, repaired_output))


class Controller(OneCallRouter):
    """Deterministic pre-response routing over a closed catalog, a rule program and a request's entity list."""

    __slots__ = ("catalog", "policy", "options", "hashes", "_context", "_gate_schema", "_plans")

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
        # The state-schema check belongs to the state gate: A-state (enforce_state=False) skips both.
        self._gate_schema = policy.state_schema if options.enforce_state else None
        self._plans = {a.action_id: _ActionPlan.compile(a, policy, options) for a in catalog}

    def with_options(self, **changes: Any) -> Controller:
        """A controller over the same assets with some options changed (e.g. ``enforce_state=False``)."""
        return Controller(self.catalog, self.policy, replace(self.options, **changes),
                          registry_sha256=self.hashes.registry)

    # ------------------------------------------------------------------------------------------ payloads
    def proposal_payload(self, request: RouteRequest) -> dict[str, Any]:
        """What the proposal model sees: request, history, catalog, entities, contract — never state or rules."""
        return {
            "request": request.utterance,
            "history": list(request.history),
            "catalog": self.catalog.prompt_view(),
            "entities": [e.prompt_view() for e in request.candidates],
            "contract": dict(CONTRACT_FLAGS),
        }

    # ------------------------------------------------------------------------------------------ protocol hooks
    stage = Stage.ROUTEBR
    schema = PROPOSAL_SCHEMA

    @property
    def repair_enabled(self) -> bool:
        return self.options.repair

    def payload(self, request: RouteRequest) -> dict[str, Any]:
        return self.proposal_payload(request)

    def check(self, raw: Any, request: RouteRequest) -> ContractResult:
        return check_proposal(raw, self.catalog, request.candidate_index)

    def decide(self, request: RouteRequest, first_output: Any, repair_output: Any = NO_REPAIR) -> Decision:
        """Algorithm 1 on stored outputs, without a backend (see :meth:`OneCallRouter.decide`).

        The common case — a parsed output that meets the contract as it is — is decided here in one pass: the
        contract's clean-case test (:func:`~routebr_kit.core.contract.clean_proposal`, which accepts exactly what
        the three phases accept), the state-schema check, then :meth:`_commit`.  Every other output takes the
        general protocol.  Both give the same :class:`Decision` (property-tested against a plain reference
        implementation in ``tests/test_decide_fast_path.py``).  Nothing is cached across calls: every call
        validates the output, checks the state and evaluates the rules (by the compiled table where there is one).
        """
        if type(first_output) is dict:
            proposal = clean_proposal(first_output, self.catalog, request._candidates)
            if proposal is not None:
                schema = self._gate_schema  # the state-schema check (skipped under A-state, like the gate)
                if schema is None:
                    return self._commit(request, proposal, first_output, None, None)
                data = request.state._data
                key = schema.key(data)
                if key is None:
                    violations = schema.check(data)
                    if violations:
                        return self._invalid_state(request, violations)
                return self._commit(request, proposal, first_output, None, key)
        return super().decide(request, first_output, repair_output)

    def _precheck(self, request: RouteRequest) -> Decision | None:
        """The state gate's schema check, before the proposal call: a state that breaks the runtime-state schema
        ends in the fail-closed terminal (the rule engine is not asked).  Skipped under A-state, like the gate."""
        if self._gate_schema is None:
            return None
        violations = self._gate_schema.check(request.state._data)
        return self._invalid_state(request, violations) if violations else None

    def _invalid_state(self, request: RouteRequest, violations: tuple[StateViolation, ...]) -> Decision:
        return Decision(request.request_id, self.options.fallback, NONE, NONE, ReasonCode.FAIL_CLOSED_INVALID_STATE,
                        self._context, state_errors=violations)

    def _emit(self, request: RouteRequest, checked: ContractResult, first_output: Any,
              log: ContractLog | None) -> Decision:
        # (the state passed :meth:`_precheck`; the general path walks the rule chain)
        return self._commit(request, checked.proposal, first_output, log, None)  # type: ignore[arg-type]

    def _commit(self, request: RouteRequest, proposal: Proposal, first_output: Any, log: ContractLog | None,
                key: tuple | None) -> Decision:
        """Primary commitment, state gate, object gate.  ``key`` is the state's schema key once the state passed
        the schema (then the table, where there is one, gives the rule), or ``None`` (then :func:`first_match`
        walks the chain).  ``proposal.topk[1:]`` is never consulted."""
        action_id, object_id = proposal.action_id, proposal.object_id
        plan = self._plans[action_id]  # primary commitment: only the primary action's plan is read
        table = plan.table
        if table is not None and key is not None:  # the state gate, compiled
            rule, emissions = table[key]
        else:  # the state gate: first-match rules on runtime state
            rule = first_match(plan.chain, request.state._data)
            emissions = plan.emissions[rule.rule_id]
        terminal, reason, resolution, override = emissions[object_id == UNRESOLVED]  # the object gate
        return _new_decision(request.request_id, terminal, action_id, override or object_id, reason, self._context,
                             proposal, rule, resolution, first_output, log)

    def _fail_closed(self, request: RouteRequest, reason: ReasonCode, first_output: Any,
                     log: ContractLog) -> Decision:
        return Decision(request.request_id, self.options.fallback, NONE, NONE, reason, self._context,
                        first_output=first_output, log=log)

    def __repr__(self) -> str:
        return f"Controller({len(self.catalog)} actions, {len(self.policy.rules)} rules, {self.options})"


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


def jsonable(value: Any, _depth: int = 0) -> Any:
    """A JSON-ready copy of a raw model output: mappings, sequences and finite scalars kept; anything else, a
    non-finite float, or a container nested deeper than :data:`~routebr_kit.core.contract.MAX_DEPTH` levels below
    the top becomes a bounded repr string.  Never raises, so every record serialises."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return value if is_finite_number(value) else repr(value)
    if isinstance(value, (Mapping, list, tuple)):
        if _depth >= MAX_DEPTH:
            return f"<{type(value).__name__} nested deeper than {MAX_DEPTH}>"
        if isinstance(value, Mapping):
            return {str(k): jsonable(v, _depth + 1) for k, v in value.items()}
        return [jsonable(v, _depth + 1) for v in value]
    return short_repr(value, 1000)


def _trace_of(d: Decision) -> tuple[TraceEvent, ...]:
    events: list[TraceEvent] = []
    if d.state_errors:
        detail = "; ".join(v.describe() for v in d.state_errors)
        events.append(TraceEvent(TraceStep.STATE_GATE, "state breaks its schema; rules not evaluated", detail))
        events.append(TraceEvent(TraceStep.EMIT, d.final_path, d.reason.value))
        return tuple(events)
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
    return tuple(events)
