"""Cell functions for the scale tests (importable by worker processes: pytest puts tests/ on sys.path)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from routebr_kit.core.errors import DataError, ErrorCode

_lock = threading.Lock()
_running = 0
peak = 0


def square(payload: dict[str, Any]) -> dict[str, Any]:
    """Log the call (one line per computation, O_APPEND), optionally sleep, optionally die once."""
    value = payload["value"]
    if payload.get("log"):
        with open(payload["log"], "a", encoding="utf-8") as handle:
            handle.write(f"{value}\n")
    if payload.get("sleep"):
        time.sleep(payload["sleep"])
    marker = payload.get("die_marker")
    if marker and value == payload.get("die_at") and not Path(marker).exists():
        Path(marker).write_text("died\n", encoding="utf-8")
        os._exit(17)  # the worker process dies without cleaning up
    return {"value": value, "square": value * value, "half": value / 2}


def counted(payload: dict[str, Any]) -> dict[str, Any]:
    """Track how many calls run at once in this process."""
    global _running, peak
    with _lock:
        _running += 1
        peak = max(peak, _running)
    try:
        time.sleep(payload["sleep"])
    finally:
        with _lock:
            _running -= 1
    return {"value": payload["value"]}


def typed_failure(payload: dict[str, Any]) -> dict[str, Any]:
    raise DataError(ErrorCode.INVALID_VALUE, "a good payload", field="value", got=payload["value"])


def untyped_failure(payload: dict[str, Any]) -> dict[str, Any]:
    raise RuntimeError("boom")


def not_json(payload: dict[str, Any]) -> Any:
    return {"value": float("nan")}
