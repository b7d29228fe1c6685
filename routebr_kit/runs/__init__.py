"""Running systems over cases: the resumable run engine and the one replay path.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.runs import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "runner": "RunResult",
    "sessions": "run_sessions",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
