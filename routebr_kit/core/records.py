"""Typed records of the RouteBR online path.

Everything here is a frozen dataclass or a ``str``-valued enum, so records compare by value, hash where their
fields allow, and serialise without ``__dict__`` tricks.  Human-readable messages exist for compatibility with
the published artifact; code and tests rely on the enum members.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from sys import intern
from types import MappingProxyType
from typing import Any

from .errors import DataError, ErrorCode
from .hashing import sha256_json

#: Object sentinels of the proposal contract.
UNRESOLVED = "UNRESOLVED"
NONE = "NONE"
OBJECT_SENTINELS = frozenset({UNRESOLVED, NONE})
#: The catalog token that makes an action object-free ("contains NONE ⇒ object-free").
OBJECT_FREE_TYPE = "NONE"


def _interned(value: Any) -> Any:
    """``sys.intern(value)`` for an exact ``str`` (identifiers: table lookups then match by identity); anything
    else unchanged (it is validated elsewhere)."""
    return intern(value) if type(value) is str else value


class Boundary(str, enum.Enum):
    """Decision of a boundary rule."""

    ALLOW = "ALLOW"
    CLARIFY = "CLARIFY"
    DEFER = "DEFER"
    HANDOFF = "HANDOFF"
    REJECT = "REJECT"


class Terminal(str, enum.Enum):
    """What the controller emits: ``DISPATCH(action, object)`` or one bounded terminal."""

    DISPATCH = "DISPATCH"
    CLARIFY = "CLARIFY"
    DEFER = "DEFER"
    HANDOFF = "HANDOFF"
    REJECT = "REJECT"

    @classmethod
    def from_boundary(cls, boundary: Boundary) -> Terminal:
        return cls.DISPATCH if boundary is Boundary.ALLOW else cls(boundary.value)


class Stage(str, enum.Enum):
    """A model-call stage.  Values are the published stage / prompt keys."""

    ROUTEBR = "ROUTEBR"
    REPAIR_ROUTEBR = "REPAIR_ROUTEBR"
    B1_DIRECT = "B1_DIRECT"
    B2_DIRECT_GUARD = "B2_DIRECT_GUARD"
    REPAIR_B1_DIRECT = "REPAIR_B1_DIRECT"
    REPAIR_B2_DIRECT_GUARD = "REPAIR_B2_DIRECT_GUARD"
    # (kit, issue 32) the composite contract: one call proposes an ordered list of 1-3 items
    ROUTEBR_COMPOSITE = "ROUTEBR_COMPOSITE"
    REPAIR_ROUTEBR_COMPOSITE = "REPAIR_ROUTEBR_COMPOSITE"
    B1_DIRECT_COMPOSITE = "B1_DIRECT_COMPOSITE"
    REPAIR_B1_DIRECT_COMPOSITE = "REPAIR_B1_DIRECT_COMPOSITE"
    B2_DIRECT_GUARD_COMPOSITE = "B2_DIRECT_GUARD_COMPOSITE"
    REPAIR_B2_DIRECT_GUARD_COMPOSITE = "REPAIR_B2_DIRECT_GUARD_COMPOSITE"

    @property
    def is_repair(self) -> bool:
        return self.value.startswith("REPAIR_")

    @property
    def is_composite(self) -> bool:
        return self.value.endswith("_COMPOSITE")

    @property
    def single(self) -> Stage:
        """The single-item answering stage this stage (a repair, a composite, or both) belongs to."""
        return Stage(self.value.removeprefix("REPAIR_").removesuffix("_COMPOSITE"))

    @property
    def repair_stage(self) -> Stage:
        """The repair stage that belongs to this (non-repair) stage."""
        if self.is_repair:
            raise ValueError(f"{self.value} is already a repair stage")
        return Stage("REPAIR_" + self.value)


class System(str, enum.Enum):
    """Evaluated systems; values are the published ``system_id`` strings."""

    ROUTEBR = "routebr"
    A_STATE = "a_state"
    A_GROUND = "a_ground"
    B1_DIRECT = "b1_direct"
    B2_DIRECT_GUARD = "b2_direct_guard"

    @property
    def uses_controller(self) -> bool:
        return self in (System.ROUTEBR, System.A_STATE, System.A_GROUND)


class ReasonCode(str, enum.Enum):
    """Why a decision ended where it did.  ``legacy`` gives the published reason string."""

    DISPATCH_OK = "DISPATCH_OK"
    DISPATCH_STATE_NOT_ENFORCED = "DISPATCH_STATE_NOT_ENFORCED"  # A-state: a blocking rule matched, gate bypassed
    BOUNDARY_TERMINAL = "BOUNDARY_TERMINAL"
    OBJECT_UNRESOLVED = "OBJECT_UNRESOLVED"
    OBJECT_GROUNDING_DISABLED = "OBJECT_GROUNDING_DISABLED"  # A-ground: resolution switched off
    FAIL_CLOSED_INVALID_OUTPUT = "FAIL_CLOSED_INVALID_OUTPUT"
    FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL = "FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL"
    FAIL_CLOSED_BACKEND_ERROR = "FAIL_CLOSED_BACKEND_ERROR"
    FAIL_CLOSED_BACKEND_TIMEOUT = "FAIL_CLOSED_BACKEND_TIMEOUT"
    FAIL_CLOSED_MODEL_IDENTITY = "FAIL_CLOSED_MODEL_IDENTITY"
    # kit additions (issue 12): no repair can be held to the first reply; the runtime state breaks its schema
    FAIL_CLOSED_REPAIR_UNANCHORED = "FAIL_CLOSED_REPAIR_UNANCHORED"
    FAIL_CLOSED_INVALID_STATE = "FAIL_CLOSED_INVALID_STATE"

    @property
    def fail_closed(self) -> bool:
        return self.value.startswith("FAIL_CLOSED_")

    @property
    def legacy(self) -> str:
        """The reason string of the published controller (several kit codes share one)."""
        return _LEGACY_REASON[self]


_LEGACY_REASON = {
    ReasonCode.DISPATCH_OK: "PRIMARY_BOUNDARY_OK",
    ReasonCode.DISPATCH_STATE_NOT_ENFORCED: "PRIMARY_BOUNDARY_OK",
    ReasonCode.BOUNDARY_TERMINAL: "PRIMARY_BOUNDARY_TERMINAL",
    ReasonCode.OBJECT_UNRESOLVED: "PRIMARY_OBJECT_UNRESOLVED",
    ReasonCode.OBJECT_GROUNDING_DISABLED: "PRIMARY_OBJECT_UNRESOLVED",
    ReasonCode.FAIL_CLOSED_INVALID_OUTPUT: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_BACKEND_ERROR: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_BACKEND_TIMEOUT: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_MODEL_IDENTITY: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_REPAIR_UNANCHORED: "FAIL_CLOSED_ROUTEBR",
    ReasonCode.FAIL_CLOSED_INVALID_STATE: "FAIL_CLOSED_ROUTEBR",
}


class ObjectResolution(str, enum.Enum):
    """Outcome of the object gate (``NOT_EVALUATED`` when the decision ended before it)."""

    RESOLVED = "RESOLVED"
    UNRESOLVED = "UNRESOLVED"
    NOT_REQUIRED = "NOT_REQUIRED"
    GROUNDING_DISABLED = "GROUNDING_DISABLED"
    NOT_EVALUATED = "NOT_EVALUATED"


# --------------------------------------------------------------------------------------------- frozen assets


@dataclass(frozen=True, slots=True)
class CatalogAction:
    """One entry of the closed service catalog."""

    action_id: str
    service_name: str
    description: str
    required_object_types: tuple[str, ...] = ()
    allowed_boundaries: tuple[Boundary, ...] = tuple(Boundary)
    interface_version: str = "v1"

    @property
    def requires_object(self) -> bool:
        """True unless the type list is empty or names ``NONE`` (the published rule)."""
        return bool(self.required_object_types) and OBJECT_FREE_TYPE not in self.required_object_types

    def permits(self, object_type: str) -> bool:
        return object_type in self.required_object_types


@dataclass(frozen=True, slots=True)
class Entity:
    """A registered object the request may refer to (a closed-list candidate)."""

    object_id: str
    object_type: str
    display_name: str
    aliases: tuple[str, ...] = ()
    attributes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}), compare=False)

    def __post_init__(self) -> None:
        if self.object_id in OBJECT_SENTINELS or not self.object_id:
            raise DataError(ErrorCode.INVALID_VALUE, "a registered object ID (not empty, UNRESOLVED or NONE)",
                            got=self.object_id, field="object_id")

    def prompt_view(self) -> dict[str, Any]:
        """The four fields a model sees."""
        return {
            "object_id": self.object_id,
            "object_type": self.object_type,
            "display_name": self.display_name,
            "aliases": list(self.aliases),
        }


@dataclass(frozen=True, slots=True)
class RuntimeState:
    """Runtime predicates of one request (``runtime_context_json``).  Read-only: the values are copied at
    construction (a proxy over someone else's dict is copied too), so a verdict about them cannot go stale."""

    values: Mapping[str, Any]

    def __post_init__(self) -> None:
        # Field names interned: the state gate's lookups then match the schema's names by identity.
        data = {_interned(k): v for k, v in dict(self.values).items()}
        object.__setattr__(self, "values", MappingProxyType(data))

    def get(self, key: str, default: Any = None) -> Any:
        return self.values.get(key, default)

    def replace(self, **changes: Any) -> RuntimeState:
        return RuntimeState({**self.values, **changes})

    def as_dict(self) -> dict[str, Any]:
        return dict(self.values)


@dataclass(frozen=True, slots=True)
class RouteRequest:
    """One customer request as the controller sees it: text, history, state and the closed entity list."""

    request_id: str
    utterance: str
    history: tuple[str, ...]
    state: RuntimeState
    candidates: tuple[Entity, ...]
    #: The candidates by ``object_id`` (read-only; IDs interned, like a ledger's, so lookups match by identity).
    candidate_index: Mapping[str, Entity] = field(init=False, repr=False, compare=False)
    #: Optional session (issue 32): the request's time, its attributes and the earlier events — a
    #: :class:`~routebr_kit.core.session.Session` or its JSON form, checked by the controller before anything else.
    #: ``None``: decided exactly as without sessions.
    session: Any = None

    def __post_init__(self) -> None:
        index = {_interned(e.object_id): e for e in self.candidates}
        object.__setattr__(self, "candidate_index", MappingProxyType(index))

    def with_state(self, state: RuntimeState) -> RouteRequest:
        return RouteRequest(self.request_id, self.utterance, self.history, state, self.candidates, self.session)

    def with_session(self, session: Any) -> RouteRequest:
        return RouteRequest(self.request_id, self.utterance, self.history, self.state, self.candidates, session)


@dataclass(frozen=True, slots=True)
class Proposal:
    """An accepted proposal: the primary action, its object, and the ranked candidates (``topk[0] == action``)."""

    action_id: str
    object_id: str
    topk: tuple[str, ...]

    def as_dict(self) -> dict[str, Any]:
        return {"action_id": self.action_id, "object_id": self.object_id, "topk": list(self.topk)}


@dataclass(frozen=True, slots=True)
class AssetHashes:
    """SHA-256 of the frozen assets a decision was made under."""

    catalog: str
    rules: str
    registry: str = ""
    state_schema: str = ""  # set only for a state schema read from a file (the derived one follows the rules)

    def as_dict(self) -> dict[str, str]:
        out = {"catalog": self.catalog, "rules": self.rules, "registry": self.registry}
        if self.state_schema:
            out["state_schema"] = self.state_schema
        return out


def final_path_of(terminal: Terminal, action_id: str) -> str:
    """The published scoring path: the action on DISPATCH, else ``T_<TERMINAL>``."""
    return action_id if terminal is Terminal.DISPATCH else "T_" + terminal.value


def strict_path_of(terminal: Terminal, action_id: str, object_id: str) -> str:
    """The paper's object-aware path: ``action@object`` on DISPATCH, else ``T_<TERMINAL>``."""
    return f"{action_id}@{object_id}" if terminal is Terminal.DISPATCH else "T_" + terminal.value


#: The nine labels of the final-path vocabulary (five actions, four bounded terminals).
TERMINAL_PATHS = tuple("T_" + t.value for t in Terminal if t is not Terminal.DISPATCH)


# --------------------------------------------------------------------------------------------- collections


@dataclass(frozen=True, slots=True)
class Catalog:
    """The closed service catalog (ordered as loaded) with its content hash."""

    actions: tuple[CatalogAction, ...]
    sha256: str = ""
    index: Mapping[str, CatalogAction] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", MappingProxyType({_interned(a.action_id): a for a in self.actions}))
        if not self.sha256:
            object.__setattr__(self, "sha256", sha256_json([_action_view(a) for a in self.actions]))

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(a.action_id for a in self.actions)

    def __contains__(self, action_id: object) -> bool:
        return type(action_id) is str and action_id in self.index

    def __getitem__(self, action_id: str) -> CatalogAction:
        return self.index[action_id]

    def __len__(self) -> int:
        return len(self.actions)

    def __iter__(self):
        return iter(self.actions)

    def prompt_view(self) -> list[dict[str, Any]]:
        """The four fields a model sees, in catalog order."""
        return [_action_view(a) for a in self.actions]


def _action_view(action: CatalogAction) -> dict[str, Any]:
    return {
        "action_id": action.action_id,
        "service_name": action.service_name,
        "description": action.description,
        "required_object_types": list(action.required_object_types),
    }


@dataclass(frozen=True, slots=True)
class Registry:
    """The entity registry: every object a request's candidate list may draw from."""

    entities: tuple[Entity, ...]
    sha256: str = ""
    index: Mapping[str, Entity] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "index", MappingProxyType({e.object_id: e for e in self.entities}))
        if not self.sha256:
            view = [{**e.prompt_view(), "attributes": dict(e.attributes)} for e in self.entities]
            object.__setattr__(self, "sha256", sha256_json(view))

    def __contains__(self, object_id: object) -> bool:
        return type(object_id) is str and object_id in self.index

    def __getitem__(self, object_id: str) -> Entity:
        return self.index[object_id]

    def __len__(self) -> int:
        return len(self.entities)

    def __iter__(self):
        return iter(self.entities)
