"""Progress bars where a person waits, and nowhere else.

* :func:`progress_bar` — a ``tqdm.auto`` bar (a widget in Jupyter, text on a terminal) that is off when the caller
  says so or ``TQDM_DISABLE`` is set *now* (tqdm itself reads the variable once, at import, and an explicit
  ``disable=False`` overrides it).
* :func:`terminal_progress` — what a command-line subcommand passes as ``progress``: a bar only when standard error
  (where tqdm draws) is a terminal, never with ``--no-progress`` or ``TQDM_DISABLE`` set, so a log file or a pipe
  gets plain lines instead of carriage-return noise.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from typing import IO, Any

#: Values of ``TQDM_DISABLE`` that leave bars on (tqdm reads the variable the same way).
_OFF_VALUES = ("", "0", "false", "False", "no")


def _bars_disabled_by_environment() -> bool:
    """``TQDM_DISABLE`` is set to something other than an empty or false value."""
    return os.environ.get("TQDM_DISABLE", "") not in _OFF_VALUES


def terminal_progress(no_progress: bool = False, stream: IO[str] | None = None) -> bool:
    """Whether a command shows progress bars: not ``no_progress``, not ``TQDM_DISABLE``, and ``stream`` (standard
    error by default) is a terminal."""
    if no_progress or _bars_disabled_by_environment():
        return False
    stream = sys.stderr if stream is None else stream
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False


def progress_bar(iterable: Iterable[Any] | None = None, *, show: bool = True, **options: Any) -> Any:
    """A ``tqdm.auto`` bar, off with ``show=False`` or ``TQDM_DISABLE`` set."""
    from tqdm.auto import tqdm

    options["disable"] = not show or _bars_disabled_by_environment()
    return tqdm(iterable, **options)


__all__ = ["progress_bar", "terminal_progress"]
