"""The rule engine: first match by (priority, rule_id), type-strict predicates, start-up validation."""

from __future__ import annotations

import pytest
from core_fixtures import A1, A3, A4, A5, CATALOG

import routebr_kit as rk

E = rk.ErrorCode


def engine(*rules: rk.Rule) -> rk.PolicyEngine:
    return rk.PolicyEngine([*rules, rk.rule("R999", 999, "*", {}, "ALLOW")], CATALOG.ids)


def first(condition: dict, state: dict) -> str:
    """The winning decision of a single conditional rule (REJECT) over the ALLOW default."""
    return engine(rk.rule("R1", 1, "*", condition, "REJECT")).evaluate(A1, state).decision.value


# ---------------------------------------------------------------------------------------- predicates


@pytest.mark.parametrize("condition, state, expected", [
    # equality: type-strict, missing never matches
    ({"flag": True}, {"flag": True}, "REJECT"),
    ({"flag": True}, {"flag": 1}, "ALLOW"),
    ({"count": 1}, {"count": True}, "ALLOW"),
    ({"count": 1}, {"count": 1.0}, "REJECT"),
    ({"flag": False}, {}, "ALLOW"),
    ({"flag": None}, {"flag": None}, "REJECT"),
    ({"flag": None}, {}, "ALLOW"),
    ({"tier": "gold"}, {"tier": "gold"}, "REJECT"),
    ({"tier": "gold"}, {"tier": "GOLD"}, "ALLOW"),
    ({"tier": {"eq": "gold"}}, {"tier": "gold"}, "REJECT"),
    # negation
    ({"region": {"ne": "EU"}}, {"region": "US"}, "REJECT"),
    ({"region": {"ne": "EU"}}, {"region": "EU"}, "ALLOW"),
    ({"region": {"ne": "EU"}}, {}, "ALLOW"),
    ({"flag": {"ne": 1}}, {"flag": True}, "REJECT"),
    # ranges
    ({"score": {"gte": 0.8}}, {"score": 0.8}, "REJECT"),
    ({"score": {"gt": 0.8}}, {"score": 0.8}, "ALLOW"),
    ({"score": {"lt": 3}}, {"score": 2}, "REJECT"),
    ({"score": {"lte": 3}}, {"score": 3}, "REJECT"),
    ({"score": {"lt": 3}}, {"score": "2"}, "ALLOW"),
    ({"score": {"lt": 3}}, {"score": True}, "ALLOW"),
    ({"score": {"gte": 3, "lt": 7}}, {"score": 5}, "REJECT"),
    ({"score": {"gte": 3, "lt": 7}}, {"score": 7}, "ALLOW"),
    ({"name": {"lt": "m"}}, {"name": "alpha"}, "REJECT"),
    # sets
    ({"channel": {"in": ["app", "web"]}}, {"channel": "web"}, "REJECT"),
    ({"channel": {"in": ["app", "web"]}}, {"channel": "phone"}, "ALLOW"),
    ({"level": {"in": [1, 2]}}, {"level": True}, "ALLOW"),
    ({"channel": {"not_in": ["app"]}}, {"channel": "web"}, "REJECT"),
    ({"channel": {"not_in": ["app"]}}, {}, "ALLOW"),
    # presence
    ({"kyc": {"exists": True}}, {"kyc": None}, "REJECT"),
    ({"kyc": {"exists": True}}, {}, "ALLOW"),
    ({"kyc": {"exists": False}}, {}, "REJECT"),
    # cross-field
    ({"amount": {"lte": {"field": "limit"}}}, {"amount": 50, "limit": 100}, "REJECT"),
    ({"amount": {"lte": {"field": "limit"}}}, {"amount": 150, "limit": 100}, "ALLOW"),
    ({"amount": {"lte": {"field": "limit"}}}, {"amount": 50}, "ALLOW"),
    ({"a": {"eq": {"field": "b"}}}, {"a": "x", "b": "x"}, "REJECT"),
    ({"a": {"ne": {"field": "b"}}}, {"a": 1, "b": True}, "REJECT"),
    # AND of predicates
    ({"flag": True, "tier": "gold"}, {"flag": True, "tier": "silver"}, "ALLOW"),
    ({"flag": True, "tier": "gold"}, {"flag": True, "tier": "gold"}, "REJECT"),
])
def test_predicates(condition, state, expected):
    assert first(condition, state) == expected


