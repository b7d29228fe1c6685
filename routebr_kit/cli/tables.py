"""``routebr-kit tables [--artifact DIR] --out OUTDIR``: every published table, recomputed and checked."""

from __future__ import annotations

import argparse

from .common import add_artifact_option, command, discovered_artifact, print_table


def _args(p: argparse.ArgumentParser) -> None:
    add_artifact_option(p)
    p.add_argument("--out", required=True, help="directory for the tables (tables/*.csv, tables/*.md)")


@command(_args)
def tables(args: argparse.Namespace) -> int:
    from ..experiments.published import audit_results, read_published, scorecard
    from ..experiments.replication import LedgerOrigin, paper_tables, replay_artifact
    from ..notebook.outputs import Outputs
    from ..store.artifact import Artifact

    artifact = Artifact(discovered_artifact(args.artifact))
    report = replay_artifact(artifact)
    from_predictions = paper_tables(artifact, LedgerOrigin.PUBLISHED)
    from_replay = paper_tables(artifact, LedgerOrigin.REPLAYED, report)
    audit = audit_results(artifact)
    card = scorecard(from_replay, audit, read_published(artifact))

    out = Outputs(args.out, notebook="routebr-kit tables")
    shown = from_replay.frames() | {
        "integrity": (audit.integrity, "Integrity counts of the published artifact"),
        "scorecard": (card.frame(), "Every published value beside the recomputed one"),
    }
    for name, (frame, caption) in shown.items():
        out.table(frame, name, caption)
        if name != "scorecard":
            print(f"\n{caption}")
            print_table(frame.to_dict("records"))

    differ = from_predictions.differences(from_replay)
    print(f"\nreplay: {report.rows_agreeing}/{report.rows} controller rows agree with the recorded predictions")
    print("tables from replayed predictions vs tables from published predictions: "
          + ("identical" if not differ else "DIFFER in " + ", ".join(differ)))
    print("artifact integrity audit: " + ("passed" if audit.ok else "FAILED"))
    for check in card.mismatches:
        print(f"MISMATCH {check.table} / {check.row} / {check.column}: "
              f"published {check.published!r}, reproduced {check.reproduced!r}")
    print(f"tables written to {(out.root / 'tables').resolve()}/: one .csv and one .md per table")
    print(card.line)
    return 0 if card.ok and not differ and report.ok and audit.ok else 1
