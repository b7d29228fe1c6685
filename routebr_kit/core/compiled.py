"""Algorithm 1 compiled for the common case — the speed behind :meth:`Controller.decide
<routebr_kit.core.controller.Controller.decide>`.

:mod:`routebr_kit.core.controller` states the controller as the paper does, step by step.  This module holds what a
controller compiles from its frozen assets and options when it is built, so that a *clean* stored output — a plain
``dict`` with exactly the three contract keys that meets the contract as it is — is decided in a few lookups:

* :meth:`DecisionTables.clean_proposal` — the contract's three phases for that case (accepts exactly what
  :func:`~routebr_kit.core.contract.check_proposal` accepts when the output has exactly the three keys);
* :class:`ActionPlan` — per catalog action, its object contract, its rule chain, what the gates emit once the
  winning rule is known (:func:`gate_emissions`) and, where the runtime-state schema admits a small finite set of
  states, the state gate as a table (:meth:`~routebr_kit.core.rules.PolicyEngine.decision_table`);
* :func:`new_proposal` and :func:`new_decision` — the records, built with plain attribute stores.

:meth:`DecisionTables.decide` returns ``None`` for every other case (an output with errors or extra keys, a state
that breaks its schema), and the controller then runs Algorithm 1 step by step.  Both give the same
:class:`~routebr_kit.core.decision.Decision`, property-tested in ``tests/test_decide_fast_path.py`` and
``tests/test_compiled_gates.py``.  Nothing is cached between calls: every call validates the output, checks the
state and takes the rule from the table (or walks the chain).

Standard library only; no generated code.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from sys import intern
from types import MappingProxyType
from typing import Any

from .contract import MAX_TOPK
from .decision import ContractLog, ControllerOptions, Decision, DecisionContext, Outcome
from .records import (
    NONE,
    UNRESOLVED,
    Boundary,
    Catalog,
    CatalogAction,
    Entity,
    ObjectResolution,
    Proposal,
    ReasonCode,
    RouteRequest,
    Terminal,
)
from .rules import PolicyEngine, Rule, RuleChain, first_match

# --------------------------------------------------------------------------------------------- the gates, as data

#: What the state and object gates emit once the winning rule is known: ``(terminal, reason, object resolution,
#: object override)`` — the override replaces the proposed object (``UNRESOLVED`` under A-ground) or is ``None``.
Emission = tuple[Terminal, ReasonCode, ObjectResolution, "str | None"]


def gate_emissions(rule: Rule, requires_object: bool, options: ControllerOptions) -> tuple[Emission, Emission]:
    """Algorithm 1's state gate then object gate, for a committed action (``requires_object``) whose winning rule is
    ``rule``: what is emitted for a resolved object (index 0) and for ``UNRESOLVED`` (index 1).

    The gates of :meth:`Controller.run <routebr_kit.core.controller.Controller.run>` as a table entry: evaluated once
    per (action, rule) when a controller is built; each decision then indexes the result with
    ``object_id == UNRESOLVED``.
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
class ActionPlan:
    """What Algorithm 1 needs about one catalog action, compiled once from the frozen assets and the options when a
    controller is built (never from a request)."""

    requires_object: bool
    object_types: frozenset[str]
    chain: RuleChain  # the action's rules, first-match order, ending in an unconditional one
    emissions: Mapping[str, tuple[Emission, Emission]]  # by rule ID: :func:`gate_emissions`
    #: The state gate as a table — for every valid state's schema key, the winning rule and its emissions — where
    #: the policy compiles one (:meth:`PolicyEngine.decision_table`) and the gate is enforced (the key is read only
    #: from a state that passed the schema); ``None``: :func:`first_match` walks ``chain``.
    table: Mapping[tuple, tuple[Rule, tuple[Emission, Emission]]] | None

    @classmethod
    def compile(cls, action: CatalogAction, policy: PolicyEngine, options: ControllerOptions) -> ActionPlan:
        chain = policy.chain(action.action_id)
        emissions = {entry[-1].rule_id: gate_emissions(entry[-1], action.requires_object, options)
                     for entry in chain}
        table = policy.decision_table(action.action_id) if options.enforce_state else None
        return cls(action.requires_object, frozenset(action.required_object_types), chain,
                   MappingProxyType(emissions), None if table is None else
                   MappingProxyType({key: (rule, emissions[rule.rule_id]) for key, rule in table.items()}))


# --------------------------------------------------------------------------------------------- record builders
#
# A frozen dataclass's ``__init__`` stores each field through ``object.__setattr__`` (its own ``__setattr__``
# refuses), one call per field.  The builders below fill a *draft* — a plain class with the record's base and the
# record's slots, hence the same memory layout — with ordinary attribute stores, then re-type it as the record
# (``__class__`` assignment, which the language allows between layout-compatible classes).  The result is an
# ordinary record: ``type(r) is Proposal``, equal to and as frozen as one built by ``Proposal(...)`` (tested).
# The drafts' slots are checked against the records' fields when this module is imported.


class _ProposalDraft:
    __slots__ = ("action_id", "object_id", "topk")


class _DecisionDraft(Outcome):
    __slots__ = ("request_id", "terminal", "action_id", "object_id", "reason", "context", "proposal", "rule",
                 "object_resolution", "first_output", "log", "state_errors")


def _check_draft(draft: type, record: type) -> None:
    names = tuple(f.name for f in fields(record))
    if draft.__slots__ != names or record.__slots__ != names or draft.__bases__ != record.__bases__:
        raise TypeError(f"{draft.__name__} no longer mirrors {record.__name__}: update its slots and builder")


_check_draft(_ProposalDraft, Proposal)
_check_draft(_DecisionDraft, Decision)


