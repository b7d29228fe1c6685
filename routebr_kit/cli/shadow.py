"""``routebr-kit shadow``: replay every recorded proposal under candidate assets/options, with no model call."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, print_table


def _args(p: argparse.ArgumentParser) -> None:
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--artifact", type=Path, help="published artifact directory (every result folder)")
    source.add_argument("--ledger", type=Path, nargs="+", help="run directories written by `routebr-kit run` "
                        "(or a folder of them)")
    p.add_argument("--cases", type=Path, default=None,
                   help="--ledger: the gold cases file the runs were made on")
    p.add_argument("--base-assets", type=Path, default=None,
                   help="the assets the runs used (default: the artifact's data/ and prompts with --artifact; the "
                        "folder of --cases with --ledger)")
    p.add_argument("--base-state-schema", type=Path, default=None,
                   help="the runtime-state schema file the runs used (`run --state-schema`; default: "
                        "state_schema.json in the base assets, else the schema derived from the rules)")
    p.add_argument("--candidate-assets", type=Path, default=None,
                   help="a candidate asset directory: each asset file it holds replaces the base's")
    p.add_argument("--catalog", type=Path, default=None, help="candidate catalog CSV")
    p.add_argument("--rules", type=Path, default=None, help="candidate boundary rules CSV")
    p.add_argument("--registry", type=Path, default=None, help="candidate entity registry CSV")
    p.add_argument("--prompts", type=Path, default=None, help="candidate prompts JSON")
    p.add_argument("--state-schema", type=Path, default=None,
                   help="candidate runtime-state schema JSON (an edit class of its own: every state is checked "
                        "against it before anything else)")
    p.add_argument("--options", nargs="*", default=(), metavar="NAME=VALUE",
                   help="controller options: fallback=CLARIFY|DEFER|HANDOFF|REJECT, enforce_state=, "
                        "enable_grounding=, repair= (true/false)")
    p.add_argument("--receipts", action="store_true",
                   help="also write a full receipt per row under raw/ (decision record, trace, replies)")
    p.add_argument("--out", type=Path, required=True, help="output folder (ledgers in the run layout)")


@command(_args)
def shadow(args: argparse.Namespace) -> int:
    from ..review import candidate_edit, load_review_source, parse_options, shadow_replay, write_shadow
    from ..review.release import state_schema_file

    source = load_review_source(artifact=args.artifact, ledger=args.ledger, cases=args.cases,
                                base_assets=args.base_assets, base_state_schema=args.base_state_schema, details=False)
    edit = candidate_edit(source.base, args.candidate_assets, catalog=args.catalog, rules=args.rules,
                          registry=args.registry, prompts=args.prompts,
                          state_schema=state_schema_file(args.state_schema, "--state-schema"))
    result = shadow_replay(source.ledgers, edit, parse_options(args.options))
    path = write_shadow(result, args.out, receipts=args.receipts)
    print_table(result.summary())
    print(f"edit: {', '.join(c.value for c in edit.classes) or 'none'}; rows {result.rows}, changed decisions "
          f"{result.changed}, needs live re-run {result.needs_live_rerun}; model calls 0")
    print(f"wrote {path}")
    print(f"report: routebr-kit report {args.out} --base {args.artifact or args.ledger[0]}"
          + (f" --cases {args.cases}" if args.cases else "") + "  (changed cases side by side, with the gate)")
    return 0
