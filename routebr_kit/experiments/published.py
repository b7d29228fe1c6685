"""What the published artifact claims, and whether the kit reproduces it.

* :func:`read_published` — every published value: the tables and integrity counts of ``FINAL_RESULTS.md`` (as the
  printed strings, i.e. at their published rounding and with their denominators) and the four McNemar
  comparisons of ``FINAL_RESULTS.json`` (the discordant split and the full-precision p-value).
* :func:`audit_results` — the artifact's integrity: input hashes against the hashes recorded in
  ``FINAL_RESULTS.json``, the run manifests and ``RESULT_FREEZE_MANIFEST.json``; row counts and case-ID
  coverage of each result folder against its manifest and the gold split.
* :func:`scorecard` — each published value beside the recomputed one, with a match flag; its :attr:`~Scorecard.line`
  reads ``reproduced N/N published values``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ..backends.profiles import PROFILE_LABELS
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..store.artifact import CONFIRM, SELECT, Artifact
from ..store.assets import read_json
from ..store.files import read_text
from .replication import SCREENING_SPLITS, PaperTables

_RESULTS_DIR = Path("analysis") / "results"
#: ``FINAL_RESULTS.md`` section headings → the kit's table names.
_SECTIONS = {
    "Backend screening on SELECT-160": "table_iv_screening",
    "RQ1--RQ2 on CONFIRM": "table_v_rq1_rq2",
    "RQ3 safeguards": "table_vi_rq3",
    "Integrity": "integrity",
}
#: The columns that name a row (everything else is a published value).
_KEY_COLUMNS = {
    "table_iv_screening": ("Backend",),
    "table_v_rq1_rq2": ("System",),
    "table_vi_rq3": ("Variant", "Split"),
    "integrity": ("Item",),
}
_P_VALUE_RTOL = 1e-12

_INTEGRITY_ITEM = re.compile(r"^- (?P<item>[^:]+): (?P<value>\d+(?:/\d+)?)\.$")


@dataclass(frozen=True, slots=True)
class PublishedComparison:
    """One published McNemar comparison."""

    a_only_correct: int
    b_only_correct: int
    p_two_sided: float

    @property
    def split(self) -> str:
        return f"{self.a_only_correct}:{self.b_only_correct}"


@dataclass(frozen=True)
class PublishedResults:
    """Every published value: ``FINAL_RESULTS.md`` tables (string cells) and ``FINAL_RESULTS.json`` comparisons."""

    tables: Mapping[str, pd.DataFrame]
    comparisons: Mapping[str, PublishedComparison]

    @property
    def n_values(self) -> int:
        """Table cells that are values (not row names), plus a split and a p-value per comparison."""
        cells = sum(len(frame) * (frame.shape[1] - len(_KEY_COLUMNS[name])) for name, frame in self.tables.items())
        return cells + 2 * len(self.comparisons)


def read_published(artifact: Artifact | str | Path) -> PublishedResults:
    """Parse the published values of an artifact's ``analysis/results/FINAL_RESULTS.{md,json}``."""
    root = artifact.root if isinstance(artifact, Artifact) else Path(artifact)
    md_path = root / _RESULTS_DIR / "FINAL_RESULTS.md"
    text = read_text(md_path, "FINAL_RESULTS.md")
    results = artifact.published_results if isinstance(artifact, Artifact) else Artifact(root).published_results
    comparisons = {}
    for key, value in results.get("comparisons", {}).items():
        try:
            comparisons[key] = PublishedComparison(int(value["a_only_correct"]), int(value["b_only_correct"]),
                                                   float(value["p_two_sided"]))
        except (KeyError, TypeError, ValueError):
            raise DataError(ErrorCode.WRONG_TYPE, "a comparison with a_only_correct, b_only_correct, p_two_sided",
                            file=str(root / _RESULTS_DIR / "FINAL_RESULTS.json"), field=f"comparisons.{key}",
                            got=value) from None
    return PublishedResults(parse_results_markdown(text, str(md_path)), comparisons)


