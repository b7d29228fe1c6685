"""The RouteBR controller core — the online path only, standard library only.

records → state → rules → contract (one read of an output, three phases, the repair guard) → decision (the
records a controller emits) → controller (Algorithm 1, step by step, on live or stored replies),
plus the backend seam (calls), errors, strict JSON and hashing.  Loading assets from
files and the benchmark vocabulary live in :mod:`routebr_kit.store`.
"""

from .calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .contract import (
    ContractResult,
    HeldIdentifiers,
    OpaqueValue,
    check_proposal,
    guard_repair,
    held_identifiers,
    parse_output,
    read_output,
    snapshot,
)
from .controller import NO_REPAIR, Controller, ControllerOptions, Decision, TraceEvent, TraceStep
from .errors import ContractError, ContractErrorCode, DataError, ErrorCode, KitError
from .records import (
    NONE,
    UNRESOLVED,
    AssetHashes,
    Boundary,
    Catalog,
    CatalogAction,
    Entity,
    ObjectResolution,
    Proposal,
    ReasonCode,
    Registry,
    RouteRequest,
    RuntimeState,
    Stage,
    System,
    Terminal,
)
from .rules import Condition, Operator, PolicyEngine, Predicate, Rule, derive_state_schema, rule
from .state import StateErrorCode, StateField, StateSchema, StateType, StateViolation
from .strict_json import JsonIssue, StrictJsonError, strict_loads

__all__ = [name for name in dir() if not name.startswith("_")]
