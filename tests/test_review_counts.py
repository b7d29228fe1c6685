"""The diff's scipy-free counts and tests equal routebr_kit.evaluation's (hypothesis)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.evaluation.metrics import flip_pairs, score
from routebr_kit.evaluation.stats import mcnemar, wilson
from routebr_kit.review import counts
from routebr_kit.store.artifact import Artifact


@given(n=st.integers(0, 3000), frac=st.floats(0, 1))
@settings(max_examples=300, deadline=None)
def test_wilson_equals_scipy(n, frac):
    k = round(frac * n)
    assert counts.wilson(k, n) == pytest.approx(wilson(k, n).as_tuple(), abs=1e-9)


@given(flags=st.lists(st.tuples(st.booleans(), st.booleans()), max_size=300))
@settings(max_examples=300, deadline=None)
def test_exact_mcnemar_equals_scipy(flags):
    a = {str(i): x for i, (x, _) in enumerate(flags)}
    b = {str(i): y for i, (_, y) in enumerate(flags)}
    mine, ref = counts.mcnemar_exact(a, b), mcnemar(a, b)
    assert (mine.a_only_correct, mine.b_only_correct, mine.paired) == (ref.a_only_correct, ref.b_only_correct,
                                                                       ref.paired)
    assert mine.p_two_sided == pytest.approx(ref.p_two_sided, abs=1e-9)


def test_tally_and_flip_pairs_equal_the_scorer_on_every_published_folder(routebr_artifact):
    art = Artifact(routebr_artifact)
    for task in art.tasks():
        rows, cases = art.predictions(task), art.cases(task.phase)
        mine, ref = counts.tally(rows, cases), score(rows, cases)
        for name, other in (("exact", ref.contract_exact), ("strict", ref.strict_exact),
                            ("false_dispatch", ref.false_dispatch), ("false_block", ref.false_block),
                            ("object", ref.object)):
            assert (getattr(mine, name).hits, getattr(mine, name).n) == (other.hits, other.n), (task.key, name)
        if task.split.value == "FLIP":
            p = flip_pairs(rows, cases).pairs
            assert (counts.flip_pair_count(rows, cases).hits, counts.flip_pair_count(rows, cases).n) == (p.hits, p.n)
        from routebr_kit.evaluation.metrics import calls_of, first_pass_valid_of

        assert [counts.calls_of(r) for r in rows] == [calls_of(r) for r in rows]
        assert [counts.first_pass_valid_of(r) for r in rows] == [first_pass_valid_of(r) for r in rows]
