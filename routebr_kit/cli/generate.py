"""``routebr-kit generate --seed N --lang en|zh [--out DIR] [--decouple-entity-state] [--lexical-shift]``: write a
seeded benchmark."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, int_range, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seed", type=int_range(0), default=0, help="generator seed (default 0)")
    p.add_argument("--lang", choices=("en", "zh"), default="en", help="language and registry (default en)")
    p.add_argument("--out", type=Path, help="output directory (default data/generated/<lang>-<seed>[-decoupled])")
    p.add_argument("--decouple-entity-state", action="store_true",
                   help="keep entity_resolved=true for half of the unresolvable references (object gate decides)")
    p.add_argument("--lexical-shift", action="store_true",
                   help="word the primary sentences with held-out paraphrase templates (the lexical-shift split: same "
                        "plan, states and gold labels)")
    p.add_argument("--data", type=Path, help="directory with catalog.csv, boundary_rules.csv, registry_<lang>.csv "
                   "(default: the packaged routebr_kit/resources/)")


@command(_args)
def generate(args: argparse.Namespace) -> int:
    from ..dataset import generate_benchmark, write_benchmark
    from ..dataset.generate import MANIFEST_FILE

    suffix = ("-decoupled" if args.decouple_entity_state else "") + ("-shift" if args.lexical_shift else "")
    out = args.out or Path("data") / "generated" / f"{args.lang}-{args.seed}{suffix}"
    bench = generate_benchmark(args.seed, args.lang, decouple_entity_state=args.decouple_entity_state,
                               data_dir=args.data, lexical_shift=args.lexical_shift)
    manifest = write_benchmark(bench, out)
    rows = {}
    for record in bench.rows():
        row = rows.setdefault(record["split"], {"split": record["split"], "cases": 0, "SELECT": 0, "CONFIRM": 0,
                                                "dispatchable": 0, "bounded": 0})
        row["cases"] += 1
        row[record["partition"]] = row.get(record["partition"], 0) + 1
        row["dispatchable" if record["dispatchable"] else "bounded"] += 1
    print_table(list(rows.values()), ["split", "cases", "SELECT", "CONFIRM", "dispatchable", "bounded"])
    print_table([{"file": name, "sha256": digest[:16]} for name, digest in manifest.files.items()])
    print(f"wrote {len(manifest.files)} files to {out} (seed {args.seed}, {args.lang}; see {MANIFEST_FILE})")
    return 0
