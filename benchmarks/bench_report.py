"""Report size and speed: ``routebr-kit report`` over the 1,960 published executions, alone and with ``--base``.

1. **Fresh process** (``subprocess``; interpreter start and imports included): ``routebr-kit report ARTIFACT`` and,
   for a shadow of a loosening rule edit, ``routebr-kit report SHADOW --base ARTIFACT``.  Median wall time of
   ``--repeat`` runs, with the child's CPU time (which load on the shared machine does not inflate).
2. **In process, imports warm**: the same two reports written by :func:`routebr_kit.report.write_report` after one
   warm-up call (so scipy, Jinja2 and the replay code are imported), median of ``--repeat`` runs.

Printed: the file sizes (bytes and MB) and every time.  Targets from issue 24: ≤ 5 MB and ≤ 3 s for the published
rows.  The 100,000-row browser timing is measured by ``tests/test_report_browser.py`` (printed there, with ``-s``).

    .venv/bin/python benchmarks/bench_report.py [--artifact ../shared/routebr_artifact] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from routebr_kit.report import write_report

REPO = Path(__file__).resolve().parents[1]
KIT = [sys.executable, "-m", "routebr_kit"]


def loosening_rules(artifact: Path, folder: Path) -> Path:
    """The published rules without R060 (the protected-action permission rule)."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (artifact / "data" / "boundary_rules.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    (folder / "boundary_rules.csv").write_text("".join(x for x in lines if not x.startswith("R060,")),
                                               encoding="utf-8")
    return folder


def fresh(args: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(KIT + args, check=True, capture_output=True, cwd=REPO)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", type=Path, default=REPO.parent / "shared" / "routebr_artifact")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        rules = loosening_rules(args.artifact, tmp_path / "candidate")
        subprocess.run(KIT + ["shadow", "--artifact", str(args.artifact), "--candidate-assets", str(rules),
                              "--out", str(tmp_path / "shadow")], check=True, capture_output=True, cwd=REPO)
        jobs = {
            "published (1,960 rows)": ([str(args.artifact), "--out", str(tmp_path / "a.html")],
                                       dict(run_dir=args.artifact, out=tmp_path / "a2.html")),
            "shadow --base published": ([str(tmp_path / "shadow"), "--base", str(args.artifact), "--out",
                                         str(tmp_path / "b.html")],
                                        dict(run_dir=tmp_path / "shadow", out=tmp_path / "b2.html",
                                             base=args.artifact)),
        }
        print(f"{'report':<26} {'size':>14} {'fresh wall s':>13} {'fresh CPU s':>12} {'warm s':>8}  rows  changed")
        for name, (cli_args, kwargs) in jobs.items():
            runs = [fresh(["report", *cli_args]) for _ in range(args.repeat)]
            write_report(**kwargs)  # warm-up: imports
            warm = []
            for _ in range(args.repeat):
                written = write_report(**kwargs)
                warm.append(written.seconds)
            size = Path(cli_args[cli_args.index("--out") + 1]).stat().st_size
            print(f"{name:<26} {size:>9} B ({size / 1e6:.2f} MB) {statistics.median(w for w, _ in runs):>6.2f} "
                  f"{statistics.median(c for _, c in runs):>12.2f} {statistics.median(warm):>8.2f}  "
                  f"{written.rows}  {written.changed if written.changed is not None else '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
