"""``routebr-kit attack-surface --cases FILE [--catalog C --rules R --registry E] [--split S] [--protocol P]
[--json FILE]``.

The exact worst case of a fully compromised model (every proposal, repair and B1/B2 reply adversarial): per system,
the forbidden dispatches, protected actions without permission, misroutes and unregistered objects it can reach.
``--protocol`` says whose validator judges the B1/B2 replies: the kit's (default) or the published one-call
validator; RouteBR and its ablations do not depend on it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .common import command, print_table

_SHORT = {"forbidden_dispatches_reachable": "forbidden", "cases_with_forbidden_dispatch_reachable": "cases_forbidden",
          "protected_without_permission_reachable": "protected", "misroutes_reachable": "misroutes",
          "unregistered_object_reachable": "unregistered"}


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cases", required=True, type=Path, help="benchmark cases CSV (published schema)")
    p.add_argument("--catalog", type=Path, help="catalog CSV (default: catalog.csv next to --cases)")
    p.add_argument("--rules", type=Path, help="boundary rules CSV (default: boundary_rules.csv next to --cases)")
    p.add_argument("--registry", type=Path,
                   help="entity registry (default: entity_catalog.csv or registry.csv next to --cases)")
    p.add_argument("--split", choices=("DEV", "MAIN", "FLIP", "ENTITY"), help="only this split (default: all)")
    p.add_argument("--protected-action", default=None,  # None: adversarial.surface.PROTECTED_ACTION
                   help="the catalog action that needs explicit permission (default A5_PROTECTED_ACTION)")
    p.add_argument("--protocol", choices=("kit", "published"), default="kit",
                   help="whose validator judges B1/B2 replies: kit (object types checked; default) or published "
                        "(any candidate, NONE or UNRESOLVED for any action); RouteBR is the same under both")
    p.add_argument("--json", type=Path, help="write the counts (total and per split) to this JSON file")


@command(_args)
def attack_surface_command(args: argparse.Namespace) -> int:
    from ..adversarial.surface import PROTECTED_ACTION, attack_surface
    from ..store.assets import assets_beside, load_assets
    from ..store.cases import load_cases
    from ..store.ledger import write_json_atomic

    if args.catalog or args.rules or args.registry:
        here = args.cases.parent
        assets = load_assets(args.catalog or here / "catalog.csv", args.rules or here / "boundary_rules.csv",
                             args.registry)
    else:
        assets = assets_beside(args.cases)
    protected = PROTECTED_ACTION if args.protected_action is None else args.protected_action
    report = attack_surface(load_cases(args.cases), assets, split=args.split, protected_action=protected,
                            protocol=args.protocol)
    for split in report.by_split:
        print(f"== {split}")
        print_table([{_SHORT.get(k, k): v for k, v in row.items()} for row in report.rows(split)])
    print("== total" + (f" ({args.split})" if args.split else ""))
    print_table(report.rows())
    print(f"threat model: every model output adversarial; unregistered measured against the {report.registry}; "
          f"protected action {report.protected_action}; B1/B2 validator: {report.protocol.value}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        write_json_atomic(args.json, report.as_json())
        print(f"wrote {args.json}")
    return 0


__all__ = ["attack_surface_command"]
