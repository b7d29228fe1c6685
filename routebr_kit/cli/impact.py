"""``routebr-kit impact``: classify an asset edit and select exactly the recorded cases it can affect."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ..review.assets import AssetFiles, compare_assets
from ..review.impact import PAPER_SLICES, impact
from ..review.ledgers import load_ledgers, load_many
from ..review.shadow import parse_options
from .common import command, print_table
from .shadow import _schema_file


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


@command("impact", "classify an asset edit and select the recorded cases it can affect (no model call)", _args)
def impact_cmd(args: argparse.Namespace) -> int:
    base = AssetFiles.from_dir(args.base_assets).replace(
        state_schema=_schema_file(args.base_state_schema, "--base-state-schema"))
    candidate = base.overlay(args.candidate_assets)  # the candidate folder need hold only what it changes
    edit = compare_assets(base, candidate)
    options = parse_options(args.options)
    ledgers = None
    if args.artifact is not None:
        ledgers = load_ledgers(args.artifact, details=False)
    elif args.ledger:
        ledgers = load_many(args.ledger, cases=args.cases, assets=edit.base_assets, details=False)
    report = impact(edit, ledgers, options)
    print(f"changed files: {', '.join(edit.changed_files) or 'none'}; "
          f"edit classes: {', '.join(c.value for c in edit.classes) or 'none'}")
    if edit.rules_changed:
        print(f"rules changed: {', '.join(edit.rules_changed)}")
    if edit.registry_changed:
        print("registry changed: " + ", ".join(f"{k} ({v})" for k, v in edit.registry_changed.items()))
    if edit.prompt_stages_changed:
        print(f"prompt stages changed: {', '.join(edit.prompt_stages_changed)}")
    if edit.state_schema_changed:
        print("runtime-state schema changed (every state is checked against it before anything else)")
    for cls in edit.classes:
        print(f"paper regression slice for {cls.value}: {PAPER_SLICES[cls]}")
    if ledgers is not None:
        print_table(report.summary())
        stages = report.stages()
        print(f"controller decides differently (exact, from the recorded replies): {len(report.controller)} rows"
              + (" — first differing stage: " + ", ".join(f"{k} {v}" for k, v in stages.items()) if stages else ""))
        if report.controller:
            print_table([r.as_dict() for r in report.controller[:20]],
                        ["task", "case_id", "split", "why", "base_reason", "candidate_reason", "base_rule",
                         "candidate_rule", "base_final_path", "candidate_final_path"])
        cost = report.live_cost
        print(f"live re-run slice: {cost.rows} rows, {cost.calls} calls, {cost.input_tokens} input + "
              f"{cost.output_tokens} output tokens" + (f", ${cost.usd}" if cost.usd is not None else
                                                       " (no recorded prices)"))
    for prop, test in report.adapter_tests:
        print(f"adapter test [{prop}]: {test}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report.as_dict(), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0
