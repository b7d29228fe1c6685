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
from typing import NamedTuple

from .. import __version__
from .common import Command


class Entry(NamedTuple):
    """One row of :data:`COMMANDS`: the subcommand's name, its one-line help, its module and its handler there.

    The handler is a function ``(args) -> exit status`` decorated with :func:`~routebr_kit.cli.common.command`,
    which attaches the function that adds the command's options to its parser.
    """

    name: str
    help: str
    module: str
    function: str


#: Every subcommand, in ``--help`` order; adding a command is one row (and its module).  ``routebr-kit --help``
#: reads only this table; a command's module is imported when the command runs or shows its own ``--help``, and
#: imports its heavy dependencies (pandas, the evaluation stack) inside its handler, so neither pays for them.
COMMANDS: dict[str, Entry] = {row.name: row for row in (
    Entry("generate", "write the kit's seeded 600-scenario benchmark (cases, SELECT, CONFIRM, assets, manifest)",
          "routebr_kit.cli.generate", "generate"),
    Entry("generate-sessions", "write a seeded en/zh session benchmark (multi-request sessions, temporal rules, gold "
          "computed by the controller) with its composition audit", "routebr_kit.cli.generate_sessions",
          "generate_sessions"),
    Entry("audit", "audit benchmark cases: every published validator check plus the kit's stricter ones",
          "routebr_kit.cli.audit", "audit"),
    Entry("run", "run one system over a benchmark split with one backend (resumable, concurrent)",
          "routebr_kit.cli.run", "run"),
    Entry("score", "the paper's metrics for one ledger: exact match (Wilson 95%%), FD/FB with denominators, "
          "object accuracy, FLIP pairs", "routebr_kit.cli.score", "score_command"),
    Entry("replay", "replay every recorded RouteBR-controller row through the kit's controller",
          "routebr_kit.cli.replay", "replay"),
    Entry("tables", "recompute Tables IV-VI and the McNemar tests from an artifact and check every published value",
          "routebr_kit.cli.tables", "tables"),
    Entry("metaroute", "run MetaRoute-Bench and write tasks/traces/summary/comparisons/details",
          "routebr_kit.cli.metaroute", "metaroute"),
    Entry("metaroute-sweep", "robustness sweep of MetaRoute-Bench over simulator constants (resumable)",
          "routebr_kit.cli.metaroute_sweep", "metaroute_sweep"),
    Entry("reproduce", "run every notebook headlessly (papermill) into outputs/<run_id>/, with the published "
          "artifact whenever it is found", "routebr_kit.cli.reproduce", "reproduce"),
    Entry("fetch-artifact", "download the published RouteBR artifact at the pinned commit, verify every file the kit "
          "reads against its shipped SHA-256 values, and unpack it into artifacts/routebr/",
          "routebr_kit.cli.fetch_artifact", "fetch_artifact"),
    Entry("attack-surface", "exact worst case of a fully compromised model: what each system can be made to dispatch",
          "routebr_kit.cli.attack_surface", "attack_surface_command"),
    Entry("generate-attacks", "derive a seeded en/zh injection suite (published cases schema) from benchmark cases",
          "routebr_kit.cli.generate_attacks", "generate_attacks"),
    Entry("adaptive-attack", "seeded search for the injection a proposer follows most; each system's forbidden "
          "dispatches under it, beside the worst-case bound", "routebr_kit.cli.adaptive_attack",
          "adaptive_attack_command"),
    Entry("shadow", "replay recorded proposals under candidate assets/options (no model call)",
          "routebr_kit.cli.shadow", "shadow"),
    Entry("diff", "paired diff of two ledgers (runs, shadow outputs or an artifact) with a CI gate",
          "routebr_kit.cli.diff", "diff"),
    Entry("gate-check", "calibrate a release gate: A/A false-alarm rate, power against a declared drop, cases needed "
          "for 80%% power (Monte Carlo over re-runs)", "routebr_kit.cli.gate_check", "gate_check"),
    Entry("impact", "classify an asset edit and select the recorded cases it can affect (no model call)",
          "routebr_kit.cli.impact", "impact_cmd"),
    Entry("review", "release review of candidate assets in one report: impact, shadow replay, paired diff and gate "
          "(no model call; exit 1 when the gate fails)", "routebr_kit.cli.review", "review"),
    Entry("verify", "exhaustive policy analysis: regions, findings, properties, base/candidate diff, coverage",
          "routebr_kit.cli.verify", "verify"),
    Entry("report", "one self-contained HTML report (scorecards, figures, trace explorer; with --base the paired "
          "diff) for a run, shadow, artifact or reproduce folder", "routebr_kit.cli.report", "report"),
    Entry("train-proposer", "train the local:learned proposer on kit-generated data only (writes MODEL_DIR)",
          "routebr_kit.cli.train_proposer", "train_proposer"),
    Entry("serve-model", "start llama.cpp's OpenAI-compatible server with a local model on 127.0.0.1 (no API key)",
          "routebr_kit.cli.serve_model", "serve_model"),
)}


