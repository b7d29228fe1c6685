"""``routebr-kit generate-sessions --seed N --lang en|zh|both [--sessions N] [--out DIR] [--rules FILE]``: write a
seeded session benchmark (``sessions.jsonl`` with computed gold, and ``audit.json``, its composition)."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, int_range, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int_range(0), default=0, help="generator seed (default 0)")
    p.add_argument("--lang", choices=("en", "zh", "both"), default="both", help="language(s) (default both)")
    p.add_argument("--sessions", type=int_range(1, 10_000), default=40, help="sessions per language (default 40)")
    p.add_argument("--out", type=Path, help="output directory (default data/generated/sessions-<lang>-<seed>)")
    p.add_argument("--rules", type=Path, help="the temporal rule program (default data/sessions/rules.csv)")


@command(_args)
def generate_sessions(args: argparse.Namespace) -> int:
    from ..dataset.sessions import audit_sessions, write_sessions
    from ..dataset.sessions import generate_sessions as generate

    languages = ("en", "zh") if args.lang == "both" else (args.lang,)
    benches = [generate(args.seed, lang, args.sessions, rules=args.rules) for lang in languages]
    out = write_sessions(benches, args.out or Path("data") / "generated" / f"sessions-{args.lang}-{args.seed}")
    audit = audit_sessions(s for b in benches for s in b.sessions)
    print_table([{"predicate": p, **counts} for p, counts in audit["per_predicate"].items()],
                ["predicate", "evaluated", "decided", "sessions"])
    print_table([{"terminal": t, "requests": n} for t, n in audit["per_terminal"].items()])
    print(f"wrote sessions.jsonl and audit.json to {out}: {audit['sessions']} sessions, {audit['requests']} requests "
          f"({', '.join(f'{k} {v}' for k, v in audit['requests_per_language'].items())}; seed {args.seed})")
    return 0
