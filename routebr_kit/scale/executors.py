"""Executor specs: where study cells run.

======================  =====================================================================================
``inline``              in this process, one cell after another (the default)
``threads:N``           a ``ThreadPoolExecutor`` with N threads (for I/O-bound live cells)
``processes:N``         a ``ProcessPoolExecutor`` with N worker processes
``dask``                an in-process ``distributed.LocalCluster`` (one single-threaded worker process per core)
``dask:N``              the same with N workers
``dask:ADDRESS``        an existing scheduler, e.g. ``dask:tcp://10.0.0.5:8786``
======================  =====================================================================================

Any ``concurrent.futures.Executor`` may be passed instead of a spec (a ``distributed.Client`` too: its
``get_executor()`` is used).  Dask is imported only when a Dask spec is opened.
"""

from __future__ import annotations

import concurrent.futures as cf
import contextlib
import enum
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..core.errors import DataError, ErrorCode


class ExecutorKind(str, enum.Enum):
    INLINE = "inline"
    THREADS = "threads"
    PROCESSES = "processes"
    DASK = "dask"


@dataclass(frozen=True, slots=True)
class ExecutorSpec:
    """A parsed executor spec.  ``workers`` is ``None`` for inline and for an existing Dask scheduler."""

    kind: ExecutorKind
    workers: int | None = None
    address: str | None = None

    @classmethod
    def parse(cls, text: str) -> ExecutorSpec:
        if not isinstance(text, str):
            raise DataError(ErrorCode.WRONG_TYPE, "an executor spec string", field="executor", got=text)
        head, sep, arg = text.strip().partition(":")
        try:
            kind = ExecutorKind(head)
        except ValueError:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "inline, threads:N, processes:N, dask, dask:N or dask:ADDRESS",
                            field="executor", got=text) from None
        if kind is ExecutorKind.INLINE:
            if sep:
                raise DataError(ErrorCode.INVALID_VALUE, "'inline' without an argument", field="executor", got=text)
            return cls(kind)
        if kind is ExecutorKind.DASK:
            if not sep:
                return cls(kind, workers=os.cpu_count() or 1)
            if arg.isdigit():
                return cls(kind, workers=_workers(arg, text))
            if not arg or any(c.isspace() for c in arg):
                raise DataError(ErrorCode.INVALID_VALUE, "a scheduler address such as tcp://127.0.0.1:8786",
                                field="executor", got=text)
            return cls(kind, address=arg if "://" in arg else f"tcp://{arg}")
        if not sep:
            raise DataError(ErrorCode.INVALID_VALUE, f"{kind.value}:N with a worker count", field="executor",
                            got=text)
        return cls(kind, workers=_workers(arg, text))

    def __str__(self) -> str:
        if self.kind is ExecutorKind.INLINE:
            return "inline"
        return f"{self.kind.value}:{self.address or self.workers}"


def _workers(arg: str, text: str) -> int:
    if not arg.isdigit():
        raise DataError(ErrorCode.INVALID_INTEGER, "a positive integer worker count", field="executor", got=text)
    n = int(arg)
    if n < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "at least one worker", field="executor", got=text)
    return n


class InlineExecutor(cf.Executor):
    """Runs each submitted call immediately in the calling thread."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> cf.Future:
        future: cf.Future = cf.Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future, as a pool would
            future.set_exception(exc)
        return future


@contextlib.contextmanager
def open_executor(spec: str | ExecutorSpec | cf.Executor | Any) -> Iterator[cf.Executor]:
    """A ``concurrent.futures.Executor`` for ``spec``, shut down on exit if this function created it."""
    if isinstance(spec, cf.Executor):
        yield spec
        return
    if hasattr(spec, "get_executor") and hasattr(spec, "scheduler_info"):  # a distributed.Client
        yield spec.get_executor(pure=False)
        return
    parsed = spec if isinstance(spec, ExecutorSpec) else ExecutorSpec.parse(spec)
    if parsed.kind is ExecutorKind.INLINE:
        yield InlineExecutor()
    elif parsed.kind is ExecutorKind.THREADS:
        with cf.ThreadPoolExecutor(parsed.workers) as pool:
            yield pool
    elif parsed.kind is ExecutorKind.PROCESSES:
        with cf.ProcessPoolExecutor(parsed.workers) as pool:
            yield pool
    else:
        with _dask(parsed) as executor:
            yield executor


@contextlib.contextmanager
def _dask(spec: ExecutorSpec) -> Iterator[cf.Executor]:
    try:
        from distributed import Client, LocalCluster  # the optional "scale" extra
    except ImportError:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "dask and distributed (pip install 'routebr-kit[scale]')",
                        field="executor", got=str(spec)) from None
    if spec.address is not None:
        try:
            client = Client(spec.address, timeout="10s")
        except (OSError, TimeoutError) as exc:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a reachable Dask scheduler", field="executor",
                            got=spec.address, detail=str(exc)) from None
        with client:
            yield client.get_executor(pure=False)
        return
    with LocalCluster(n_workers=spec.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                      host="127.0.0.1") as cluster, Client(cluster) as client:
        yield client.get_executor(pure=False)
