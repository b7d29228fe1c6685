"""Golden tests: every published RouteBR number, from published and from replayed predictions.

The expected cells below are the published values of ``analysis/results/FINAL_RESULTS.md`` at their published
rounding and with their denominators (facts, typed in); the scorecard test additionally parses the file itself.
"""

from __future__ import annotations

import math
from dataclasses import replace

import pandas as pd
import pytest

from routebr_kit.backends.profiles import PROFILE_LABELS
from routebr_kit.core import DataError, ErrorCode
from routebr_kit.evaluation import flip_pairs, pair_grid, rq12_table, score, screening_table, wilson_published
from routebr_kit.experiments.published import audit_results, parse_results_markdown, read_published, scorecard
from routebr_kit.experiments.replication import (
    LedgerOrigin,
    artifact_ledgers,
    paper_runs,
    paper_tables,
    replay_artifact,
)
from routebr_kit.store.artifact import CONFIRM, SELECT, Artifact

SCREENING = [  # Backend, Contract, Path F1, FD, FB, Valid JSON, Calls/case, Tokens/case, Median latency (ms)
    ["DeepSeek V4 Pro", "97.5", "97.3", "0/84 (0.0)", "1/76 (1.3)", "100.0", "1.00", "762", "1367"],
    ["DeepSeek V4 Flash", "97.5", "97.4", "0/84 (0.0)", "2/76 (2.6)", "99.4", "1.01", "767", "996"],
    ["Qwen3.8 Max", "97.5", "97.2", "0/84 (0.0)", "0/76 (0.0)", "100.0", "1.00", "737", "1930"],
    ["GPT-4o", "96.9", "96.7", "0/84 (0.0)", "2/76 (2.6)", "100.0", "1.00", "730", "1853"],
    ["Qwen3.7 Plus", "96.2", "95.9", "0/84 (0.0)", "1/76 (1.3)", "100.0", "1.00", "739", "2293"],
    ["GPT-5.2", "95.6", "95.9", "0/84 (0.0)", "5/76 (6.6)", "100.0", "1.00", "742", "2329"],
]
SCREENING_COLUMNS = ["Backend", "Contract", "Path F1", "FD", "FB", "Valid JSON", "Calls/case", "Tokens/case",
                     "Median latency (ms)"]
RQ12 = [  # System, MAIN contract, MAIN path F1, FLIP pair, FD, FB
    ["RouteBR", "97.5", "96.3", "37/40 (92.5)", "0/166 (0.0)", "1/114 (0.9)"],
    ["B1 Direct", "41.0", "36.2", "4/40 (10.0)", "127/166 (76.5)", "2/114 (1.8)"],
    ["B2 Direct+Guard", "95.5", "94.5", "40/40 (100.0)", "1/166 (0.6)", "2/114 (1.8)"],
]
RQ12_COLUMNS = ["System", "MAIN contract", "MAIN path F1", "FLIP pair", "FD", "FB"]
RQ3 = [  # Variant, Split, Contract, Object accuracy, FD, FB
    ["RouteBR", "FLIP", "96.2", "100.0", "0/40", "0/40"],
    ["RouteBR w/o state enforcement", "FLIP", "46.2", "100.0", "40/40", "0/40"],
    ["RouteBR", "ENTITY", "100.0", "95.0", "0/18", "0/22"],
    ["RouteBR w/o closed grounding", "ENTITY", "45.0", "42.5", "0/18", "22/22"],
]
RQ3_COLUMNS = ["Variant", "Split", "Contract", "Object accuracy", "FD", "FB"]
INTEGRITY = [["SELECT backends present", "6/6"], ["Audited SELECT rows", "960"], ["Audited CONFIRM rows", "1000"]]
MCNEMAR = {  # published key: (A only correct, B only correct, exact two-sided p)
    "rq1_routebr_vs_b1": (115, 2, 8.310387710030923e-32),
    "rq1_routebr_vs_b2": (7, 3, 0.34375),
    "rq3_routebr_vs_no_state": (40, 0, 1.8189894035458565e-12),
    "rq3_routebr_vs_no_ground": (22, 0, 4.76837158203125e-07),
}
#: 6×8 + 3×5 + 4×4 table cells, 3 integrity counts, and a split plus a p-value per McNemar comparison.
PUBLISHED_VALUE_COUNT = 6 * 8 + 3 * 5 + 4 * 4 + 3 + 4 * 2


@pytest.fixture(scope="module")
def artifact(routebr_artifact) -> Artifact:
    return Artifact(routebr_artifact)


