"""``routebr-kit replay [--artifact DIR]``: replay every recorded RouteBR-controller row through the controller."""

from __future__ import annotations

import argparse

from .common import add_artifact_option, command, discovered_artifact, print_table


@command(add_artifact_option)
def replay(args: argparse.Namespace) -> int:
    from ..experiments.replication import replay_artifact

    report = replay_artifact(discovered_artifact(args.artifact))
    print_table(report.table())
    for d in report.disagreements:
        print(f"DISAGREE {d.task} {d.case_id} {d.field}: recorded {d.recorded!r}, replayed {d.replayed!r}")
    for line in report.summary_lines():
        print(line)
    return 0 if report.ok else 1
