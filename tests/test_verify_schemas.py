"""``verify`` under every runtime-state schema (issue 31, deliver 2): the semantic diff against a brute-force oracle
that evaluates both programs through the real controller on an enumerated state space, over generated programs
*and* schemas (closed/open, required/optional, typed, allowed values, numeric and string fields, absent and
undeclared fields); the published closed-schema case; ``verify --assets`` reading the folder's schema; the schema
changes named field by field; the did-you-mean warning."""

from __future__ import annotations

import itertools
import os
import random
import shutil
from pathlib import Path

import pytest

from routebr_kit.cli.app import main
from routebr_kit.core.controller import Controller
from routebr_kit.core.errors import DataError
from routebr_kit.core.records import Entity, RouteRequest, RuntimeState, Terminal
from routebr_kit.core.rules import PolicyEngine, rule
from routebr_kit.core.state import StateSchema
from routebr_kit.verify import semantic_diff
from routebr_kit.verify.semdiff import Relation
from routebr_kit.verify.synthetic import CATALOG, REGISTRY
from routebr_kit.verify.traffic_coverage import Observation

ARTIFACT = Path("/work/shared/routebr_artifact")
FIELDS = ("p", "q")
EXTRA = "x"  # a field no rule tests; some schemas declare it, some recorded states carry it
OTHER = "y"  # a field no rule tests, no schema declares and no recorded state carries
NUMBERS, STRINGS = (0, 1), ("a", "b")
#: The oracle's values per field and type: every class the generated literals can tell apart (below, at, between
#: and above each literal), the absent field and a value of no scalar type.  A type no rule or schema of either
#: release uses for the field is represented by one value (every check treats its values alike).
MISSING = object()
BY_TYPE = {"boolean": (False, True), "null": (None,), "number": (-1, 0, 0.5, 1, 2), "string": ("", "a", "ab", "b", "c")}
ONE = {"boolean": (False,), "null": (None,), "number": (0.5,), "string": ("c",)}
ENTITIES = tuple(REGISTRY) + (Entity("OTHER:1", "COMMODITY", "other"),)
OBJECTS = (*(e.object_id for e in ENTITIES), "UNRESOLVED", "NONE")
CASES = int(os.environ.get("VERIFY_SCHEMA_CASES", "30"))


def _literal(rng: random.Random, kind: str) -> object:
    return rng.choice({"boolean": (True, False), "number": NUMBERS, "string": STRINGS}[kind])


def _rules(rng: random.Random, kinds: dict[str, str]) -> list[dict]:
    rules = []
    for k in range(rng.randint(0, 4)):
        condition: dict = {}
        for name in rng.sample(FIELDS, rng.randint(0, 2)):
            kind = kinds[name]
            op = rng.choice(("eq", "ne", "in", "exists") + (("lt", "gte") if kind != "boolean" else ()))
            if op == "eq" and rng.random() < 0.5:
                condition[name] = _literal(rng, kind)
            elif op == "exists":
                condition[name] = {"exists": rng.random() < 0.6}
            elif op == "in":
                condition[name] = {"in": [_literal(rng, kind) for _ in range(rng.randint(1, 2))]}
            else:
                condition[name] = {op: _literal(rng, kind)}
        applies = "*" if rng.random() < 0.5 else rng.sample(CATALOG.ids, rng.randint(1, 3))
        rules.append({"rule_id": f"R{k}", "priority": 10 * (k + 1), "applies_to": applies, "condition": condition,
                      "decision": rng.choice(("ALLOW", "ALLOW", "CLARIFY", "REJECT", "DEFER"))})
    rules.append({"rule_id": "R99", "priority": 999, "applies_to": "*", "condition": {},
                  "decision": rng.choice(("ALLOW", "CLARIFY"))})
    return rules


