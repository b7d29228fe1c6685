"""``routebr-kit review``: impact + shadow replay + paired diff + gate of a candidate release, in one report.

The whole flow is :func:`routebr_kit.review.release_review` (the function notebook 10 and its rule editor call);
this command only loads the inputs, prints :meth:`Review.lines` and writes what was asked for.

Exit status: 0 the gate passed, 1 the gate failed (a regression), 2 bad input (or ledgers that cannot be paired).
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .common import command, int_range, write_json

PASS, REGRESSION = 0, 1


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--candidate-assets", type=Path, required=True,
                   help="the edited assets (files it lacks are taken from the base)")
    p.add_argument("--base-assets", type=Path, default=None,
                   help="the released assets (default: the artifact's data/ and prompts with --artifact; the folder "
                        "of --cases with --ledger)")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--artifact", type=Path, help="published artifact directory (every recorded result folder)")
    source.add_argument("--ledger", type=Path, nargs="+",
                        help="run directories written by `routebr-kit run` (or a folder of them)")
    p.add_argument("--cases", type=Path, default=None, help="--ledger: the gold cases file the runs were made on")
    p.add_argument("--base-state-schema", type=Path, default=None,
                   help="the runtime-state schema file the runs used (`run --state-schema`; default: "
                        "state_schema.json in the base assets, else the schema derived from the rules)")
    p.add_argument("--gate", default=None, metavar="FILE|SPEC",
                   help="the release gate (default: new_forbidden_dispatch <= 0, new_false_dispatch <= 0, "
                        "path_exact_drop <= 1.0pp, flip_pairs_drop <= 0; plus 'widening <= 0' from the exact "
                        "semantic diff whenever rules, catalog, registry or state schema differ)")
    p.add_argument("--allow-widening", action="append", default=[], metavar="ACTION",
                   help="an action whose dispatch set may widen (repeatable)")
    p.add_argument("--options", nargs="*", default=(), metavar="NAME=VALUE",
                   help="candidate controller options: fallback=CLARIFY|DEFER|HANDOFF|REJECT, enforce_state=, "
                        "enable_grounding=, repair= (true/false)")
    p.add_argument("--out", type=Path, default=None,
                   help="write the shadow ledgers here (new or empty folder), for `routebr-kit report`")
    p.add_argument("--json", type=Path, default=None, help="write the whole review as JSON")
    p.add_argument("--md", type=Path, default=None, help="write the diff and gate as Markdown")
    p.add_argument("--show", type=int_range(0), default=20, help="changed rows to print (default 20)")


@command(_args)
def review(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..review import load_review_source, markdown, release_review, write_shadow

    if args.out is not None and args.out.exists() and (not args.out.is_dir() or any(args.out.iterdir())):
        raise DataError(ErrorCode.INVALID_VALUE, "an output folder that does not exist yet or is empty",
                        file=str(args.out), field="--out")  # checked before the replay, not after
    source = load_review_source(artifact=args.artifact, ledger=args.ledger, cases=args.cases,
                                base_assets=args.base_assets, base_state_schema=args.base_state_schema,
                                details=True)
    result = release_review(source.base, args.candidate_assets, source.ledgers, args.gate, options=args.options,
                            allow_widening=args.allow_widening)
    for line in result.lines(show=args.show):
        print(line)
    if args.json:
        write_json(args.json, result.as_dict())
        print(f"wrote {args.json}")
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(result.diff, result.gate.lines()), encoding="utf-8")
        print(f"wrote {args.md}")
    if args.out is not None:
        path = write_shadow(result.shadow, args.out)
        print(f"wrote {path}")
        words = ["routebr-kit", "report", str(args.out), "--base", str(args.artifact or args.ledger[0])]
        if args.cases:
            words += ["--cases", str(args.cases)]
        words += ["--gate", str(args.gate or ", ".join(str(r.criterion) for r in result.gate.results))]
        print(f"report: {shlex.join(words)}  (changed cases side by side, with the gate)")
    else:
        print("report: add --out DIR to write the shadow ledgers, then `routebr-kit report DIR --base ...`")
    return PASS if result.passed else REGRESSION
