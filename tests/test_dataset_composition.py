"""The paper's composition holds exactly for seeds 0–4 in both languages (coupled and decoupled entity state)."""

from __future__ import annotations

from collections import Counter

import pytest
from dataset_fixtures import VARIANTS, bench
from hypothesis import given
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core.records import Boundary
from routebr_kit.dataset import Partition
from routebr_kit.dataset.composition import (
    CUE_CELLS,
    MIN_PRIORITY_DECIDED_CONFIRM,
    UNRESOLVABLE,
    allocate,
    apportion,
    spread,
)
from routebr_kit.store.cases import ObjectDifficulty, Split

A1, A2, A3, A4, A5 = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                      "A5_PROTECTED_ACTION")


def _dispatch(cases) -> tuple[int, int]:
    return sum(c.gold.dispatchable for c in cases), sum(not c.gold.dispatchable for c in cases)


@pytest.mark.parametrize("seed,lang,decouple", VARIANTS)
def test_every_count_is_exact(seed: int, lang: str, decouple: bool) -> None:
    b = bench(seed, lang, decouple)
    cases = b.cases
    assert len(cases) == 600
    assert Counter(c.gold.action for c in cases) == {A1: 123, A2: 123, A3: 123, A5: 123, A4: 108}
    assert Counter(c.gold.boundary for c in cases) == {Boundary.ALLOW: 262, Boundary.CLARIFY: 128,
                                                       Boundary.DEFER: 75, Boundary.HANDOFF: 75, Boundary.REJECT: 60}
    assert Counter(c.split for c in cases) == {Split.DEV: 120, Split.MAIN: 300, Split.FLIP: 120, Split.ENTITY: 60}
    select, confirm = b.partition(Partition.SELECT), b.partition(Partition.CONFIRM)
    assert Counter(c.split for c in select) == {Split.MAIN: 100, Split.FLIP: 40, Split.ENTITY: 20}
    assert Counter(c.split for c in confirm) == {Split.MAIN: 200, Split.FLIP: 80, Split.ENTITY: 40}
    assert _dispatch(select) == (76, 84)
    assert _dispatch(confirm) == (136, 184)
    assert _dispatch([c for c in cases if c.split is Split.DEV]) == (50, 70)
    non_dev = {c.case_id for c in cases if c.split is not Split.DEV}
    assert {c.case_id for c in select} | {c.case_id for c in confirm} == non_dev
    assert not {c.case_id for c in select} & {c.case_id for c in confirm}


@pytest.mark.parametrize("seed,lang,decouple", VARIANTS)
def test_flip_pairs(seed: int, lang: str, decouple: bool) -> None:
    b = bench(seed, lang, decouple)
    pairs: dict[str, list[rk.Case]] = {}
    for c in b.cases:
        if c.split is Split.FLIP:
            pairs.setdefault(c.pair_id, []).append(c)
    assert len(pairs) == 60
    for pair_id, (x, y) in pairs.items():
        assert (x.request.utterance, x.request.history, x.request.candidates) == \
               (y.request.utterance, y.request.history, y.request.candidates), pair_id
        sx, sy = x.request.state.values, y.request.state.values
        assert len([k for k in sx if sx[k] != sy[k]]) == 1, pair_id
        assert sorted(c.gold.boundary is Boundary.ALLOW for c in (x, y)) == [False, True], pair_id
        assert b.partitions[x.case_id] is b.partitions[y.case_id], pair_id


@pytest.mark.parametrize("seed,lang,decouple", VARIANTS)
def test_priority_decides_in_confirm(seed: int, lang: str, decouple: bool) -> None:
    b = bench(seed, lang, decouple)
    policy = b.assets.policy
    decided = [c for c in b.partition(Partition.CONFIRM)
               if len([r for r in policy.matching(c.gold.action, c.request.state.values) if not r.is_default]) > 1]
    assert len(decided) >= MIN_PRIORITY_DECIDED_CONFIRM
    # the winner is always the highest-priority match
    for c in decided:
        assert policy.matching(c.gold.action, c.request.state.values)[0].rule_id == c.gold.rule_ids[0]


@pytest.mark.parametrize("seed,lang", [(s, lang) for s, lang, d in VARIANTS if not d])
def test_difficulties_cues_and_cells(seed: int, lang: str) -> None:
    cases = bench(seed, lang).cases
    hard = {s: sum(c.gold.object_difficulty in UNRESOLVABLE for c in cases if c.split is s)
            / sum(c.split is s for c in cases) for s in Split}
    assert max(hard, key=hard.get) is Split.ENTITY  # difficult references are concentrated in ENTITY
    entity = [c for c in cases if c.split is Split.ENTITY]
    assert not {c.gold.object_difficulty for c in entity} & {ObjectDifficulty.EXPLICIT_NAME, ObjectDifficulty.NONE}
    assert {c.gold.object_difficulty for c in cases} == set(ObjectDifficulty)
    assert {c.scenario_cell.rsplit("|", 1)[1] for c in cases} == set(CUE_CELLS.values())
    assert all(c.gold.object_difficulty is ObjectDifficulty.NONE for c in cases if c.gold.action == A4)


def test_same_seed_same_skeleton_across_languages() -> None:
    en, zh = bench(0, "en"), bench(0, "zh")
    key = lambda c: (c.case_id, c.pair_id, c.scenario_cell, c.gold.rule_ids, c.request.state.values)  # noqa: E731
    assert [key(c) for c in en.cases] == [key(c) for c in zh.cases]
    assert dict(en.partitions) == dict(zh.partitions)
    assert [c.request.utterance for c in en.cases] != [c.request.utterance for c in zh.cases]


def test_seeds_differ() -> None:
    assert [c.scenario_cell for c in bench(0, "en").cases] != [c.scenario_cell for c in bench(1, "en").cases]


def test_allocation_needs_rules_that_realise_every_boundary(kit_data) -> None:
    """Without a DEFER rule the composition is impossible: a typed error, not a different benchmark."""
    catalog = rk.load_catalog(kit_data / "catalog.csv")
    rules = [r for r in rk.load_rules(kit_data / "boundary_rules.csv", catalog).rules if r.decision is not
             Boundary.DEFER]
    with pytest.raises(rk.DataError) as err:
        allocate(0, rk.PolicyEngine(rules, catalog.ids))
    assert err.value.code is rk.ErrorCode.INCONSISTENT_ASSETS


@given(st.integers(0, 500), st.dictionaries(st.sampled_from("abcdefg"), st.integers(1, 20), min_size=1))
def test_apportion_is_exact(total: int, weights: dict[str, int]) -> None:
    counts = apportion(total, weights)
    assert sum(counts.values()) == total
    share = sum(weights.values())
    assert all(abs(counts[k] - total * w / share) < 1 for k, w in weights.items())


@given(st.integers(1, 400), st.data())
def test_spread_marks_exactly_m(n: int, data) -> None:
    m = data.draw(st.integers(0, n))
    marks = spread(n, m)
    assert len(marks) == n and sum(marks) == m
    # evenly spaced: every window of ceil(n/m) positions holds at least one mark
    if m:
        window = -(-n // m)
        assert all(any(marks[i:i + window]) for i in range(0, n - window + 1))
