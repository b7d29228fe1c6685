"""The kit's public API, pinned (httpx / Inspect AI style, issue 29).

Every public namespace states its API the same way — an ``_EXPORTS`` map (name → defining module) and
``__all__ = sorted(_EXPORTS)`` — and loads a module only when one of its names is first used.  Changing a namespace's
``__all__`` means changing :data:`PINNED` in the same commit: an API change is a reviewed diff, never a side effect.
"""

from __future__ import annotations

import ast
import importlib
import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import routebr_kit

ROOT = Path(routebr_kit.__file__).resolve().parents[1]
PACKAGES = sorted(m.name for m in pkgutil.iter_modules(routebr_kit.__path__) if m.ispkg and m.name != "resources")

#: Each namespace's ``__all__`` ("" is the top level, ``routebr_kit`` itself).
PINNED: dict[str, list[str]] = {
    "": ("Assets Backend Boundary Case Catalog CatalogAction ContractError ContractErrorCode "
        "Controller ControllerOptions DataError Decision Entity ErrorCode FailureKind KitError "
        "ModelCall ModelReply NONE ObjectResolution PolicyEngine Proposal ReasonCode Registry "
        "RouteRequest Rule RuntimeState Split Stage System Terminal TraceStep UNRESOLVED "
        "check_proposal find_artifact load_assets load_cases load_catalog load_registry load_rules "
        "rule").split(),
    "adversarial": ("AttackFamily adaptive_attacks attack_surface generate_suite pooled score_attacks scorecard "
        "suite_runs write_suite").split(),
    "backends": ("DEFAULT_PROFILES INSTALL_HINT LearnedBackend LexicalBackend PROFILE_LABELS ReplayBackend "
        "SMOLLM2 ScriptedBackend SimulatedBackend make_backend missing_api_keys missing_modules "
        "profile_table train").split(),
    "cli": ("COMMANDS build_parser main").split(),
    "core": ("AssetHashes Backend BackendFailure Boundary Catalog CatalogAction Condition ContractError "
        "ContractErrorCode ContractResult Controller ControllerOptions DataError Decision Entity "
        "ErrorCode FailureKind HeldIdentifiers JsonIssue KitError ModelCall ModelReply NONE NO_REPAIR "
        "ObjectResolution OpaqueValue Operator PolicyEngine Predicate Proposal ReasonCode Registry "
        "RouteRequest Rule RuntimeState Stage StateErrorCode StateField StateSchema StateType "
        "StateViolation StrictJsonError System Terminal TraceEvent TraceStep UNRESOLVED "
        "check_proposal derive_state_schema guard_repair held_identifiers parse_output read_output "
        "rule snapshot strict_loads").split(),
    "dataset": ("Benchmark BenchmarkConfig KIT_DATA_DIR Manifest Partition SESSION_DATA_DIR audit_files "
        "audit_sessions generate_benchmark generate_sessions gold_label second_audit timeline "
        "write_benchmark").split(),
    "evaluation": ("PAPER_PATH_LABELS SYSTEM_LABELS Z95 difficulty_figure fd_fb_figure flip_pairs index_cases "
        "macro_f1 mcnemar mcnemar_p_published mcnemar_table pair_grid pair_grid_figure parse_count "
        "reliability rq12_table rq3_table score scores_frame screening_figure screening_table "
        "seed_spread_figure trivial_floor wilson wilson_published").split(),
    "experiments": ("COUNT_TOLERANCE HOW_TO_GET INDEPENDENT LedgerOrigin PATH_TOLERANCE_POINTS REBUILT "
        "ScreeningConfig Source StudyConfig artifact_ledgers audit_results boundary_mcnemar "
        "compare_with_published composite_scores false_dispatch_examples grid_facts held_out_table "
        "kit_replay_report load_study offline_agreement open_learned paper_runs paper_tables "
        "prevented_promotions published_runs read_published replay_artifact replay_story "
        "replay_variants resolve_source run_benchmarks run_screening score_grid scorecard "
        "screening_cases screening_figure search_false_dispatch seed_scores seed_sweep side_by_side "
        "simulated_rows study_audit").split(),
    "metaroute": ("AdaptiveRouter BenchmarkRun Comparison Evaluation EvaluationConfig ExactExecutor "
        "ExecutionModel ExecutionTrace Executor ExecutorConfig FAILURE_CODES FailureMode FastExecutor "
        "FixedPolicy GeneratorConfig GridExecutor METAROUTE_ENV MetaRouteConfig MetaRouteSource Mode "
        "NeedProfile OneShotPolicy Operation Operations Outcome PlanChoice PlanModel Policy "
        "PolicyConfig PolicySummary RandomPolicy RouteAction RoutePlan SUPPORT_ACTIONS StaticRoutes "
        "StaticWorkloadPolicy Suite SupportOperation SweepDesign SweepResult SweepSpace TaskSpec "
        "Traces Workload WorkloadProfiles ablation_frame ablation_policies action_share_figure "
        "action_shares compare comparison_frame contrast_table default_policies default_space design "
        "detection_power differences_figure difficulty_success evaluate execute_all "
        "expected_success_rates export_run failure_breakdown generate_tasks heatmap_figure "
        "heatmap_table is_metaroute_artifact load_sweep metaroute_candidates per_seed_success "
        "philox4x32 power_curve power_figure published_match ranking_agreement resolve_metaroute "
        "robustness run_benchmark run_sweep seeds_for_power sensitivity slice_comparisons summarize "
        "summary_frame task_profile_frame trace_uniforms tradeoff_figure workload_figure "
        "workload_frame").split(),
    "notebook": ("ArtifactChoice ConclusionError EXECUTOR_SLIDERS Figure1Explorer MetaRouteExplorer "
        "NotebookJob NotebookResult Outputs PALETTE PreparedRun REVIEW_CSS RuleEditor RunPlan Saved "
        "SessionExplorer choose_artifact decision_paths_figure decisions_table declared_parameters "
        "execute figure_anatomy kit_path listed_outputs markdown_table one_line_rows outcome_figure "
        "parse_topk policy_outcomes_figure prepare render_conclusion review_html run setup "
        "trace_table").split(),
    "prompts": ("ANSWERING_STAGES Language PROMPT_KEYS PromptSet Protocol PublishedPrompts detect_language "
        "load_prompts load_published_prompts prompt_path").split(),
    "report": ("build_report load_source render script_json task_traces unpack write_html write_report").split(),
    "review": ("AffectedRow AssetEdit AssetFiles CHANGED_COLUMNS ChangeClass ChangeStage ChangedRow Cost "
        "Criterion CriterionResult DEFAULT_GATE DiffReport EditClass ForbiddenContrast Gate "
        "GateResult ImpactReport LedgerSet LedgerTask METRICS NotComparable OLD_GATE PAPER_SLICES "
        "RERUN_GATE Review ReviewSource RowDetail ShadowFlag ShadowResult ShadowRow ShadowTask "
        "SummaryRow artifact_asset_files calibrate_gates calibration_facts candidate_edit "
        "case_summary compare_assets contrast_facts default_gate diff_ledgers diff_sentence "
        "edit_lines first_match_order forbidden_dispatch_contrast impact impact_lines load_ledgers "
        "load_many load_review_source markdown parse_options prompts_with_line registry_without "
        "release_files release_review review_candidates review_facts review_source rules_csv "
        "shadow_ledgers shadow_replay split_table text_table trace_pair transitions write_release "
        "write_shadow").split(),
    "runs": ("RunResult run_sessions").split(),
    "scale": ("Cell CellFailed CellStore ExecutorKind ExecutorSpec run_cells").split(),
    "store": ("ARTIFACT_ENV Artifact ArtifactTask Assets CONFIRM Case Gold Language ObjectDifficulty "
        "PredictionRow RunLedger SELECT Split artifact_candidates assets_beside find_artifact "
        "is_artifact_dir load_assets load_cases load_catalog load_registry load_rules read_csv "
        "read_json read_predictions write_predictions").split(),
    "systems": ("CompositeBaseline DirectBaseline Variant").split(),
    "verify": ("CoverageReport Observation Property Relation SemanticDiff VerifierMismatch VerifyReport "
        "coverage coverage_gate load_properties observations_from_ledgers parse_properties "
        "replay_counterexample semantic_diff verify_release").split(),
}


