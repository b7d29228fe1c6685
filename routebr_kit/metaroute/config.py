"""Every MetaRoute-Bench constant in one frozen configuration object; the defaults are the published values.

    config = MetaRouteConfig.load("my.yaml")                          # partial YAML, merged onto the defaults
    config = config.with_overrides(["executor.recovery_success=0.9"])  # CLI ``--set`` form
    config = config.with_overrides({"executor.operations.use_tool.failure": 0.1})  # notebook form

Unknown keys, wrong types and out-of-range values raise :class:`~routebr_kit.core.errors.DataError` naming the
dotted key (and the file, when loaded from one).
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_json
from ..store.files import parse_yaml, read_yaml
from .records import RouteAction, Workload

_UNIT = {"range": (0.0, 1.0)}
_NONNEGATIVE = {"range": (0.0, None)}
_POSITIVE_INT = {"range": (1, None)}


def _unit(default: float) -> Any:
    return field(default=default, metadata=_UNIT)


def _nonnegative(default: float) -> Any:
    return field(default=default, metadata=_NONNEGATIVE)


@dataclass(frozen=True, slots=True)
class NeedProfile:
    """Mean operation needs of a workload (before the difficulty shift and the jitter)."""

    decomposition: float = field(metadata=_UNIT)
    tool: float = field(metadata=_UNIT)
    code: float = field(metadata=_UNIT)
    delegation: float = field(metadata=_UNIT)
    verification: float = field(metadata=_UNIT)

    def values(self) -> tuple[float, ...]:
        """The five means in canonical order (D, T, C, G, V) — the order the jitters are drawn in."""
        return (self.decomposition, self.tool, self.code, self.delegation, self.verification)


@dataclass(frozen=True, slots=True)
class WorkloadProfiles:
    data_analysis: NeedProfile = NeedProfile(0.48, 0.34, 0.78, 0.30, 0.62)
    research: NeedProfile = NeedProfile(0.70, 0.76, 0.18, 0.58, 0.66)
    document_processing: NeedProfile = NeedProfile(0.42, 0.64, 0.46, 0.24, 0.74)

    def __getitem__(self, workload: Workload) -> NeedProfile:
        return getattr(self, workload.value)


@dataclass(frozen=True, slots=True)
class GeneratorConfig:
    """The task-profile generator: one ``random.Random(seed)`` stream, six uniforms per task."""

    seed: int = 2026
    tasks_per_workload: int = field(default=60, metadata=_POSITIVE_INT)
    difficulty_levels: int = field(default=4, metadata=_POSITIVE_INT)  # difficulty = 1 + index mod levels
    difficulty_center: float = 2.5  # need shift = (difficulty − center) · difficulty_shift
    difficulty_shift: float = 0.055
    need_jitter: float = _nonnegative(0.25)  # uniform(−jitter, +jitter) per need
    ambiguity_base: float = 0.18  # ambiguity = base + step · (difficulty − 1) + uniform(−jitter, +jitter)
    ambiguity_step: float = 0.14
    ambiguity_jitter: float = _nonnegative(0.12)
    cost_budget: float = field(default=8.0, metadata={"range": (1e-12, None)})
    latency_budget_s: float = field(default=90.0, metadata={"range": (1e-12, None)})
    profiles: WorkloadProfiles = WorkloadProfiles()


@dataclass(frozen=True, slots=True)
class StaticRoutes:
    """The static_workload policy's support operations per workload (``answer`` is appended)."""

    data_analysis: tuple[RouteAction, ...] = (RouteAction.EXECUTE_CODE, RouteAction.VERIFY)
    research: tuple[RouteAction, ...] = (RouteAction.DECOMPOSE, RouteAction.USE_TOOL)
    document_processing: tuple[RouteAction, ...] = (RouteAction.USE_TOOL, RouteAction.VERIFY)

    def __getitem__(self, workload: Workload) -> tuple[RouteAction, ...]:
        return getattr(self, workload.value)


@dataclass(frozen=True, slots=True)
class PolicyConfig:
    """Constants of the eight policies and the adaptive router."""

    fixed_confidence: float = _unit(0.5)  # direct, always_*, random
    static_confidence: float = _unit(0.7)
    static_routes: StaticRoutes = StaticRoutes()
    random_route_lengths: tuple[int, ...] = (1, 2)  # k ~ uniform over these, then k distinct operations
    adaptive_easy_max_difficulty: int = 2  # difficulty ≤ this uses the easy threshold
    adaptive_easy_threshold: float = _unit(0.66)
    adaptive_hard_threshold: float = _unit(0.56)
    adaptive_max_actions: int = field(default=3, metadata=_POSITIVE_INT)


