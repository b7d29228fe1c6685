"""``routebr-kit metaroute-sweep``: the MetaRoute robustness sweep over the simulator's constants, on any executor."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, int_range, print_table

#: :data:`routebr_kit.metaroute.sweep.MAX_CONFIGURATIONS` as ``--help`` shows it: importing that module for the help
#: would load pandas (``tests/test_cli_light.py`` checks the two agree; the handler uses the module's own).
SHOWN_MAX_CONFIGURATIONS = 10_000


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--space", type=Path,
                   help="YAML file 'constants: {KEY: [low, high]}' (default: 15 constants within ±30%% of published)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--samples", type=int_range(1), default=None, help="Latin-hypercube configurations (default 64)")
    how.add_argument("--grid", action="store_true", help="the full grid over each constant's levels instead")
    p.add_argument("--max-configurations", type=int, default=None, metavar="N",
                   help=f"refuse a design of more than N configurations (default {SHOWN_MAX_CONFIGURATIONS:,})")
    p.add_argument("--sample-seed", type=int, default=0, help="seed of the Latin hypercube (default 0)")
    p.add_argument("--seeds", type=int, required=True, help="executor seeds 0..S-1 per configuration (paired)")
    p.add_argument("--mode", choices=("fast", "exact"), default="fast", help="simulator mode (default fast)")
    p.add_argument("--executor", default="inline",
                   help="inline | threads:N | processes:N | dask | dask:N | dask:ADDRESS (default inline)")
    p.add_argument("--max-in-flight", type=int_range(1), default=None, help="cells running at once across all workers")
    p.add_argument("--out", type=Path, required=True, help="output directory (re-run to resume)")


@command(_args)
def metaroute_sweep(args: argparse.Namespace) -> int:
    from ..metaroute import Mode
    from ..metaroute.sweep import (
        MAX_CONFIGURATIONS,
        SweepSpace,
        default_space,
        design,
        robustness,
        run_sweep,
        sensitivity,
    )
    from ..scale.progress import terminal_progress

    space = SweepSpace.load(args.space) if args.space else default_space()
    cap = MAX_CONFIGURATIONS if args.max_configurations is None else args.max_configurations
    plan = design(space, grid=True, max_configurations=cap) if args.grid else design(
        space, samples=64 if args.samples is None else args.samples, seed=args.sample_seed, max_configurations=cap)
    result = run_sweep(plan, args.seeds, args.out, mode=Mode(args.mode), executor=args.executor,
                       progress=terminal_progress(), max_in_flight=args.max_in_flight)
    print(f"{len(plan.configurations)} configurations × {args.seeds} seeds: {result.computed} computed, "
          f"{result.reused} reused → {args.out}")
    print_table([{"baseline": r.baseline, "configurations": r.configurations,
                  "adaptive ahead (CI excl. 0)": f"{r.ahead} ({r.fraction_ahead:.1%})",
                  "adaptive behind": r.behind, "median diff (pts)": f"{100 * r.median_difference:+.2f}"}
                 for r in (robustness(result, b) for b in ("static_workload", "one_shot"))])
    top = sensitivity(result).head(5)
    print_table([{"rank": int(r["rank"]), "constant": r["constant"], "spearman rho": f"{r['spearman_rho']:+.3f}"}
                 for _, r in top.iterrows()])
    return 0
