"""``routebr-kit`` — the command line: an explicit list of subcommands, one module each.

A handler is ``(args) -> exit status``.  Typed kit errors print one line and exit 2; they never end in a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from .. import __version__
from ..core.errors import KitError
from ..store.redact import redact_text
from .common import Command

#: Every subcommand in ``--help`` order: name → (module under :mod:`routebr_kit.cli`, the module's Command).
#: A module is imported only when its command runs (or for the full ``--help``): the evaluation stack costs about
#: two seconds of CPU to import, which ``routebr-kit diff`` or ``fetch-artifact`` should not pay for ``tables``.
COMMANDS: dict[str, tuple[str, str]] = {
    "generate": ("generate", "generate"),
    "audit": ("audit", "audit"),
    "run": ("run", "run"),
    "score": ("score", "score_command"),
    "replay": ("replay", "replay"),
    "tables": ("tables", "tables"),
    "metaroute": ("metaroute", "metaroute"),
    "metaroute-sweep": ("metaroute_sweep", "metaroute_sweep"),
    "reproduce": ("reproduce", "reproduce"),
    "fetch-artifact": ("fetch_artifact", "fetch_artifact"),
    "attack-surface": ("attack_surface", "attack_surface_command"),
    "generate-attacks": ("generate_attacks", "generate_attacks"),
    "shadow": ("shadow", "shadow"),
    "diff": ("diff", "diff"),
    "impact": ("impact", "impact_cmd"),
    "report": ("report", "report"),
}


def load_command(name: str) -> Command:
    """The :class:`Command` registered under ``name`` (its module imported now)."""
    module, attribute = COMMANDS[name]
    command = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
    if not isinstance(command, Command) or command.name != name:
        raise TypeError(f"routebr_kit.cli.{module}.{attribute} is not the Command {name!r}")  # a wiring bug
    return command


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv`` naming a subcommand, only that subcommand's module is imported."""
    parser = argparse.ArgumentParser(prog="routebr-kit",
                                     description="Reproduce, explore and extend RouteBR and MetaRoute-Bench.")
    parser.add_argument("--version", action="version", version=f"routebr-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    chosen = next((a for a in (argv or ()) if not a.startswith("-")), None)
    names = [chosen] if chosen in COMMANDS else list(COMMANDS)
    for cmd in map(load_command, names):
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.configure(p)
        p.set_defaults(handler=cmd.handler)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser(argv).parse_args(argv)
    try:
        return args.handler(args)
    except KitError as exc:
        print(f"routebr-kit {args.command}: {redact_text(str(exc))}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