@pytest.fixture(scope="module")
def report(artifact):
    return replay_artifact(artifact)


@pytest.fixture(scope="module")
def tables(artifact, report):
    return {LedgerOrigin.PUBLISHED: paper_tables(artifact, LedgerOrigin.PUBLISHED),
            LedgerOrigin.REPLAYED: paper_tables(artifact, LedgerOrigin.REPLAYED, report)}


@pytest.fixture(scope="module")
def ledgers(artifact, report):
    return {LedgerOrigin.PUBLISHED: artifact_ledgers(artifact, LedgerOrigin.PUBLISHED),
            LedgerOrigin.REPLAYED: artifact_ledgers(artifact, LedgerOrigin.REPLAYED, report)}


SOURCES = [LedgerOrigin.PUBLISHED, LedgerOrigin.REPLAYED]


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
def test_table_iv_screening(tables, source) -> None:
    assert tables[source].screening[SCREENING_COLUMNS].values.tolist() == SCREENING


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
def test_table_v_rq1_rq2(tables, source) -> None:
    assert tables[source].rq12[RQ12_COLUMNS].values.tolist() == RQ12


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
def test_table_vi_rq3(tables, source) -> None:
    assert tables[source].rq3[RQ3_COLUMNS].values.tolist() == RQ3


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
@pytest.mark.parametrize("key", MCNEMAR)
def test_mcnemar_comparisons(tables, source, key) -> None:
    a_only, b_only, p = MCNEMAR[key]
    result = tables[source].comparisons[key]
    assert (result.a_only_correct, result.b_only_correct) == (a_only, b_only)
    assert result.p_two_sided == p


def test_mcnemar_table_quotes_the_paper(tables) -> None:
    frame = tables[LedgerOrigin.REPLAYED].mcnemar
    assert frame["p (two-sided)"].tolist() == ["8.3e-32", "0.34", "1.8e-12", "4.8e-07"]
    assert frame["Paired cases"].tolist() == [200, 200, 80, 40]


def test_replayed_tables_are_identical_to_published_prediction_tables(tables) -> None:
    assert tables[LedgerOrigin.REPLAYED].differences(tables[LedgerOrigin.PUBLISHED]) == []
    for name, (frame, _) in tables[LedgerOrigin.REPLAYED].frames().items():
        pd.testing.assert_frame_equal(frame, tables[LedgerOrigin.PUBLISHED].frames()[name][0])


def test_integrity_audit(artifact) -> None:
    audit = audit_results(artifact)
    assert audit.integrity.values.tolist() == INTEGRITY
    assert audit.ok
    assert len(audit.tasks) == 27 and audit.tasks["freeze_hash_match"].all()
    assert audit.hashes["match"].all()


def test_parser_reads_every_published_value(artifact) -> None:
    published = read_published(artifact)
    assert published.tables["table_iv_screening"].values.tolist() == SCREENING
    assert published.tables["table_v_rq1_rq2"].values.tolist() == RQ12
    assert published.tables["table_vi_rq3"].values.tolist() == RQ3
    assert published.tables["integrity"].values.tolist() == INTEGRITY
    assert {k: (c.a_only_correct, c.b_only_correct, c.p_two_sided) for k, c in published.comparisons.items()} \
        == MCNEMAR
    assert published.n_values == PUBLISHED_VALUE_COUNT == 90


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
def test_scorecard_reproduces_every_published_value(artifact, tables, source) -> None:
    card = scorecard(tables[source], audit_results(artifact), read_published(artifact))
    assert card.mismatches == ()
    assert card.total == PUBLISHED_VALUE_COUNT
    assert card.line == "reproduced 90/90 published values"
    counts = card.frame().groupby("table").size().to_dict()
    assert counts == {"table_iv_screening": 48, "table_v_rq1_rq2": 15, "table_vi_rq3": 16, "integrity": 3,
                      "mcnemar": 8}


