"""Run a coroutine from synchronous code: inside a running event loop too (Jupyter), or without one when it never
suspends."""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` when no loop is running; otherwise run the coroutine on a worker thread's own loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="routebr-sync") as pool:
        return pool.submit(asyncio.run, coro).result()


def run_ready(coro: Coroutine[Any, Any, T]) -> T:
    """The result of a coroutine that never suspends (it awaits only coroutines that return at once, e.g. stored
    replies), without an event loop; a coroutine that does suspend is an error (``RuntimeError``)."""
    try:
        coro.send(None)
    except StopIteration as done:
        return done.value
    coro.close()
    raise RuntimeError("run_ready: the coroutine suspended (it needs an event loop: use run_sync)")
