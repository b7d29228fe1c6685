"""Scale-out: frozen study cells keyed by content hash, one executor seam (inline, threads, processes, Dask),
atomic ``cells/<key>/`` results and resume.  Generic: imports only :mod:`routebr_kit.core` and the standard
library; Dask is imported only when a Dask executor is opened.
"""

from .cells import Cell, CellStore, compute
from .engine import CellFailed, CellRun, run_cells, unique_cells
from .executors import ExecutorKind, ExecutorSpec, InlineExecutor, open_executor

__all__ = ["Cell", "CellFailed", "CellRun", "CellStore", "ExecutorKind", "ExecutorSpec", "InlineExecutor",
           "compute", "open_executor", "run_cells", "unique_cells"]
