"""``routebr-kit impact``: classify an asset edit and select exactly the recorded cases it can affect."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, write_json


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--base-assets", type=Path, required=True, help="the released asset directory")
    p.add_argument("--candidate-assets", type=Path, required=True,
                   help="the edited assets (files it lacks are taken from --base-assets)")
    source = p.add_mutually_exclusive_group()
    source.add_argument("--artifact", type=Path, help="published artifact directory (its recorded runs)")
    source.add_argument("--ledger", type=Path, nargs="+", help="run directories (or a folder of them)")
    p.add_argument("--cases", type=Path, default=None, help="--ledger: the gold cases file of the runs")
    p.add_argument("--base-state-schema", type=Path, default=None,
                   help="the runtime-state schema file the runs used (`run --state-schema`; default: "
                        "state_schema.json in --base-assets, else the schema derived from the rules)")
    p.add_argument("--options", nargs="*", default=(), metavar="NAME=VALUE",
                   help="controller option overrides, as `shadow --options` takes them")
    p.add_argument("--json", type=Path, default=None, help="write the full selection as JSON")


@command(_args)
def impact_cmd(args: argparse.Namespace) -> int:
    from ..review import candidate_edit, edit_lines, impact, impact_lines, load_ledgers, load_many
    from ..review.assets import AssetFiles
    from ..review.release import state_schema_file
    from ..review.shadow import parse_options

    base = AssetFiles.from_dir(args.base_assets).replace(
        state_schema=state_schema_file(args.base_state_schema, "--base-state-schema"))
    edit = candidate_edit(base, args.candidate_assets)  # the candidate need hold only what it changes
    options = parse_options(args.options)
    ledgers = None
    if args.artifact is not None:
        ledgers = load_ledgers(args.artifact, details=False)
    elif args.ledger:
        ledgers = load_many(args.ledger, cases=args.cases, assets=edit.base_assets, details=False)
    report = impact(edit, ledgers, options)
    for line in [*edit_lines(edit), *impact_lines(report, ledgers=ledgers is not None)]:
        print(line)
    write_json(args.json, report.as_dict())
    return 0
