"""Change-impact selection is sound — and, for rule, state-schema and option edits, exact — against shadow replay.

The edits are generated to include what the old selection (the winning rule alone) did not anticipate: rules on
fields no recorded state carries, fields removed from every rule, literals retyped (bool ↔ int ↔ string ↔ float),
every operator of the rule language (plain equality, eq, ne, lt, lte, gt, gte, in, not_in, exists, cross-field),
``applies_to`` changes, state-schema files (types, ``required``, ``allowed``, ``additional_fields``), catalog edits
(object types, descriptions, removed actions) and registry edits, with controller option overrides on top.

Oracles, computed independently of :mod:`routebr_kit.review.change_impact`:

* **sound** — every row whose shadow-replayed decision changes (final path, boundary or dispatched object) is
  selected;
* **exact** — the rows selected for a rule / state-schema / option edit are exactly the rows whose decision record
  (the fields :meth:`Decision.as_dict` is derived from, without the asset hashes; rules compared type-strictly)
  differs between the base replay (:func:`replay_rows`, once) and the shadow replay.

Run on the published CONFIRM ledgers (1,280 rows, 440 through the controller); skipped without the artifact.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from routebr_kit.core.controller import ControllerOptions
from routebr_kit.core.errors import DataError
from routebr_kit.core.records import Boundary, Catalog, Registry, Terminal
from routebr_kit.core.rules import Operator, PolicyEngine, rule
from routebr_kit.core.state import StateSchema
from routebr_kit.review.assets import AssetEdit, EditClass, compare_assets
from routebr_kit.review.change_impact import artifact_asset_files, impact
from routebr_kit.review.ledgers import LedgerSet, load_ledgers
from routebr_kit.review.shadow import rebase_cases, shadow_replay
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store.assets import Assets

BOOL_FIELDS = ("identity_verified", "entity_resolved", "action_permission", "service_available", "context_fresh",
               "safety_escalation_required", "request_supported", "request_scope_clear")
STATE_FIELDS = (*BOOL_FIELDS, "policy_version")  # what every recorded state carries (policy_version = "v1")
NEW_FIELDS = ("risk_score_high", "kyc_level", "channel", "région")
EXAMPLES = 300
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.filter_too_much])

LITERALS = st.one_of(st.booleans(), st.integers(-2, 2), st.sampled_from([0.5, 1.0, -1.5]),
                     st.sampled_from(["v0", "v1", "v2", "true", "false", "0", ""]))


def _retyped(value):
    """A literal of another JSON type (bool ↔ int ↔ string ↔ float), what the old selection never generated."""
    if type(value) is bool:
        return st.sampled_from([int(value), str(value).lower(), float(value)])
    if type(value) is int or type(value) is float:
        return st.sampled_from([bool(value), str(value)])
    if type(value) is str:
        return st.sampled_from([value == "v1", 1, 0.0])
    return st.just(value)


@st.composite
def predicate(draw, fields):
    """One field with a spec in any form of the condition language."""
    name = draw(st.one_of(st.sampled_from(fields), st.sampled_from(NEW_FIELDS)))
    form = draw(st.sampled_from(["plain", *(op.value for op in Operator), "cross"]))
    same = st.booleans() if name in BOOL_FIELDS else (st.sampled_from(["v0", "v1", "v2"])
                                                       if name == "policy_version" else LITERALS)
    literal = draw(st.one_of(same, LITERALS) if draw(st.booleans()) else same)
    if form == "plain":
        return name, literal
    if form == "exists":
        return name, {"exists": draw(st.booleans())}
    if form in ("in", "not_in"):
        return name, {form: draw(st.lists(same, min_size=1, max_size=3))}
    if form == "cross":
        other = draw(st.sampled_from([f for f in (*fields, *NEW_FIELDS) if f != name]))
        return name, {draw(st.sampled_from(["eq", "ne", "lt", "lte", "gt", "gte"])): {"field": other}}
    if form in ("lt", "lte", "gt", "gte"):
        literal = draw(st.one_of(st.integers(-2, 2), st.sampled_from(["v0", "v1", "v2"])))
    return name, {form: literal}


def _condition_fields(r) -> set[str]:
    """The state fields a rule's condition reads (its predicates' keys and cross-field operands)."""
    predicates = r.condition.predicates
    return {p.key for p in predicates} | {p.other_field for p in predicates if p.other_field}


@st.composite
def rule_programs(draw, base: PolicyEngine, actions: tuple[str, ...]):
    """1-3 edits of the published program; ``None`` when the result does not load (the loader's own verdict)."""
    rules = [r for r in base.rules if not r.is_default]
    defaults = [r for r in base.rules if r.is_default]
    targets = st.one_of(st.just(("*",)), st.lists(st.sampled_from(actions), min_size=1, max_size=3,
                                                 unique=True).map(tuple))
    for step in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["add", "add", "retype", "remove_field", "remove", "decision", "applies",
                                     "priority", "version", "condition"]))
        if kind == "add" or not rules:
            condition = dict(draw(st.lists(predicate(STATE_FIELDS), min_size=1, max_size=2,
                                           unique_by=lambda p: p[0])))
            rules.append(rule(f"RX{step}", draw(st.integers(1, 1000)), draw(targets), condition,
                              draw(st.sampled_from(list(Boundary))), "v2"))
            continue
        i = draw(st.integers(0, len(rules) - 1))
        r = rules[i]
        source = dict(r.condition.source)
        if kind == "retype" and source:
            key = draw(st.sampled_from(sorted(source)))
            value = source[key]
            if not isinstance(value, dict):
                source[key] = draw(_retyped(value))
            rules[i] = rule(r.rule_id, r.priority, r.applies_to, source, r.decision, r.version)
        elif kind == "remove_field":
            name = draw(st.sampled_from(sorted(set().union(*map(_condition_fields, rules)) or {"x"})))
            rules = [rule(x.rule_id, x.priority, x.applies_to,
                          {k: v for k, v in x.condition.source.items() if k != name}, x.decision, x.version)
                     for x in rules]
        elif kind == "remove":
            rules.pop(i)
        elif kind == "decision":
            rules[i] = replace(r, decision=draw(st.sampled_from(list(Boundary))))
        elif kind == "applies":
            rules[i] = replace(r, applies_to=draw(targets))
        elif kind == "priority":
            rules[i] = replace(r, priority=draw(st.integers(1, 1000)))
        elif kind == "version":
            rules[i] = replace(r, version="v9")
        else:
            key, spec = draw(predicate(STATE_FIELDS))
            rules[i] = rule(r.rule_id, r.priority, r.applies_to, {**source, key: spec}, r.decision, r.version)
    try:
        return PolicyEngine([*rules, *defaults], actions)
    except DataError:
        return None


