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

import math
from collections.abc import Mapping, Sequence

import pandas as pd

from ..core.errors import DataError, ErrorCode
from ..core.records import System
from ..store.ledger import PredictionRow
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


def parse_count(text: object) -> Count:
    """A ``'hits/n'`` or ``'hits/n (pct)'`` cell (:func:`fmt_count`) read back as a :class:`Count`."""
    head = str(text).split()[0] if str(text).strip() else ""
    hits, slash, n = head.partition("/")
    if not (slash and hits.isdigit() and n.isdigit()):
        raise ValueError(f"not a hits/n count: {text!r}")
    return Count(int(hits), int(n))


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
    return mcnemar_frame(mcnemar_results(comparisons, cases))


def mcnemar_frame(results: Mapping[str, McNemar]) -> pd.DataFrame:
    return pd.DataFrame([{"Comparison": name, "A only correct": m.a_only_correct,
                          "B only correct": m.b_only_correct, "Discordant": m.discordant,
                          "Paired cases": m.paired, "p (two-sided)": f"{m.p_two_sided:.2g}"}
                         for name, m in results.items()])


def pair_grid(flip: Mapping[str, Rows], cases: Cases) -> pd.DataFrame:
    """FLIP pair correctness: one row per system, one boolean column per pair ID."""
    index = index_cases(cases)
    return pd.DataFrame({label: dict(flip_pairs(rows, index).correct_by_pair) for label, rows in flip.items()}).T
