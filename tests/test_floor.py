"""The trivial-proposer floor (issue 33): the best constant-action proposer through the same controller."""

from __future__ import annotations

from routebr_kit.core.contract import check_proposal
from routebr_kit.dataset import generate_benchmark
from routebr_kit.evaluation.floor import constant_proposal, trivial_floor

BENCH = generate_benchmark(seed=0, language="en")
CASES = [c for c in BENCH.cases if c.split.value != "DEV"]


def test_each_constant_proposal_is_valid_and_the_floor_is_the_best_named_action():
    catalog = BENCH.assets.catalog
    for case in CASES[:50]:
        for action in catalog.actions:
            assert check_proposal(constant_proposal(action, case), catalog, case.request.candidate_index).ok
    floor = trivial_floor(CASES, BENCH.assets.controller())
    assert floor.action_id in catalog.ids and set(floor.by_action) == set(catalog.ids)
    assert floor.exact.hits == max(c.hits for c in floor.by_action.values()) and floor.exact.n == len(CASES)
    assert 0 < floor.exact.rate < 1  # the state decides many routes: the floor is far above zero
    assert floor.line().startswith(f"floor (always {floor.action_id}): exact ") and "Wilson 95%" in floor.line()
    assert floor.as_dict()["exact"] == floor.exact.hits
