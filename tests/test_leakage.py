"""The manifest's gold-field claim is computed from the request bodies actually sent."""

from __future__ import annotations

import json

import pytest

from routebr_kit.runs.leakage import gold_leaks, gold_only_values, leak_summary, receipt_leaks
from routebr_kit.store.artifact import Artifact


@pytest.fixture(scope="module")
def artifact(routebr_artifact):
    return Artifact(routebr_artifact)


def _receipts(artifact):
    for task in artifact.tasks():
        for path in task.receipts():
            receipt = json.loads(path.read_text(encoding="utf-8"))
            yield artifact.cases(task.phase)[receipt["case_id"]], receipt


def test_the_published_receipts_carry_no_gold(artifact):
    pairs = list(_receipts(artifact))
    assert len(pairs) == 3
    summary = leak_summary(pairs)
    assert summary["request_bodies_checked"] >= 3
    assert summary["passed_to_model"] is False and summary["leaks"] == 0


def test_a_planted_gold_key_inside_the_user_message_is_found(artifact):
    case, receipt = next(_receipts(artifact))
    body = json.loads(json.dumps(receipt["calls"][0]["request_body"]))
    user = json.loads(body["messages"][-1]["content"])
    user["gold_final_path"] = case.gold.final_path
    body["messages"][-1]["content"] = json.dumps(user, ensure_ascii=False)
    found = gold_leaks(case, "ROUTEBR", body)
    assert any("gold_final_path" in leak.found for leak in found)


def test_a_gold_only_value_is_found(artifact):
    case, receipt = next(c for c in _receipts(artifact) if c[0].scenario_cell)
    value = sorted(gold_only_values(case))[0]
    planted = {"calls": [{"stage": "ROUTEBR", "request_body": {"messages": [{"role": "user", "content": value}]}}]}
    assert [leak.found for leak in receipt_leaks(case, planted)] == [f"gold-only value {value!r}"]


def test_catalog_and_rule_vocabulary_is_not_a_leak(artifact):
    case, _ = next(_receipts(artifact))
    body = {"catalog": [case.gold.action], "rules": list(case.gold.rule_ids), "object": case.gold.object_id}
    assert gold_leaks(case, "B2_DIRECT_GUARD", body) == []


def test_hostile_depth_is_bounded(artifact):
    case, _ = next(_receipts(artifact))
    deep: object = "x"
    for _ in range(5000):
        deep = [deep]
    assert gold_leaks(case, "ROUTEBR", deep) == []


class _Echo:
    """A backend that answers with a fixed valid proposal and reports a request body of the test's choosing."""

    name = "echo"

    def __init__(self, plant: str | None = None) -> None:
        self.plant = plant

    async def complete(self, call):
        import routebr_kit as rk

        body = {"messages": [{"role": "user", "content": json.dumps(dict(call.payload), ensure_ascii=False)}]}
        if self.plant:
            body["messages"].append({"role": "user", "content": self.plant})
        content = json.dumps({"action_id": "A4_SUPPORT_RESPONSE", "object_id": "NONE",
                              "topk": ["A4_SUPPORT_RESPONSE"]})
        return rk.ModelReply(content=content, model="echo", extra={"request_body": body})


def _run(artifact, tmp_path, plant_for=None):
    from routebr_kit.runs.runner import run_cases

    cases = list(artifact.cases("confirm").values())[:6]
    plant = sorted(gold_only_values(cases[0]))[0] if plant_for else None
    result = run_cases(cases, _Echo(plant), system="routebr", assets=artifact.assets, out_dir=tmp_path / "run",
                       progress=False)
    return result.manifest


def test_a_run_manifest_computes_the_claim_from_its_request_bodies(artifact, tmp_path):
    manifest = _run(artifact, tmp_path)
    assert manifest["gold_fields_passed_to_model"] is False
    assert manifest["gold_leak_check"]["request_bodies_checked"] == 6


def test_a_run_whose_bodies_carry_gold_says_so(artifact, tmp_path):
    manifest = _run(artifact, tmp_path, plant_for=True)
    assert manifest["gold_fields_passed_to_model"] is True
    assert manifest["gold_leak_check"]["leaks"] >= 1
