"""The RouteBR controller core — the online path only, standard library only.

records → rules → contract → controller, plus the backend seam (calls), errors and hashing.  Loading assets from
files and the benchmark vocabulary live in :mod:`routebr_kit.store`.
"""

from .calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .contract import ContractResult, HeldIdentifiers, check_proposal, guard_repair, held_identifiers, parse_output
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