@st.composite
def schema_documents(draw):
    """A state-schema file over recorded and new fields (the derived entries of the rules fill in the rest)."""
    fields = {}
    for name in draw(st.lists(st.sampled_from((*STATE_FIELDS, *NEW_FIELDS)), min_size=1, max_size=4, unique=True)):
        types = draw(st.lists(st.sampled_from(["boolean", "number", "string", "null"]), min_size=1, max_size=2,
                              unique=True))
        spec = {"type": types if len(types) > 1 else types[0]}
        if draw(st.booleans()):
            spec["required"] = draw(st.booleans())
        if draw(st.integers(0, 3)) == 0:
            pool = {"boolean": [True, False], "number": [0, 1], "string": ["v1", "v2"], "null": [None]}
            spec["allowed"] = draw(st.lists(st.sampled_from([v for t in types for v in pool[t]]), min_size=1,
                                            max_size=2, unique_by=lambda v: (type(v), v)))
        fields[name] = spec
    return {"schema": "routebr-state-schema/v1", "additional_fields": draw(st.booleans()), "fields": fields}


OPTIONS = st.one_of(st.just({}), st.fixed_dictionaries({}, optional={
    "fallback": st.sampled_from([Terminal.CLARIFY, Terminal.DEFER, Terminal.HANDOFF, Terminal.REJECT]),
    "enforce_state": st.booleans(), "enable_grounding": st.booleans(), "repair": st.booleans()}))


