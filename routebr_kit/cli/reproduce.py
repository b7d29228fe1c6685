"""``routebr-kit reproduce``: run every notebook headlessly with papermill into ``outputs/<run_id>/``.

Uses the published artifact whenever one is found (``--artifact``, ``$ROUTEBR_ARTIFACT``, ``artifacts/routebr/``,
the sibling checkout); checks every input before the first notebook; never writes into an existing run folder
without ``--resume``.  Works the same from a source checkout and from an installed wheel: ``--params`` names a file
or one of the kit's own (``default``, ``ci``; from a wheel, the copies it ships), and the default output folder is
``outputs/`` of the checkout, or of the current directory for an installed wheel — never inside the package.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--params", default="default", metavar="FILE|NAME",
                   help="parameters file (YAML), or the name of one the kit ships: ci, default, live.example "
                        "(default: default)")
    p.add_argument("--out", type=Path, help="output folder, new or empty (default ./outputs/<params-name>-<UTC time>; "
                   "in a source checkout, its outputs/)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --out: keep the notebooks that succeeded with the same parameters")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--artifact", type=Path,
                       help="the published RouteBR artifact (default: the first one found: $ROUTEBR_ARTIFACT, "
                            "artifacts/routebr/, ../shared/routebr_artifact)")
    which.add_argument("--no-artifact", action="store_true",
                       help="run offline on the kit's own benchmark even when an artifact is found")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("--dry-run", action="store_true",
                   help="check every input and print the plan (notebooks, parameters, output folder); run nothing")


@command(_args)
def reproduce(args: argparse.Namespace) -> int:
    import json
    from datetime import UTC, datetime

    from ..core.errors import DataError, ErrorCode
    from ..notebook.pipeline import RunPlan, choose_artifact, execute, prepare, skip_reason
    from ..scale.progress import terminal_progress
    from ..store.kitfiles import params_file, work_root

    plan = RunPlan.load(params_file(args.params))
    choice = choose_artifact(args.artifact, discover=not args.no_artifact)
    if args.out is None and args.resume:
        raise DataError(ErrorCode.EMPTY_VALUE, "--out RUN_DIR: the run to resume", field="--out")
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S")
    out = args.out = args.out or work_root() / "outputs" / f"{plan.name}-{stamp}"  # args.out: a Ctrl-C resume hint
    prepared = prepare(plan, out, artifact=choice, resume=args.resume)  # every check, before anything is written
    print(f"artifact: {choice.path} ({choice.how})" if choice.path is not None else f"artifact: {choice.how}")
    if args.dry_run:
        print(f"parameters: {plan.source}; output folder: {prepared.out} (not created: --dry-run)")
        for job, parameters in prepared.jobs:
            art = str(choice.path) if choice.path is not None else None
            shown = f"skipped: {skip_reason(job, art)}" if parameters is None else json.dumps(parameters)
            print(f"  {job.name}: {'kept (resume)' if job.name in prepared.kept else shown}")
        return 0
    if prepared.kept:
        print(f"resuming {prepared.out}: keeping {', '.join(prepared.kept)}")
    status = execute(prepared, progress=terminal_progress(args.no_progress))
    if status == 0:
        print(f"finished: {prepared.out / 'report.html'} (open in a browser); index: {prepared.out / 'README.md'}")
    else:
        print(f"FAILED: {prepared.out / 'README.md'}")
    return status
