"""routebr-kit: reproduce, explore and extend RouteBR (route before response) and MetaRoute-Bench.

The controller core (:mod:`routebr_kit.core`) is standard-library only; :mod:`routebr_kit.store` loads what it
decides over.  The names below are the public API of both; evaluation, experiments and notebooks build on them.
"""

__version__ = "0.1.0"

from . import backends  # noqa: E402 - the stdlib backends (scripted, replay)
from .core import *  # noqa: E402,F401,F403 - the public controller API
from .core import __all__ as _core_all  # noqa: E402
from .store import *  # noqa: E402,F401,F403 - loaders and the benchmark vocabulary
from .store import __all__ as _store_all  # noqa: E402

__all__ = ["__version__", "backends", *_core_all, *_store_all]