def new_proposal(action_id: str, object_id: str, topk: tuple[str, ...]) -> Proposal:
    """``Proposal(action_id, object_id, topk)``, built with plain attribute stores."""
    draft = _ProposalDraft()
    draft.action_id = action_id
    draft.object_id = object_id
    draft.topk = topk
    draft.__class__ = Proposal  # type: ignore[assignment]
    return draft  # type: ignore[return-value]


def new_decision(request_id: str, terminal: Terminal, action_id: str, object_id: str, reason: ReasonCode,
                 context: DecisionContext, proposal: Proposal | None, rule: Rule | None,
                 object_resolution: ObjectResolution, first_output: Any, log: ContractLog | None) -> Decision:
    """``Decision(...)`` of a dispatched or gated proposal (no state errors), built with plain attribute stores."""
    draft = _DecisionDraft()
    draft.request_id = request_id
    draft.terminal = terminal
    draft.action_id = action_id
    draft.object_id = object_id
    draft.reason = reason
    draft.context = context
    draft.proposal = proposal
    draft.rule = rule
    draft.object_resolution = object_resolution
    draft.first_output = first_output
    draft.log = log
    draft.state_errors = ()
    draft.__class__ = Decision  # type: ignore[assignment]
    return draft  # type: ignore[return-value]


# --------------------------------------------------------------------------------------------- the tables


class DecisionTables:
    """One controller's compiled clean case: its actions' plans, its state schema (``None`` under A-state, which
    skips the check like the rest of the state gate) and the context its decisions carry."""

    __slots__ = ("plans", "_by_id", "_schema", "_context")

    def __init__(self, catalog: Catalog, policy: PolicyEngine, options: ControllerOptions,
                 context: DecisionContext) -> None:
        by_id = {intern(a.action_id): ActionPlan.compile(a, policy, options) for a in catalog}
        self._by_id = by_id  # (IDs interned, like a ledger's: lookups match by identity)
        #: Every action's :class:`ActionPlan`, by action ID (read-only).
        self.plans: Mapping[str, ActionPlan] = MappingProxyType(by_id)
        self._schema = policy.state_schema if options.enforce_state else None
        self._context = context

    def clean_proposal(self, output: Any, candidates: Mapping[str, Entity]) -> Proposal | None:
        """The proposal of a clean output — an exact ``dict`` of exactly the three contract keys, exact ``str``
        values and an exact ``list`` of exact ``str`` for ``topk``, that meets the contract — or ``None`` for every
        other output.  Only identity tests and exact-``str`` comparisons run, so reading it runs no code of the
        output's own: it is its own single read (:func:`~routebr_kit.core.contract.snapshot` copies it unchanged)."""
        if type(output) is not dict or len(output) != 3:
            return None
        for key in output:  # exact keys first: a ``str`` subclass key could compare by code of its own
            if type(key) is not str:
                return None
        try:
            action_id = output["action_id"]
            topk = output["topk"]
            object_id = output["object_id"]
        except KeyError:  # three keys, but not these three
            return None
        if type(action_id) is not str or type(topk) is not list or type(object_id) is not str:
            return None
        plans = self._by_id
        plan = plans.get(action_id)
        size = len(topk)
        if plan is None or size == 0 or size > MAX_TOPK or type(topk[0]) is not str or topk[0] != action_id:
            return None
        if size > 1:  # the lower-ranked IDs (MAX_TOPK is 3): catalog strings, distinct from those before them
            second = topk[1]
            if type(second) is not str or second not in plans or second == action_id:
                return None
            if size == 3:
                third = topk[2]
                if type(third) is not str or third not in plans or third == action_id or third == second:
                    return None
        if plan.requires_object:
            if object_id != UNRESOLVED:
                entity = candidates.get(object_id)
                if entity is None or entity.object_type not in plan.object_types:
                    return None
        elif object_id != NONE:
            return None
        return new_proposal(action_id, object_id, tuple(topk))

    def decide(self, request: RouteRequest, output: Any) -> Decision | None:
        """Algorithm 1 for a clean stored ``output`` (see :meth:`clean_proposal`) on a valid state; ``None``
        otherwise.  The decision records ``output`` itself: read without running any code of its own, an exact dict
        of exact values is its own single read (:func:`~routebr_kit.core.contract.snapshot` would give an equal
        copy), and no field of the decision refers to it."""
        proposal = self.clean_proposal(output, request.candidate_index)
        if proposal is None:
            return None
        plan = self._by_id[proposal.action_id]  # primary commitment: only the primary action's plan is read
        values = request.state.values
        schema = self._schema
        key = None
        if schema is not None:  # the state-schema check: a key proves the state valid, else the full check
            key = schema.key(values)
            if key is None and schema.check(values):
                return None  # Algorithm 1 fails closed on it (before it reads the output)
        table = plan.table
        if table is not None and key is not None:  # the state gate, compiled
            rule, emissions = table[key]
        else:  # the state gate: first-match rules on runtime state
            rule = first_match(plan.chain, values)
            emissions = plan.emissions[rule.rule_id]
        object_id = proposal.object_id
        terminal, reason, resolution, override = emissions[object_id == UNRESOLVED]  # the object gate
        return new_decision(request.request_id, terminal, proposal.action_id, override or object_id, reason,
                            self._context, proposal, rule, resolution, output, None)


if MAX_TOPK != 3:  # pragma: no cover - clean_proposal spells out the checks for three
    raise TypeError("DecisionTables.clean_proposal checks at most three topk entries")

__all__ = ["ActionPlan", "DecisionTables", "Emission", "gate_emissions", "new_decision", "new_proposal"]
