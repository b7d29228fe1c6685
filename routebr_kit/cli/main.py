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
import signal
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
    """Run one command line (``argv``; ``None``: this process's own, as the installed ``routebr-kit`` does).

    Ctrl-C is exit 130 with one line, deterministically: the first ``KeyboardInterrupt`` wherever it lands — in the
    command, in its handler, or between the two — ends here; as the program (``argv is None``), a further
    ``SIGINT`` is ignored from then on, and once the exit status is decided, so interpreter shutdown (thread joins,
    ``atexit``) cannot turn 130 (or 0) into death by signal (-2).  The one window left is the interpreter's own
    start-up before this function runs (``python -m routebr_kit`` imports; see ``__main__``)."""
    program = argv is None
    argv = list(sys.argv[1:] if argv is None else argv)
    state: dict[str, argparse.Namespace | None] = {"args": None}
    try:
        try:
            return _main(argv, state)
        except KeyboardInterrupt:
            if program:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            _say(state["args"], "interrupted; " + resume_hint(argv, state["args"]))
            return EXIT_INTERRUPTED
    except KeyboardInterrupt:  # a second signal inside the handler above, before it could ignore further ones
        if program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return EXIT_INTERRUPTED
    finally:
        if program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(argv: list[str], state: dict[str, argparse.Namespace | None]) -> int:
    args = None
    try:
        args = state["args"] = build_parser(argv).parse_args(argv)
        return args.handler(args)
    except KitError as exc:
        _say(args, redact_text(str(exc)))
        return 2
    except OSError as exc:  # the environment refusing a path (see the module docstring)
        where = " → ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        reason = exc.strerror or type(exc).__name__
        _say(args, redact_text(f"[{type(exc).__name__}] " + (f"{where}: {reason}" if where else f"{reason} ({exc})")))
        return 2


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
