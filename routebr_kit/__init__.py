"""routebr-kit: reproduce, explore and extend RouteBR (route before response) and MetaRoute-Bench.

The controller core (:mod:`routebr_kit.core`) is standard-library only; evaluation, notebooks and live
backends build on it.
"""

from . import backends  # noqa: E402 - the stdlib backends (scripted, replay) ship with the core
from .core import *  # noqa: F401,F403 - the public controller API
from .core import __all__ as _core_all

__version__ = "0.1.0"
__all__ = ["__version__", "backends", *_core_all]
