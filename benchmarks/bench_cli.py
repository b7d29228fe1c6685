"""Start-up cost of the command line: ``routebr-kit --help`` and ``routebr-kit CMD --help`` beside
``import routebr_kit``.

Each target is a fresh interpreter (``sys.executable``), timed from spawn to exit; the rounds are interleaved (every
target once per round, in the same order) so a busy machine slows every row alike.  ``routebr-kit`` is run as the
console script runs it: ``from routebr_kit.cli import main; sys.exit(main())``.  A separate, untimed run of each
target counts the modules in ``sys.modules`` at exit and names the heavy ones (pandas, numpy, scipy, matplotlib)
among them.  The minimum is shown beside the median: on a loaded machine it is the steadier figure.  Ratio: the
target's median wall time over the median of ``import routebr_kit`` (target for ``--help``: at most 2).

    .venv/bin/python benchmarks/bench_cli.py [--rounds 7] [--tree DIR] [--json FILE]

``--tree`` measures another checkout's package (e.g. an export of an older commit) with this interpreter.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "numpy", "scipy", "matplotlib")
CLI = "import sys; from routebr_kit.cli import main; sys.exit(main())"
#: Printed at exit by the counting run (after argparse's ``--help`` exits, too).
DUMP = ("import atexit, json, sys; atexit.register(lambda: sys.stderr.write("
        "'\\nMODULES ' + json.dumps(sorted(sys.modules)) + '\\n')); ")
TARGET_RATIO = 2.0


def targets(tree: Path) -> list[tuple[str, list[str]]]:
    """(label, argv after the interpreter) for the baselines, ``--help`` and every command's ``--help``."""
    listing = subprocess.run([sys.executable, "-c", "from routebr_kit.cli.app import COMMANDS; print(*COMMANDS)"],
                             env=_env(tree), cwd=tree, capture_output=True, text=True, check=True).stdout.split()
    return [("python -c pass", ["-c", "pass"]), ("import routebr_kit", ["-c", "import routebr_kit"]),
            ("--help", ["-c", CLI, "--help"]), *((f"{name} --help", ["-c", CLI, name, "--help"]) for name in listing)]


def _env(tree: Path) -> dict[str, str]:
    """The children's environment; they also run in ``tree`` (``-c`` puts the working directory first on the path)."""
    env = dict(os.environ, PYTHONPATH=str(tree), TQDM_DISABLE="1", COLUMNS="100")
    env.pop("PYTHONSTARTUP", None)
    return env


def modules(argv: list[str], env: dict[str, str], tree: Path) -> list[str]:
    """``sys.modules`` at the exit of one run of ``argv``."""
    code = DUMP + argv[1]
    done = subprocess.run([sys.executable, "-c", code, *argv[2:]], env=env, cwd=tree, capture_output=True,
                          text=True)
    line = next((x for x in done.stderr.splitlines() if x.startswith("MODULES ")), None)
    if line is None:
        raise RuntimeError(f"{argv!r} printed no module list: {done.stderr[-2000:]}")
    return json.loads(line[len("MODULES "):])


def measure(rounds: int, tree: Path) -> list[dict[str, object]]:
    env = _env(tree)
    chosen = targets(tree)
    walls: dict[str, list[float]] = {label: [] for label, _ in chosen}
    for _ in range(rounds):
        for label, argv in chosen:
            started = time.perf_counter()
            subprocess.run([sys.executable, *argv], env=env, cwd=tree, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=True)
            walls[label].append(time.perf_counter() - started)
    base = statistics.median(walls["import routebr_kit"])
    rows = []
    for label, argv in chosen:
        loaded = modules(argv, env, tree)
        median = statistics.median(walls[label])
        rows.append({"target": label, "median ms": round(1000 * median, 1),
                     "min ms": round(1000 * min(walls[label]), 1), "modules": len(loaded),
                     "ratio": round(median / base, 2), "heavy": ",".join(m for m in HEAVY if m in loaded) or "-"})
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--tree", type=Path, default=REPO, help="the checkout whose routebr_kit to measure")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON")
    args = parser.parse_args()
    rows = measure(args.rounds, args.tree.resolve())
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in rows[0]}
    print("  ".join(c.ljust(widths[c]) for c in rows[0]))
    for r in rows:
        print("  ".join(str(v).rjust(widths[c]) if isinstance(v, (int, float)) else str(v).ljust(widths[c])
                        for c, v in r.items()))
    top = next(r for r in rows if r["target"] == "--help")
    commands = [r for r in rows if r["target"].endswith(" --help") and r["target"] != "--help"]
    worst = max(commands, key=lambda r: r["ratio"])
    heavy = sorted({r["target"] for r in rows[2:] if r["heavy"] != "-"})
    print(f"\n--help: {top['ratio']}x import routebr_kit (target <= {TARGET_RATIO}x); slowest CMD --help: "
          f"{worst['target']} {worst['ratio']}x; heavy modules imported by: {', '.join(heavy) or 'none'} "
          f"({args.rounds} rounds, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f})")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
