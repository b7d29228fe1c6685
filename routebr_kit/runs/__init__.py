"""Running systems over cases: the resumable run engine and the one replay path.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.runs import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

from .. import lazy_exports

#: Every public name → the module of this package that defines it.
_EXPORTS: dict[str, str] = {
    "Leak": "leakage",
    "gold_leaks": "leakage",
    "gold_only_values": "leakage",
    "leak_summary": "leakage",
    "receipt_leaks": "leakage",
    "Replayed": "replay",
    "replay_rows": "replay",
    "RESUME_KEYS": "runner",
    "RateLimiter": "runner",
    "RunResult": "runner",
    "SYSTEM_NAMES": "runner",
    "aderive_interventions": "runner",
    "arun_cases": "runner",
    "derive_interventions": "runner",
    "describe_backend": "runner",
    "parse_system": "runner",
    "rate_limited": "runner",
    "run_cases": "runner",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