# --------------------------------------------------------------------------------------------- fixtures and oracles


@pytest.fixture(scope="module")
def published(routebr_artifact):
    ledgers = load_ledgers(routebr_artifact, details=False)
    confirm = {k: t for k, t in ledgers.tasks.items() if k.startswith("confirm/")}
    files = artifact_asset_files(routebr_artifact)
    base = files.load()
    records = {}
    for task in confirm.values():  # the base decisions, by the public replay function (not impact's)
        if task.system.uses_controller:
            decisions = replay_rows(base.controller(ControllerOptions.for_system(task.system)), task.rows,
                                    task.cases, receipts=task.receipts).decisions
            for row, d in zip(task.rows, decisions):
                records[(task.key, row.case_id, row.repeat_id)] = _record(d)
    template = compare_assets(files, files)
    return LedgerSet(ledgers.root, "artifact", confirm, ledgers.assets), template, base, records, {}


def _record(d) -> tuple:
    """A decision's record without the asset hashes: every field :meth:`Decision.as_dict` (and so the trace) is
    derived from — of the rule, what the record and its trace show (ID, decision, priority, version, condition),
    the condition compared type-strictly (``{"f": false}`` and ``{"f": 0}`` differ, ``==`` on the parsed
    conditions says they do not).  The outputs are compared as given: both sides read the same recorded replies."""
    rule = None if d.rule is None else (d.rule.rule_id, d.rule.decision, d.rule.priority, d.rule.version,
                                        json.dumps(dict(d.rule.condition.source), sort_keys=True))
    return (d.request_id, d.terminal, d.action_id, d.object_id, d.reason, d.proposal, rule, d.object_resolution,
            d.first_output, d.log, d.state_errors, d.options.enforce_state, d.options.enable_grounding)


def _edit(template: AssetEdit, base: Assets, candidate: Assets, classes: tuple[EditClass, ...]) -> AssetEdit:
    """The identical edit with candidate assets swapped in (as if loaded from the candidate's files)."""
    registry = {}
    if candidate.registry is not base.registry:
        from routebr_kit.review.assets import registry_changes

        registry = registry_changes(base.registry, candidate.registry)
    return replace(template, candidate_assets=candidate, classes=classes,
                   changed_files=tuple(c.value for c in classes), registry_changed=registry,
                   catalog_prompt_changed=base.catalog.prompt_view() != candidate.catalog.prompt_view())


def _check(published, edit: AssetEdit, options, *, exact: bool):
    ledgers, _, base, records, cache = published
    report = impact(edit, ledgers, options, cache=cache)
    shadow = shadow_replay(ledgers, edit, options)
    changed, record_changed = set(), set()
    for task in shadow.tasks:
        for r in task.rows:
            key = (task.key, r.row.case_id, r.row.repeat_id)
            if r.changed:
                changed.add(key)
            if r.decision is not None and _record(r.decision) != records[key]:
                record_changed.add(key)
    selected = report.selected()
    missed = changed - selected
    assert not missed, f"{len(missed)} changed rows not selected, e.g. {sorted(missed)[:3]}"  # sound
    assert record_changed <= report.controller_keys()
    if exact:
        spurious = selected - record_changed
        assert not spurious, f"{len(spurious)} selected rows do not change, e.g. {sorted(spurious)[:3]}"
    return report, changed


# --------------------------------------------------------------------------------------------- properties


@given(data=st.data())
@SETTINGS
def test_rule_edits_new_removed_and_retyped_fields_every_operator(published, data):
    _, template, base, _, _ = published
    policy = data.draw(rule_programs(base.policy, base.catalog.ids))
    assume(policy is not None)
    edit = _edit(template, base, Assets(base.catalog, policy, base.registry), (EditClass.RULES,))
    _check(published, edit, data.draw(OPTIONS), exact=True)


