"""The paper's result tables, built from ledgers (prediction rows) and gold cases.

* Table IV — :func:`screening_table`: six backends on SELECT-160 (MAIN+FLIP+ENTITY pooled);
* Table V — :func:`rq12_table`: RQ1–RQ2 on CONFIRM (MAIN exact and macro-F1, FLIP pairs, FD/FB pooled over
  MAIN+FLIP);
* Table VI — :func:`rq3_table`: RQ3 safeguards (RouteBR vs A-state on FLIP, RouteBR vs A-ground on ENTITY);
* :func:`mcnemar_table`: exact McNemar comparisons on paired correctness.

The builders take any ledgers — published, replayed, simulated, local or live — keyed by the labels the table
shows, and return string cells at the published rounding under the published headers (so they print, save and
compare as the paper shows them).  Columns marked ``(kit)`` go beyond the published tables.  Numeric views of the
same metrics come from :func:`~routebr_kit.evaluation.metrics.score` and
:func:`~routebr_kit.evaluation.metrics.scores_frame`.

:func:`paper_tables` builds all four from a published artifact, from its ``predictions.csv`` files
(:attr:`Source.PUBLISHED`) or from the rows recomputed by replaying the recorded proposals through the kit's
controller (:attr:`Source.REPLAYED`; B1/B2 have no controller and are scored from their recorded outputs).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import pandas as pd

from ..artifact import CONFIRM, PROFILE_LABELS, SELECT, Artifact, ReplayReport, replay_artifact
from ..core.errors import DataError, ErrorCode
from ..core.records import Split, System
from ..ledger import PredictionRow
from .metrics import Cases, Count, flip_pairs, index_cases, score
from .stats import McNemar, mcnemar

Rows = Sequence[PredictionRow]

#: How the paper's tables name each system.
SYSTEM_LABELS = {
    System.ROUTEBR: "RouteBR",
    System.B1_DIRECT: "B1 Direct",
    System.B2_DIRECT_GUARD: "B2 Direct+Guard",
    System.A_STATE: "RouteBR w/o state enforcement",
    System.A_GROUND: "RouteBR w/o closed grounding",
}
#: Suffix of every column that goes beyond the published tables.
KIT = " (kit)"


# --------------------------------------------------------------------------------------------- cell formats


def fmt_pct(rate: float) -> str:
    """A rate as a percentage with one decimal (``0.975 -> '97.5'``), as published; ``'n/a'`` for NaN."""
    return "n/a" if math.isnan(rate) else f"{100 * rate:.1f}"


def fmt_count(count: Count, *, pct: bool = True) -> str:
    """``'hits/n (pct)'`` (or ``'hits/n'``), as published."""
    return f"{count} ({fmt_pct(count.rate)})" if pct else str(count)


def _fixed(value: float, digits: int) -> str:
    return "n/a" if math.isnan(value) else f"{value:.{digits}f}"


# --------------------------------------------------------------------------------------------- the tables


def screening_table(runs: Mapping[str, Rows], cases: Cases, *, extras: bool = True) -> pd.DataFrame:
    """Table IV: one row per backend, sorted by contract exact match (ties keep the input order)."""
    index = index_cases(cases)
    scored = {label: score(rows, index) for label, rows in runs.items()}
    order = sorted(scored, key=lambda label: -_sort_key(scored[label].contract_exact.rate))
    records = []
    for label in order:
        s = scored[label]
        record = {
            "Backend": label,
            "Contract": fmt_pct(s.contract_exact.rate),
            "Path F1": fmt_pct(s.path_macro_f1),
            "FD": fmt_count(s.false_dispatch),
            "FB": fmt_count(s.false_block),
            "Valid JSON": fmt_pct(s.valid_json.rate),
            "Calls/case": _fixed(s.calls_per_case, 2),
            "Tokens/case": _fixed(s.tokens_per_case_mean, 0),
            "Median latency (ms)": _fixed(s.latency_ms_median, 0),
        }
        if extras:
            record |= {"Strict path" + KIT: fmt_pct(s.strict_exact.rate),
                       "First-pass valid" + KIT: fmt_pct(s.first_pass_valid.rate)}
        records.append(record)
    return pd.DataFrame(records)


def _sort_key(rate: float) -> float:
    return -1.0 if math.isnan(rate) else rate


def rq12_table(main: Mapping[str, Rows], flip: Mapping[str, Rows], cases: Cases, *,
               extras: bool = True) -> pd.DataFrame:
    """Table V: per system, MAIN exact and macro-F1, FLIP pairs, and FD/FB pooled over MAIN+FLIP."""
    if main.keys() != flip.keys():
        raise DataError(ErrorCode.INVALID_VALUE, "the same systems on MAIN and FLIP",
                        got=(sorted(main), sorted(flip)))
    index = index_cases(cases)
    records = []
    for label in main:
        on_main = score(main[label], index)
        pooled = score([*main[label], *flip[label]], index)
        record = {
            "System": label,
            "MAIN contract": fmt_pct(on_main.contract_exact.rate),
            "MAIN path F1": fmt_pct(on_main.path_macro_f1),
            "FLIP pair": fmt_count(flip_pairs(flip[label], index).pairs),
            "FD": fmt_count(pooled.false_dispatch),
            "FB": fmt_count(pooled.false_block),
        }
        if extras:
            record |= {"MAIN strict path" + KIT: fmt_pct(on_main.strict_exact.rate),
                       "MAIN path F1, nine labels" + KIT: fmt_pct(on_main.path_macro_f1_fixed)}
        records.append(record)
    return pd.DataFrame(records)


def rq3_table(runs: Mapping[tuple[str, str], Rows], cases: Cases, *, extras: bool = True) -> pd.DataFrame:
    """Table VI: per (variant, split), contract exact, object accuracy, FD and FB (counts only)."""
    index = index_cases(cases)
    records = []
    for (variant, split), rows in runs.items():
        s = score(rows, index)
        record = {
            "Variant": variant,
            "Split": split,
            "Contract": fmt_pct(s.contract_exact.rate),
            "Object accuracy": fmt_pct(s.object.rate),
            "FD": fmt_count(s.false_dispatch, pct=False),
            "FB": fmt_count(s.false_block, pct=False),
        }
        if extras:
            record["Strict path" + KIT] = fmt_pct(s.strict_exact.rate)
        records.append(record)
    return pd.DataFrame(records)


def mcnemar_results(comparisons: Mapping[str, tuple[Rows, Rows]], cases: Cases) -> dict[str, McNemar]:
    """Exact McNemar test of each (A rows, B rows) pair on final-path correctness."""
    index = index_cases(cases)
    return {name: mcnemar(score(a, index).correct, score(b, index).correct)
            for name, (a, b) in comparisons.items()}


def mcnemar_table(comparisons: Mapping[str, tuple[Rows, Rows]], cases: Cases) -> pd.DataFrame:
    """One row per comparison: A-only and B-only correct, discordant pairs, exact two-sided p."""
    return _mcnemar_frame(mcnemar_results(comparisons, cases))


def _mcnemar_frame(results: Mapping[str, McNemar]) -> pd.DataFrame:
    return pd.DataFrame([{"Comparison": name, "A only correct": m.a_only_correct,
                          "B only correct": m.b_only_correct, "Discordant": m.discordant,
                          "Paired cases": m.paired, "p (two-sided)": f"{m.p_two_sided:.2g}"}
                         for name, m in results.items()])


def pair_grid(flip: Mapping[str, Rows], cases: Cases) -> pd.DataFrame:
    """FLIP pair correctness: one row per system, one boolean column per pair ID."""
    index = index_cases(cases)
    return pd.DataFrame({label: dict(flip_pairs(rows, index).correct_by_pair) for label, rows in flip.items()}).T


# --------------------------------------------------------------------------------------------- from the artifact


class Source(str, enum.Enum):
    """Where the tables' prediction rows come from."""

    PUBLISHED = "published"  # the artifact's predictions.csv files
    REPLAYED = "replayed"  # recorded proposals replayed through the kit's controller (B1/B2 as recorded)


