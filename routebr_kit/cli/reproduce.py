"""``routebr-kit reproduce``: run every notebook headlessly with papermill into ``outputs/<run_id>/``."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from ..notebook.pipeline import REPO, RunPlan, run
from .common import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", type=Path, default=Path("params/default.yaml"), help="parameters file (YAML)")
    p.add_argument("--out", type=Path, help="output folder (default outputs/<params-name>-<UTC time>)")
    p.add_argument("--artifact", type=Path, help="published RouteBR artifact: adds the exact paper replay")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


@command("reproduce", "run every notebook headlessly (papermill) into outputs/<run_id>/", _args)
def reproduce(args: argparse.Namespace) -> int:

    plan = RunPlan.load(args.params)
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = args.out or REPO / "outputs" / f"{plan.name}-{stamp}"
    status = run(plan, out, artifact=args.artifact, progress=not args.no_progress)
    print(f"{'finished' if status == 0 else 'FAILED'}: {out / 'README.md'}")
    return status
