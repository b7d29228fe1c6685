"""``routebr-kit diff BASE CANDIDATE``: paired diff of two ledger sets with an optional CI gate.

Exit status: 0 the gate passed (or no gate), 1 the gate failed (a regression), 2 the ledgers are not comparable
(or the input is bad).  With a gate, each criterion's line also shows its A/A false-alarm rate calibrated on the
base ledgers (:mod:`routebr_kit.review.calibration`, stratum re-run model, ``--calibration-sims``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import command, int_range, print_table, write_json

PASS, REGRESSION, NOT_COMPARABLE = 0, 1, 2


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("base", type=Path, help="run directory, shadow output or published artifact directory")
    p.add_argument("candidate", type=Path, help="run directory, shadow output or published artifact directory")
    p.add_argument("--cases", type=Path, default=None, help="gold cases file for run directories that do not name one")
    p.add_argument("--gate", default=None, metavar="FILE|SPEC",
                   help="e.g. 'new_forbidden_dispatch <= 0, new_false_dispatch <= 0, path_exact_drop <= 1.0pp, "
                        "flip_pairs_drop <= 0' or a JSON/YAML file")
    p.add_argument("--state-schema", type=Path, default=None,
                   help="run directories made with `run --state-schema FILE`: that FILE (the release their forbidden "
                        "dispatches are judged under; checked against each manifest's recorded hash)")
    p.add_argument("--allow-widening", action="append", default=[], metavar="ACTION",
                   help="an action whose dispatch set may widen (repeatable; the sides' releases differ)")
    p.add_argument("--json", type=Path, default=None, help="write the full report as JSON")
    p.add_argument("--md", type=Path, default=None, help="write a Markdown report")
    p.add_argument("--show", type=int_range(0), default=20, help="changed rows to print (default 20)")
    p.add_argument("--calibration-sims", type=int_range(0), default=2000, metavar="N",
                   help="with --gate: estimate each criterion's A/A false-alarm rate on the base ledgers from N "
                        "simulated re-runs (stratum re-run model, seed 0; see gate-check); 0: do not")


@command(_args)
def diff(args: argparse.Namespace) -> int:
    from ..review import (
        CHANGED_COLUMNS,
        Gate,
        NotComparable,
        diff_ledgers,
        diff_sentence,
        load_ledgers,
        markdown,
        split_table,
    )
    from ..review.release import state_schema_file

    gate = Gate.from_arg(args.gate) if args.gate else None
    cache: dict = {}  # both sides usually name the same cases files: parse them once
    base = load_ledgers(args.base, cases=args.cases, cache=cache)
    candidate = load_ledgers(args.candidate, cases=args.cases, cache=cache)
    try:
        report = diff_ledgers(base, candidate, state_schema=state_schema_file(args.state_schema, "--state-schema"))
    except NotComparable as exc:
        print(f"routebr-kit diff: NOT COMPARABLE: {args.base} vs {args.candidate}", file=sys.stderr)
        for reason in exc.reasons:
            print(f"  - {reason}", file=sys.stderr)
        return NOT_COMPARABLE
    from ..review.gate import choose_gate

    # whenever the sides' rules, catalog, registry or state schema differ (or are unknown), the exact semantic diff
    # runs and the gate (the given one, or none) gains widening <= 0
    chosen, release = choose_gate(gate, base, candidate, report, replay=True, allow_widening=args.allow_widening)
    if gate is None and release.differs:
        gate = Gate(tuple(c for c in chosen.criteria if c.metric == "widening"), "widening")
    elif gate is not None:
        gate = chosen
    values = {"widening": release.widening} if release.differs else None
    verdict = gate.evaluate(report, release_values=values) if gate else None
    for line in release.lines():
        print(line)
    print_table(split_table(report))
    print(f"\n{diff_sentence(report)}")
    from ..evaluation.floor import ledger_set_floor

    floor = ledger_set_floor(base)
    if floor is not None:
        print(floor.line() + " on the base's cases (a constant proposer through the same controller)")
    rows = [c.as_dict() for c in report.changed[:args.show]]
    if rows:
        print()
        print_table(rows, [c for c in CHANGED_COLUMNS if c != "needs_live_rerun"])
        if len(report.changed) > args.show:
            print(f"... and {len(report.changed) - args.show} more (--json for all)")
    lines = verdict.lines() if verdict else []
    calibration = None
    if verdict is not None and args.calibration_sims > 0:
        from ..review.calibration import calibrate, criterion_note

        calibration = calibrate(base, gate, sims=args.calibration_sims, recommend=False)
        notes = [criterion_note(calibration, r.criterion) for r in verdict.results]
        lines = [line + note for line, note in zip(lines, notes)] + lines[len(notes):]
    for line in lines:
        print(line)
    if args.json:
        doc = report.as_dict()
        doc["gate"] = verdict.as_dict() if verdict else {"passed": True, "source": None, "criteria": []}
        if floor is not None:
            doc["floor"] = floor.as_dict()
        if calibration is not None:
            doc["gate"]["calibration"] = calibration.as_dict()
        write_json(args.json, doc)
    if args.md:
        args.md.parent.mkdir(parents=True, exist_ok=True)
        args.md.write_text(markdown(report, lines), encoding="utf-8")
    return REGRESSION if verdict is not None and not verdict.passed else PASS