def _package(key: str):
    return importlib.import_module(f"routebr_kit.{key}" if key else "routebr_kit")


def test_every_namespace_is_pinned():
    assert sorted(PINNED) == ["", *PACKAGES]


@pytest.mark.parametrize("key", sorted(PINNED))
def test_each_all_is_exactly_the_pinned_list(key):
    package = _package(key)
    assert list(package.__all__) == sorted(PINNED[key]), f"routebr_kit.{key}.__all__ changed; update PINNED"


def test_the_top_level_is_what_a_script_needs():
    assert len(routebr_kit.__all__) <= 45
    assert {"Controller", "ControllerOptions", "RouteRequest", "RuntimeState", "Proposal", "Decision", "Terminal",
            "ReasonCode", "PolicyEngine", "rule", "load_assets", "load_cases", "DataError"} <= set(routebr_kit.__all__)


@pytest.mark.parametrize("key", sorted(PINNED))
def test_every_exported_name_is_its_defining_modules_object(key):
    package = _package(key)
    modules = {m.name for m in pkgutil.iter_modules(package.__path__)}
    for public, module in package._EXPORTS.items():
        defining = importlib.import_module(module if module.startswith(".") else "." + module, package.__name__)
        assert getattr(package, public) is getattr(defining, public), f"{package.__name__}.{public}"
        assert public not in modules, f"{package.__name__}.{public} is also a module, which would shadow it"
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