def parse_results_markdown(text: str, file: str = "FINAL_RESULTS.md") -> dict[str, pd.DataFrame]:
    """Tables and ``- item: number.`` bullets of every ``## section`` (string cells, as printed).

    Nothing that holds a number is skipped: a section outside :data:`SECTIONS` with values, or a bullet with a
    number in another shape, raises a located :class:`DataError`.
    """
    sections: dict[str, list[tuple[int, str]]] = {}
    headings: dict[str, int] = {}
    current = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("## "):
            current = line[3:].strip()
            headings[current] = number
            sections[current] = []
        elif current is not None:
            sections[current].append((number, line))

    parsed = {}
    for heading, lines in sections.items():
        table = [(n, line) for n, line in lines if line.startswith("|")]
        items = [_item(n, line, file) for n, line in lines
                 if line.startswith("- ") and any(c.isdigit() for c in line)]
        if not table and not items:
            continue
        if heading not in _SECTIONS:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a known results section (" + ", ".join(_SECTIONS) + ")",
                            file=file, line=headings[heading], got=heading)
        if table and items:
            raise DataError(ErrorCode.INVALID_VALUE, "a table or a list of counts, not both", file=file,
                            line=headings[heading], got=heading)
        parsed[_SECTIONS[heading]] = _table(table, file) if table else pd.DataFrame(items, columns=["Item", "Value"])
    return parsed


def _item(number: int, line: str, file: str) -> tuple[str, str]:
    match = _INTEGRITY_ITEM.match(line.strip())
    if match is None:
        raise DataError(ErrorCode.INVALID_VALUE, "a count in the form '- item: 123.' or '- item: 6/6.'", file=file,
                        line=number, got=line.strip())
    return match["item"], match["value"]


def _table(lines: list[tuple[int, str]], file: str) -> pd.DataFrame:
    def cells(line: str) -> list[str]:
        return [c.strip() for c in line.strip().strip("|").split("|")]

    header = cells(lines[0][1])
    rows = []
    for number, line in lines[2:]:
        values = cells(line)
        if len(values) != len(header):
            raise DataError(ErrorCode.ROW_SHAPE, f"{len(header)} table cells", file=file, line=number,
                            got=len(values))
        rows.append(values)
    return pd.DataFrame(rows, columns=header)


@dataclass(frozen=True)
class ResultsAudit:
    """Integrity of the artifact's result folders and recorded hashes."""

    tasks: pd.DataFrame  # one row per result folder
    hashes: pd.DataFrame  # one row per recorded hash checked
    integrity: pd.DataFrame  # the published integrity counts, recomputed (Item, Value)

    @property
    def ok(self) -> bool:
        checks = self.tasks[["ids_match_manifest", "gold_split_match", "freeze_hash_match"]]
        return bool(checks.to_numpy().all() and self.hashes["match"].all())


def audit_results(artifact: Artifact) -> ResultsAudit:
    """Check every result folder and recorded hash of a published artifact."""
    freeze = read_json(artifact.root / _RESULTS_DIR / "RESULT_FREEZE_MANIFEST.json").get("inputs", {})
    task_rows, manifests = [], []
    for task in artifact.tasks():
        rows = artifact.predictions(task)
        manifest = task.manifest()
        manifests.append(manifest.get("frozen_run_input_hashes", {}))
        predicted = [r.case_id for r in rows]
        cases = artifact.cases(task.phase)
        relative = task.predictions_path.relative_to(artifact.root).as_posix()
        task_rows.append({
            "task": task.key,
            "rows": len(rows),
            "manifest_cases": len(manifest.get("case_ids", [])),
            "ids_match_manifest": len(set(predicted)) == len(predicted)
            and set(predicted) == set(manifest.get("case_ids", [])),
            "gold_split_match": all(cases[c].split is task.split for c in predicted),
            "freeze_hash_match": freeze.get(relative) == sha256_file(task.predictions_path),
        })
    tasks = pd.DataFrame(task_rows)

    recorded = artifact.published_results.get("hashes", {})
    inputs = artifact.input_hashes()
    hashes = [
        ("routebr_select_160.csv", "FINAL_RESULTS.json",
         recorded.get("select_csv") == inputs["routebr_select_160.csv"]),
        ("routebr_confirm_320.csv", "FINAL_RESULTS.json",
         recorded.get("confirm_csv") == inputs["routebr_confirm_320.csv"]),
        ("prompts.json", "FINAL_RESULTS.json",
         recorded.get("prompt") == sha256_file(artifact.root / "experiments" / "prompts.json")),
        ("catalog.csv", f"{len(manifests)} run manifests",
         bool(manifests) and all(m.get("catalog") == inputs["catalog.csv"] for m in manifests)),
        ("boundary_rules.csv", f"{len(manifests)} run manifests",
         bool(manifests) and all(m.get("rules") == inputs["boundary_rules.csv"] for m in manifests)),
    ]
    hash_frame = pd.DataFrame(hashes, columns=["input", "recorded_in", "match"])

    audited = tasks[tasks["ids_match_manifest"] & tasks["gold_split_match"]]
    phase = audited["task"].str.split("/").str[0]
    present = sum(all(f"{SELECT}/{profile}/{s.value.lower()}" in set(audited["task"]) for s in SCREENING_SPLITS)
                  for profile in PROFILE_LABELS)
    integrity = pd.DataFrame([
        ("SELECT backends present", f"{present}/{len(PROFILE_LABELS)}"),
        ("Audited SELECT rows", str(int(audited.loc[phase == SELECT, "rows"].sum()))),
        ("Audited CONFIRM rows", str(int(audited.loc[phase == CONFIRM, "rows"].sum()))),
    ], columns=["Item", "Value"])
    return ResultsAudit(tasks, hash_frame, integrity)


