"""MetaRoute-Bench: meta-decision policies for agentic workflows on a seeded offline executor.

task profiles (:mod:`.workloads`) → policies (:mod:`.policies`) → route plans → executor (:mod:`.executor`:
exact CPython streams or vectorized Philox) → typed traces (:mod:`.records`) → evaluation (:mod:`.evaluation`)
→ the published files (:mod:`.export`).  Every constant lives in :class:`MetaRouteConfig` (:mod:`.config`);
:func:`run_benchmark` (:mod:`.run`) ties the layers together.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "analysis": "ablation_frame action_shares comparison_frame detection_power difficulty_success "
        "failure_breakdown per_seed_success power_curve ranking_agreement seeds_for_power slice_comparisons "
        "summary_frame task_profile_frame workload_frame",
    "config": "EvaluationConfig ExecutorConfig GeneratorConfig MetaRouteConfig NeedProfile Operation Operations "
        "PolicyConfig StaticRoutes SupportOperation WorkloadProfiles",
    "evaluation": "Comparison Evaluation PolicySummary compare evaluate summarize",
    "executor": "ExactExecutor ExecutionModel Executor FastExecutor GridExecutor Outcome PlanModel "
        "expected_success_rates philox4x32 trace_uniforms",
    "export": "export_run published_match",
    "plots": "action_share_figure differences_figure power_figure tradeoff_figure workload_figure",
    "policies": "AdaptiveRouter FixedPolicy OneShotPolicy Policy RandomPolicy StaticWorkloadPolicy "
        "ablation_policies default_policies",
    "records": "ExecutionTrace FAILURE_CODES FailureMode PlanChoice RouteAction RoutePlan SUPPORT_ACTIONS "
        "TaskSpec Traces Workload",
    "run": "BenchmarkRun Mode Suite execute_all run_benchmark",
    "source": "METAROUTE_ENV MetaRouteSource is_metaroute_artifact metaroute_candidates resolve_metaroute",
    "sweep": "SweepDesign SweepResult SweepSpace contrast_table default_space design heatmap_figure heatmap_table "
        "load_sweep robustness run_sweep sensitivity",
    "workloads": "generate_tasks",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