@pytest.mark.parametrize("key", sorted(PINNED))
def test_every_init_states_its_api_one_way(key):
    """Docstring, the ``_EXPORTS`` map, ``__all__ = sorted(_EXPORTS)``, the lazy hook — and nothing that runs code
    (the top level also defines the hook; ``notebook`` also registers its IPython extension)."""
    tree = ast.parse(Path(_package(key).__file__).read_text(encoding="utf-8"))
    body = [node for node in tree.body if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))]
    exports = [n for n in body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "_EXPORTS"]
    alls = [n for n in body if isinstance(n, ast.Assign) and [getattr(t, "id", "") for t in n.targets] == ["__all__"]]
    assert len(exports) == 1 and len(alls) == 1
    assert ast.unparse(alls[0].value) == "sorted(_EXPORTS)"
    assert ast.unparse(body[-1] if key != "notebook" else body[-2]).startswith(
        "__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)")
    allowed = (ast.Import, ast.ImportFrom, ast.AnnAssign, ast.Assign, ast.FunctionDef) if key == "" else (
        ast.ImportFrom, ast.AnnAssign, ast.Assign) + ((ast.FunctionDef,) if key == "notebook" else ())
    assert all(isinstance(node, allowed) for node in body), [ast.unparse(n)[:60] for n in body
                                                               if not isinstance(n, allowed)]


