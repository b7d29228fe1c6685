"""``routebr-kit score RUN_DIR --cases FILE [--json FILE] [--csv FILE]``: the paper's metrics for one ledger.

Per split (and over every scored row when the ledger spans several): contract exact match with its Wilson 95%
interval, the strict ``action@object`` path, false dispatch and false block with their denominators, object
accuracy and path macro-F1; FLIP pair accuracy when FLIP rows are present; the trivial-proposer floor of the same
cases (the best constant-action proposer through the release's controller, :mod:`routebr_kit.evaluation.floor`).
The definitions are
:func:`routebr_kit.evaluation.metrics.score`'s.

Beside the paper's gold-based FD, the kit's **forbidden dispatch** (:mod:`routebr_kit.evaluation.forbidden`): rows
that dispatch an action/object the release's controller would not dispatch on that row's state, over every scored
row, with the refusing gate.  The release is the assets stored next to the cases file, checked against the hashes
the run's manifest recorded (``INCONSISTENT_ASSETS`` when the run ran under others).
A ledger with several repeats (``repeat_id``; or the ``OUT`` of ``run --repeats N``, whose ``repeat-<i>/`` folders
are read together) is scored repeat by repeat, then reported as mean accuracy, τ-bench's pass^k for every ``k`` up
to the number of repeats and per-case consistency (:mod:`routebr_kit.evaluation.pass_k`); ``--repeat-id``
scores one repeat as before.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import command, print_table

if TYPE_CHECKING:
    from ..evaluation.metrics import Count, PairScores, Scores
    from ..store.ledger import PredictionRow

#: The run directory of one repeat under ``run --repeats N --out OUT``.
REPEAT_DIR = "repeat-{}"


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR",
                   help="a run directory (predictions.csv), or the OUT of `run --repeats N` (repeat-*/)")
    p.add_argument("--cases", required=True, type=Path, help="the cases CSV with the gold labels")
    p.add_argument("--repeat-id", default=None,
                   help="score one repeat only (default with several repeats: each repeat, pass^k and consistency)")
    p.add_argument("--json", type=Path, metavar="FILE", help="also write every metric to FILE (JSON)")
    p.add_argument("--csv", type=Path, metavar="FILE", help="also write every metric to FILE (CSV, one row per split)")


@command(_args)
def score_command(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..core.hashing import sha256_file
    from ..evaluation.metrics import index_cases
    from ..evaluation.scorecard import score_report
    from ..review.dispatch import check_recorded_hashes, release_beside
    from ..store.assets import assets_beside, read_json
    from ..store.cases import load_cases
    from ..store.ledger import MANIFEST, write_json_atomic

    if not args.run_dir.is_dir():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a run directory", file=str(args.run_dir), field="RUN_DIR")
    predictions, rows = _ledger_rows(args.run_dir)
    if not args.cases.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing cases file", file=str(args.cases), field="--cases")
    repeats = sorted({r.repeat_id for r in rows})
    if args.repeat_id is not None:
        rows = tuple(r for r in rows if r.repeat_id == args.repeat_id)
        if not rows:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a repeat_id of the ledger (" + ", ".join(repeats) + ")",
                            file=str(predictions), field="--repeat-id", got=args.repeat_id)
    elif len(repeats) > 1:
        return _score_repeats(args, predictions, rows, repeats)
    cases = load_cases(args.cases)
    _warn_if_other_cases(args.run_dir, args.cases)
    release = release_beside(args.cases)
    if (args.run_dir / MANIFEST).is_file():
        check_recorded_hashes(release, read_json(args.run_dir / MANIFEST, "a run_manifest.json object", record=True),
                              str(args.run_dir / MANIFEST))
    report = score_report(rows, cases, file=str(predictions), release=release,
                          controller=assets_beside(args.cases).controller())
    cases_by_id = index_cases(cases)
    print_table(_table_rows(report))
    for line in summary_lines(report):
        print(line)
    if args.json is not None:
        record = {"run_dir": str(args.run_dir), "predictions_sha256": sha256_file(predictions),
                  "cases_file": str(args.cases), "cases_sha256": sha256_file(args.cases),
                  "repeat_id": rows[0].repeat_id, **_report_record(report),
                  "forbidden_rows": [k.as_dict() for r in rows
                                     for k in [release.check(r, cases_by_id[r.case_id].request)] if k.forbidden]}
        write_json_atomic(args.json, record, indent=1)
        print(f"wrote {args.json}")
    if args.csv is not None:
        _write_scores_csv(args.csv, report)
        print(f"wrote {args.csv}")
    return 0


def _ledger_rows(run_dir: Path) -> tuple[Path, tuple[PredictionRow, ...]]:
    """``RUN_DIR/predictions.csv``, or every ``RUN_DIR/repeat-*/predictions.csv`` of a ``run --repeats`` folder
    (their repeat IDs must differ)."""
    from ..core.errors import DataError, ErrorCode
    from ..store.ledger import PREDICTIONS, read_predictions

    predictions = run_dir / PREDICTIONS
    if predictions.is_file():
        rows = read_predictions(predictions)
        if not rows:
            raise DataError(ErrorCode.EMPTY_FILE, "at least one prediction row", file=str(predictions))
        return predictions, rows
    folders = sorted((p for p in run_dir.glob(REPEAT_DIR.format("*")) if (p / PREDICTIONS).is_file()),
                     key=lambda p: (len(p.name), p.name))
    if not folders:
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a run directory with predictions.csv (or repeat-*/predictions.csv)",
                        file=str(predictions), field="RUN_DIR")
    rows: list[PredictionRow] = []
    owner: dict[str, Path] = {}
    for folder in folders:
        found = read_predictions(folder / PREDICTIONS)
        if not found:
            raise DataError(ErrorCode.EMPTY_FILE, "at least one prediction row", file=str(folder / PREDICTIONS))
        for repeat in sorted({r.repeat_id for r in found}):
            if repeat in owner:
                raise DataError(ErrorCode.DUPLICATE_ID, "a distinct repeat_id per repeat folder",
                                file=str(folder / PREDICTIONS), field="repeat_id", got=repeat,
                                detail=f"also in {owner[repeat]}")
            owner[repeat] = folder / PREDICTIONS
        rows.extend(found)
    return run_dir, tuple(rows)


def _score_repeats(args: argparse.Namespace, predictions: Path, rows: Sequence[PredictionRow],
                   repeats: Sequence[str]) -> int:
    """Several repeats: each repeat's score, then mean accuracy, pass^k and consistency (τ-bench's pass^k)."""
    from ..core.errors import DataError
    from ..core.hashing import sha256_file
    from ..evaluation.metrics import index_cases
    from ..evaluation.pass_k import reliability
    from ..evaluation.scorecard import score_report
    from ..store.cases import load_cases
    from ..store.ledger import write_json_atomic

    cases = load_cases(args.cases)
    index = index_cases(cases)
    reports, table = {}, []
    for repeat in repeats:
        chosen = [r for r in rows if r.repeat_id == repeat]
        reports[repeat] = score_report(chosen, index, file=str(predictions))
        overall = reports[repeat]["splits"].get("ALL") or next(iter(reports[repeat]["splits"].values()))
        table.append({"repeat_id": repeat, "n": overall.n, "exact": str(overall.contract_exact),
                      "exact %": _pct(overall.contract_exact), "FD": str(overall.false_dispatch),
                      "FB": str(overall.false_block), "object": str(overall.object)})
    try:
        rel = reliability(rows, index)
    except DataError as exc:
        raise exc.at(file=str(predictions)) from None
    print_table(table)
    print("score: " + rel.line())
    print("pass^k (tau-bench, arXiv 2406.12045): mean over cases of C(c,k)/C(n,k), c of the case's n repeats exact; "
          "consistency: the case's repeats all emit one final path")
    if args.json is not None:
        record = {"run_dir": str(args.run_dir), "cases_file": str(args.cases), "cases_sha256": sha256_file(args.cases),
                  "repeats": {r: _report_record(rep) for r, rep in reports.items()}, "reliability": rel.as_dict()}
        write_json_atomic(args.json, record, indent=1)
        print(f"wrote {args.json}")
    return 0


# --------------------------------------------------------------------------------------------- shared with `run`


def _pct(count: Count) -> str:
    return "n/a" if not count.n else f"{100 * count.rate:.1f}%"


def _table_rows(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One row per split: counts with their denominators."""
    table = []
    for label, s in report["splits"].items():
        low, high = s.contract_exact.wilson
        table.append({"split": label, "n": s.n, "exact": str(s.contract_exact), "exact %": _pct(s.contract_exact),
                      "Wilson 95%": f"{100 * low:.1f}-{100 * high:.1f}", "strict": str(s.strict_exact),
                      "FD": str(s.false_dispatch), "FB": str(s.false_block),
                      **({"forbidden": str(s.forbidden_dispatch)} if s.forbidden_dispatch is not None else {}),
                      "object": str(s.object),
                      "object %": _pct(s.object), "path F1": f"{s.path_macro_f1:.3f}"})
    return table


