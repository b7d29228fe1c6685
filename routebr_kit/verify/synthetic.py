"""Seeded synthetic releases for the verifier's benchmark and tests: a catalog shaped like the published one and a
rule program over boolean, numeric (thresholds) and string (constants) fields.  Not a model of real policies — a
load of the size the issue names (24 boolean, 4 numeric, 3 string fields, 200 rules)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..core.records import Boundary, Catalog, CatalogAction, Entity, Registry
from ..core.rules import PolicyEngine, Rule, rule

#: Five actions with the published object contracts (two object-free types are not needed: one is enough).
CATALOG = Catalog((
    CatalogAction("A1_ADVISORY", "Advisory response", "", ("ETF",)),
    CatalogAction("A2_INFO_LOOKUP", "Information lookup", "", ("ETF", "TOPIC")),
    CatalogAction("A3_ACCOUNT_ANALYSIS", "Account analysis", "", ("ACCOUNT", "ETF")),
    CatalogAction("A4_SUPPORT_RESPONSE", "Support response", "", ("NONE", "SERVICE")),
    CatalogAction("A5_PROTECTED_ACTION", "Protected action", "", ("ETF", "ACCOUNT")),
))
REGISTRY = Registry((Entity("ETF:1", "ETF", "Fund one"), Entity("ACC:1", "ACCOUNT", "Account one"),
                     Entity("TOPIC:1", "TOPIC", "Topic one"), Entity("SVC:1", "SERVICE", "Service one")))


@dataclass(frozen=True)
class SyntheticProgram:
    rules: tuple[Rule, ...]
    catalog: Catalog = CATALOG
    registry: Registry = REGISTRY

    def policy(self) -> PolicyEngine:
        return PolicyEngine(self.rules, self.catalog.ids)


def _synthetic_rules(seed: int, *, booleans: int = 24, numbers: int = 4, strings: int = 3, rules: int = 200,
                    cross: bool = False) -> tuple[Rule, ...]:
    """``rules`` seeded rules (plus an ``ALLOW`` default) of one to three predicates each."""
    rng = random.Random(seed)
    thresholds = {f"n{i}": sorted(rng.sample(range(0, 100), 4)) for i in range(numbers)}
    constants = {f"s{i}": [f"c{i}{j}" for j in range(4)] for i in range(strings)}
    bool_fields = [f"b{i}" for i in range(booleans)]
    decisions = [Boundary.ALLOW, Boundary.ALLOW, Boundary.CLARIFY, Boundary.DEFER, Boundary.HANDOFF, Boundary.REJECT]
    out = []
    for k in range(rules):
        condition: dict = {}
        for _ in range(rng.randint(1, 3)):
            kind = rng.random()
            if kind < 0.6 or not (thresholds or constants):
                condition[rng.choice(bool_fields)] = rng.random() < 0.5
            elif kind < 0.85 and thresholds:
                name = rng.choice(sorted(thresholds))
                if cross and rng.random() < 0.2 and numbers > 1:
                    other = rng.choice([n for n in thresholds if n != name])
                    condition[name] = {rng.choice(["lt", "lte", "gt", "gte", "eq", "ne"]): {"field": other}}
                else:
                    op = rng.choice(["lt", "lte", "gt", "gte"])
                    condition[name] = {op: rng.choice(thresholds[name])}
            elif constants:
                name = rng.choice(sorted(constants))
                op = rng.choice(["eq", "ne", "in", "not_in"])
                if op in ("in", "not_in"):
                    condition[name] = {op: rng.sample(constants[name], 2)}
                else:
                    condition[name] = {op: rng.choice(constants[name])}
        targets = "*" if rng.random() < 0.3 else rng.sample(CATALOG.ids, rng.randint(1, 3))
        out.append(rule(f"R{k:03d}", 10 + k, targets, condition, rng.choice(decisions)))
    out.append(rule("R999", 9999, "*", {}, Boundary.ALLOW))
    return tuple(out)


def synthetic_program(seed: int, **sizes: int | bool) -> SyntheticProgram:
    return SyntheticProgram(_synthetic_rules(seed, **sizes))  # type: ignore[arg-type]


def perturbed(program: SyntheticProgram, seed: int, edits: int = 5) -> SyntheticProgram:
    """A candidate release: ``edits`` rules given another decision (a realistic base/candidate pair)."""
    rng = random.Random(seed)
    rules = list(program.rules)
    for index in rng.sample(range(len(rules) - 1), edits):
        r = rules[index]
        choices = [b for b in Boundary if b is not r.decision]
        rules[index] = rule(r.rule_id, r.priority, r.applies_to, dict(r.condition.source), rng.choice(choices),
                            "v2", r.explanation)
    return SyntheticProgram(tuple(rules), program.catalog, program.registry)


__all__ = ["CATALOG", "REGISTRY", "SyntheticProgram", "perturbed", "synthetic_program"]