@given(data=st.data())
@SETTINGS
def test_state_schema_files(published, data):
    _, template, base, _, _ = published
    document = data.draw(schema_documents())
    try:
        policy = PolicyEngine(base.policy.rules, base.catalog.ids, state_schema=StateSchema.from_dict(document))
    except DataError:
        assume(False)
    edit = _edit(template, base, Assets(base.catalog, policy, base.registry), (EditClass.STATE_SCHEMA,))
    _check(published, edit, data.draw(OPTIONS), exact=True)


@st.composite
def catalogs(draw, catalog: Catalog):
    actions = list(catalog.actions)
    for _ in range(draw(st.integers(1, 2))):
        i = draw(st.integers(0, len(actions) - 1))
        kind = draw(st.sampled_from(["types", "description", "remove", "boundaries"]))
        a = actions[i]
        if kind == "types":
            actions[i] = replace(a, required_object_types=tuple(draw(st.lists(
                st.sampled_from(["ETF", "TOPIC", "NONE", "ACCOUNT"]), min_size=1, max_size=2, unique=True))))
        elif kind == "description":
            actions[i] = replace(a, description=a.description + " (revised)")
        elif kind == "boundaries":
            actions[i] = replace(a, allowed_boundaries=tuple(draw(st.lists(st.sampled_from(list(Boundary)),
                                                                           min_size=1, unique=True))))
        elif len(actions) > 1:
            actions.pop(i)
    return Catalog(tuple(actions))


@given(data=st.data())
@SETTINGS
def test_catalog_edits(published, data):
    _, template, base, _, _ = published
    catalog = data.draw(catalogs(base.catalog))
    kept = [replace(r, applies_to=tuple(a for a in r.applies_to if a == "*" or a in catalog.ids))
            for r in base.policy.rules]
    policy = PolicyEngine([r for r in kept if r.applies_to], catalog.ids)
    edit = _edit(template, base, Assets(catalog, policy, base.registry), (EditClass.CATALOG, EditClass.RULES))
    _check(published, edit, data.draw(OPTIONS), exact=False)


@st.composite
def registries(draw, registry: Registry):
    out = []
    for e in registry:
        kind = draw(st.sampled_from(["keep"] * 6 + ["remove", "rename", "retype"]))
        if kind == "remove":
            continue
        if kind == "rename":
            e = replace(e, display_name=e.display_name + "（新）")
        elif kind == "retype":
            e = replace(e, object_type="TOPIC")
        out.append(e)
    return Registry(tuple(out))


@given(data=st.data())
@SETTINGS
def test_registry_edits(published, data):
    ledgers, template, base, _, _ = published
    registry = data.draw(registries(base.registry))
    edit = _edit(template, base, Assets(base.catalog, base.policy, registry), (EditClass.REGISTRY,))
    report, changed = _check(published, edit, data.draw(OPTIONS), exact=False)
    by_cases = {id(t.cases): t.cases for t in ledgers.tasks.values()}
    rebased = {i: rebase_cases(cases, edit)[1] for i, cases in by_cases.items()}
    lists = {k: rebased[id(t.cases)] for k, t in ledgers.tasks.items()}
    on_lists = {(t, c, r) for (t, c, r) in report.selected(EditClass.REGISTRY) if c in lists[t]}
    assert {k for k in changed if k[1] in lists[k[0]]} <= on_lists


# --------------------------------------------------------------------------------------------- the quoted edits


def _rules_with(template, tmp_path, text_edit) -> AssetEdit:
    files = template.base
    source = files.rules.read_text(encoding="utf-8")
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    (candidate / "boundary_rules.csv").write_text(text_edit(source), encoding="utf-8", newline="")
    return compare_assets(files, files.overlay(candidate))


