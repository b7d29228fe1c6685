"""The systems the paper compares: the B1/B2 one-call baselines and the controller variants of the ablations.

The public API is :data:`__all__`; each name loads its module on first use (``from routebr_kit.systems import X``
imports only what ``X`` needs).
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "baselines": "CompositeBaseline DirectBaseline",
    "variants": "Variant",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
