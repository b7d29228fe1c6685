"""A per-stage scripted backend for tests and teaching.

Each stage has a FIFO queue.  An item is the output content (a JSON string, a dict, any value), a
:class:`ModelReply`, an exception instance (raised, to exercise the controller's fail-closed path) or a callable
``(ModelCall) -> item`` (sync or async) for dynamic behaviour.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Iterable, Mapping
from typing import Any

from ..core.calls import ModelCall, ModelReply
from ..core.errors import KitError
from ..core.records import Stage


class ScriptExhausted(KitError, RuntimeError):
    """The script has no output left for a stage."""


class ScriptedBackend:
    name = "scripted"

    def __init__(self, outputs: Mapping[Stage | str, Iterable[Any]]) -> None:
        self._queues = {Stage(stage): deque(items) for stage, items in outputs.items()}
        self.calls: list[ModelCall] = []

    async def complete(self, call: ModelCall) -> ModelReply:
        self.calls.append(call)
        queue = self._queues.get(call.stage)
        if not queue:
            raise ScriptExhausted(f"no scripted output remaining for stage {call.stage.value}")
        item = queue.popleft()
        if callable(item) and not isinstance(item, type):
            item = item(call)
            if inspect.isawaitable(item):
                item = await item
        if isinstance(item, BaseException):
            raise item
        if isinstance(item, ModelReply):
            return item
        return ModelReply(content=item, model=self.name)

    def stages(self) -> list[Stage]:
        return [c.stage for c in self.calls]
