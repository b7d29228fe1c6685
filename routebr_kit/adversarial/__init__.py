"""Worst case at the dispatch boundary: exact attack surface, a seeded injection suite, and its scoring.

* :mod:`.surface` — what a fully compromised model can make each system dispatch (no model needed);
* :mod:`.suite` — adversarial variants of benchmark cases in the published cases schema (gold unchanged);
* :mod:`.scoring` — per attack family and language: followed-the-attacker versus actual forbidden dispatch.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.adversarial import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "security": "adaptive_attacks scorecard suite_runs",
    "scoring": "pooled score_attacks",
    "suite": "AttackFamily generate_suite write_suite",
    "surface": "attack_surface",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
