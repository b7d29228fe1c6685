"""Change-impact selection is sound (and exact for rule edits) against shadow replay: >= 200 random edits each."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routebr_kit.core.records import Boundary, Registry
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.review.assets import AssetEdit, EditClass, compare_assets
from routebr_kit.review.impact import ADAPTER_TESTS, artifact_asset_files, impact
from routebr_kit.review.ledgers import LedgerSet, load_ledgers
from routebr_kit.review.shadow import ShadowFlag, shadow_replay
from routebr_kit.store.assets import Assets

STATE_FIELDS = ("identity_verified", "entity_resolved", "action_permission", "service_available", "context_fresh",
                "safety_escalation_required", "request_supported", "request_scope_clear")


@pytest.fixture(scope="module")
def published(routebr_artifact):
    ledgers = load_ledgers(routebr_artifact, details=False)
    confirm = {k: t for k, t in ledgers.tasks.items() if k.startswith("confirm/")}
    files = artifact_asset_files(routebr_artifact)
    return LedgerSet(ledgers.root, "artifact", confirm, ledgers.assets), files, files.load()


def _edit(files, base: Assets, candidate: Assets, cls: EditClass, registry_changed=None) -> AssetEdit:
    template = compare_assets(files, files)
    return replace(template, candidate_assets=candidate, classes=(cls,), changed_files=(cls.value,),
                   registry_changed=registry_changed or {})


@st.composite
def rule_programs(draw, base: PolicyEngine, actions: tuple[str, ...]):
    rules = [r for r in base.rules if not r.is_default]
    kind = draw(st.sampled_from(["decision", "applies", "priority", "remove", "add", "version"]))
    if kind == "add" or not rules:
        fields = draw(st.lists(st.sampled_from(STATE_FIELDS), min_size=1, max_size=2, unique=True))
        condition = {f: draw(st.booleans()) for f in fields}
        if draw(st.booleans()):
            condition["policy_version"] = {draw(st.sampled_from(["lt", "lte", "gt", "gte"])): draw(
                st.sampled_from(["v0", "v1", "v2"]))}
        targets = draw(st.one_of(st.just(("*",)), st.lists(st.sampled_from(actions), min_size=1, max_size=3,
                                                           unique=True).map(tuple)))
        rules.append(rule("RX01", draw(st.integers(1, 1000)), targets, condition,
                          draw(st.sampled_from(list(Boundary))), "v2"))
    else:
        i = draw(st.integers(0, len(rules) - 1))
        r = rules[i]
        if kind == "remove":
            rules.pop(i)
        elif kind == "decision":
            rules[i] = replace(r, decision=draw(st.sampled_from(list(Boundary))))
        elif kind == "applies":
            rules[i] = replace(r, applies_to=tuple(draw(st.lists(st.sampled_from(actions), min_size=1, max_size=5,
                                                                 unique=True))))
        elif kind == "priority":
            rules[i] = replace(r, priority=draw(st.integers(1, 1000)))
        else:
            rules[i] = replace(r, version="v9")
    rules += [r for r in base.rules if r.is_default]
    return PolicyEngine(rules, actions)


@given(data=st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
def test_rule_edit_selection_is_sound_and_exact(published, data):
    ledgers, files, base = published
    policy = data.draw(rule_programs(base.policy, base.catalog.ids))
    candidate = Assets(base.catalog, policy, base.registry)
    edit = _edit(files, base, candidate, EditClass.RULES)
    selected = impact(edit, ledgers).selected(EditClass.RULES)
    shadow = shadow_replay(ledgers, edit)
    path_changed, rule_changed = set(), set()
    for task in shadow.tasks:
        for r in task.rows:
            key = (task.key, r.row.case_id, r.row.repeat_id)
            if r.changed:
                path_changed.add(key)
            if r.decision is not None and task.source.system.uses_controller:
                old = base.policy.evaluate(r.decision.action_id, task.cases[r.row.case_id].request.state.values) \
                    if r.decision.rule is not None else None
                new = r.decision.rule
                if (old and (old.rule_id, old.version, old.decision)) != (new and (new.rule_id, new.version,
                                                                                   new.decision)):
                    rule_changed.add(key)
    assert path_changed <= selected  # sound: nothing that changes is missed
    assert selected == rule_changed  # exact: every selected row goes through a different rule, and only those


@st.composite
def registry_edits(draw, registry: Registry):
    entities = list(registry)
    changed: dict[str, str] = {}
    out = []
    for e in entities:
        kind = draw(st.sampled_from(["keep"] * 6 + ["remove", "rename", "retype"]))
        if kind == "remove":
            changed[e.object_id] = "removed"
            continue
        if kind == "rename":
            e = replace(e, display_name=e.display_name + "（新）")
            changed[e.object_id] = "modified"
        elif kind == "retype":
            e = replace(e, object_type="TOPIC")
            changed[e.object_id] = "modified"
        out.append(e)
    return Registry(tuple(out)), changed


@given(data=st.data())
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
def test_registry_edit_selection_is_sound_and_flags_every_changed_prompt(published, data):
    ledgers, files, base = published
    registry, changed = data.draw(registry_edits(base.registry))
    edit = _edit(files, base, Assets(base.catalog, base.policy, registry), EditClass.REGISTRY, changed)
    report = impact(edit, ledgers)
    selected = report.selected(EditClass.REGISTRY)
    shadow = shadow_replay(ledgers, edit)
    flagged = {(t.key, r.row.case_id, r.row.repeat_id) for t in shadow.tasks for r in t.rows
               if ShadowFlag.CANDIDATES_CHANGED in r.flags}
    changed_rows = {(t.key, r.row.case_id, r.row.repeat_id) for t in shadow.tasks for r in t.rows if r.changed}
    assert changed_rows <= selected
    assert flagged == selected == report.live_keys()


def test_identical_assets_select_nothing(published):
    ledgers, files, base = published
    edit = compare_assets(files, files)
    report = impact(edit, ledgers)
    assert edit.classes == () and report.selected() == set() and report.live_rerun == ()


def test_a_prompt_edit_selects_the_rows_that_called_the_stage_with_their_cost(published, tmp_path):
    ledgers, files, _ = published
    import json

    doc = json.loads(files.prompts.read_text(encoding="utf-8"))
    doc["ROUTEBR"] += "\n- 新增：信息查询优先于账户分析。"
    for name in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        (tmp_path / name).write_bytes(getattr(files, {"catalog.csv": "catalog", "boundary_rules.csv": "rules",
                                                      "entity_catalog.csv": "registry"}[name]).read_bytes())
    (tmp_path / "prompts.json").write_text(json.dumps(doc, ensure_ascii=False), encoding="utf-8")
    from routebr_kit.review.assets import AssetFiles

    edit = compare_assets(files, AssetFiles.from_dir(tmp_path))
    assert edit.classes == (EditClass.PROMPTS,) and edit.prompt_stages_changed == ("ROUTEBR",)
    report = impact(edit, ledgers)
    controller_rows = sum(len(t.rows) for t in ledgers.tasks.values() if t.system.uses_controller)
    assert len(report.live_rerun) == controller_rows == 440  # B1/B2 prompts did not change
    assert report.live_cost.calls == 440 and report.live_cost.input_tokens > 0


def test_adapter_tests_named_by_impact_exist():
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    for _, node in ADAPTER_TESTS:
        path, _, name = node.partition("::")
        text = (root / path).read_text(encoding="utf-8")
        assert not name or f"def {name}(" in text, node
