"""routebr-kit: reproduce, explore and extend RouteBR (route before response) and MetaRoute-Bench.

The names below are what a notebook or a script needs to run the controller on its own assets: the records of
Algorithm 1, the controller, the rule engine, the backend seam, the typed errors and the loaders.  Each public
namespace states its API the same way — an ``_EXPORTS`` map and ``__all__`` — and imports a module only when one of
its names is first used: :mod:`routebr_kit.review` (release review), :mod:`routebr_kit.verify` (exhaustive policy
analysis), :mod:`routebr_kit.metaroute` (MetaRoute-Bench) and :mod:`routebr_kit.notebook` (the notebooks' plumbing).
The other subpackages (``core``, ``store``, ``backends``, ``dataset``, ``evaluation``, ``experiments``, …) are the
kit's layers; their ``__all__`` is what one layer offers the next.
"""

import importlib as _importlib
import importlib.util as _importlib_util
import sys as _sys
from collections.abc import Callable as _Callable
from collections.abc import Mapping as _Mapping
from typing import Any as _Any

__version__ = "0.1.0"


def lazy_exports(package: str, exports: _Mapping[str, str]) -> tuple[_Callable[[str], _Any], _Callable[[], list[str]]]:
    """The PEP 562 ``__getattr__`` and ``__dir__`` of a package whose public names load their module on first use.

    ``exports`` maps each name to the module that defines it, relative to ``package`` (``"rules"``, or
    ``"..core.calls"`` for a name another layer defines).  A package's subpackages and modules are attributes too:
    ``routebr_kit.review`` works after ``import routebr_kit``.  Every ``__init__`` of the kit ends with
    ``__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)``.
    """
    namespace = _sys.modules[package].__dict__

    def __getattr__(name: str) -> _Any:
        module = exports.get(name)
        if module is not None:
            value = getattr(_importlib.import_module(module if module.startswith(".") else "." + module, package), name)
        elif not name.startswith("__") and _importlib_util.find_spec(f"{package}.{name}") is not None:
            value = _importlib.import_module(f"{package}.{name}")
        else:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        namespace[name] = value  # later look-ups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "core.calls": "Backend FailureKind ModelCall ModelReply",
    "core.contract": "check_proposal",
    "core.controller": "Controller ControllerOptions Decision TraceStep",
    "core.errors": "ContractError ContractErrorCode DataError ErrorCode KitError",
    "core.records": "Boundary Catalog CatalogAction Entity NONE ObjectResolution Proposal ReasonCode Registry "
        "RouteRequest RuntimeState Stage System Terminal UNRESOLVED",
    "core.rules": "PolicyEngine Rule rule",
    "store.artifact": "find_artifact",
    "store.assets": "Assets load_assets load_catalog load_registry load_rules",
    "store.cases": "Case Split load_cases",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
