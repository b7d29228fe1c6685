"""MetaRoute-Bench: meta-decision policies for agentic workflows on a seeded offline executor.

task profiles (:mod:`.workloads`) → policies (:mod:`.policies`) → route plans → executor (:mod:`.executor`:
exact CPython streams or vectorized Philox) → typed traces (:mod:`.records`) → evaluation (:mod:`.evaluation`)
→ the published files (:mod:`.export`).  Every constant lives in :class:`MetaRouteConfig` (:mod:`.config`);
:func:`run_benchmark` (:mod:`.run`) ties the layers together.
"""

from .. import lazy_exports
from .config import (
    EvaluationConfig,
    ExecutorConfig,
    GeneratorConfig,
    MetaRouteConfig,
    NeedProfile,
    Operation,
    Operations,
    PolicyConfig,
    StaticRoutes,
    SupportOperation,
    WorkloadProfiles,
)
from .evaluation import Comparison, Evaluation, PolicySummary, compare, evaluate, summarize
from .executor import (
    ExactExecutor,
    ExecutionModel,
    Executor,
    FastExecutor,
    GridExecutor,
    Outcome,
    PlanModel,
    expected_success_rates,
    philox4x32,
    plan_model,
    trace_uniforms,
)
from .export import export_run
from .policies import (
    AdaptiveRouter,
    FixedPolicy,
    OneShotPolicy,
    Policy,
    RandomPolicy,
    StaticWorkloadPolicy,
    ablation_policies,
    default_policies,
)
from .records import (
    FAILURE_CODES,
    SUPPORT_ACTIONS,
    ExecutionTrace,
    FailureMode,
    PlanChoice,
    RouteAction,
    RoutePlan,
    TaskSpec,
    Traces,
    Workload,
)
from .run import BenchmarkRun, Mode, Suite, execute_all, executor_for, run_benchmark
from .workloads import generate_tasks

#: Loaded on first use (tables and the robustness sweep need pandas and scipy).
_LAZY: dict[str, str] = {
    "ablation_frame": "analysis",
    "action_shares": "analysis",
    "comparison_frame": "analysis",
    "detection_power": "analysis",
    "difficulty_success": "analysis",
    "failure_breakdown": "analysis",
    "per_seed_success": "analysis",
    "power_curve": "analysis",
    "seeds_for_power": "analysis",
    "ranking_agreement": "analysis",
    "slice_comparisons": "analysis",
    "summary_frame": "analysis",
    "task_profile_frame": "analysis",
    "workload_frame": "analysis",
    "METAROUTE_ENV": "source",
    "MetaRouteSource": "source",
    "is_metaroute_artifact": "source",
    "metaroute_candidates": "source",
    "resolve_metaroute": "source",
    "SweepDesign": "sweep",
    "SweepResult": "sweep",
    "SweepSpace": "sweep",
    "default_space": "sweep",
    "design": "sweep",
    "heatmap_figure": "sweep",
    "heatmap_table": "sweep",
    "load_sweep": "sweep",
    "robustness": "sweep",
    "run_sweep": "sweep",
    "sensitivity": "sweep",
    "contrast_table": "sweep",
}

__all__ = sorted({*(name for name in dir() if not name.startswith("_") and name != "lazy_exports"),
                  *_LAZY})


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
