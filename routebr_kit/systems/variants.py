"""Controller variants: the full RouteBR controller and the configurations its ablations switch off.

=====================  ==========================================================================
``routebr``            the full controller
``a_state``            state gate evaluated and recorded but not enforced (the paper's A-state)
``a_ground``           object resolution disabled (the paper's A-ground)
``no_repair``          an invalid first pass fails closed at once
``no_rules``           state gate off *and* an empty rule program (only an explicit default ALLOW)
=====================  ==========================================================================
"""

from __future__ import annotations

import enum

from ..core.controller import Controller, ControllerOptions
from ..core.rules import PolicyEngine, rule
from ..store.assets import Assets


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


__all__ = ["Variant", "variant_controller"]
