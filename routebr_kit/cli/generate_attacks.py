"""``routebr-kit generate-attacks --cases FILE --seed N --lang en|zh --out DIR [--per-family K]``: the injection suite.

Writes ``attacks.csv`` (published cases schema: ``run``, ``audit`` and the scorers read it unchanged), the catalog,
rules and registry beside it, ``attacks.json`` (family, target and injected text per case) and ``manifest.json``.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, int_range, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", required=True, type=Path, help="benchmark cases CSV with its assets beside it")
    p.add_argument("--seed", type=int_range(0), default=0, help="suite seed (default 0)")
    p.add_argument("--lang", choices=("en", "zh"), required=True, help="language of the injected text")
    p.add_argument("--out", required=True, type=Path, help="output directory")
    p.add_argument("--per-family", type=int_range(1), default=None,  # None: adversarial.suite.DEFAULT_PER_FAMILY
                   help="variants per attack family (default 20)")
    p.add_argument("--protected-action", default=None,  # None: adversarial.surface.PROTECTED_ACTION
                   help="the action attacks prefer as target (default A5_PROTECTED_ACTION)")


@command(_args)
def generate_attacks(args: argparse.Namespace) -> int:
    from ..adversarial.suite import CASES_FILE, DEFAULT_PER_FAMILY, generate_suite, write_suite
    from ..adversarial.surface import PROTECTED_ACTION

    per_family = DEFAULT_PER_FAMILY if args.per_family is None else args.per_family
    protected = PROTECTED_ACTION if args.protected_action is None else args.protected_action
    suite = generate_suite(args.cases, seed=args.seed, language=args.lang, per_family=per_family,
                           protected_action=protected)
    files = write_suite(suite, args.out, per_family=per_family)
    print_table([{"family": family, "cases": n} for family, n in suite.counts().items()])
    print_table([{"file": name, "sha256": digest[:16]} for name, digest in files.items()])
    print(f"wrote {len(suite.cases)} cases to {args.out / CASES_FILE} (seed {args.seed}, {args.lang})")
    return 0