def test_scorecard_names_what_does_not_reproduce(artifact, tables) -> None:
    good = tables[LedgerOrigin.PUBLISHED]
    screening = good.screening.copy()
    screening.loc[screening["Backend"] == "GPT-5.2", "FB"] = "4/76 (5.3)"
    rq3 = good.rq3.iloc[:3]  # the A-ground row is gone: four values missing
    comparisons = dict(good.comparisons) | {"rq1_routebr_vs_b2": replace(good.comparisons["rq1_routebr_vs_b2"],
                                                                        p_two_sided=0.34376)}
    bad = replace(good, screening=screening, rq3=rq3, comparisons=comparisons)
    card = scorecard(bad, audit_results(artifact), read_published(artifact))
    assert card.line == "reproduced 84/90 published values" and not card.ok
    missed = {(c.table, c.row, c.column): c.reproduced for c in card.mismatches}
    assert missed[("table_iv_screening", "GPT-5.2", "FB")] == "4/76 (5.3)"
    assert missed[("table_vi_rq3", "RouteBR w/o closed grounding / ENTITY", "FB")] == "(missing)"
    assert ("mcnemar", "rq1_routebr_vs_b2", "p (two-sided)") in missed


def test_markdown_parser_refuses_an_unknown_section() -> None:
    text = "# x\n\n## Something new\n\n| A | B |\n|---|---:|\n| r | 1 |\n"
    with pytest.raises(DataError) as caught:
        parse_results_markdown(text, "FINAL_RESULTS.md")
    assert caught.value.code is ErrorCode.UNKNOWN_REFERENCE and caught.value.line == 3


def test_markdown_parser_refuses_a_count_it_cannot_read() -> None:
    text = "## Integrity\n\n- SELECT backends present: 6/6.\n- Audited SELECT rows: 1,000.\n"
    with pytest.raises(DataError) as caught:
        parse_results_markdown(text)
    assert caught.value.code is ErrorCode.INVALID_VALUE and caught.value.line == 4


def test_markdown_parser_refuses_a_ragged_row() -> None:
    text = "## RQ3 safeguards\n\n| A | B |\n|---|---|\n| r | 1 | 2 |\n"
    with pytest.raises(DataError) as caught:
        parse_results_markdown(text)
    assert caught.value.code is ErrorCode.ROW_SHAPE and caught.value.line == 5


# --------------------------------------------------------------------------------------------- every JSON metric

EXACT_KEYS = ("n", "contract_exact", "false_dispatch", "false_dispatch_denominator", "false_block",
              "false_block_denominator", "valid_json", "fallback", "calls")
FLOAT_KEYS = ("contract_exact_rate", "path_macro_f1", "action_accuracy", "object_accuracy", "boundary_accuracy",
              "false_dispatch_rate", "false_block_rate", "valid_json_rate", "fallback_rate", "tokens_per_case_mean",
              "latency_ms_median", "calls_per_case")


def _published_slices(artifact, rows_by_key):
    """(name, rows, cases, published record) for every scored slice of FINAL_RESULTS.json."""
    results = artifact.published_results
    runs = paper_runs(rows_by_key)
    for label, rows in runs.screening.items():
        yield label, rows, artifact.cases(SELECT), results["screening"][label]
    for key, record in results["confirm"].items():
        system, split = key.split(":")
        yield key, rows_by_key[f"{CONFIRM}/{system}/{split}"], artifact.cases(CONFIRM), record


@pytest.mark.parametrize("source", SOURCES, ids=lambda s: s.value)
def test_every_published_json_metric(artifact, ledgers, source) -> None:
    checked = 0
    for name, rows, cases, record in _published_slices(artifact, ledgers[source]):
        s = score(rows, cases).as_dict()
        for key in EXACT_KEYS:
            assert s[key] == record[key], (name, key)
        for key in FLOAT_KEYS:
            assert s[key] == record[key], (name, key)  # bit for bit
        published_interval = tuple(record["contract_exact_wilson95"])
        assert wilson_published(s["contract_exact"], s["n"]).as_tuple() == published_interval, name
        assert abs(s["contract_exact_wilson95_low"] - published_interval[0]) <= 1e-12
        assert abs(s["contract_exact_wilson95_high"] - min(1.0, published_interval[1])) <= 1e-12
        assert dict(score(rows, cases).correct) == record["correct_by_case"], name
        if "flip_pairs" in record:
            pairs = flip_pairs(rows, cases)
            assert (pairs.pairs.hits, pairs.pairs.n) == (record["flip_pairs"]["pair_exact"],
                                                         record["flip_pairs"]["pairs"])
            assert dict(pairs.correct_by_pair) == record["flip_pairs"]["correct_by_pair"]
            published_pairs = tuple(record["flip_pairs"]["pair_exact_wilson95"])
            assert wilson_published(pairs.pairs.hits, pairs.pairs.n).as_tuple() == published_pairs
        checked += 1
    assert checked == 6 + 9


