"""Change-impact selection: registry edits against shadow replay, prompt and adapter edits, and the runtime-state
schema as a release asset (the base is the schema a run recorded; a candidate schema is an edit class of its own);
shadow replays keyed by (case_id, repeat_id).  Generated rule/schema/catalog edits: tests/test_impact_sound.py."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from routebr_kit.core.records import Registry
from routebr_kit.review.assets import AssetEdit, EditClass, compare_assets
from routebr_kit.review.change_impact import ADAPTER_TESTS, artifact_asset_files, impact
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


# Rule, state-schema, catalog and option edits: tests/test_impact_sound.py (soundness and exactness, 300 each).


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
    assert flagged == selected == {(r.task, r.case_id, r.repeat_id) for r in report.live_rerun}


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


# --------------------------------------------------------------------------------- the state schema as an asset


@pytest.fixture(scope="module")
def schema_run(tmp_path_factory):
    """A kit run made with ``run --state-schema`` (a schema admitting only policy v2: every recorded state, at v1,
    fails it, so the run fails closed where the derived schema would have let the rules decide)."""
    import json

    from routebr_kit.backends.registry import make_backend
    from routebr_kit.dataset import generate_benchmark, write_benchmark
    from routebr_kit.runs.runner import run_cases
    from routebr_kit.store.assets import assets_beside
    from routebr_kit.store.cases import Split, load_cases

    root = tmp_path_factory.mktemp("schema_run")
    bench = root / "bench"
    write_benchmark(generate_benchmark(0, "en"), bench)
    cases_path = bench / "routebr_confirm_320.csv"
    schema = root / "strict_schema.json"
    schema.write_text(json.dumps({"schema": "routebr-state-schema/v1", "additional_fields": True,
                                  "fields": {"policy_version": {"type": "string", "allowed": ["v2"]}}}),
                      encoding="utf-8")
    assets = assets_beside(cases_path, schema)
    cases = [c for c in load_cases(cases_path) if c.split is Split.FLIP][:20]
    backend = make_backend("sim:deepseek_v4_primary", cases=cases, catalog=assets.catalog, seed=0)
    run_cases(cases, backend, system="routebr", assets=assets, out_dir=root / "run", progress=False,
              cases_path=cases_path)
    return root, bench, cases_path, schema


def test_shadowing_a_run_made_with_a_state_schema_under_the_unchanged_release_changes_nothing(schema_run, tmp_path,
                                                                                          capsys):
    import json

    from routebr_kit.cli.app import main

    root, bench, cases_path, schema = schema_run
    base = ["--ledger", str(root / "run"), "--cases", str(cases_path)]
    # the run's recorded schema is the base: given, the unchanged release changes no decision
    assert main(["shadow", *base, "--base-state-schema", str(schema), "--out", str(tmp_path / "s")]) == 0
    manifest = json.loads((tmp_path / "s" / "shadow_manifest.json").read_text())
    assert manifest["rows"] == 20 and manifest["changed_decisions"] == 0
    # not given: a typed error naming the manifest field, never a silent replay under the derived schema
    capsys.readouterr()
    assert main(["shadow", *base, "--out", str(tmp_path / "s2")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "[INCONSISTENT_ASSETS]" in err and "hashes.state_schema" in err
    assert main(["impact", "--base-assets", str(bench), "--candidate-assets", str(bench), *base]) == 2
    # a base asset directory holding the schema as state_schema.json is the same base
    release = tmp_path / "release"
    release.mkdir()
    for name in ("catalog.csv", "boundary_rules.csv", "registry.csv"):
        (release / name).write_bytes((bench / name).read_bytes())
    (release / "state_schema.json").write_bytes(schema.read_bytes())
    assert main(["shadow", *base, "--base-assets", str(release), "--out", str(tmp_path / "s3")]) == 0
    assert json.loads((tmp_path / "s3" / "shadow_manifest.json").read_text())["changed_decisions"] == 0
    assert main(["impact", "--base-assets", str(release), "--candidate-assets", str(release), *base,
                 "--json", str(tmp_path / "i.json")]) == 0
    assert json.loads((tmp_path / "i.json").read_text())["controller"] == []


def test_a_candidate_state_schema_is_its_own_edit_class_selected_by_impact_and_named_by_diff(schema_run, tmp_path,
                                                                                             capsys):
    import json

    from routebr_kit.cli.app import main

    root, bench, cases_path, schema = schema_run
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "state_schema.json").write_text(json.dumps({"schema": "routebr-state-schema/v1",
                                                             "additional_fields": False, "fields": {}}),
                                                 encoding="utf-8")  # every recorded state carries policy_version
    base = ["--ledger", str(root / "run"), "--cases", str(cases_path), "--base-state-schema", str(schema)]
    assert main(["impact", "--base-assets", str(bench), "--base-state-schema", str(schema), "--candidate-assets",
                 str(candidate), "--ledger", str(root / "run"), "--cases", str(cases_path),
                 "--json", str(tmp_path / "i.json")]) == 0
    selection = json.loads((tmp_path / "i.json").read_text())
    assert selection["edit"]["classes"] == ["state_schema"]
    selected = {r["case_id"] for r in selection["exact"]["state_schema"]}
    assert main(["shadow", *base, "--state-schema", str(candidate / "state_schema.json"),
                 "--out", str(tmp_path / "s")]) == 0
    assert main(["diff", str(root / "run"), str(tmp_path / "s"), "--cases", str(cases_path),
                 "--json", str(tmp_path / "d.json")]) == 2  # the run's schema is not beside its cases: named
    # the shadow's candidate schema is a file its manifest only hashes: the default gate's exact widening check
    # cannot load that release, so it fails closed and says why (the paired diff is still written)
    assert main(["diff", str(root / "run"), str(tmp_path / "s"), "--cases", str(cases_path), "--state-schema",
                 str(schema), "--json", str(tmp_path / "d.json")]) == 1
    assert "widening <= 0 (not measured: the releases are not known)" in capsys.readouterr().out
    changed = json.loads((tmp_path / "d.json").read_text())["changed"]
    assert changed and {c["case_id"] for c in changed} <= selected
    assert {c["first_changed_stage"] for c in changed} == {"state_schema"}
    # each state failed the run's schema (policy_version not v2) and fails the candidate's differently (an
    # undeclared field): the verdict changes on every row, so every row is selected
    assert len(selected) == 20


def test_shadow_keys_replies_by_case_and_repeat(schema_run, tmp_path):
    """Two repeats of each case in one ledger (their replies differ): the unchanged release changes nothing."""
    import json
    import shutil

    from routebr_kit.backends.registry import make_backend
    from routebr_kit.cli.app import main
    from routebr_kit.runs.runner import run_cases
    from routebr_kit.store.assets import assets_beside
    from routebr_kit.store.cases import Split, load_cases
    from routebr_kit.store.ledger import RunLedger, write_predictions

    _, bench, cases_path, _ = schema_run
    assets = assets_beside(cases_path)
    cases = [c for c in load_cases(cases_path) if c.split is Split.MAIN][:40]
    rows = []
    for repeat, seed in (("0", 0), ("1", 7)):
        backend = make_backend("sim:deepseek_v4_flash_efficiency", cases=cases, catalog=assets.catalog, seed=seed)
        run_cases(cases, backend, system="routebr", assets=assets, out_dir=tmp_path / f"r{repeat}", progress=False,
                  cases_path=cases_path, repeat_id=repeat)
        rows += RunLedger(tmp_path / f"r{repeat}").committed()
    paths = {r.repeat_id: {x.case_id: x.pred_final_path for x in rows if x.repeat_id == r.repeat_id} for r in rows}
    assert paths["0"] != paths["1"]  # the repeats answered differently
    both = tmp_path / "both"
    shutil.copytree(tmp_path / "r0", both)  # repeat 0's manifest and receipts; repeat 1 from its rows
    write_predictions(both / "predictions.csv", rows)
    assert main(["shadow", "--ledger", str(both), "--cases", str(cases_path), "--receipts",
                 "--out", str(tmp_path / "s")]) == 0
    manifest = json.loads((tmp_path / "s" / "shadow_manifest.json").read_text())
    assert manifest["rows"] == 80 and manifest["changed_decisions"] == 0
    assert len(list((tmp_path / "s" / "raw").glob("*.json"))) == 80  # one receipt per (case, repeat)
    def view(r):
        return r.case_id, r.repeat_id, r.pred_final_path, r.strict_path, r.error_code

    assert sorted(map(view, RunLedger(tmp_path / "s").committed())) == sorted(map(view, rows))
    # the shadow output is itself a ledger: shadowed again from its own receipts, still nothing changes
    assert main(["shadow", "--ledger", str(tmp_path / "s"), "--base-assets", str(bench),
                 "--out", str(tmp_path / "s2")]) == 0
    assert json.loads((tmp_path / "s2" / "shadow_manifest.json").read_text())["changed_decisions"] == 0
