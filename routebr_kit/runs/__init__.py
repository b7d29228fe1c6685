"""Running systems over cases: the resumable run engine and the one replay path.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.runs import X``
imports only what ``X`` needs).
"""

from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later look-ups skip this hook
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