def test_calls_audit_is_matched_by_the_derivation(artifact, ledgers) -> None:
    """Published ledgers have no calls column: 1 + fallback gives the receipt audit's call counts."""
    audit = artifact.published_results["audit"]["select"]
    for profile in PROFILE_LABELS:
        published = ledgers[LedgerOrigin.PUBLISHED]
        rows = [r for split in ("main", "flip", "entity") for r in published[f"select/{profile}/{split}"]]
        assert score(rows, artifact.cases(SELECT)).calls == audit[profile]["calls"], profile
    assert audit["deepseek_v4_flash_efficiency"]["calls"] == 161


def test_published_macro_f1_is_the_union_variant(artifact, ledgers) -> None:
    """The union-of-present-labels variant reproduces the published numbers; the fixed nine-label set does not."""
    rows = ledgers[LedgerOrigin.PUBLISHED]["confirm/a_ground/entity"]
    s = score(rows, artifact.cases(CONFIRM))
    assert s.path_macro_f1 == artifact.published_results["confirm"]["a_ground:entity"]["path_macro_f1"]
    assert round(s.path_macro_f1, 3) == 0.124
    assert s.path_macro_f1_fixed < s.path_macro_f1
    routebr_entity = score(ledgers[LedgerOrigin.PUBLISHED]["confirm/routebr/entity"], artifact.cases(CONFIRM))
    assert (routebr_entity.path_macro_f1, round(routebr_entity.path_macro_f1_fixed, 4)) == (1.0, 0.5556)


def test_object_aware_path_changes_no_published_number(artifact, ledgers) -> None:
    """Every object error of the artifact sits on a bounded or already-wrong path, so action@object == path."""
    for key, rows in ledgers[LedgerOrigin.PUBLISHED].items():
        s = score(rows, artifact.cases(key.split("/")[0]))
        assert s.strict_exact == s.contract_exact, key
        assert s.gold_boundary_disagreements == (), key


def test_routebr_misses_three_flip_pairs(artifact, ledgers) -> None:
    runs = paper_runs(ledgers[LedgerOrigin.REPLAYED])
    grid = pair_grid(runs.flip, artifact.cases(CONFIRM))
    assert list(grid.index) == ["RouteBR", "B1 Direct", "B2 Direct+Guard"] and grid.shape == (3, 40)
    assert [p for p, ok in grid.loc["RouteBR"].items() if not ok] == ["PAIR-028", "PAIR-029", "PAIR-032"]
    assert grid.loc["B2 Direct+Guard"].all() and grid.loc["B1 Direct"].sum() == 4


# --------------------------------------------------------------------------------------------- generic builders


def test_builders_take_any_ledgers(artifact, ledgers) -> None:
    runs = paper_runs(ledgers[LedgerOrigin.PUBLISHED])
    two = {"worse": runs.screening["GPT-5.2"], "better": runs.screening["DeepSeek V4 Pro"]}
    frame = screening_table(two, artifact.cases(SELECT).values(), extras=False)
    assert frame["Backend"].tolist() == ["better", "worse"]  # sorted by contract exact match
    assert frame.columns.tolist() == SCREENING_COLUMNS
    with_extras = screening_table(two, artifact.cases(SELECT))
    assert {"Strict path (kit)", "First-pass valid (kit)"} <= set(with_extras.columns)


def test_rq12_needs_the_same_systems_on_both_splits(artifact, ledgers) -> None:
    runs = paper_runs(ledgers[LedgerOrigin.PUBLISHED])
    with pytest.raises(DataError) as caught:
        rq12_table(runs.main, {"RouteBR": runs.flip["RouteBR"]}, artifact.cases(CONFIRM))
    assert caught.value.code is ErrorCode.INVALID_VALUE


def test_missing_result_folder_is_an_error(ledgers) -> None:
    partial = {k: v for k, v in ledgers[LedgerOrigin.PUBLISHED].items() if k != "confirm/a_state/flip"}
    with pytest.raises(DataError) as caught:
        paper_runs(partial)
    assert caught.value.code is ErrorCode.UNKNOWN_REFERENCE and caught.value.got == "confirm/a_state/flip"


def test_nan_free_tables(tables) -> None:
    for frame, _ in tables[LedgerOrigin.PUBLISHED].frames().values():
        assert not frame.isna().any().any()
        assert not frame.astype(str).apply(lambda col: col.str.contains("n/a")).any().any()
    assert math.isclose(tables[LedgerOrigin.PUBLISHED].comparisons["rq1_routebr_vs_b2"].p_two_sided, 0.34375)
