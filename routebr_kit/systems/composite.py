"""The B1/B2 one-call baselines for composite requests (issue 32, item 3).

One call proposes an ordered list of one to three baseline routes under the composite contract
(:mod:`routebr_kit.core.composite`): each item is what B1 (resp. B2) answers for one request —
``{terminal, action_id, object_id, boundary[, rule_ids]}``, ``topk`` optional — validated by the baseline's own
check (:func:`~routebr_kit.systems.baselines.check_direct`), one format-only repair held item by item, otherwise
the baseline's fail-closed terminal for the whole request.  Each accepted item becomes the baseline's route as for
a single request (its own terminal trusted, as published); the request's mode (``atomic`` / ``independent``)
assembles them exactly as for RouteBR (:func:`~routebr_kit.core.composite_decision.assemble`).  The baselines read
no session, so earlier items change nothing for later ones.  Kit request protocol only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.composite import COMPOSITE_FLAGS, CompositeMode, CompositeResult, check_composite, composite_schema
from ..core.composite_decision import CompositeRouter
from ..core.errors import DataError, ErrorCode
from ..core.records import Catalog, RouteRequest, Stage, System, Terminal
from ..core.rules import PolicyEngine
from ..prompts.published import Protocol
from .baselines import DirectBaseline, DirectDecision, DirectResult


class CompositeBaseline(CompositeRouter):
    """B1 or B2 for composite requests, over a kit-protocol :class:`DirectBaseline`."""

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


__all__ = ["CompositeBaseline"]
