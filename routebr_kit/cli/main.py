"""``routebr-kit`` — the command line: an explicit list of subcommands, one module each.

A handler is ``(args) -> exit status``.  Every way a command can end on bad input or an interruption is one line
on stderr, never a traceback:

* a typed kit error (:class:`~routebr_kit.core.errors.KitError`: a located ``DataError``, a cache miss, …) → exit 2;
* a malformed command line (unknown option, a value of the wrong type) → one ``error:`` line, exit 2;
* the operating system refusing a path the user gave (permission denied, no space left, a file where a directory
  must be) → one line naming the path and the reason, exit 2 — an ``OSError`` is the environment speaking, not a
  bug in the kit;
* Ctrl-C (``SIGINT``) → ``interrupted; resume with: …`` (the command to run next, ``--resume`` added where the
  command needs it), exit 130; the command's own manifest says ``"status": "interrupted"``.

Any other exception is a bug and is left to show its traceback.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
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
    "adaptive-attack": ("adaptive_attack", "adaptive_attack_command"),
    "shadow": ("shadow", "shadow"),
    "diff": ("diff", "diff"),
    "gate-check": ("gate_check", "gate_check"),
    "impact": ("impact", "impact_cmd"),
    "review": ("review", "review"),
    "verify": ("verify", "verify"),
    "report": ("report", "report"),
    "serve-model": ("serve_model", "serve_model"),
    "train-proposer": ("train_proposer", "train_proposer"),
}


#: How to resume an interrupted command: the flag to add (``""``: the same command line resumes).  A command not
#: listed is simply re-run.
RESUME: dict[str, str] = {"run": "--resume", "reproduce": "--resume", "metaroute-sweep": ""}
EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``argparse`` prints the usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def load_command(name: str) -> Command:
    """The :class:`Command` registered under ``name`` (its module imported now)."""
    module, attribute = COMMANDS[name]
    command = getattr(importlib.import_module(f"{__package__}.{module}"), attribute)
    if not isinstance(command, Command) or command.name != name:
        raise TypeError(f"routebr_kit.cli.{module}.{attribute} is not the Command {name!r}")  # a wiring bug
    return command


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv`` naming a subcommand, only that subcommand's module is imported."""
    parser = _Parser(prog="routebr-kit",
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
    args = None
    try:
        args = build_parser(argv).parse_args(argv)
        return args.handler(args)
    except KitError as exc:
        _say(args, redact_text(str(exc)))
        return 2
    except OSError as exc:  # the environment refusing a path (see the module docstring)
        where = " → ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        reason = exc.strerror or type(exc).__name__
        _say(args, redact_text(f"[{type(exc).__name__}] " + (f"{where}: {reason}" if where else f"{reason} ({exc})")))
        return 2
    except KeyboardInterrupt:
        _say(args, "interrupted; " + resume_hint(argv, args))
        return EXIT_INTERRUPTED


def resume_hint(argv: Sequence[str], args: argparse.Namespace | None) -> str:
    """``resume with: routebr-kit …`` for an interrupted command (``re-run: …`` when it cannot resume)."""
    name = getattr(args, "command", None)
    words = list(argv)
    if name in RESUME:
        out = getattr(args, "out", None)
        if out is not None and "--out" not in words and not any(w.startswith("--out=") for w in words):
            words += ["--out", str(out)]  # the folder the command chose itself
        flag = RESUME[name]
        if flag and flag not in words:
            words.append(flag)
        return "resume with: " + shlex.join(["routebr-kit", *words])
    return "nothing to resume; re-run: " + shlex.join(["routebr-kit", *words])


def _say(args: argparse.Namespace | None, text: str) -> None:
    name = getattr(args, "command", None)
    line = " ".join(text.split())  # one line, whatever the message held
    print(f"routebr-kit {name}: {line}" if name else f"routebr-kit: {line}", file=sys.stderr)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