def _schema(rng: random.Random, kinds: dict[str, str]) -> dict | None:
    if rng.random() < 0.25:
        return None  # derived from the rules
    fields = {}
    for name in (*FIELDS, EXTRA):
        if rng.random() < 0.4:
            continue
        kind = kinds.get(name) or rng.choice(("boolean", "number", "string"))
        types = [kind] + (["null"] if rng.random() < 0.3 else []) + \
            ([rng.choice(["boolean", "number", "string"])] if rng.random() < 0.2 else [])
        spec: dict = {"type": sorted(set(types)), "required": rng.random() < 0.6}
        if rng.random() < 0.25:
            spec["allowed"] = sorted({_literal(rng, kind) for _ in range(2)}, key=repr)
        fields[name] = spec
    return {"schema": "routebr-state-schema/v1", "additional_fields": rng.random() < 0.5, "fields": fields}


def _release(rng: random.Random) -> tuple[list[dict], dict | None]:
    kinds = {name: rng.choice(("boolean", "number", "string")) for name in FIELDS}
    return _rules(rng, kinds), _schema(rng, kinds)


def _mutate(rng: random.Random, rules: list[dict], schema: dict | None) -> tuple[list[dict], dict | None]:
    """An edit of one release: a schema change (close/open it, drop, add, retype, make optional) or a rule change."""
    rules = [dict(r) for r in rules]
    schema = None if schema is None else {**schema, "fields": {k: dict(v) for k, v in schema["fields"].items()}}
    roll = rng.random()
    if roll < 0.2:
        schema = schema or {"schema": "routebr-state-schema/v1", "fields": {}}
        schema["additional_fields"] = not schema.get("additional_fields", True)
    elif roll < 0.45 and schema is not None and schema["fields"]:
        name = rng.choice(sorted(schema["fields"]))
        what = rng.random()
        if what < 0.35:
            del schema["fields"][name]
        elif what < 0.6:
            schema["fields"][name]["required"] = not schema["fields"][name].get("required", True)
        elif what < 0.8:
            schema["fields"][name]["type"] = sorted({*schema["fields"][name]["type"], "null"})
        else:
            schema["fields"][name].pop("allowed", None)
    elif roll < 0.6:
        schema = None if schema is not None else {"schema": "routebr-state-schema/v1", "additional_fields": False,
                                                  "fields": {}}
    else:
        kinds = {name: rng.choice(("boolean", "number", "string")) for name in FIELDS}
        if rng.random() < 0.5 and len(rules) > 1:
            rules.pop(rng.randrange(len(rules) - 1))
        else:
            rules = _rules(rng, kinds)
    return rules, schema


def _policy(rules: list[dict], schema: dict | None) -> PolicyEngine | None:
    try:
        parsed = None if schema is None else StateSchema.from_dict(schema)
        return PolicyEngine([rule(r["rule_id"], r["priority"], r["applies_to"], r["condition"], r["decision"])
                             for r in rules], CATALOG.ids, state_schema=parsed)
    except DataError:
        return None


def _used_types(policies, name: str) -> set[str]:
    used = set()
    for policy in policies:
        for f in policy.state_schema.fields:
            if f.name == name:
                used |= {t.value for t in f.types}
        for r in policy.rules:
            for p in r.condition.predicates:
                if p.key == name and p.op.value != "exists":
                    operands = p.operand if p.op.value in ("in", "not_in") else (p.operand,)
                    used |= {"boolean" if type(v) is bool else "null" if v is None else
                             "number" if type(v) in (int, float) else "string" for v in operands}
    return used


def _values(policies, name: str) -> tuple:
    used = _used_types(policies, name)
    if name == EXTRA:  # no rule tests it: only type and allowed membership matter
        return (MISSING, [], *(v for t in BY_TYPE for v in (BY_TYPE[t][:3] if t == "number" and t in used else
                                                                  ("a", "b", "c") if t == "string" and t in used else
                                                                  BY_TYPE[t] if t in used else ONE[t])))
    return (MISSING, [], *(v for t in BY_TYPE for v in (BY_TYPE[t] if t in used else ONE[t])))


