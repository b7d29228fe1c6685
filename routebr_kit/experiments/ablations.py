"""Ablations from stored proposals — no new model calls.

Every variant replays the *same* recorded RouteBR outputs (first pass and repair, from receipts where they exist,
otherwise the proposal rebuilt from the ledger row) through a differently configured controller — the variants of
:mod:`routebr_kit.systems.variants` (``routebr``, ``a_state``, ``a_ground``, ``no_repair``, ``no_rules``) — and one
counterfactual that is deliberately *not* a controller option, because the controller must never do it:
:func:`promote_lower_ranked` — when the primary action is blocked, dispatch the first allowed lower-ranked
candidate instead (the behaviour of the pre-release scaffold).  Counting those promotions measures what the
primary-commitment invariant prevents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from ..core.controller import Controller, Decision
from ..core.records import NONE, Boundary, ReasonCode
from ..evaluation.forbidden import dispatches
from ..evaluation.metrics import Cases, index_cases
from ..evaluation.stats import McNemar, mcnemar
from ..runs.replay import replay_rows
from ..store.assets import Assets
from ..store.cases import Case
from ..store.ledger import PredictionRow
from ..systems.variants import Variant, variant_controller


def replay_decisions(controller: Controller, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                     receipts: Iterable = ()) -> list[Decision]:
    """Decisions of ``controller`` on the stored RouteBR outputs of ``rows`` (the one replay path, no calls)."""
    return list(replay_rows(controller, rows, cases, receipts=receipts, name="replay:ablation").decisions)


def replay_variants(assets: Assets, rows: Sequence[PredictionRow], cases: Mapping[str, Case],
                    variants: Iterable[Variant | str] = tuple(Variant), receipts: Sequence = ()
                    ) -> dict[Variant, list[PredictionRow]]:
    """Ledger rows of every variant, replayed from the same stored outputs (tokens/latency carried over)."""
    return {variant: list(replay_rows(variant_controller(assets, variant), rows, cases, receipts=receipts,
                                      system_id=variant.value, name="replay:ablation").rows)
            for variant in map(Variant, variants)}


def offline_agreement(variant: str, split: str, recorded: Sequence[PredictionRow],
                      offline: Sequence[PredictionRow]) -> dict[str, object]:
    """One table row: how many of a variant's ``recorded`` rows on ``split`` the ``offline`` replay reproduces
    (final path, object), matched by case id; every recorded case must have been replayed (KeyError otherwise)."""
    replayed = {r.case_id: r for r in offline}
    return {"variant": variant, "split": split, "cases": len(recorded),
            "same final path": sum(replayed[r.case_id].pred_final_path == r.pred_final_path for r in recorded),
            "same object": sum(replayed[r.case_id].pred_object_id == r.pred_object_id for r in recorded)}


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


def boundary_mcnemar(baseline: Sequence[PredictionRow], variant: Sequence[PredictionRow], cases: Cases, *,
                     blocked_gold: bool) -> McNemar:
    """Exact McNemar test of two variants' rows on the same cases (``a``: ``baseline``, ``b``: ``variant``).

    A case counts as *correct* when it has no false dispatch (``blocked_gold``: its gold path is a terminal and the
    row dispatched) — or, with ``blocked_gold=False``, no false block (its gold path dispatches and the row ended
    on a terminal).  So ``a_only_correct`` counts the cases with the error under ``variant`` only."""
    gold = {case_id: case.gold.final_path for case_id, case in index_cases(cases).items()}

    def correct(rows: Sequence[PredictionRow]) -> dict[str, bool]:
        out = {}
        for r in rows:
            gold_dispatches, dispatched = dispatches(gold[r.case_id]), dispatches(r.pred_final_path)
            error = (not gold_dispatches and dispatched) if blocked_gold else (gold_dispatches and not dispatched)
            out[r.case_id] = not error
        return out

    return mcnemar(correct(baseline), correct(variant))

