"""Differential testing at scale: the kit's controller (rule engine, state schema, contract, gates) against the
independent reference evaluator in ``tests/reference_rules.py`` (no code shared with ``routebr_kit.core``) over
random (program, state, proposal) triples — every operator, cross-field references, exists, null, int/float
literals, missing, retyped, non-finite and subclass values, extra fields, broken proposals — printing the number of
disagreements (target 0) and the first few.

    .venv/bin/python benchmarks/bench_differential.py [--triples 1000000] [--per-program 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import reference_rules as ref  # noqa: E402
from verify_generators import (  # noqa: E402
    REFERENCE_CATALOG,
    program_of,
    random_proposal,
    random_rules,
    random_state,
    request_of,
)

from routebr_kit.core.controller import Controller, ControllerOptions  # noqa: E402
from routebr_kit.core.records import Terminal  # noqa: E402
from routebr_kit.verify.synthetic import CATALOG  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--triples", type=int, default=1_000_000)
    parser.add_argument("--per-program", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    done = programs = rejected = disagreements = 0
    shown: list[str] = []
    terminals: dict[str, int] = {}
    start = time.perf_counter()
    while done < args.triples:
        rules = random_rules(rng)
        policy = program_of(rules)
        if policy is None:
            rejected += 1
            continue
        programs += 1
        fallback = rng.choice(["CLARIFY", "DEFER", "HANDOFF", "REJECT"])
        controller = Controller(CATALOG, policy, ControllerOptions(fallback=Terminal(fallback)))
        for _ in range(min(args.per_program, args.triples - done)):
            state = random_state(rng, policy.state_schema if rng.random() < 0.8 else None)
            proposal, candidates = random_proposal(rng)
            d = controller.decide(request_of(state, candidates), proposal)
            got = (d.terminal.value, d.reason.value, d.rule_id)
            expected = ref.decide(rules, REFERENCE_CATALOG, state, proposal,
                                  {e.object_id: e.object_type for e in candidates}, fallback)
            terminals[got[1]] = terminals.get(got[1], 0) + 1
            if got != expected:
                disagreements += 1
                if len(shown) < 5:
                    shown.append(f"  rules {rules}\n  state {state}\n  proposal {proposal}\n  kit {got} reference "
                                 f"{expected}")
            done += 1
    elapsed = time.perf_counter() - start
    print(f"{done:,} triples over {programs:,} programs ({rejected:,} generated programs rejected by the loader and "
          f"skipped) in {elapsed:.1f} s: {disagreements} disagreements")
    print("outcomes by reason: " + ", ".join(f"{k} {v:,}" for k, v in sorted(terminals.items())))
    for s in shown:
        print(s)


if __name__ == "__main__":
    main()