def _dispatch_sets(policy: PolicyEngine, values: dict[str, tuple]) -> dict[str, set]:
    """Per action, the (state, object) pairs the real controller dispatches on the enumerated space."""
    controller = Controller(CATALOG, policy)
    out: dict[str, set] = {a: set() for a in CATALOG.ids}
    names = tuple(values)
    for point in itertools.product(*values.values()):
        state = {k: v for k, v in zip(names, point) if v is not MISSING}
        request = RouteRequest("oracle", "", (), RuntimeState(state), ENTITIES)
        for action in CATALOG.ids:
            for obj in OBJECTS:
                decision = controller.decide(request, {"action_id": action, "object_id": obj, "topk": [action]})
                if decision.terminal is Terminal.DISPATCH:
                    out[action].add((repr(point), obj))
    return out


def _truth(base: dict[str, set], cand: dict[str, set], action: str) -> Relation:
    gained, lost = bool(cand[action] - base[action]), bool(base[action] - cand[action])
    return (Relation.INCOMPARABLE if gained and lost else Relation.WIDENING if gained
            else Relation.NARROWING if lost else Relation.EQUIVALENT)


def _cases(count: int):
    rng = random.Random(31)
    made = 0
    while made < count:
        base_rules, base_schema = _release(rng)
        cand_rules, cand_schema = _mutate(rng, base_rules, base_schema) if rng.random() < 0.7 else _release(rng)
        base, cand = _policy(base_rules, base_schema), _policy(cand_rules, cand_schema)
        if base is None or cand is None:
            continue
        made += 1
        yield made, base, cand, rng.random() < 0.5


def test_the_relation_matches_a_brute_force_oracle_over_programs_and_schemas():
    """Every generated (base, candidate) pair: each action's relation equals the oracle's, and every witness is
    confirmed by replay.  Reports the count; 0 misclassified relations."""
    misclassified, relations, closed, kinds = [], 0, 0, set()
    for n, base, cand, recorded in _cases(CASES):
        observations = [Observation("t", "MAIN", "c", {EXTRA: 1, "p": 0}, CATALOG.ids[0], "ETF")] if recorded else []
        diff = semantic_diff(CATALOG, base, CATALOG, cand, REGISTRY, REGISTRY, observations=observations)
        values = {name: _values((base, cand), name) for name in (*FIELDS, EXTRA)} | {OTHER: (MISSING, 1)}
        b, c = _dispatch_sets(base, values), _dispatch_sets(cand, values)
        closed += not (base.state_schema.additional_fields and cand.state_schema.additional_fields)
        for a in diff.actions:
            relations += 1
            kinds.add(a.relation)
            truth = _truth(b, c, a.action_id)
            if a.relation is not truth:
                misclassified.append((n, a.action_id, a.relation.value, truth.value))
            assert all(w.confirmed for w in a.witnesses)
    assert not misclassified, f"{len(misclassified)} of {relations} relations misclassified: {misclassified[:5]}"
    assert closed >= CASES // 4 and kinds == set(Relation)  # the generator reaches closed schemas and every relation


def test_a_closed_schema_on_the_published_program_is_a_change_with_a_confirmed_witness(tmp_path, capsys):
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "state_schema.json").write_text('{"schema":"routebr-state-schema/v1","additional_fields":false,'
                                            '"fields":{}}', encoding="utf-8")
    out = tmp_path / "d.json"
    main(["verify", "--base", str(ARTIFACT / "data"), "--candidate", str(cand), "--artifact", str(ARTIFACT),
          "--json", str(out)])
    import json

    doc = json.loads(out.read_text())
    assert all(a["relation"] in ("narrowing", "incomparable") for a in doc["actions"])
    assert doc["regions_changed"] > 0 and not doc["outcome_equivalent"]
    assert all(w["confirmed"] for a in doc["actions"] for w in a["witnesses"])
    # a witness carrying an undeclared field fails closed in the candidate only
    assert any(w["candidate"]["reason"] == "FAIL_CLOSED_INVALID_STATE" and w["base"]["terminal"] == "DISPATCH"
               for a in doc["actions"] for w in a["witnesses"])
    assert doc["recorded"]["states_in_changed_regions"] > 0  # every published state carries policy_version
    text = capsys.readouterr().out
    assert "`policy_version`" in text and "changed states seen by the recorded traffic:" in text


