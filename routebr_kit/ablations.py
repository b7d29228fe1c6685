"""Ablations from stored proposals — no new model calls.

Every variant replays the *same* recorded RouteBR outputs (first pass and repair, from receipts where they exist,
otherwise the proposal rebuilt from the ledger row) through a differently configured controller:

=====================  ==========================================================================
``routebr``            the full controller
``a_state``            state gate evaluated and recorded but not enforced (the paper's A-state)
``a_ground``           object resolution disabled (the paper's A-ground)
``no_repair``          an invalid first pass fails closed at once
``no_rules``           state gate off *and* an empty rule program (only an explicit default ALLOW)
=====================  ==========================================================================

and one counterfactual that is deliberately *not* a controller option, because the controller must never do
it: :func:`promote_lower_ranked` — when the primary action is blocked, dispatch the first allowed lower-ranked
candidate instead (the behaviour of the pre-release scaffold).  Counting those promotions measures what the
primary-commitment invariant prevents.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from .backends.replay import ReplayBackend
from .core.aio import run_sync
from .core.assets import Assets
from .core.controller import Controller, ControllerOptions, Decision
from .core.records import NONE, Boundary, Case, ReasonCode
from .core.rules import PolicyEngine, rule
from .ledger import PredictionRow, prediction_from_decision


class Variant(str, enum.Enum):
    ROUTEBR = "routebr"
    A_STATE = "a_state"
    A_GROUND = "a_ground"
    NO_REPAIR = "no_repair"
    NO_RULES = "no_rules"


def variant_controller(assets: Assets, variant: Variant | str) -> Controller:
    """The controller of one ablation variant over the given assets."""
    variant = Variant(variant)
    registry = assets.registry.sha256 if assets.registry else ""
    if variant is Variant.NO_RULES:
        default_only = PolicyEngine([rule("DEFAULT_ALLOW", 0, "*", {}, "ALLOW")], assets.catalog.ids)
        return Controller(assets.catalog, default_only, ControllerOptions(enforce_state=False),
                          registry_sha256=registry)
    options = {Variant.ROUTEBR: ControllerOptions(), Variant.A_STATE: ControllerOptions(enforce_state=False),
               Variant.A_GROUND: ControllerOptions(enable_grounding=False),
               Variant.NO_REPAIR: ControllerOptions(repair=False)}[variant]
    return Controller(assets.catalog, assets.policy, options, registry_sha256=registry)


def replay_decisions(controller: Controller, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                     receipts: Iterable = ()) -> list[Decision]:
    """Decisions of ``controller`` on the stored RouteBR outputs of ``rows`` (one replay backend, no calls)."""
    backend = ReplayBackend.from_sources(rows, receipts, name="replay:ablation")

    async def all_rows() -> list[Decision]:
        return [await controller.aroute(cases[row.case_id].request, backend) for row in rows]

    return run_sync(all_rows())


def replay_variants(assets: Assets, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                    variants: Iterable[Variant | str] = tuple(Variant), receipts: Sequence = ()
                    ) -> dict[Variant, list[PredictionRow]]:
    """Ledger rows of every variant, replayed from the same stored outputs (tokens/latency carried over)."""
    out: dict[Variant, list[PredictionRow]] = {}
    for variant in map(Variant, variants):
        decisions = replay_decisions(variant_controller(assets, variant), rows, cases, receipts)
        out[variant] = [
            replace(prediction_from_decision(d, variant.value, repeat_id=row.repeat_id, retry_count=row.retry_count,
                                             input_tokens=row.input_tokens, output_tokens=row.output_tokens,
                                             latency_ms=row.latency_ms))
            for d, row in zip(decisions, rows)
        ]
    return out


@dataclass(frozen=True, slots=True)
class Promotion:
    """A dispatch the primary-commitment invariant prevented."""

    case_id: str
    primary: str
    blocking_rule: str
    blocked_as: str
    promoted: str
    promoted_object: str
    gold_final_path: str

    @property
    def wrong(self) -> bool:
        """The promoted dispatch would not match the gold path (a false dispatch or a wrong service)."""
        return self.promoted != self.gold_final_path


def promote_lower_ranked(controller: Controller, decision: Decision, case: Case) -> Promotion | None:
    """Counterfactual: if the primary was blocked by a rule, the first lower-ranked candidate the rules allow and
    whose object contract the proposed object satisfies (or ``NONE`` for an object-free service)."""
    if decision.reason is not ReasonCode.BOUNDARY_TERMINAL or decision.proposal is None:
        return None
    request = case.request
    for candidate in decision.proposal.topk[1:]:
        if controller.policy.evaluate(candidate, request.state.values).decision is not Boundary.ALLOW:
            continue
        action = controller.catalog[candidate]
        if not action.requires_object:
            obj = NONE
        else:
            entity = request.candidate_index.get(decision.proposal.object_id)
            if entity is None or entity.object_type not in action.required_object_types:
                continue
            obj = entity.object_id
        return Promotion(case.case_id, decision.action_id, decision.rule_id or "", decision.final_path, candidate,
                         obj, case.gold.final_path)
    return None


def prevented_promotions(assets: Assets, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                         receipts: Sequence = ()) -> list[Promotion]:
    """Every promotion the full controller refuses on a stored run."""
    controller = variant_controller(assets, Variant.ROUTEBR)
    decisions = replay_decisions(controller, rows, cases, receipts)
    found = (promote_lower_ranked(controller, d, cases[d.request_id]) for d in decisions)
    return [p for p in found if p is not None]
