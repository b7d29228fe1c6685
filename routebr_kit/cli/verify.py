"""``routebr-kit verify``: exhaustive analysis of a release over every state and proposal (no sampling).

Three modes:

* ``verify (--catalog C --rules R [--registry E] [--schema S] | --assets DIR | --artifact DIR) [--assert FILE]`` —
  regions, dispatch formulas, findings, properties (exit 1 when one is violated);
* ``verify --base DIR --candidate DIR [--artifact DIR | --ledger RUN ... --cases F] [--allow-widening ACTION ...]``
  — the semantic diff (exit 1 when an action's dispatch widens and is not allowed);
* ``verify --coverage (--artifact DIR | --ledger RUN ... --cases F) [--gate 'rule_coverage >= X%']`` — what the
  recorded traffic exercises (exit 1 when the gate fails).

Exit 2 on bad input.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import command, int_range, write_json

if TYPE_CHECKING:
    from ..core.controller import ControllerOptions
    from ..store.assets import Assets

PASS, FAIL = 0, 1


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--catalog", type=Path, help="catalog CSV")
    p.add_argument("--rules", type=Path, help="boundary rules CSV")
    p.add_argument("--registry", type=Path, help="entity registry CSV (witness objects come from it)")
    p.add_argument("--schema", type=Path, help="runtime-state schema JSON (overrides the derived one field by field)")
    p.add_argument("--assets", type=Path, help="an asset directory (catalog.csv, boundary_rules.csv, registry, "
                   "state_schema.json)")
    p.add_argument("--artifact", type=Path, help="the published artifact: its assets and, for --base/--candidate "
                   "and --coverage, its recorded traffic")
    p.add_argument("--ledger", type=Path, nargs="+", help="run directories whose recorded traffic to use")
    p.add_argument("--cases", type=Path, help="--ledger: the gold cases file the runs were made on")
    p.add_argument("--assert", dest="assertions", type=Path, help="properties to check (JSON or YAML)")
    p.add_argument("--base", type=Path, help="base release: an asset directory")
    p.add_argument("--candidate", type=Path, help="candidate release: an asset directory (files it holds replace "
                   "the base's)")
    p.add_argument("--allow-widening", nargs="*", default=(), metavar="ACTION",
                   help="actions whose dispatch may widen without failing")
    p.add_argument("--coverage", action="store_true", help="report what the recorded traffic exercises")
    p.add_argument("--gate", default=None, help="--coverage: e.g. 'rule_coverage >= 80%%'")
    p.add_argument("--options", nargs="*", default=(), metavar="NAME=VALUE",
                   help="controller options: fallback=CLARIFY|DEFER|HANDOFF|REJECT, enable_grounding=true|false")
    p.add_argument("--no-redundancy", action="store_true", help="skip the redundant-rule finding")
    p.add_argument("--show", type=int_range(0), default=3,
                   help="witnesses to print per action (default 3; --json has all)")
    p.add_argument("--json", type=Path, default=None, help="write the full result as JSON")
    p.add_argument("--horizon", type=int, default=None, metavar="K",
                   help="sessions: check the --assert session assertions over every session of up to K requests "
                        "(or, with --candidate-rules, diff two temporal programs); see data/sessions/")
    p.add_argument("--candidate-rules", type=Path, default=None,
                   help="--horizon: a candidate rule program to diff against --rules over the horizon")


def _single_assets(args: argparse.Namespace) -> tuple[Assets, Any]:
    from ..core.errors import DataError, ErrorCode
    from ..review.assets import AssetFiles
    from ..review.change_impact import artifact_asset_files
    from ..store.assets import load_assets, load_state_schema

    schema = load_state_schema(args.schema) if args.schema else None
    if args.catalog or args.rules:
        if not (args.catalog and args.rules):
            raise DataError(ErrorCode.EMPTY_VALUE, "--catalog and --rules together", field="rules")
        return load_assets(args.catalog, args.rules, args.registry, args.schema), schema
    if args.assets:
        files = AssetFiles.from_dir(args.assets)
    elif args.artifact:
        files = artifact_asset_files(args.artifact)
    else:
        raise DataError(ErrorCode.EMPTY_VALUE, "--catalog/--rules, --assets DIR or --artifact DIR", field="rules")
    # the folder's own state_schema.json, like every other command (--schema overrides it)
    schema_file = args.schema if args.schema else files.state_schema
    if schema is None and schema_file is not None:
        schema = load_state_schema(schema_file)
    return load_assets(files.catalog, files.rules, files.registry, schema_file), schema


def _observations(args: argparse.Namespace) -> tuple:
    from ..core.errors import DataError, ErrorCode
    from ..review.ledgers import load_ledgers, load_many
    from ..verify import observations_from_ledgers

    if args.artifact is not None:
        return observations_from_ledgers(load_ledgers(args.artifact, details=False))
    if args.ledger:
        if args.cases is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "--cases FILE with --ledger", field="cases")
        return observations_from_ledgers(load_many(args.ledger, cases=args.cases, details=False))
    return ()


def _options(args: argparse.Namespace) -> ControllerOptions:
    from ..core.controller import ControllerOptions
    from ..review.shadow import parse_options

    return ControllerOptions(**parse_options(args.options))


@command(_args)
def verify(args: argparse.Namespace) -> int:
    if args.horizon is not None:
        return _horizon(args)
    from ..verify import load_properties, verify_release

    if args.base or args.candidate:
        return _diff(args)
    if args.coverage:
        return _coverage(args)
    assets, schema = _single_assets(args)
    props = load_properties(args.assertions, assets.catalog, [r.rule_id for r in assets.policy.rules]) \
        if args.assertions else ()
    report = verify_release(assets.catalog, assets.policy, assets.registry, options=_options(args), properties=props,
                            state_schema=schema, redundancy=not args.no_redundancy)
    print("\n".join(report.lines()))
    write_json(args.json, report.as_dict())
    return PASS if report.passed else FAIL


def _diff(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..review.assets import AssetFiles
    from ..verify import semantic_diff

    if not (args.base and args.candidate):
        raise DataError(ErrorCode.EMPTY_VALUE, "--base DIR and --candidate DIR together", field="candidate")
    base = AssetFiles.from_dir(args.base)
    candidate = base.overlay(args.candidate)
    a, b = base.load(), candidate.load()
    diff = semantic_diff(a.catalog, a.policy, b.catalog, b.policy, a.registry, b.registry, options=_options(args),
                         observations=_observations(args))
    unknown = [x for x in args.allow_widening if x not in a.catalog and x not in b.catalog]
    if unknown:
        raise DataError(ErrorCode.UNKNOWN_ACTION, "catalog actions", got=unknown, field="allow-widening")
    print("\n".join(diff.lines(args.allow_widening, args.show)))
    write_json(args.json, diff.as_dict(args.allow_widening))
    return diff.exit_status(args.allow_widening)


def _coverage(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..review.assets import AssetFiles
    from ..verify import coverage, coverage_gate

    observations = _observations(args)
    if not observations:
        raise DataError(ErrorCode.EMPTY_VALUE, "recorded traffic: --artifact DIR or --ledger RUN ... --cases FILE",
                        field="coverage")
    if args.catalog or args.rules or args.assets or args.artifact:
        assets, _ = _single_assets(args)
    else:
        assets = AssetFiles.from_dir(args.cases.parent).load()
    report = coverage(assets.catalog, assets.policy, observations, assets.registry, options=_options(args))
    lines = report.lines()
    doc = report.as_dict()
    status = PASS
    if args.gate:
        passed, line = coverage_gate(args.gate, report)
        lines.append(line)
        doc["gate"] = {"criterion": args.gate, "passed": passed}
        status = PASS if passed else FAIL
    print("\n".join(lines))
    write_json(args.json, doc)
    return status


def _horizon(args: argparse.Namespace) -> int:
    """``verify --horizon K``: session assertions (or a session diff) over every session of up to K requests."""
    from ..core.errors import DataError, ErrorCode
    from ..verify.horizon import format_report, load_assertions, session_diff, verify_horizon

    assets, _ = _single_assets(args)
    if args.candidate_rules is not None:
        from ..store.assets import load_rules

        candidate = load_rules(args.candidate_rules, assets.catalog)
        diff = session_diff(assets.catalog, assets.policy, candidate, args.horizon)
        print(f"session diff over K={diff.horizon}: {diff.sessions} abstract sessions in {diff.seconds:.2f}s")
        for direction in ("narrowing", "widening"):
            for action, w in getattr(diff, direction).items():
                print(f"  {direction} {action} ({'confirmed' if w.confirmed else 'NOT confirmed'}): {w.detail}")
        write_json(args.json, diff.as_dict())
        return PASS if not diff.widening else FAIL
    if args.assertions is None:
        raise DataError(ErrorCode.INVALID_VALUE, "--assert FILE (session assertions) with --horizon",
                        field="--assert")
    report = verify_horizon(assets.catalog, assets.policy, load_assertions(args.assertions, assets.catalog),
                            args.horizon)
    print(format_report(report))
    write_json(args.json, report.as_dict())
    return PASS if report.ok else FAIL
