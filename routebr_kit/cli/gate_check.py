"""``routebr-kit gate-check --gate SPEC (--ledger DIR… | --artifact DIR)``: how much to trust a release gate.

For every criterion of the gate: its false-alarm rate when nothing changed (A/A: base and candidate are two
re-runs of the same system), its power against a declared drop in path-exact accuracy (``--effect``), and the
number of rows at which it reaches 80% power while alarming in at most 5% of A/A re-runs — by Monte Carlo over
``--sims`` seeded simulations under each re-run model (``--model``: ``stratum`` resamples the observed rows of a
task's gold stratum, ``repeats`` a case's own repeats, ``simulated`` seeded ``sim:<profile>`` re-runs).  See
:mod:`routebr_kit.review.calibration`.  Exit 0; bad input exits 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, int_range, print_table, write_json


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gate", default=None, metavar="FILE|SPEC",  # None: review.gate.DEFAULT_GATE
                   help="the gate to calibrate (default: the release default, 'new_forbidden_dispatch <= 0, "
                        "new_false_dispatch <= 0, path_exact_drop <= 1.0pp, flip_pairs_drop <= 0')")
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--artifact", type=Path, help="published artifact directory (its recorded runs)")
    source.add_argument("--ledger", type=Path, nargs="+", help="run directories (or a folder of them)")
    p.add_argument("--cases", type=Path, default=None, help="--ledger: the gold cases file of the runs")
    p.add_argument("--task", action="append", default=[], metavar="PREFIX",
                   help="calibrate on the tasks whose key starts with PREFIX (repeatable; e.g. confirm/routebr)")
    p.add_argument("--model", default="stratum,simulated",
                   help="re-run models, comma-separated: stratum, repeats, simulated (default stratum,simulated)")
    p.add_argument("--effect", default="2pp", help="the declared drop in path-exact accuracy (default 2pp; 0: none)")
    p.add_argument("--sims", type=int_range(1), default=2000, help="simulations per estimate (default 2000)")
    p.add_argument("--search-sims", type=int_range(1), default=None,
                   help="simulations per sample-size grid point (default min(--sims, 500))")
    p.add_argument("--reruns", type=int_range(1), default=20, help="simulated re-runs per task for --model simulated")
    p.add_argument("--seed", type=int_range(0), default=0)
    p.add_argument("--no-search", action="store_true", help="skip the sample-size search")
    p.add_argument("--json", type=Path, default=None, help="write every estimate as JSON")


@command(_args)
def gate_check(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..review.calibration import (
        ALPHA,
        MAX_N,
        TARGET_POWER,
        build_design,
        calibrate,
        merge_repeats,
        parse_effect,
        parse_models,
        select_tasks,
    )
    from ..review.gate import DEFAULT_GATE, Gate
    from ..review.ledgers import load_ledgers, load_many

    gate = Gate.from_arg(DEFAULT_GATE if args.gate is None else args.gate)
    models = parse_models(args.model)
    effect = parse_effect(args.effect)
    if args.reruns < 2:  # the parser refuses < 1 (as it does for --sims and --search-sims)
        raise DataError(ErrorCode.INVALID_VALUE, "--reruns of at least 2", got=args.reruns, field="--reruns")
    if args.artifact is not None:
        ledgers = load_ledgers(args.artifact, details=False)
    else:
        ledgers = load_many(args.ledger, cases=args.cases, details=False)
    ledgers = select_tasks(merge_repeats(ledgers), args.task)
    results = []
    for model in models:
        design = build_design(ledgers, model, reruns=args.reruns, seed=args.seed)
        result = calibrate(ledgers, gate, model=model, sims=args.sims, seed=args.seed, effect_pp=effect,
                           search_sims=args.search_sims, design=design, recommend=not args.no_search)
        results.append(result)
        print(f"\n## re-run model: {model.value} — {result.rows} paired rows in {len(ledgers.tasks)} tasks, "
              f"expected path exact {100 * result.expected_exact:.1f}%, {result.sims} simulations, seed {args.seed}")
        for task, how in sorted(result.models.items()):
            if how != model.value:
                print(f"  {task}: {how}")
        print_table(result.table())
        if effect > 0 and not args.no_search:
            print(f"sample size: smallest n (rows, resampled by FLIP pair or row) with power >= "
                  f"{100 * TARGET_POWER:.0f}% and A/A false alarm <= {100 * ALPHA:.0f}%, on one grid 50..{MAX_N} "
                  f"(steps of about 9%) from common random numbers, {result.search_sims} simulations; "
                  "[optimistic, conservative]: the same read at either end of the Monte-Carlo intervals")
    print(f"\nA/A: base and candidate re-drawn from the same re-run model; rates are simulations out of "
          f"{args.sims} with Wilson 95% intervals (the Monte-Carlo error). Effect: the candidate loses each right "
          f"answer with the probability that drops expected path exact by {effect:g}pp (a misroute on the same side "
          f"of the dispatch boundary).")
    if args.json:
        write_json(args.json, {"gate": str(gate), "source": str(args.artifact or [str(p) for p in args.ledger]),
                               "tasks": sorted(ledgers.tasks), "calibrations": [r.as_dict() for r in results]})
        print(f"wrote {args.json}")
    return 0
