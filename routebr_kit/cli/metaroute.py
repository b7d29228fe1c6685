"""``routebr-kit metaroute``: run MetaRoute-Bench (main or ablations) and write the published files."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from .common import command, int_range, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seeds", type=int_range(1), default=30, help="seeds 0..N-1 (default 30, as published)")
    p.add_argument("--ablations", action="store_true", help="run adaptive and its four ablations instead")
    p.add_argument("--mode", choices=("exact", "fast"), default="exact",
                   help="exact: the published CPython streams, bit for bit; fast: vectorized Philox draws")
    p.add_argument("--config", type=Path, help="YAML file of configuration overrides (partial is fine)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override one constant, e.g. executor.recovery_success=0.9 (repeatable)")
    p.add_argument("--no-traces", action="store_true", help="skip traces.csv (66 MB at 300 seeds)")
    p.add_argument("--out", type=Path, required=True, help="output directory")


@command(_args)
def metaroute(args: argparse.Namespace) -> int:
    from ..core.hashing import sha256_file
    from ..metaroute import MetaRouteConfig, Mode, Suite, run_benchmark
    from ..scale.progress import terminal_progress

    config = MetaRouteConfig.load(args.config) if args.config else MetaRouteConfig()
    if args.overrides:
        config = config.with_overrides(args.overrides)
    suite = Suite.ABLATIONS if args.ablations else Suite.MAIN
    run = run_benchmark(args.seeds, suite=suite, mode=Mode(args.mode), config=config, progress=terminal_progress())
    written = run.export(args.out, include_traces=not args.no_traces)
    manifest = {"mode": run.mode.value, "seeds": args.seeds, "suite": suite.value, "config": config.to_mapping(),
                "config_sha256": config.sha256,
                "files": {name: sha256_file(path) for name, path in sorted(written.items())}}
    (args.out / "manifest.json").write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    print(f"Exported {len(run.traces)} traces to {args.out}")
    print_table([{"policy": s.policy, "success ± ci95": f"{s.success_rate:.4f} ± {s.success_ci95:.4f}",
                  "cost": f"{s.mean_cost:.4f}", "latency_s": f"{s.mean_latency_s:.2f}",
                  "retry": f"{s.retry_rate:.4f}", "utility": f"{s.utility:.4f}"}
                 for s in run.evaluation.summaries])  # summary order: utility, descending (as published)
    return 0
