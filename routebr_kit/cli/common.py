"""What every subcommand module shares: the :class:`Command` record and plain-table printing."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NamedTuple

Handler = Callable[[argparse.Namespace], int]


class Command(NamedTuple):
    """One subcommand: its name and one-line help (its row in :data:`routebr_kit.cli.app.COMMANDS`), how it
    configures its parser, and its handler."""

    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    handler: Handler


def command(configure: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
    """Mark a handler ``(args) -> exit status`` as a subcommand whose options ``configure`` adds to its parser.

    The handler stays a plain function (``handler.configure`` is ``configure``); its name and help are its row in
    :data:`routebr_kit.cli.app.COMMANDS`.  ``configure`` runs for ``CMD --help``: it and the module's top level
    import nothing heavy (pandas, numpy, the evaluation stack) — the handler imports what it needs when it runs.
    """
    def wrap(handler: Handler) -> Handler:
        handler.configure = configure  # type: ignore[attr-defined]
        return handler

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


def write_json(path: Path | None, doc: Any) -> None:
    """``--json FILE``: the document as indented UTF-8 JSON (nothing when ``path`` is ``None``)."""
    if path is not None:
        import json

        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(doc, indent=1, ensure_ascii=False, default=str) + "\n", encoding="utf-8")


def int_range(minimum: int, maximum: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``[minimum, maximum]`` (a negative count, zero workers, a port past
    65535: one ``error:`` line from the parser, exit 2 — never a traceback from deep inside a command)."""
    def parse(text: str) -> int:
        try:
            value = int(text, 10)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < minimum or (maximum is not None and value > maximum):
            bound = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
            raise argparse.ArgumentTypeError(f"expected an integer {bound}, got {value}")
        return value

    parse.__name__ = "integer"
    return parse


def positive_float(text: str) -> float:
    """An argparse ``type``: a finite number > 0."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    return value


def add_artifact_option(p: argparse.ArgumentParser) -> None:
    """``--artifact DIR``, found as ``reproduce`` finds it when not given (see :func:`discovered_artifact`)."""
    p.add_argument("--artifact", help="published artifact directory (default: the first one found, like reproduce: "
                   "$ROUTEBR_ARTIFACT, artifacts/routebr/, ../shared/routebr_artifact)")


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
