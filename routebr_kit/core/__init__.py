"""The RouteBR controller core — the online path only, standard library only.

records → state → rules → contract (one read of an output, three phases, the repair guard) → decision (the
records a controller emits) → controller (Algorithm 1, step by step, on live or stored replies),
plus the backend seam (calls), errors, strict JSON and hashing.  Loading assets from
files and the benchmark vocabulary live in :mod:`routebr_kit.store`.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "calls": "Backend BackendFailure FailureKind ModelCall ModelReply",
    "contract": "ContractResult HeldIdentifiers OpaqueValue check_proposal guard_repair held_identifiers "
        "parse_output read_output snapshot",
    "controller": "Controller ControllerOptions Decision NO_REPAIR TraceEvent TraceStep",
    "errors": "ContractError ContractErrorCode DataError ErrorCode KitError",
    "records": "AssetHashes Boundary Catalog CatalogAction Entity NONE ObjectResolution Proposal ReasonCode "
        "Registry RouteRequest RuntimeState Stage System Terminal UNRESOLVED",
    "rules": "Condition Operator PolicyEngine Predicate Rule derive_state_schema rule",
    "state": "StateErrorCode StateField StateSchema StateType StateViolation",
    "strict_json": "JsonIssue StrictJsonError strict_loads",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
