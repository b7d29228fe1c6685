"""``routebr-kit report RUN_DIR [--base RUN_DIR] [--out report.html]``: one self-contained HTML report.

RUN_DIR is a run directory (or a tree of them), a shadow output, a published artifact or any result folder under its
``experiments/results/``, or a ``reproduce`` output.  With ``--base`` the report adds the paired diff base → RUN_DIR
(the same pairing and counts as ``routebr-kit diff BASE RUN_DIR``) and its gate verdict.  Exit status 0; a bad input
or two ledgers that cannot be paired exit 2 with one line.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                   help="run directory, shadow output, artifact (result) folder or reproduce output")
    p.add_argument("--base", type=Path, default=None, metavar="RUN_DIR",
                   help="a base to diff against (changed cases first, both traces side by side, the gate verdict)")
    p.add_argument("--out", type=Path, default=None,
                   help="the HTML file (default RUN_DIR/report.html; ./report.html for a published artifact)")
    p.add_argument("--cases", type=Path, default=None, help="gold cases file for run directories that name none")
    p.add_argument("--base-cases", type=Path, default=None, help="gold cases file for --base (default: --cases)")
    p.add_argument("--gate", default=None, metavar="FILE|SPEC",
                   help="gate with --base (default: 'new_forbidden_dispatch <= 0, new_false_dispatch <= 0, "
                        "path_exact_drop <= 1.0pp, flip_pairs_drop <= 0' for a shadow output, an offline replay; "
                        "'new_forbidden_dispatch <= 0, path_exact_regression_p >= 0.05' otherwise: two runs that "
                        "each drew their proposals)")


@command(_args)
def report(args: argparse.Namespace) -> int:
    from ..report import write_report
    from ..review.gate import Gate

    gate = Gate.from_arg(args.gate) if args.gate else None
    written = write_report(args.run_dir, args.out, base=args.base, cases=args.cases, base_cases=args.base_cases,
                           gate=gate)
    changed = "" if written.changed is None else f", {written.changed} changed against the base"
    print(f"wrote {written.path} ({written.bytes / 1e6:.2f} MB, {written.rows} rows{changed}, "
          f"{written.seconds:.2f} s); open it in a browser from disk — it needs no network")
    return 0
