"""Notebook 13's machinery (issue 33, "real proposers offline"): generated CONFIRM-320 (no artifact), the learned
and lexical proposers through RouteBR/B1/B2, the floor beside the scores, and the wrong-but-valid gate trace."""

from __future__ import annotations

import pytest

pytest.importorskip("sklearn", reason="extra [learned] not installed: pip install 'routebr-kit[learned]'")

from routebr_kit.backends.learned import LearnedBackend, train  # noqa: E402
from routebr_kit.backends.lexical import LexicalBackend  # noqa: E402
from routebr_kit.experiments import proposers as P  # noqa: E402
from routebr_kit.store.assets import assets_beside  # noqa: E402


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    work = tmp_path_factory.mktemp("nb13")
    shifted = P.confirm_cases(None, work, seed=9, language="en", lexical_shift=True)
    learned = LearnedBackend(train(seeds=(0,), languages=("en",)))
    lexical = LexicalBackend(assets_beside(shifted.path).catalog)
    grids = {"learned": P.decide_all(learned, shifted), "lexical": P.decide_all(lexical, shifted, systems=["routebr"])}
    return shifted, grids


def test_the_shift_set_is_generated_and_every_learned_answer_is_valid(setup):
    shifted, grids = setup
    assert not shifted.published and "lexical-shift" in shifted.label and len(shifted.cases) == 320
    for system in P.SYSTEMS:
        assert all(d.valid for d in grids["learned"][system]["decisions"])


def test_scores_carry_the_floor_and_the_gate_trace_is_consistent(setup):
    shifted, grids = setup
    table, floor = P.score_table(grids, shifted)
    assert list(table.proposer) == ["learned"] * 3 + ["lexical"]
    assert set(table["floor exact %"]) == {round(100 * floor.exact.rate, 1)}
    mistakes = P.wrong_but_valid(grids["learned"]["routebr"], shifted)
    assert len(mistakes) > 0 and set(mistakes.gate) <= {"state gate (a rule on the runtime state)",
                                                        "object gate (no resolved object)", "none: dispatched"}
    assert not mistakes[mistakes.false_dispatch].gate.ne("none: dispatched").any()
