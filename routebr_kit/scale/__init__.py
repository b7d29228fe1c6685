"""Scale-out: frozen study cells keyed by content hash, one executor seam (inline, threads, processes, Dask),
atomic ``cells/<key>/`` results and resume.  Generic: imports only :mod:`routebr_kit.core` and the standard
library; Dask is imported only when a Dask executor is opened.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "cells": "Cell CellStore",
    "engine": "CellFailed run_cells",
    "executors": "ExecutorKind ExecutorSpec",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
