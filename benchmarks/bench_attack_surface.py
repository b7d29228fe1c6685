"""Wall-clock time of the exact worst-case analysis: all five systems over a cases file, in a fresh process.

Each repeat starts a new interpreter that imports the kit, loads the cases and the assets beside them, and analyses
every case for RouteBR, A-state, A-ground, B1 and B2 (what ``routebr-kit attack-surface`` does, minus printing).
Printed per repeat: the whole process (interpreter start included) and, inside it, import + load and analysis.
The target is under 2 s for the process on the published 600-case file.

    .venv/bin/python benchmarks/bench_attack_surface.py [--cases FILE] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_SECONDS = 2.0
DEFAULT_CASES = Path(__file__).resolve().parents[2] / "shared" / "routebr_artifact" / "data" / "routebr_600.csv"

CHILD = """
import json, sys, time
start = time.perf_counter()
from routebr_kit.adversarial.surface import attack_surface
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.cases import load_cases
cases, assets = load_cases(sys.argv[1]), assets_beside(sys.argv[1])
loaded = time.perf_counter()
report = attack_surface(cases, assets)
done = time.perf_counter()
print(json.dumps({"load": loaded - start, "analyse": done - loaded, "cases": len(cases),
                  "decisions": sum(len(s.paths) for c in report.cases for s in c.systems.values())}))
"""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=DEFAULT_CASES)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    walls = []
    for i in range(args.repeat):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.cases)], capture_output=True, text=True,
                             check=True)
        wall = time.perf_counter() - start
        walls.append(wall)
        inner = json.loads(out.stdout)
        print(f"run {i + 1}: process {wall:.3f} s (import+load {inner['load']:.3f} s, analyse {inner['analyse']:.3f} s;"
              f" {inner['cases']} cases x 5 systems)")
    median = statistics.median(walls)
    print(f"median process time {median:.3f} s over {args.repeat} runs of {args.cases.name}; target < "
          f"{TARGET_SECONDS} s: {'met' if median < TARGET_SECONDS else 'NOT met'}")
    return 0 if median < TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
