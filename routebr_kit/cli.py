"""``routebr-kit`` — the command line.

Each subcommand lives in its own module under :mod:`routebr_kit.commands` and registers itself with
:func:`command`; modules are discovered in name order.  A handler is ``(args) -> exit status``.  Typed kit errors
print one line and exit 2; they never end in a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Callable, Sequence
from typing import Any

from .core.errors import KitError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]):
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = (help_text, configure, handler)
        return handler

    return register


# --------------------------------------------------------------------------------------------- entry point


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


def _load_commands() -> None:
    from . import commands

    for module in sorted(m.name for m in pkgutil.iter_modules(commands.__path__)):
        importlib.import_module(f"{commands.__name__}.{module}")


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    _load_commands()
    parser = argparse.ArgumentParser(prog="routebr-kit",
                                     description="Reproduce, explore and extend RouteBR and MetaRoute-Bench.")
    parser.add_argument("--version", action="version", version=f"routebr-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, configure, handler) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        configure(p)
        p.set_defaults(handler=handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except KitError as exc:
        print(f"routebr-kit {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
