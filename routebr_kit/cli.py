"""``routebr-kit`` — the command line.

Subcommands register themselves in :data:`COMMANDS`; each is a function ``(args) -> exit status`` plus an
argument-parser builder.  Typed kit errors print one line and exit 2; they never end in a traceback.
"""

from __future__ import annotations

import argparse
import sys
from typing import Callable, Sequence

from .core.errors import KitError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {}


def command(name: str, help_text: str, configure: Callable[[argparse.ArgumentParser], None]):
    def register(handler: Handler) -> Handler:
        COMMANDS[name] = (help_text, configure, handler)
        return handler

    return register


def _print_table(rows: list[dict], columns: Sequence[str] | None = None) -> None:
    if not rows:
        return
    columns = list(columns or rows[0].keys())
    widths = {c: max(len(str(c)), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(str(c).ljust(widths[c]) for c in columns))
    print("  ".join("-" * widths[c] for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).rjust(widths[c]) if isinstance(r.get(c), (int, float))
                        else str(r.get(c, "")).ljust(widths[c]) for c in columns))


# --------------------------------------------------------------------------------------------- replay


def _replay_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--artifact", required=True, help="published artifact directory (like ../shared/routebr_artifact)")


@command("replay", "replay every recorded RouteBR-controller row through the kit's controller", _replay_args)
def _replay(args: argparse.Namespace) -> int:
    from .artifact import replay_artifact

    report = replay_artifact(args.artifact)
    _print_table(report.table())
    for d in report.disagreements:
        print(f"DISAGREE {d.task} {d.case_id} {d.field}: recorded {d.recorded!r}, replayed {d.replayed!r}")
    print(f"{report.rows_agreeing}/{report.rows} rows agree on final path, boundary, action and object")
    return 0 if report.ok else 1


# --------------------------------------------------------------------------------------------- entry point


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = argparse.ArgumentParser(prog="routebr-kit", description=__doc__.splitlines()[0])
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
