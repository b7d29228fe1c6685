"""The systems the paper compares: the B1/B2 one-call baselines and the controller variants of the ablations.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.systems import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it.
_EXPORTS: dict[str, str] = {
    "CompositeBaseline": "baselines",
    "DIRECT_SCHEMA": "baselines",
    "DirectBaseline": "baselines",
    "DirectDecision": "baselines",
    "DirectResult": "baselines",
    "DirectRoute": "baselines",
    "GUARD_SCHEMA": "baselines",
    "RuleCitation": "baselines",
    "check_direct": "baselines",
    "check_direct_published": "baselines",
    "direct_payload": "baselines",
    "prediction_from_direct": "baselines",
    "rule_citation": "baselines",
    "Variant": "variants",
    "variant_controller": "variants",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