def summary_lines(report: Mapping[str, Any]) -> list[str]:
    """Over every scored row: ``score: exact 150/160 = 93.8% (Wilson 95% 88.9-96.6%) · FD 0/80 · FB 3/80 · object
    155/160 = 96.9%``; then, when there is one, the floor, ``forbidden dispatch 2/200 (of 73 dispatched; state_gate
    1, contract 1) · gold-based FD 1/126`` and the FLIP pairs line."""
    from ..evaluation.forbidden import ForbiddenCause

    s: Scores = report["splits"].get("ALL") or next(iter(report["splits"].values()))
    low, high = s.contract_exact.wilson
    lines = [f"score: exact {s.contract_exact} = {_pct(s.contract_exact)} (Wilson 95% {100 * low:.1f}-"
             f"{100 * high:.1f}%) · FD {s.false_dispatch} · FB {s.false_block} · object {s.object} = {_pct(s.object)}"]
    if report.get("floor") is not None:
        lines.append(report["floor"].line() + " (a constant proposer through the same controller)")
    if s.forbidden_dispatch is not None and s.dispatched is not None:
        causes = ", ".join(f"{c.value} {s.forbidden_by_cause[c.value]}" for c in ForbiddenCause
                           if s.forbidden_by_cause.get(c.value))
        lines.append(f"forbidden dispatch {s.forbidden_dispatch} (of {s.dispatched.hits} dispatched"
                     + (f"; {causes}" if causes else "") + f") · gold-based FD {s.false_dispatch}")
    pairs: PairScores | None = report["flip"]
    if pairs is not None or report["incomplete_pairs"]:
        text = "FLIP pairs: " + ("none complete" if pairs is None else f"{pairs.pairs} = {_pct(pairs.pairs)} "
                                 "(both members exact)")
        if report["incomplete_pairs"]:
            text += f"; {report['incomplete_pairs']} incomplete pairs not scored"
        lines.append(text)
    return lines