@dataclass(frozen=True, slots=True)
class Operation:
    """Per-operation cost, latency (s) and failure probability, before the difficulty factor."""

    cost: float = field(metadata=_NONNEGATIVE)
    latency_s: float = field(metadata=_NONNEGATIVE)
    failure: float = field(metadata=_UNIT)


@dataclass(frozen=True, slots=True)
class SupportOperation(Operation):
    """A support operation also adds ``benefit · need`` to the success probability."""

    benefit: float = 0.0


@dataclass(frozen=True, slots=True)
class Operations:
    decompose: SupportOperation = SupportOperation(0.55, 3.5, 0.0, 0.19)
    use_tool: SupportOperation = SupportOperation(1.10, 8.0, 0.08, 0.24)
    execute_code: SupportOperation = SupportOperation(1.35, 10.0, 0.07, 0.27)
    delegate: SupportOperation = SupportOperation(1.65, 13.0, 0.10, 0.18)
    verify: SupportOperation = SupportOperation(0.70, 5.0, 0.0, 0.15)
    answer: Operation = Operation(0.65, 4.0, 0.0)

    def __getitem__(self, action: RouteAction) -> Operation:
        return getattr(self, action.value)


@dataclass(frozen=True, slots=True)
class ExecutorConfig:
    """The seeded execution model (spec §6): costs, failures, recovery and the success probability."""

    operations: Operations = Operations()
    difficulty_cost_step: float = 0.08  # factor f = 1 + step · (difficulty − 1) on cost, latency and retries
    base_success: float = 0.69  # p starts at base − difficulty_penalty · (d − 1) − ambiguity_penalty · ambiguity
    difficulty_penalty: float = 0.075
    ambiguity_penalty: float = 0.13
    mismatch_penalty: float = 0.045  # per support operation: − penalty · (1 − need)
    coordination_free_actions: int = field(default=2, metadata={"range": (0, None)})
    coordination_penalty: float = 0.035  # per support operation beyond the free ones
    failure_penalty: float = 0.30  # an unrecovered operation failure
    recovery_success: float = _unit(0.72)  # one retry, if the plan asks for recovery
    recovered_penalty: float = 0.04
    retry_cost: float = _nonnegative(0.55)  # × f
    retry_latency_s: float = _nonnegative(5.0)  # × f
    cost_budget_penalty: float = 0.08
    latency_budget_penalty: float = 0.08
    min_success: float = _unit(0.02)
    max_success: float = _unit(0.98)
    round_digits: int = field(default=4, metadata={"range": (0, None)})  # exported cost and latency


@dataclass(frozen=True, slots=True)
class EvaluationConfig:
    z: float = _nonnegative(1.96)  # seed-level normal interval
    utility_cost_weight: float = 0.025  # U = S − w_K · K − w_L · L
    utility_latency_weight: float = 0.0015
    treatment: str = "adaptive"  # paired comparisons: this policy minus every other one