@dataclass(frozen=True, slots=True)
class Check:
    """One published value beside the recomputed one."""

    table: str
    row: str
    column: str
    published: str
    reproduced: str
    match: bool


@dataclass(frozen=True)
class Scorecard:
    checks: tuple[Check, ...]

    @property
    def total(self) -> int:
        return len(self.checks)

    @property
    def reproduced(self) -> int:
        return sum(c.match for c in self.checks)

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.reproduced == self.total

    @property
    def mismatches(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.match)

    @property
    def line(self) -> str:
        return f"reproduced {self.reproduced}/{self.total} published values"

    def frame(self, table: str | None = None) -> pd.DataFrame:
        """The checks as a DataFrame (optionally of one table)."""
        rows = [c for c in self.checks if table is None or c.table == table]
        return pd.DataFrame([{"table": c.table, "row": c.row, "column": c.column, "published": c.published,
                              "reproduced": c.reproduced, "match": c.match} for c in rows])


MISSING = "(missing)"


def scorecard(tables: PaperTables, audit: ResultsAudit, published: PublishedResults) -> Scorecard:
    """Compare every published value with the recomputed tables, integrity counts and McNemar results."""
    ours = {name: frame for name, (frame, _) in tables.frames().items()} | {"integrity": audit.integrity}
    checks = []
    for name, frame in published.tables.items():
        keys = _KEY_COLUMNS[name]
        mine = ours.get(name, pd.DataFrame(columns=list(keys)))
        by_key = {tuple(r[k] for k in keys): r for r in mine.to_dict("records")}
        for row in frame.to_dict("records"):
            key = tuple(row[k] for k in keys)
            found = by_key.get(key, {})
            for column, value in row.items():
                if column in keys:
                    continue
                got = str(found.get(column, MISSING))
                checks.append(Check(name, " / ".join(key), column, value, got, got == value))
    for key, expected in published.comparisons.items():
        result = tables.comparisons.get(key)
        got_split = result.split if result else MISSING
        checks.append(Check("mcnemar", key, "A:B only correct", expected.split, got_split,
                            got_split == expected.split))
        got_p = result.p_two_sided if result else math.nan
        checks.append(Check("mcnemar", key, "p (two-sided)", repr(expected.p_two_sided), repr(got_p),
                            math.isclose(got_p, expected.p_two_sided, rel_tol=_P_VALUE_RTOL, abs_tol=0.0)))
    return Scorecard(tuple(checks))


def side_by_side(ours: pd.DataFrame, published: pd.DataFrame, keys: tuple[str, ...]) -> pd.DataFrame:
    """Each published cell beside the recomputed one (long format: key columns, column, published, kit, match)."""
    records = []
    mine = ours.set_index(list(keys))
    for _, row in published.iterrows():
        key = tuple(row[k] for k in keys)
        for column in published.columns:
            if column in keys:
                continue
            value = mine.loc[key if len(key) > 1 else key[0], column] if key in _index_keys(mine) else None
            records.append({**dict(zip(keys, key)), "column": column, "published": row[column], "kit": value,
                            "match": value == row[column]})
    return pd.DataFrame(records)


def _index_keys(frame: pd.DataFrame) -> set[tuple]:
    return {k if isinstance(k, tuple) else (k,) for k in frame.index}