#: The published comparison keys (the A-state comparison is the paper's RQ2 but the published key says rq3).
COMPARISONS = {
    "rq1_routebr_vs_b1": (System.ROUTEBR, System.B1_DIRECT, Split.MAIN),
    "rq1_routebr_vs_b2": (System.ROUTEBR, System.B2_DIRECT_GUARD, Split.MAIN),
    "rq3_routebr_vs_no_state": (System.ROUTEBR, System.A_STATE, Split.FLIP),
    "rq3_routebr_vs_no_ground": (System.ROUTEBR, System.A_GROUND, Split.ENTITY),
}
RQ12_SYSTEMS = (System.ROUTEBR, System.B1_DIRECT, System.B2_DIRECT_GUARD)
RQ3_RUNS = ((System.ROUTEBR, Split.FLIP), (System.A_STATE, Split.FLIP), (System.ROUTEBR, Split.ENTITY),
            (System.A_GROUND, Split.ENTITY))
SCREENING_SPLITS = (Split.MAIN, Split.FLIP, Split.ENTITY)


def artifact_ledgers(artifact: Artifact, source: Source = Source.PUBLISHED,
                     report: ReplayReport | None = None) -> dict[str, tuple[PredictionRow, ...]]:
    """Every result folder's rows keyed by task key (``select/<profile>/<split>``, ``confirm/<system>/<split>``).

    ``Source.REPLAYED`` takes controller rows from ``report`` (replaying the artifact when not given).
    """
    source = Source(source)
    if source is Source.PUBLISHED:
        return {t.key: artifact.predictions(t) for t in artifact.tasks()}
    report = report if report is not None else replay_artifact(artifact)
    replayed = {t.task.key: t.replayed for t in report.tasks}
    ledgers = {}
    for task in artifact.tasks():
        if task.system.uses_controller:
            if task.key not in replayed:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a replay of every controller task", got=task.key,
                                file=str(task.path))
            ledgers[task.key] = replayed[task.key]
        else:
            ledgers[task.key] = artifact.predictions(task)
    return ledgers


