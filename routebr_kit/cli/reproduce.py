"""``routebr-kit reproduce``: run every notebook headlessly with papermill into ``outputs/<run_id>/``.

Uses the published artifact whenever one is found (``--artifact``, ``$ROUTEBR_ARTIFACT``, ``artifacts/routebr/``,
the sibling checkout); checks every input before the first notebook; never writes into an existing run folder
without ``--resume``.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path

from ..core.errors import DataError, ErrorCode
from ..notebook.pipeline import REPO, RunPlan, choose_artifact, execute, prepare
from .common import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", type=Path, default=Path("params/default.yaml"), help="parameters file (YAML)")
    p.add_argument("--out", type=Path, help="output folder, new or empty (default outputs/<params-name>-<UTC time>)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: keep the notebooks that succeeded with the same parameters")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--artifact", type=Path,
                       help="the published RouteBR artifact (default: the first one found: $ROUTEBR_ARTIFACT, "
                            "artifacts/routebr/, ../shared/routebr_artifact)")
    which.add_argument("--no-artifact", action="store_true",
                       help="run offline on the kit's own benchmark even when an artifact is found")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


@command("reproduce", "run every notebook headlessly (papermill) into outputs/<run_id>/, with the published "
         "artifact whenever it is found", _args)
def reproduce(args: argparse.Namespace) -> int:

    plan = RunPlan.load(args.params)
    choice = choose_artifact(args.artifact, discover=not args.no_artifact)
    if args.out is None and args.resume:
        raise DataError(ErrorCode.EMPTY_VALUE, "--out RUN_DIR: the run to resume", field="--out")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = args.out = args.out or REPO / "outputs" / f"{plan.name}-{stamp}"  # args.out: for a Ctrl-C resume hint
    prepared = prepare(plan, out, artifact=choice, resume=args.resume)  # every check, before anything is written
    print(f"artifact: {choice.path if choice.path is not None else 'none'} ({choice.how})")
    if prepared.kept:
        print(f"resuming {prepared.out}: keeping {', '.join(prepared.kept)}")
    status = execute(prepared, progress=not args.no_progress)
    print(f"{'finished' if status == 0 else 'FAILED'}: {prepared.out / 'README.md'}")
    return status
