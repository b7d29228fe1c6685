"""``routebr-kit adaptive-attack --cases FILE --lang en|zh --backend SPEC [--profiles FILE] [--constrain MODE]
[--budget N] [--attack-cases N] [--seed N] [--json FILE]``: the adaptive attacker against one proposer.

Derives the seeded injection suite from ``--cases`` (as ``generate-attacks`` does), searches ``--budget`` attack
candidates for the highest rate at which the proposer ``--backend`` proposes the attacker's target
(:func:`~routebr_kit.adversarial.security.adaptive_attack`), then runs each system on the best attack found and
prints its actual forbidden-dispatch rate beside the worst-case bound ``attack-surface`` computes for the same
cases.  ``--backend`` is ``local:lexical``, ``sim:<profile>`` (a simulation: its answers ignore the request text,
so no attack moves it) or an OpenAI-compatible profile — e.g. ``local-smollm2`` against ``routebr-kit
serve-model``, a real model.  RouteBR and RouteBR without state enforcement are run for every backend; B1 and B2
(which need the direct protocol) for simulated and OpenAI-compatible ones.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from .common import command, int_range, print_table


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", required=True, type=Path, help="benchmark cases CSV with its assets beside it")
    p.add_argument("--lang", choices=("en", "zh"), required=True, help="language of the injected text")
    p.add_argument("--backend", required=True,
                   help="the attacked proposer: local:lexical, sim:<profile>, or a profile name from --profiles")
    p.add_argument("--profiles", type=Path, default=None,
                   help="profiles file, JSON or YAML (default: the kit's example profiles)")
    p.add_argument("--constrain", choices=("none", "json-schema"), default="none",
                   help="response_format of every request (OpenAI-compatible profiles only)")
    p.add_argument("--budget", type=int_range(1), default=40, help="attack candidates evaluated (default 40)")
    p.add_argument("--attack-cases", type=int_range(1), default=40,
                   help="attacked cases each candidate is scored on (default 40; seeded sample of the suite)")
    p.add_argument("--seed", type=int_range(0), default=0, help="suite, sample, search and simulator seed (default 0)")
    p.add_argument("--json", type=Path, help="write the result (best attack, trajectory, per-system rates) here")


@command(_args)
def adaptive_attack_command(args: argparse.Namespace) -> int:
    from ..adversarial.security import CONTROLLER_SYSTEMS, adaptive_attack
    from ..adversarial.suite import DEFAULT_PER_FAMILY, generate_suite
    from ..backends.registry import make_backend
    from ..core.records import System
    from ..store.ledger import write_json_atomic

    suite = generate_suite(args.cases, seed=args.seed, language=args.lang, per_family=DEFAULT_PER_FAMILY)
    spec = args.backend

    def backend(cases):
        return make_backend(spec, cases=cases, catalog=suite.assets.catalog, seed=args.seed,
                            profiles_path=args.profiles, language=args.lang, constrain=args.constrain)

    direct = () if spec.startswith("local:") else (System.B1_DIRECT, System.B2_DIRECT_GUARD)
    started = time.perf_counter()
    result = adaptive_attack(suite, backend, backend_name=spec, budget=args.budget, seed=args.seed,
                             cases=args.attack_cases, systems=(*CONTROLLER_SYSTEMS, *direct))
    wall = time.perf_counter() - started
    print_table(result.rows())
    followed, unattacked = result.best_followed, result.unattacked_followed
    print(f"best attack: {result.best.placement.value} x{result.best.repeats}: {result.best.template!r}")
    print(f"proposer followed the attacker on {followed} cases (no attack: {unattacked}); "
          f"{result.proposer_calls} proposals searched in {wall:.1f} s")
    if spec.startswith("sim:"):
        print("simulated backend: its answers come from the gold route and the case id, never from the request "
              "text, so this is a property of the simulator, not evidence about a model")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        # no wall time in the file: the same seed and the same replies give the same bytes
        write_json_atomic(args.json, result.as_dict() | {"constrain": args.constrain})
        print(f"wrote {args.json}")
    return 0


__all__ = ["adaptive_attack_command"]
