"""routebr-kit: reproduce, explore and extend RouteBR (route before response) and MetaRoute-Bench.

The controller core (:mod:`routebr_kit.core`) is standard-library only; :mod:`routebr_kit.store` loads what it
decides over.  The names below are the public API of both; evaluation, experiments and notebooks build on them.
"""

__version__ = "0.1.0"

import importlib as _importlib  # noqa: E402
import sys as _sys  # noqa: E402
from collections.abc import Callable as _Callable  # noqa: E402
from collections.abc import Mapping as _Mapping  # noqa: E402
from typing import Any as _Any  # noqa: E402


def lazy_exports(package: str, exports: _Mapping[str, str]) -> tuple[_Callable[[str], _Any], _Callable[[], list[str]]]:
    """The PEP 562 ``__getattr__`` and ``__dir__`` of a subpackage whose public names load their module on first use.

    ``exports`` maps each name to the module of ``package`` that defines it; a subpackage's ``__init__`` ends with
    ``__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)``.  Defined here, before the imports below, so every
    subpackage (imported while this package initialises) shares the one implementation.
    """
    namespace = _sys.modules[package].__dict__

    def __getattr__(name: str) -> _Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(_importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value  # later look-ups skip this hook
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *namespace.get("__all__", ())})

    return __getattr__, __dir__


from . import backends  # noqa: E402 - the stdlib backends (scripted, replay)
from .core import *  # noqa: E402,F401,F403 - the public controller API
from .core import __all__ as _core_all  # noqa: E402
from .store import *  # noqa: E402,F401,F403 - loaders and the benchmark vocabulary
from .store import __all__ as _store_all  # noqa: E402

__all__ = ["__version__", "backends", *_core_all, *_store_all]
