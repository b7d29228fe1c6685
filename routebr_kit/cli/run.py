"""``routebr-kit run``: run one system over a benchmark split with one backend into a resumable run directory."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .common import command, int_range, positive_float, print_table

if TYPE_CHECKING:
    from ..store.assets import Assets

SPLITS = ("MAIN", "FLIP", "ENTITY", "ALL")


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", required=True,
                   help="sim:<profile>, local:lexical, local:learned[:MODEL_DIR], or a profile name from --profiles")
    p.add_argument("--system", required=True, choices=("routebr", "b1", "b2", "a_state", "a_ground"))
    p.add_argument("--cases", required=True, type=Path, help="benchmark cases CSV (published schema)")
    p.add_argument("--split", required=True, type=str.upper, choices=SPLITS,
                   help="MAIN, FLIP, ENTITY or ALL (= every non-DEV case of the file); any letter case")
    p.add_argument("--out", required=True, type=Path, help="run directory (predictions.csv, raw/, run_manifest.json)")
    p.add_argument("--concurrency", type=int_range(1), default=8, help="cases in flight at once (default 8)")
    p.add_argument("--rpm", type=positive_float, default=None, help="requests-per-minute limit (network requests only)")
    p.add_argument("--deadline-s", type=float, default=None, metavar="SECONDS",
                   help="wall-clock deadline of each model call, retries included (OpenAI-compatible profiles; "
                        "default: the profile's deadline_s, else 300); a call past it is a recorded fail-closed row")
    p.add_argument("--resume", action="store_true", help="complete an interrupted run in --out")
    p.add_argument("--profiles", type=Path, default=None,
                   help="profiles file, JSON or YAML (default: the kit's example profiles)")
    p.add_argument("--catalog", type=Path, default=None, help="catalog CSV (default: catalog.csv next to --cases)")
    p.add_argument("--rules", type=Path, default=None,
                   help="boundary rules CSV (default: boundary_rules.csv next to --cases)")
    p.add_argument("--registry", type=Path, default=None,
                   help="entity registry CSV (default: entity_catalog.csv or registry.csv next to --cases)")
    p.add_argument("--state-schema", type=Path, default=None,
                   help="runtime-state schema JSON overriding the one derived from the rules (see core.state)")
    p.add_argument("--cache", type=Path, default=None, help="response cache directory (OpenAI-compatible profiles)")
    p.add_argument("--replay-only", action="store_true", help="answer only from --cache; stop on a miss")
    p.add_argument("--seed", type=int_range(0), default=0, help="simulator seed; sent to profiles with send_seed")
    p.add_argument("--language", choices=("auto", "en", "zh"), default="auto", help="prompt language")
    p.add_argument("--protocol", choices=("kit", "published"), default="kit",
                   help="request protocol: kit (its own prompts, stricter B2 validation, schema-restating repair; "
                        "default) or published (the published request bodies and B1/B2 acceptance; needs --prompts)")
    p.add_argument("--constrain", choices=("none", "json-schema"), default="none",
                   help="response_format of every request (OpenAI-compatible profiles): none = any JSON object "
                        "(default); json-schema = this call's answer schema (catalog, candidate and rule enums), "
                        "recorded in the request bodies and the manifest; the controller still validates all")
    p.add_argument("--prompts", type=Path, default=None,
                   help="prompt file: ARTIFACT/experiments/prompts.json with --protocol published; "
                        "a kit-format prompt file otherwise (default: the kit's own for the language)")
    p.add_argument("--from-run", type=Path, default=None,
                   help="a_state/a_ground: the RouteBR run directory whose stored proposals are replayed")
    p.add_argument("--live", action="store_true", help="a_state/a_ground: re-run live instead of from --from-run")
    p.add_argument("--repeat-id", default="0")
    p.add_argument("--repeats", type=int_range(1), default=1, metavar="N",
                   help="run N independent repeats into OUT/repeat-0 … OUT/repeat-(N-1) (repeat_id 0..N-1, seed "
                        "--seed + i); `routebr-kit score OUT` then reports pass^k and consistency")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


@command(_args)
def run(args: argparse.Namespace) -> int:
    from ..core.errors import DataError, ErrorCode
    from ..evaluation.scorecard import score_report
    from ..runs.runner import derive_interventions, parse_system, run_cases
    from ..scale.progress import terminal_progress
    from ..store.cases import Split, load_cases
    from .score import summary_lines

    assets = _assets(args)
    cases = [c for c in load_cases(args.cases)
             if (c.split is not Split.DEV if args.split == "ALL" else c.split.value == args.split)]
    if not cases:
        raise DataError(ErrorCode.EMPTY_FILE, f"at least one {args.split} case", file=str(args.cases), field="split")
    system = parse_system(args.system)
    progress = terminal_progress(args.no_progress)  # a bar on a terminal only
    if args.repeats > 1:
        return _repeated(args, assets, cases, system, progress)
    if system.value in ("a_state", "a_ground") and not args.live:
        if args.from_run is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "--from-run DIR (a RouteBR run) or --live", field="from_run")
        if args.deadline_s is not None:
            raise DataError(ErrorCode.INVALID_VALUE, "no --deadline-s with --from-run (the stored replies are "
                            "replayed; no model is called) or --live", field="--deadline-s", got=args.deadline_s)
        result = derive_interventions(args.from_run, cases, assets, args.out, system=system, resume=args.resume,
                                      progress=progress)
    else:
        if args.replay_only and args.cache is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "--cache DIR with --replay-only", field="cache")
        backend = _backend(args, cases, assets, _cache(args), args.seed)
        result = run_cases(cases, backend, system=system, assets=assets, out_dir=args.out,
                           concurrency=args.concurrency, rpm=args.rpm, resume=args.resume, repeat_id=args.repeat_id,
                           progress=progress, cases_path=args.cases)
    s = result.summary
    print_table([{"system": result.system.value, "split": result.manifest["split"],
                  "backend": result.manifest["backend"],
                  "cases": s["cases"], "run_now": result.executed, "resumed": result.resumed,
                  "fail_closed": s["fail_closed"], "calls": s["calls"], "cache_hits": s["cache"]["hits"]}])
    for line in summary_lines(score_report(result.rows, cases)):
        print(line)
    print(f"wrote {args.out}/predictions.csv, raw/ and run_manifest.json "
          f"(score it again: routebr-kit score {args.out} --cases {args.cases})")
    print(f"report: routebr-kit report {args.out} --cases {args.cases}  (one HTML file: scores and every trace)")
    if result.flagged:
        print(f"WARNING: profile flagged {', '.join(result.flagged)} on cases "
              f"{', '.join(s['model_identity_failures'][:10])}", file=sys.stderr)
        return 1
    return 0


def _cache(args: argparse.Namespace) -> object:
    from ..backends.cache import CacheMode, ResponseCache

    return None if args.cache is None else ResponseCache(
        args.cache, mode=CacheMode.REPLAY_ONLY if args.replay_only else CacheMode.READ_WRITE)


def _backend(args: argparse.Namespace, cases: list, assets: Assets, cache: object, seed: int) -> object:
    """The run's proposer, with ``--deadline-s`` when given: refused for a backend that makes no network call (a
    simulated or lexical one answers in process), rather than silently ignored."""
    from ..backends.profiles import check_deadline
    from ..backends.registry import make_backend
    from ..core.errors import DataError, ErrorCode

    backend = make_backend(args.profile, cases=cases, catalog=assets.catalog, seed=seed, profiles_path=args.profiles,
                           cache=cache, language=args.language, protocol=args.protocol, prompts_path=args.prompts,
                           constrain=args.constrain)
    if args.deadline_s is None:
        return backend
    seconds = check_deadline(args.deadline_s, field="--deadline-s")
    with_deadline = getattr(backend, "with_deadline", None)
    if not callable(with_deadline):
        raise DataError(ErrorCode.INVALID_VALUE, "an OpenAI-compatible profile for --deadline-s (simulated and "
                        "lexical backends make no network call to bound)", field="--deadline-s", got=args.profile)
    return with_deadline(seconds)


def _repeated(args: argparse.Namespace, assets: Assets, cases: list, system, progress: bool) -> int:
    """``--repeats N``: N runs of the same configuration, each its own resumable run directory."""
    from ..core.errors import DataError, ErrorCode
    from ..evaluation.pass_k import reliability
    from ..runs.runner import run_cases
    from .score import REPEAT_DIR

    if args.repeat_id != "0":
        raise DataError(ErrorCode.INVALID_VALUE, "either --repeats or --repeat-id", got=args.repeat_id,
                        field="--repeat-id")
    if system.value in ("a_state", "a_ground") and not args.live:
        raise DataError(ErrorCode.INVALID_VALUE, "--repeats with a_state/a_ground needs --live (a replay of one "
                        "run does not repeat)", got=args.repeats, field="--repeats")
    cache = _cache(args)
    rows, table, flagged = [], [], False
    for i in range(args.repeats):
        backend = _backend(args, cases, assets, cache, args.seed + i)
        out = args.out / REPEAT_DIR.format(i)
        result = run_cases(cases, backend, system=system, assets=assets, out_dir=out, concurrency=args.concurrency,
                           rpm=args.rpm, resume=args.resume, repeat_id=str(i), progress=progress,
                           cases_path=args.cases)
        rows.extend(result.rows)
        flagged = flagged or bool(result.flagged)
        s = result.summary
        table.append({"repeat": i, "seed": args.seed + i, "system": result.system.value,
                      "backend": result.manifest["backend"], "cases": s["cases"], "run_now": result.executed,
                      "resumed": result.resumed, "fail_closed": s["fail_closed"], "calls": s["calls"]})
    print_table(table)
    print(reliability(rows, cases).line())
    print(f"wrote {args.repeats} run directories under {args.out} "
          f"(score them: routebr-kit score {args.out} --cases {args.cases})")
    return 1 if flagged else 0


def _assets(args: argparse.Namespace) -> Assets:
    """Catalog, rules and registry: the given files, else the ones next to ``--cases`` — every path checked first,
    the cases file before its neighbours, so an error names the file that is actually missing."""
    from ..core.errors import DataError, ErrorCode
    from ..store.assets import REGISTRY_NAMES, load_assets

    if not args.cases.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing cases file", file=str(args.cases), field="--cases")
    here = args.cases.parent
    registry = args.registry or next((here / name for name in REGISTRY_NAMES if (here / name).is_file()), None)
    chosen = (("--catalog", args.catalog, here / "catalog.csv"), ("--rules", args.rules, here / "boundary_rules.csv"),
              ("--registry", args.registry, registry))
    for flag, given, path in chosen:
        if path is not None and not Path(given or path).is_file():
            expected = ("an existing file" if given else
                        f"{Path(path).name} next to the cases file (or pass {flag} FILE)")
            raise DataError(ErrorCode.FILE_NOT_FOUND, expected, file=str(given or path), field=flag)
    if args.state_schema is not None and not args.state_schema.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an existing file", file=str(args.state_schema),
                        field="--state-schema")
    return load_assets(args.catalog or here / "catalog.csv", args.rules or here / "boundary_rules.csv", registry,
                       args.state_schema)