def test_importing_any_namespace_imports_none_of_its_modules():
    code = ("import sys, importlib; names = " + repr([f"routebr_kit.{p}" for p in PACKAGES]) + "\n"
            "for n in names: importlib.import_module(n)\n"
            "print(sorted(m for m in sys.modules if m.startswith('routebr_kit.') and m not in names))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_subpackages_are_attributes_of_the_top_level():
    done = subprocess.run([sys.executable, "-c", "import routebr_kit as rk; print(rk.review.release_review.__name__)"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "release_review"


def _import_sites():
    """Every ``from routebr_kit… import name`` in the kit, tests, benchmarks and notebooks: (where, package, name)."""
    files = [*ROOT.glob("routebr_kit/**/*.py"), *ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]
    sources = [(p, p.read_text(encoding="utf-8")) for p in files]
    for notebook in sorted(ROOT.glob("notebooks/*.ipynb")):
        cells = json.loads(notebook.read_text(encoding="utf-8"))["cells"]
        code = ["".join(c["source"]) for c in cells if c["cell_type"] == "code"]
        sources.append((notebook, "\n".join("\n".join(line for line in cell.splitlines()
                                                      if not line.lstrip().startswith(("%", "!")))
                                            for cell in code if not cell.startswith("%%"))))
    for path, source in sources:
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = parts[:-1] if parts[-1] != "__init__" else parts[:-1]
                base = base[:len(base) - (node.level - 1)] if parts[-1] != "__init__" else \
                    parts[:-1][:len(parts) - node.level]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            key = target.removeprefix("routebr_kit").lstrip(".")
            if target.startswith("routebr_kit") and key in PINNED:
                for alias in node.names:
                    yield f"{path.relative_to(ROOT)}:{node.lineno}", key, alias.name


def test_every_import_from_a_namespace_names_an_exported_name_or_a_module():
    wrong = []
    for where, key, name in _import_sites():
        if name in ("*", "lazy_exports", "__version__") or name in PINNED[key]:
            continue
        if importlib.util.find_spec(f"routebr_kit.{key}.{name}".replace("..", ".")) is None:
            wrong.append(f"{where}: routebr_kit.{key} does not export {name}")
    assert not wrong, "\n".join(wrong)


def test_the_release_review_api_is_exported():
    from routebr_kit import review

    assert {"release_review", "Review", "load_ledgers", "write_release", "artifact_asset_files", "Gate",
            "DEFAULT_GATE", "split_table"} <= set(review.__all__)


def test_the_store_and_backends_packages_stay_standard_library_only_on_import():
    code = ("import sys, routebr_kit.store, routebr_kit.backends; "
            "print(sorted(m for m in ('numpy', 'pandas', 'yaml', 'openai') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_notebook_helpers_and_conclusions_are_exported():
    from routebr_kit import notebook

    assert {"outcome_figure", "figure_anatomy", "render_conclusion", "RuleEditor"} <= set(notebook.__all__)
    # notebooks 01/02/04/10/11: their conclusions are templates in the notebook
    assert not {"dataset", "pass_k", "rq2", "screening", "adversarial", "forbidden_contrast", "gate_calibration",
                "release_review", "security"} & set(notebook.__all__)


def test_single_notebook_helpers_live_in_their_domain_package():
    """Issue 30: notebook/ holds the pipeline, outputs, display and widgets; a notebook's domain helpers are its
    domain's (notebook 10's traffic and contrast in review, notebook 11's runs in adversarial, notebook 14's grid in
    experiments, its timeline in dataset, its counterexample replay in verify, its candidate review in review)."""
    from routebr_kit import adversarial, notebook, review
    from routebr_kit.adversarial import security
    from routebr_kit.dataset import sessions as session_cases
    from routebr_kit.experiments import proposers, session_grid
    from routebr_kit.review import calibration, sessions, shadow
    from routebr_kit.verify import horizon_replay

    moved = {"review_source", "release_files", "first_match_order", "transitions", "forbidden_dispatch_contrast"}
    assert moved <= set(review.__all__) and all(callable(getattr(review, n)) for n in moved)
    assert callable(calibration.calibrate_gates) and callable(shadow.trace_pair)
    assert callable(security.suite_runs) and callable(security.adaptive_attacks) and adversarial
    assert callable(proposers.decide_all)
    assert callable(session_grid.run_benchmarks) and callable(session_cases.timeline)
    assert callable(horizon_replay.replay_counterexample) and callable(sessions.review_candidates)
    assert not (moved | {"suite_runs", "adaptive_attacks", "calibrate_gates", "trace_pair"}) & set(notebook.__all__)
    here = {p.stem for p in (Path(notebook.__file__).parent).glob("*.py")}
    assert not here & {"attacks", "calibration_runs", "contrast", "proposers", "review_traffic", "review_widget",
                        "sessions"}
    assert {h.strip("_") for h in here} <= {"init", "pipeline", "outputs", "display", "widgets"}
