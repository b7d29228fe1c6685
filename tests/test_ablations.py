"""Ablations replayed from stored proposals (no new calls), checked against the published live re-runs."""

from __future__ import annotations

import pytest

from routebr_kit.experiments.ablations import prevented_promotions, replay_variants
from routebr_kit.store.artifact import Artifact
from routebr_kit.systems.variants import Variant, variant_controller


@pytest.fixture(scope="module")
def artifact(routebr_artifact):
    return Artifact(routebr_artifact)


def _offline(artifact, split, variant):
    task = artifact.task("confirm", "routebr", split)
    rows = artifact.predictions(task)
    return {r.case_id: r for r in replay_variants(artifact.assets, rows, artifact.cases("confirm"), [variant],
                                                  task.receipts())[Variant(variant)]}


def _published(artifact, system, split):
    return {r.case_id: r for r in artifact.predictions(artifact.task("confirm", system, split))}


def test_offline_a_state_equals_the_published_live_rerun(artifact):
    mine, published = _offline(artifact, "flip", "a_state"), _published(artifact, "a_state", "flip")
    assert mine.keys() == published.keys() and len(mine) == 80
    assert all((mine[c].pred_final_path, mine[c].pred_action, mine[c].pred_object_id)
               == (published[c].pred_final_path, published[c].pred_action, published[c].pred_object_id)
               for c in published)


def test_offline_a_ground_equals_the_live_rerun_except_one_reproposed_object(artifact):
    mine, published = _offline(artifact, "entity", "a_ground"), _published(artifact, "a_ground", "entity")
    assert all(mine[c].pred_final_path == published[c].pred_final_path for c in published)
    differing = [c for c in published if mine[c].pred_object_id != published[c].pred_object_id]
    assert differing == ["ENTITY-0023"]  # the live re-run's model answered UNRESOLVED this time


def test_no_rules_behaves_like_a_state_and_no_repair_like_routebr_on_published_runs(artifact):
    task = artifact.task("confirm", "routebr", "main")
    variants = replay_variants(artifact.assets, artifact.predictions(task), artifact.cases("confirm"),
                               receipts=task.receipts())
    paths = {v: [r.pred_final_path for r in rows] for v, rows in variants.items()}
    assert paths[Variant.NO_RULES] == paths[Variant.A_STATE]
    assert paths[Variant.NO_REPAIR] == paths[Variant.ROUTEBR]
    assert variant_controller(artifact.assets, "no_rules").policy.rules[0].is_default


@pytest.mark.parametrize("split, expected", [("main", 13), ("flip", 4), ("entity", 2)])
def test_primary_commitment_prevents_only_wrong_dispatches(artifact, split, expected):
    task = artifact.task("confirm", "routebr", split)
    promotions = prevented_promotions(artifact.assets, artifact.predictions(task), artifact.cases("confirm"),
                                      task.receipts())
    assert len(promotions) == expected and all(p.wrong for p in promotions)
    assert all(p.promoted != p.primary for p in promotions)
