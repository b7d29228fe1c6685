"""Repeated runs (issue 25): τ-bench's pass^k and per-case consistency, from `run --repeats N` to `score`."""

from __future__ import annotations

import itertools
import json
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.evaluation.pass_k import pass_hat_k, reliability
from routebr_kit.store.artifact import Artifact
from routebr_kit.store.ledger import PredictionRow

CONFIRM = "data/routebr_confirm_320.csv"


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 6).flatmap(lambda n: st.tuples(st.just(n), st.lists(st.integers(0, n), min_size=1,
                                                                           max_size=8))))
def test_pass_k_is_the_chance_that_k_distinct_repeats_are_all_right(args):
    """The unbiased estimator equals the share of k-subsets of a case's repeats that are all right."""
    n, correct = args
    for k in range(1, n + 1):
        by_subsets = Fraction(0)
        for c in correct:
            outcomes = [True] * c + [False] * (n - c)
            subsets = list(itertools.combinations(range(n), k))
            by_subsets += Fraction(sum(all(outcomes[i] for i in s) for s in subsets), len(subsets))
        assert pass_hat_k(correct, n, k) == by_subsets / len(correct)
    values = [pass_hat_k(correct, n, k) for k in range(1, n + 1)]
    assert values == sorted(values, reverse=True)  # pass^k never rises with k
    assert values[0] == Fraction(sum(correct), n * len(correct))  # pass^1 is mean accuracy


def test_pass_k_rejects_what_it_cannot_estimate():
    for correct, n, k in (([1], 2, 3), ([1], 2, 0), ([3], 2, 1), ([], 2, 1), ([True], 2, 1)):
        with pytest.raises(DataError):
            pass_hat_k(correct, n, k)


def _rows(cases, paths_by_repeat):
    out = []
    for repeat, paths in enumerate(paths_by_repeat):
        for case, path in zip(cases, paths):
            out.append(PredictionRow(case.case_id, "routebr", path, case.gold.object_id, "ALLOW", path, (), True,
                                     False, repeat_id=str(repeat)))
    return out


def test_reliability_counts_all_right_and_consistent_cases(routebr_artifact):
    cases = sorted(Artifact(routebr_artifact).cases("confirm").values(), key=lambda c: c.case_id)[:3]
    gold = [c.gold.final_path for c in cases]
    wrong = ["T_CLARIFY" if g != "T_CLARIFY" else "T_DEFER" for g in gold]
    other = ["T_HANDOFF" if g != "T_HANDOFF" else "T_REJECT" for g in gold]
    # case 0 always right; case 1 right, wrong, right; case 2 wrong the same way three times
    rows = _rows(cases, [[gold[0], gold[1], wrong[2]], [gold[0], wrong[1], wrong[2]], [gold[0], gold[1], wrong[2]]])
    rel = reliability(rows, cases)
    assert rel.repeats == 3 and rel.cases == 3
    assert rel.mean_accuracy == pytest.approx(5 / 9)
    assert rel.pass_k[1] == pytest.approx((1 + 1 / 3) / 3) and rel.pass_k[2] == pytest.approx(1 / 3)
    assert rel.all_right.hits == 1 and rel.consistent.hits == 2  # case 2 is consistently wrong
    rows = _rows(cases, [[gold[0], wrong[1], wrong[2]], [gold[0], other[1], wrong[2]]])
    assert reliability(rows, cases).consistent.hits == 2  # wrong in two different ways: inconsistent
    with pytest.raises(DataError) as info:
        reliability(rows[:-1], cases)  # a case missing from one repeat
    assert info.value.code is ErrorCode.INVALID_VALUE and info.value.field == "repeat_id"
    with pytest.raises(DataError) as info:
        reliability(rows + rows[:1], cases)
    assert info.value.code is ErrorCode.DUPLICATE_ID


@pytest.fixture(scope="module")
def repeated(routebr_artifact, tmp_path_factory):
    out = tmp_path_factory.mktemp("repeats") / "run"
    cases = str(routebr_artifact / CONFIRM)
    assert main(["run", "--profile", "sim:deepseek_v4_flash_efficiency", "--system", "routebr", "--split", "MAIN",
                 "--cases", cases, "--repeats", "3", "--seed", "10", "--out", str(out), "--no-progress"]) == 0
    return out, cases


def test_run_repeats_writes_one_run_directory_per_repeat(repeated):
    out, _ = repeated
    for i in range(3):
        manifest = json.loads((out / f"repeat-{i}" / "run_manifest.json").read_text())
        assert manifest["repeat_id"] == str(i) and manifest["backend_detail"]["seed"] == 10 + i


def test_score_of_a_run_with_repeats_reports_pass_k_and_consistency(repeated, tmp_path, capsys):
    out, cases = repeated
    capsys.readouterr()
    assert main(["score", str(out), "--cases", cases, "--json", str(tmp_path / "s.json")]) == 0
    text = capsys.readouterr().out
    assert "pass^1" in text and "pass^3" in text and "consistency" in text and "tau-bench" in text
    doc = json.loads((tmp_path / "s.json").read_text())["reliability"]
    assert doc["repeats"] == 3 and doc["cases"] == 200
    p = [doc["pass_k"][str(k)] for k in (1, 2, 3)]
    assert p[0] >= p[1] >= p[2] and p[2] == doc["all_right"] / 200
    per_repeat = [v["rate"] for v in doc["per_repeat"].values()]
    assert math.isclose(p[0], sum(per_repeat) / 3)
    assert p[2] < p[0]  # the simulated backend is not deterministic across seeds
    assert main(["score", str(out), "--cases", cases, "--repeat-id", "2"]) == 0


def test_run_repeats_refuses_a_repeat_id_and_zero(routebr_artifact, tmp_path, capsys):
    cases = str(routebr_artifact / CONFIRM)
    base = ["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN", "--cases", cases,
            "--out", str(tmp_path / "r"), "--no-progress"]
    with pytest.raises(SystemExit) as stop:  # the parser's own range check: one line, exit 2
        main(base + ["--repeats", "0"])
    assert stop.value.code == 2
    assert main(base + ["--repeats", "2", "--repeat-id", "5"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 2 and "--repeats" in err and "--repeat-id" in err


def test_gate_check_reads_the_repeats_of_run_repeats(repeated, tmp_path, capsys):
    out, cases = repeated
    assert main(["gate-check", "--ledger", str(out), "--cases", cases, "--model", "repeats,stratum", "--sims", "300",
                 "--no-search", "--json", str(tmp_path / "g.json")]) == 0
    doc = json.loads((tmp_path / "g.json").read_text())
    repeats, stratum = doc["calibrations"]
    assert repeats["model"] == "repeats" and repeats["rows"] == 600
    assert list(repeats["models"].values()) == ["repeats (3+ per case)"]
    assert stratum["rows"] == 600 and list(stratum["models"].values()) == ["stratum"]
    assert all(c["false_alarm"]["sims"] == 300 for c in repeats["criteria"]
               if not c["criterion"].startswith("new_forbidden_dispatch"))
