"""Run a coroutine from synchronous code, also inside a running event loop (Jupyter)."""

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
