"""What every subcommand module shares: the :class:`Command` record and plain-table printing."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Handler = Callable[[argparse.Namespace], int]


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand: its name, its one-line help, how it configures its parser, and its handler."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Handler

    def __call__(self, args: argparse.Namespace) -> int:
        return self.handler(args)


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]
            ) -> Callable[[Handler], Command]:
    """Decorate a handler ``(args) -> exit status`` into a :class:`Command` (listed in :mod:`routebr_kit.cli.main`)."""
    def wrap(handler: Handler) -> Command:
        return Command(name, help_text, configure, handler)

    return wrap


def print_table(rows: list[dict[str, Any]], columns: Sequence[str] | None = None) -> None:
    """A plain fixed-width table on stdout (numbers right-aligned)."""
    if not rows:
        return
    columns = list(columns or rows[0].keys())
    widths = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(str(c).ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).rjust(widths[c]) if isinstance(r.get(c), (int, float))
                        else str(r.get(c, "")).ljust(widths[c]) for c in columns))


def discovered_artifact(explicit: str | Path | None) -> Path:
    """The published artifact a command reads: ``--artifact`` when given, else the first one found the way
    ``reproduce`` finds it; prints where it came from.  None found is one typed line saying where it looked."""
    from ..core.errors import DataError, ErrorCode
    from ..notebook.pipeline import choose_artifact

    choice = choose_artifact(explicit)
    if choice.path is None:
        raise DataError(ErrorCode.FILE_NOT_FOUND, f"the published artifact, or --artifact DIR; {choice.how}",
                        field="--artifact")
    print(f"artifact: {choice.path} ({choice.how})")
    return choice.path
