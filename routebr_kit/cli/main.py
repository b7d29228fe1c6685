"""``routebr-kit`` — the command line: an explicit list of subcommands, one module each.

A handler is ``(args) -> exit status``.  Typed kit errors print one line and exit 2; they never end in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..core.errors import KitError
from . import audit, generate, metaroute, replay, reproduce, run, tables
from .common import Command

#: Every subcommand, in the order ``--help`` lists them.
COMMANDS: tuple[Command, ...] = (
    generate.generate, audit.audit, run.run, replay.replay, tables.tables, metaroute.metaroute, reproduce.reproduce,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="routebr-kit",
                                     description="Reproduce, explore and extend RouteBR and MetaRoute-Bench.")
    parser.add_argument("--version", action="version", version=f"routebr-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for cmd in COMMANDS:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.configure(p)
        p.set_defaults(handler=cmd.handler)
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
