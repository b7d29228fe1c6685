"""Wall-clock time to generate and write a benchmark, and to audit it.

One "generation" is what ``routebr-kit generate`` does: load catalog, rules and registry, plan the 600 slots,
write every request, label every case with the controller, and write the 600/SELECT/CONFIRM files, the assets
and the manifest.  Each figure is the median of ``--repeat`` runs in a fresh temporary directory (the target is
under 5 s).  The audit figure covers the 600 file and both subsets together.

    .venv/bin/python benchmarks/bench_generate.py [--seeds 0 1 2 3 4] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.dataset.audit import audit_files

TARGET_SECONDS = 5.0
CASE_FILES = ("routebr_600.csv", "routebr_select_160.csv", "routebr_confirm_320.csv")


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    rows = []
    for lang in ("en", "zh"):
        for decouple in (False, True):
            generate, audit = [], []
            for seed in args.seeds:
                for _ in range(args.repeat):
                    with tempfile.TemporaryDirectory() as tmp:
                        out = Path(tmp)
                        generate.append(timed(lambda s=seed, lang=lang, d=decouple, out=out: write_benchmark(
                            generate_benchmark(s, lang, decouple_entity_state=d), out)))
                        audit.append(timed(lambda out=out: audit_files(
                            [out / n for n in CASE_FILES], out / "catalog.csv", out / "boundary_rules.csv",
                            out / "registry.csv")))
            rows.append((lang, decouple, statistics.median(generate), max(generate), statistics.median(audit)))
    print(f"{'lang':<5} {'decoupled':<10} {'generate median s':>18} {'generate max s':>15} {'audit median s':>15}")
    for lang, decouple, median, worst, audit_median in rows:
        print(f"{lang:<5} {str(decouple):<10} {median:>18.3f} {worst:>15.3f} {audit_median:>15.3f}")
    worst = max(r[3] for r in rows)
    print(f"slowest generation {worst:.3f} s over seeds {args.seeds} x {args.repeat} repeats "
          f"({'within' if worst < TARGET_SECONDS else 'OVER'} the {TARGET_SECONDS:.0f} s target)")


if __name__ == "__main__":
    main()
