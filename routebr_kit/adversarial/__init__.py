"""Worst case at the dispatch boundary: exact attack surface, a seeded injection suite, and its scoring.

* :mod:`.surface` — what a fully compromised model can make each system dispatch (no model needed);
* :mod:`.suite` — adversarial variants of benchmark cases in the published cases schema (gold unchanged);
* :mod:`.scoring` — per attack family and language: followed-the-attacker versus actual forbidden dispatch.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.adversarial import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it.
_EXPORTS: dict[str, str] = {
    "FamilyScore": "scoring",
    "Rate": "scoring",
    "RowOutcome": "scoring",
    "judge_rows": "scoring",
    "pooled": "scoring",
    "score_attacks": "scoring",
    "summarise": "scoring",
    "AttackFamily": "suite",
    "AttackSpec": "suite",
    "CASES_FILE": "suite",
    "HOSTILE": "suite",
    "MANIFEST_FILE": "suite",
    "SPECS_FILE": "suite",
    "Suite": "suite",
    "generate_suite": "suite",
    "load_suite": "suite",
    "lookalike_forms": "suite",
    "write_suite": "suite",
    "COUNT_FIELDS": "surface",
    "CaseSurface": "surface",
    "Dispatch": "surface",
    "INVALID_OUTPUT": "surface",
    "PROTECTED_ACTION": "surface",
    "Reach": "surface",
    "SYSTEMS": "surface",
    "SurfaceAnalyzer": "surface",
    "SurfaceCounts": "surface",
    "SurfaceReport": "surface",
    "SystemSurface": "surface",
    "attack_surface": "surface",
    "rule_for": "surface",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