#: How to resume an interrupted command: the flag to add (``""``: the same command line resumes).  A command not
#: listed is simply re-run.
_RESUME: dict[str, str] = {"run": "--resume", "reproduce": "--resume", "metaroute-sweep": ""}
_EXIT_INTERRUPTED = 130


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line (``argparse`` prints the usage first)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def load_command(name: str) -> Command:
    """The :class:`Command` registered under ``name``: its table row with the handler of its module (imported now)."""
    row = COMMANDS[name]
    handler = getattr(importlib.import_module(row.module), row.function)
    configure = getattr(handler, "configure", None)
    if not callable(configure):
        raise TypeError(f"{row.module}.{row.function} is not a @command handler")  # a wiring bug
    return Command(row.name, row.help, configure, handler)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser.  Without ``argv``: every command with its options (every command module imported).  With
    ``argv``: only the command it names gets its options (only that module imported); when it names none (``--help``,
    ``--version``, a typo), the commands are listed from :data:`COMMANDS` alone and no command module is imported."""
    parser = _Parser(prog="routebr-kit", description="Reproduce, explore and extend RouteBR and MetaRoute-Bench.")
    parser.add_argument("--version", action="version", version=f"routebr-kit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    if argv is None:
        chosen = set(COMMANDS)
    else:
        first = next((a for a in argv if not a.startswith("-")), None)
        chosen = {first} & set(COMMANDS)
    for row in COMMANDS.values():
        p = sub.add_parser(row.name, help=row.help, description=row.help)
        if row.name in chosen:
            cmd = load_command(row.name)
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
            _say(state["args"], "interrupted; " + _resume_hint(argv, state["args"]))
            return _EXIT_INTERRUPTED
    except KeyboardInterrupt:  # a second signal inside the handler above, before it could ignore further ones
        if program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return _EXIT_INTERRUPTED
    finally:
        if program:
            signal.signal(signal.SIGINT, signal.SIG_IGN)


def _main(argv: list[str], state: dict[str, argparse.Namespace | None]) -> int:
    args = None
    try:
        args = state["args"] = build_parser(argv).parse_args(argv)
        return args.handler(args)
    except Exception as exc:
        # imported on the error path only, so ``--help`` never pays for the error types or the redactor
        from ..core.errors import KitError
        from ..store.redact import redact_text

        if isinstance(exc, KitError):
            _say(args, redact_text(str(exc)))
            return 2
        if isinstance(exc, OSError):  # the environment refusing a path (see the module docstring)
            where = " → ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
            reason = exc.strerror or type(exc).__name__
            _say(args, redact_text(f"[{type(exc).__name__}] "
                                   + (f"{where}: {reason}" if where else f"{reason} ({exc})")))
            return 2
        raise  # any other exception is a bug: its traceback shows


def _resume_hint(argv: Sequence[str], args: argparse.Namespace | None) -> str:
    """``resume with: routebr-kit …`` for an interrupted command (``re-run: …`` when it cannot resume)."""
    name = getattr(args, "command", None)
    words = list(argv)
    if name in _RESUME:
        out = getattr(args, "out", None)
        if out is not None and "--out" not in words and not any(w.startswith("--out=") for w in words):
            words += ["--out", str(out)]  # the folder the command chose itself
        flag = _RESUME[name]
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