def test_verify_assets_reads_the_folders_state_schema(tmp_path, capsys):
    folder = tmp_path / "kyc"
    folder.mkdir()
    for name in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        shutil.copy(ARTIFACT / "data" / name, folder / name)
    (folder / "state_schema.json").write_text('{"schema":"routebr-state-schema/v1","fields":{"kyc_tier":'
                                              '{"type":"number"}}}', encoding="utf-8")
    out = tmp_path / "v.json"
    assert main(["verify", "--assets", str(folder), "--no-redundancy", "--json", str(out)]) == 0
    import json

    doc = json.loads(out.read_text())
    assert "kyc_tier" in doc["fields"] and len(doc["fields"]) == 9
    # every dispatching region's witness carries kyc_tier and dispatches in the folder's real controller
    from routebr_kit.review.assets import AssetFiles

    assets = AssetFiles.from_dir(folder).load()
    controller = Controller(assets.catalog, assets.policy, registry_sha256=assets.registry.sha256)
    for action in doc["actions"]:
        for region in action["regions"]:
            if region["rule"] is not None:
                assert "kyc_tier" in region["witness_state"]
                assert not assets.policy.state_schema.check(region["witness_state"])
    del controller


def test_schema_changes_are_named_field_by_field_and_a_typo_is_warned(tmp_path):
    rules = (ARTIFACT / "data" / "boundary_rules.csv").read_text(encoding="utf-8").splitlines()
    without = [line for line in rules if not line.startswith("R050,")]
    assert len(without) == len(rules) - 1
    cand = tmp_path / "cand"
    cand.mkdir()
    (cand / "boundary_rules.csv").write_text("\n".join(without) + "\n", encoding="utf-8")
    from routebr_kit.review.assets import AssetFiles

    base = AssetFiles.from_dir(ARTIFACT / "data")
    a, b = base.load(), base.overlay(cand).load()
    diff = semantic_diff(a.catalog, a.policy, b.catalog, b.policy, a.registry, b.registry, witnesses=False)
    assert any(n.startswith("`identity_verified` leaves the schema") and
               "states without it, which failed closed, now reach the rules" in n for n in diff.notes)
    typo = [line.replace("action_permission", "action_permision") for line in rules]
    (cand / "boundary_rules.csv").write_text("\n".join(typo) + "\n", encoding="utf-8")
    b = base.overlay(cand).load()
    diff = semantic_diff(a.catalog, a.policy, b.catalog, b.policy, a.registry, b.registry, witnesses=False)
    assert any("`action_permision`" in w and "did you mean `action_permission`" in w for w in diff.warnings)
    assert any("`action_permission` leaves the schema" in n for n in diff.notes)


@pytest.mark.parametrize("closed", [False, True])
def test_open_schemas_add_no_variables_and_closed_ones_model_undeclared_fields(closed):
    policy = _policy([{"rule_id": "R1", "priority": 1, "applies_to": "*", "condition": {"p": True},
                       "decision": "ALLOW"}, {"rule_id": "R99", "priority": 9, "applies_to": "*", "condition": {},
                                              "decision": "CLARIFY"}], None)
    cand = _policy([{"rule_id": "R1", "priority": 1, "applies_to": "*", "condition": {"p": True},
                     "decision": "ALLOW"}, {"rule_id": "R99", "priority": 9, "applies_to": "*", "condition": {},
                                            "decision": "CLARIFY"}],
                   {"schema": "routebr-state-schema/v1", "additional_fields": not closed, "fields": {}})
    diff = semantic_diff(CATALOG, policy, CATALOG, cand, REGISTRY, REGISTRY)
    assert diff.fields == (("p", "undeclared_field") if closed else ("p",))
    assert all(a.relation is (Relation.NARROWING if closed else Relation.EQUIVALENT) for a in diff.actions)