def _report_record(report: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON form: every metric per split (NaN as null), FLIP pairs."""
    pairs: PairScores | None = report["flip"]
    return {"splits": {label: {k: _finite(v) for k, v in s.as_dict().items()} for label, s in report["splits"].items()},
            "flip_pairs": None if pairs is None else {"correct": pairs.pairs.hits, "pairs": pairs.pairs.n,
                                                      "missed": list(pairs.missed)},
            "incomplete_pairs": report["incomplete_pairs"],
            **({"floor": report["floor"].as_dict()} if report.get("floor") is not None else {})}


def _write_scores_csv(path: Path, report: Mapping[str, Any]) -> None:
    """Every metric per split as CSV (``split`` first, then :meth:`Scores.as_dict` keys; NaN as an empty cell)."""
    import csv
    import io

    records = [{"split": label, **{k: _finite(v) for k, v in s.as_dict().items()}}
               for label, s in report["splits"].items()]
    columns = list(dict.fromkeys(k for r in records for k in r))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(records)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(buffer.getvalue(), encoding="utf-8", newline="")


def _finite(value: Any) -> Any:
    import math

    return None if isinstance(value, float) and not math.isfinite(value) else value


def _warn_if_other_cases(run_dir: Path, cases: Path) -> None:
    """The run's manifest records the hash of the cases file it ran on; say so when it is another file."""
    from ..core.hashing import sha256_file
    from ..store.assets import read_json
    from ..store.ledger import MANIFEST

    manifest_path = run_dir / MANIFEST
    if not manifest_path.is_file():
        return
    hashes = read_json(manifest_path, "a run_manifest.json object", record=True).get("hashes")
    recorded = hashes.get("cases_file") if isinstance(hashes, dict) else None
    if isinstance(recorded, str) and recorded != sha256_file(cases):
        print(f"WARNING: {cases} is not the cases file this run recorded (sha256 {recorded[:16]}…); "
              "scoring against its gold labels anyway", file=sys.stderr)