def test_a_rule_on_a_field_no_state_carries_selects_every_row_it_fails(published, tmp_path):
    ledgers, template, _, _, _ = published
    edit = _rules_with(template, tmp_path, lambda s: s.replace(
        "R999,", 'RX01,5,*,"{""risk_score_high"":true}",REJECT,"new",v2\r\nR999,', 1))
    report, changed = _check(published, edit, {}, exact=True)
    assert edit.classes == (EditClass.RULES,) and edit.state_schema_changed
    assert changed and report.stages() == {"state_schema": len(report.controller)}
    enforced = sum(len(t.rows) for t in ledgers.tasks.values() if t.system.uses_controller
                   and ControllerOptions.for_system(t.system).enforce_state)
    assert len(report.controller) == enforced  # every state now fails its schema


def test_a_retyped_literal_is_a_rule_change_and_selects_every_row_it_fails(published, tmp_path):
    _, template, _, _, _ = published
    edit = _rules_with(template, tmp_path, lambda s: s.replace('{""action_permission"":false}',
                                                            '{""action_permission"":0}'))
    assert edit.rules_changed == ("R060",)  # false and 0 are different literals
    report, changed = _check(published, edit, {}, exact=True)
    assert changed and report.stages()["state_schema"] > 0


def test_a_candidate_state_schema_file_is_an_edit_class_of_its_own(published, tmp_path):
    from routebr_kit.review.diff import ChangeStage, diff_ledgers
    from routebr_kit.review.shadow import shadow_ledgers

    ledgers, template, base, _, _ = published
    files = template.base
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    fields = {f: {"type": "boolean"} for f in BOOL_FIELDS}
    (candidate / "state_schema.json").write_text(json.dumps(
        {"schema": "routebr-state-schema/v1", "additional_fields": False, "fields": fields}), encoding="utf-8")
    edit = compare_assets(files, files.overlay(candidate))
    assert edit.classes == (EditClass.STATE_SCHEMA,) and edit.changed_files == ("state_schema",)
    report, changed = _check(published, edit, {}, exact=True)
    summary = {r["edit"]: r for r in report.summary()}
    assert summary["state_schema"]["exact affected rows"] == len(report.controller) > 0
    diff = diff_ledgers(ledgers, shadow_ledgers(shadow_replay(ledgers, edit)))
    assert diff.changed and {c.first_changed_stage for c in diff.changed} == {ChangeStage.STATE_SCHEMA}
    assert {(c.task, c.case_id, c.repeat_id) for c in diff.changed} <= report.selected()


# --------------------------------------------------------------------------------------------- schema first


def test_replay_reads_the_state_schema_before_a_rejected_output(routebr_artifact):
    """An output on a state that fails its schema ends in FAIL_CLOSED_INVALID_STATE with no proposal read (the
    schema is checked first): a rejected output does not keep the decision it has on a valid state, and an accepted
    one's ``topk`` is not recorded."""
    from routebr_kit.core.records import RouteRequest, RuntimeState

    controller = artifact_asset_files(routebr_artifact).load().controller()
    valid = {f: True for f in BOOL_FIELDS} | {"policy_version": "v1"}
    states = [valid, {**valid, "context_fresh": "yes"}, {k: v for k, v in valid.items() if k != "entity_resolved"}]
    requests = [RouteRequest(f"r{i}", "u", (), RuntimeState(s), ()) for i, s in enumerate(states)]
    outputs = ["not json", {"action_id": "A4_SUPPORT_RESPONSE", "object_id": "NONE", "topk": ["A4_SUPPORT_RESPONSE"]}]
    decisions = [controller.decide(r, o) for o in outputs for r in requests]
    reasons = [d.reason.value for d in decisions]
    assert "FAIL_CLOSED_INVALID_STATE" not in (reasons[0], reasons[3])
    assert reasons[1] == reasons[2] == reasons[4] == reasons[5] == "FAIL_CLOSED_INVALID_STATE"
    assert [d.topk for d in decisions[3:]] == [("A4_SUPPORT_RESPONSE",), (), ()]  # no output read
    assert all(d.first_output is None for d in (decisions[1], decisions[2], decisions[4], decisions[5]))