@dataclass(frozen=True)
class PaperRuns:
    """The ledgers behind the published tables, labelled as the tables label them."""

    screening: Mapping[str, Rows]  # backend → SELECT-160 rows (MAIN + FLIP + ENTITY)
    main: Mapping[str, Rows]  # system → CONFIRM MAIN rows (RouteBR, B1, B2)
    flip: Mapping[str, Rows]  # system → CONFIRM FLIP rows (RouteBR, B1, B2)
    safeguards: Mapping[tuple[str, str], Rows]  # (variant, split) → CONFIRM rows
    comparisons: Mapping[str, tuple[Rows, Rows]]  # published comparison key → (A rows, B rows)


def paper_runs(ledgers: Mapping[str, Rows]) -> PaperRuns:
    """Group an artifact's ledgers (:func:`artifact_ledgers`) into the tables' runs."""
    def rows(key: str) -> Rows:
        if key not in ledgers:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a published result folder", got=key)
        return ledgers[key]

    def confirm(system: System, split: Split) -> Rows:
        return rows(f"{CONFIRM}/{system.value}/{split.value.lower()}")

    return PaperRuns(
        screening={label: [r for split in SCREENING_SPLITS for r in rows(f"{SELECT}/{profile}/{split.value.lower()}")]
                   for profile, label in PROFILE_LABELS.items()},
        main={SYSTEM_LABELS[s]: confirm(s, Split.MAIN) for s in RQ12_SYSTEMS},
        flip={SYSTEM_LABELS[s]: confirm(s, Split.FLIP) for s in RQ12_SYSTEMS},
        safeguards={(SYSTEM_LABELS[s], split.value): confirm(s, split) for s, split in RQ3_RUNS},
        comparisons={key: (confirm(a, split), confirm(b, split)) for key, (a, b, split) in COMPARISONS.items()},
    )


@dataclass(frozen=True)
class PaperTables:
    """Tables IV, V, VI and the McNemar comparisons, from one source."""

    source: Source
    screening: pd.DataFrame
    rq12: pd.DataFrame
    rq3: pd.DataFrame
    comparisons: Mapping[str, McNemar] = field(repr=False)

    @property
    def mcnemar(self) -> pd.DataFrame:
        return _mcnemar_frame(self.comparisons)

    def frames(self) -> dict[str, tuple[pd.DataFrame, str]]:
        """``name -> (table, caption)`` in the paper's order."""
        return {
            "table_iv_screening": (self.screening, "Table IV: backend screening on SELECT-160"),
            "table_v_rq1_rq2": (self.rq12, "Table V: RQ1-RQ2 on CONFIRM (FD/FB pooled over MAIN+FLIP)"),
            "table_vi_rq3": (self.rq3, "Table VI: RQ3 safeguards on CONFIRM"),
            "mcnemar": (self.mcnemar, "Exact two-sided McNemar tests on paired final-path correctness"),
        }

    def differences(self, other: PaperTables) -> list[str]:
        """Names of the tables that differ from ``other``'s (empty when every table is identical)."""
        mine, theirs = self.frames(), other.frames()
        differ = [name for name in ("table_iv_screening", "table_v_rq1_rq2", "table_vi_rq3")
                  if not mine[name][0].equals(theirs[name][0])]
        return differ + (["mcnemar"] if dict(self.comparisons) != dict(other.comparisons) else [])


def build_tables(runs: PaperRuns, select_cases: Cases, confirm_cases: Cases,
                 source: Source = Source.PUBLISHED) -> PaperTables:
    """Build every table from grouped runs."""
    return PaperTables(
        source=Source(source),
        screening=screening_table(runs.screening, select_cases),
        rq12=rq12_table(runs.main, runs.flip, confirm_cases),
        rq3=rq3_table(runs.safeguards, confirm_cases),
        comparisons=mcnemar_results(runs.comparisons, confirm_cases),
    )


def paper_tables(artifact: Artifact | str, source: Source = Source.PUBLISHED,
                 report: ReplayReport | None = None) -> PaperTables:
    """All tables of a published artifact, from its predictions or from a replay of them."""
    artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
    runs = paper_runs(artifact_ledgers(artifact, source, report))
    return build_tables(runs, artifact.cases(SELECT), artifact.cases(CONFIRM), source)