@pytest.mark.parametrize("condition, code", [
    ({"x": [1, 2]}, E.INVALID_CONDITION),
    ({"x": {}}, E.INVALID_CONDITION),
    ({"x": {"between": [1, 2]}}, E.UNKNOWN_OPERATOR),
    ({"x": {"in": []}}, E.INVALID_OPERAND),
    ({"x": {"in": "ab"}}, E.INVALID_OPERAND),
    ({"x": {"in": [[1]]}}, E.INVALID_OPERAND),
    ({"x": {"exists": 1}}, E.INVALID_OPERAND),
    ({"x": {"lt": True}}, E.INVALID_OPERAND),
    ({"x": {"lt": None}}, E.INVALID_OPERAND),
    ({"x": {"lt": {"field": ""}}}, E.INVALID_OPERAND),
    ({"x": {"lt": {"field": "y", "extra": 1}}}, E.INVALID_OPERAND),
    ({"x": {"in": {"field": "y"}}}, E.INVALID_OPERAND),
    ({"": True}, E.INVALID_CONDITION),
    ([1], E.INVALID_CONDITION),
])
def test_invalid_conditions_are_rejected_at_load(condition, code):
    with pytest.raises(rk.DataError) as err:
        rk.rule("R1", 1, "*", condition, "REJECT")
    assert err.value.code is code and err.value.field == "condition_json"


def test_describe_is_readable():
    cond = rk.core.Condition.parse({"amount": {"lte": {"field": "limit"}}, "channel": {"in": ["app"]},
                               "k": {"exists": False}})
    assert cond.describe() == 'amount <= field limit AND channel in ["app"] AND k is missing'


# ---------------------------------------------------------------------------------------- ordering


def test_first_match_by_priority_then_rule_id():
    e = engine(rk.rule("R2", 5, "*", {"x": True}, "DEFER"),
               rk.rule("R1", 5, "*", {"x": True}, "HANDOFF"),
               rk.rule("R0", 9, "*", {"x": True}, "REJECT"))
    assert e.evaluate(A1, {"x": True}).rule_id == "R1"
    assert [r.rule_id for r in e.matching(A1, {"x": True})] == ["R1", "R2", "R0", "R999"]


def test_applies_to_lists():
    e = engine(rk.rule("R5", 5, [A3, A5], {"x": True}, "CLARIFY"))
    assert e.evaluate(A3, {"x": True}).rule_id == "R5"
    assert e.evaluate(A1, {"x": True}).rule_id == "R999"


def test_default_need_not_be_allow():
    e = rk.PolicyEngine([rk.rule("DENY", 1000, "*", {}, "CLARIFY")], CATALOG.ids)
    assert e.evaluate(A4, {}).decision is rk.Boundary.CLARIFY


# ---------------------------------------------------------------------------------------- start-up validation


@pytest.mark.parametrize("rules, code", [
    ([], E.NO_RULES),
    ([rk.rule("R1", 1, "*", {"x": True}, "REJECT")], E.NO_DEFAULT_RULE),
    ([rk.rule("R1", 1, [A1], {}, "ALLOW")], E.NO_DEFAULT_RULE),
    ([rk.rule("R1", 1, "*", {}, "ALLOW"), rk.rule("R1", 2, "*", {}, "ALLOW")], E.DUPLICATE_ID),
    ([rk.rule("R1", 1, ["A9_UNKNOWN"], {}, "ALLOW"), rk.rule("R9", 9, "*", {}, "ALLOW")], E.UNKNOWN_ACTION),
    ([rk.rule("R1", 1, ["*", A1], {}, "ALLOW")], E.UNKNOWN_ACTION),
    ([rk.rule("R1", 1, [], {}, "ALLOW")], E.INVALID_VALUE),
    (["not a rule"], E.WRONG_TYPE),
])
def test_invalid_programs_are_rejected_at_construction(rules, code):
    with pytest.raises(rk.DataError) as err:
        rk.PolicyEngine(rules, CATALOG.ids)
    assert err.value.code is code


@pytest.mark.parametrize("kwargs, code", [
    ({"decision": "MAYBE"}, E.UNKNOWN_ENUM),
    ({"priority": "10"}, E.INVALID_INTEGER),
])
def test_rule_builder_validates(kwargs, code):
    args = {"rule_id": "R1", "priority": 1, "applies_to": "*", "condition": {}, "decision": "ALLOW", **kwargs}
    with pytest.raises(rk.DataError) as err:
        rk.rule(**args)
    assert err.value.code is code


def test_unknown_action_at_evaluation_is_a_typed_error():
    with pytest.raises(rk.DataError) as err:
        engine().evaluate("A9_UNKNOWN", {})
    assert err.value.code is E.UNKNOWN_ACTION


def test_published_rules_load_unchanged(routebr_artifact):
    assets = rk.load_assets(routebr_artifact / "data/catalog.csv", routebr_artifact / "data/boundary_rules.csv")
    rules = {r.rule_id: r for r in assets.policy.rules}
    assert [r.rule_id for r in assets.policy.rules] == ["R001", "R010", "R020", "R030", "R040", "R050", "R060",
                                                        "R070", "R999"]
    assert rules["R040"].applies_to == (A1, "A2_INFO_LOOKUP", A3, A5)
    assert assets.policy.sha256.startswith("3613d23a") and assets.catalog.sha256.startswith("f82606a3")
