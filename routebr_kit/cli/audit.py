"""``routebr-kit audit CASES [CASES ...] --catalog C --rules R [--entities E]``: the stricter, read-only audit."""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="+", type=Path, help="cases CSV file(s): the 600 file and/or SELECT/CONFIRM")
    p.add_argument("--catalog", required=True, type=Path, help="catalog.csv")
    p.add_argument("--rules", required=True, type=Path, help="boundary_rules.csv")
    p.add_argument("--entities", type=Path, help="entity registry (published entity_catalog.csv or a kit registry)")
    p.add_argument("--state-schema", type=Path, help="runtime-state schema JSON (default: derived from the rules)")
    p.add_argument("--kind", choices=("auto", "full", "select", "confirm", "subset"), default="auto",
                   help="which counts to expect (default: detected from the split counts)")


@command(_args)
def audit(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..dataset.audit import audit_files

    given = [("CASES", path) for path in args.cases]
    given += [("--catalog", args.catalog), ("--rules", args.rules), ("--entities", args.entities),
              ("--state-schema", args.state_schema)]
    for flag, path in given:  # in the order they were named, so the error names the file that is missing
        if path is not None and not path.is_file():
            raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing file", file=str(path), field=flag)
    result = audit_files(args.cases, args.catalog, args.rules, args.entities, kind=args.kind,
                         state_schema=args.state_schema)
    for report in result.reports:
        print(f"== {Path(report.path).name} ({report.kind.value}, {report.stats.rows} rows)")
        for name, digest in report.hashes.items():
            print(f"sha256 {name:<8} {digest}")
        print_table(report.stats.split_rows())
        for label, counts in (("actions", report.stats.actions), ("boundaries", report.stats.boundaries),
                              ("difficulty", report.stats.difficulties), ("cue cells", report.stats.cue_cells)):
            print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
        print(f"unresolvable references: {report.stats.unresolvable}, with entity_resolved=false: "
              f"{report.stats.unresolvable_coupled}")
        for finding in report.findings:
            print(finding)
        status = "PASSED" if report.ok else "FAILED"
        print(f"{status}: {len(report.errors)} errors, {len(report.warnings)} warnings "
              f"(published checks {'pass' if report.published_ok else 'FAIL'})\n")
    for finding in result.cross:
        print(finding)
    return 0 if result.ok else 1
