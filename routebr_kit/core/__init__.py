"""The RouteBR controller core — standard library only.

records → rules → contract → controller, plus loaders (assets) and the backend seam (calls).
"""

from .assets import Assets, assets_beside, load_assets, load_cases, load_catalog, load_registry, load_rules, read_csv
from .calls import Backend, BackendFailure, FailureKind, ModelCall, ModelReply
from .contract import ContractResult, check_proposal, guard_repair, parse_output
from .controller import NO_REPAIR, Controller, ControllerOptions, Decision, TraceEvent, TraceStep
from .errors import ContractError, ContractErrorCode, DataError, ErrorCode, KitError
from .records import (
                     NONE,
                     UNRESOLVED,
                     AssetHashes,
                     Boundary,
                     Case,
                     Catalog,
                     CatalogAction,
                     Entity,
                     Gold,
                     Language,
                     ObjectDifficulty,
                     ObjectResolution,
                     Proposal,
                     ReasonCode,
                     Registry,
                     RouteRequest,
                     RuntimeState,
                     Split,
                     Stage,
                     System,
                     Terminal,
)
from .rules import Condition, Operator, PolicyEngine, Predicate, Rule, rule

__all__ = [name for name in dir() if not name.startswith("_")]