@dataclass(frozen=True, slots=True)
class MetaRouteConfig:
    """The whole benchmark configuration.  ``MetaRouteConfig()`` is the published setup."""

    generator: GeneratorConfig = GeneratorConfig()
    policies: PolicyConfig = PolicyConfig()
    executor: ExecutorConfig = ExecutorConfig()
    evaluation: EvaluationConfig = EvaluationConfig()

    def __post_init__(self) -> None:
        _check_ranges(self, "")
        if self.executor.min_success > self.executor.max_success:
            raise DataError(ErrorCode.INVALID_VALUE, "min_success ≤ max_success", field="executor.min_success",
                            got=self.executor.min_success)
        if self.generator.tasks_per_workload < self.generator.difficulty_levels:
            raise DataError(ErrorCode.INVALID_VALUE, "at least one task per difficulty level",
                            field="generator.tasks_per_workload", got=self.generator.tasks_per_workload)
        for workload in Workload:
            route = self.policies.static_routes[workload]
            if not route or RouteAction.ANSWER in route or len(set(route)) != len(route):
                raise DataError(ErrorCode.INVALID_VALUE, "distinct support operations (answer is appended)",
                                field=f"policies.static_routes.{workload.value}", got=[a.value for a in route])
        lengths = self.policies.random_route_lengths
        if not lengths or len(set(lengths)) != len(lengths) or not all(1 <= k <= 5 for k in lengths):
            raise DataError(ErrorCode.INVALID_VALUE, "distinct route lengths in 1..5",
                            field="policies.random_route_lengths", got=list(lengths))

    def to_mapping(self) -> dict[str, Any]:
        """Plain nested dict (lists and strings only): the YAML form."""
        return _to_plain(self)

    @property
    def sha256(self) -> str:
        """Content hash of the configuration (for manifests)."""
        return sha256_json(self.to_mapping())

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any], *, file: str | None = None) -> MetaRouteConfig:
        """A configuration from a (possibly partial) nested mapping, merged onto the defaults."""
        if not isinstance(data, Mapping):
            raise DataError(ErrorCode.WRONG_TYPE, "a mapping of configuration sections", file=file, got=data)
        try:
            return _build(cls, _merge(cls().to_mapping(), data, ""), "")
        except DataError as exc:
            raise exc.at(file=file) from None

    @classmethod
    def load(cls, path: str | Path) -> MetaRouteConfig:
        """Read a YAML file; keys it leaves out keep their published defaults."""
        data = read_yaml(path, "a MetaRoute configuration file")
        if data is None:  # an empty file is more likely a mistake than "no overrides"
            raise DataError(ErrorCode.EMPTY_FILE, "a MetaRoute configuration mapping (write {} to keep every "
                            "published constant)", file=str(path))
        return cls.from_mapping(data, file=str(path))

    def with_overrides(self, overrides: Mapping[str, Any] | Iterable[str]) -> MetaRouteConfig:
        """A copy with dotted-key overrides: ``{"executor.recovery_success": 0.9}`` or ``["key=value", …]``.

        String values (the CLI form) are parsed as YAML scalars, so ``0.9``, ``true`` and ``[verify]`` work.
        """
        if not isinstance(overrides, Mapping):
            pairs = {}
            for item in overrides:
                key, sep, text = item.partition("=")
                if not sep or not key.strip():
                    raise DataError(ErrorCode.INVALID_VALUE, "key=value", got=item)
                pairs[key.strip()] = parse_yaml(text, "a YAML value", field=key.strip())
            overrides = pairs
        data = self.to_mapping()
        for dotted, value in overrides.items():
            *parents, leaf = dotted.split(".")
            node, path = data, ""
            for part in parents:
                node, path = _child(node, part, path), f"{path}{part}."
                if not isinstance(node, dict):
                    raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a configuration section", field=dotted)
            _child(node, leaf, path)
            node[leaf] = _merge(node[leaf], value, f"{path}{leaf}") if isinstance(node[leaf], dict) else value
        return _build(type(self), data, "")


def _child(node: dict[str, Any], key: str, path: str) -> Any:
    if key not in node:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"one of {sorted(node)}", field=f"{path}{key}")
    return node[key]


def _merge(base: dict[str, Any], update: Any, path: str) -> dict[str, Any]:
    """``base`` updated recursively with ``update``; every key of ``update`` must exist in ``base``."""
    if not isinstance(update, Mapping):
        raise DataError(ErrorCode.WRONG_TYPE, "a mapping", field=path or None, got=update)
    merged = dict(base)
    for key, value in update.items():
        where = f"{path}.{key}" if path else str(key)
        current = _child(base, key, f"{path}." if path else "")
        merged[key] = _merge(current, value, where) if isinstance(current, dict) else value
    return merged


def _to_plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple):
        return [_to_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.value
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build(cls: type, data: Mapping[str, Any], path: str) -> Any:
    hints = _hints(cls)  # ``data`` is complete: it was merged onto the defaults
    return cls(**{f.name: _coerce(data[f.name], hints[f.name], f"{path}{f.name}") for f in dataclasses.fields(cls)})


def _coerce(value: Any, kind: Any, where: str) -> Any:
    if dataclasses.is_dataclass(kind):
        if not isinstance(value, Mapping):
            raise DataError(ErrorCode.WRONG_TYPE, "a mapping", field=where, got=value)
        return _build(kind, value, f"{where}.")
    if typing.get_origin(kind) is tuple:
        if not isinstance(value, (list, tuple)):
            raise DataError(ErrorCode.WRONG_TYPE, "a list", field=where, got=value)
        item = typing.get_args(kind)[0]
        return tuple(_coerce(v, item, f"{where}[{i}]") for i, v in enumerate(value))
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        try:
            return kind(value)
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, f"one of {[m.value for m in kind]}", field=where,
                            got=value) from None
    if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is str and isinstance(value, str):
        return value
    raise DataError(ErrorCode.WRONG_TYPE, f"a {kind.__name__}", field=where, got=value)


def _check_ranges(obj: Any, path: str) -> None:
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if dataclasses.is_dataclass(value):
            _check_ranges(value, f"{path}{f.name}.")
        elif "range" in f.metadata:
            low, high = f.metadata["range"]
            if (low is not None and value < low) or (high is not None and value > high):
                bounds = f"[{low}, {'∞' if high is None else high}]"
                raise DataError(ErrorCode.INVALID_VALUE, f"a value in {bounds}", field=f"{path}{f.name}", got=value)
