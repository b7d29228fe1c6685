"""``routebr-kit fetch-artifact``: download the published RouteBR repository at the pinned commit, verify, install."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .common import command, positive_float


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dest", type=Path, default=None,
                   help="where to install it (default: artifacts/routebr/ of the source checkout, else of the "
                        "current directory — where the kit looks for it; never inside the package)")
    p.add_argument("--url", help="archive URL (default: GitHub's tarball of the pinned commit)")
    p.add_argument("--archive", type=Path, help="install from a .tar.gz downloaded by hand instead of downloading")
    p.add_argument("--verify", type=Path, metavar="DIR",
                   help="only check an existing copy against the kit's SHA-256 values (installs nothing)")
    p.add_argument("--force", action="store_true", help="replace a destination that does not verify")
    p.add_argument("--timeout", type=positive_float, default=60.0, help="network timeout in seconds (default 60)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


@command(_args)
def fetch_artifact(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..scale.progress import terminal_progress
    from ..store.fetch import default_dest, load_shipped_manifest, manual_instructions, verify_tree
    from ..store.fetch import fetch_artifact as fetch

    args.dest = args.dest if args.dest is not None else default_dest()

    manifest = load_shipped_manifest()
    if args.verify is not None:
        if not args.verify.is_dir():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "an artifact directory", file=str(args.verify),
                            field="--verify")
        problems = verify_tree(args.verify, manifest)
        for problem in problems:
            print(f"MISMATCH {problem}")
        print(f"{len(manifest.files) - len(problems)}/{len(manifest.files)} files verified in {args.verify} "
              f"({manifest.repository} @ {manifest.commit[:12]})")
        return 0 if not problems else 1

    bar = None
    if args.archive is None and terminal_progress(args.no_progress):
        from tqdm.auto import tqdm

        bar = tqdm(desc="download", unit="B", unit_scale=True, file=sys.stderr)

    def progress(done: int, total: int | None) -> None:
        if bar is not None:
            bar.total = total
            bar.update(done - bar.n)

    try:
        result = fetch(args.dest, url=args.url, archive=args.archive, force=args.force, timeout=args.timeout,
                       manifest=manifest, progress=progress)
    except DataError as exc:
        if exc.code is not ErrorCode.DOWNLOAD_FAILED:
            raise
        print(f"routebr-kit fetch-artifact: {exc}", file=sys.stderr)
        print("The download failed: this machine appears to be offline (or the address is unreachable).\n"
              + manual_instructions(args.dest, manifest), file=sys.stderr)
        return 2
    finally:
        if bar is not None:
            bar.close()
    if result.already_present:
        print(f"already present: {result.dest} ({result.verified} files verified against the kit's SHA-256 values)")
        return 0
    print(f"verified {result.verified}/{result.verified} files of {manifest.repository} @ {manifest.commit[:12]} "
          f"against the kit's SHA-256 values (archive sha256 {result.archive_sha256[:16]})")
    if result.notices:
        print(f"kept unverified: {', '.join(result.notices)} (licence notice; the kit does not read it)")
    print(f"not installed: {result.not_installed} archive files the kit does not read or has no hash for")
    print(f"installed into {result.dest}; `routebr-kit reproduce` and the notebooks now find it")
    return 0
