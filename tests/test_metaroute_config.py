"""One configuration object: published defaults, YAML round trip, dotted overrides, typed errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute import MetaRouteConfig, RouteAction, Suite, run_benchmark


def test_defaults_are_the_published_constants() -> None:
    c = MetaRouteConfig()
    assert (c.generator.seed, c.generator.tasks_per_workload, c.generator.need_jitter) == (2026, 60, 0.25)
    assert c.executor.operations.use_tool.failure == 0.08 and c.executor.recovery_success == 0.72
    assert (c.executor.min_success, c.executor.max_success) == (0.02, 0.98)
    assert c.policies.static_routes.research == (RouteAction.DECOMPOSE, RouteAction.USE_TOOL)
    assert (c.evaluation.z, c.evaluation.utility_cost_weight, c.evaluation.utility_latency_weight) == (
        1.96, 0.025, 0.0015)


def test_yaml_round_trip(tmp_path: Path) -> None:
    config = MetaRouteConfig().with_overrides(["executor.recovery_success=0.9",
                                               "policies.static_routes.research=[verify]"])
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config.to_mapping(), sort_keys=False, allow_unicode=True), encoding="utf-8")
    loaded = MetaRouteConfig.load(path)
    assert loaded == config and loaded.sha256 == config.sha256 != MetaRouteConfig().sha256
    assert loaded.policies.static_routes.research == (RouteAction.VERIFY,)


def test_partial_yaml_keeps_the_other_defaults(tmp_path: Path) -> None:
    path = tmp_path / "partial.yaml"
    path.write_text("executor:\n  operations:\n    delegate: {failure: 0.2}\n", encoding="utf-8")
    loaded = MetaRouteConfig.load(path)
    assert loaded.executor.operations.delegate.failure == 0.2
    assert loaded.executor.operations.delegate.cost == 1.65 and loaded.generator == MetaRouteConfig().generator


def test_mapping_overrides_take_dotted_keys_and_sections() -> None:
    config = MetaRouteConfig().with_overrides({"evaluation.z": 2.0, "generator.profiles.research": {"tool": 0.9}})
    assert config.evaluation.z == 2.0
    assert config.generator.profiles.research.tool == 0.9 and config.generator.profiles.research.code == 0.18


@pytest.mark.parametrize(("override", "code", "field"), [
    ("executor.nope=1", ErrorCode.UNKNOWN_REFERENCE, "executor.nope"),
    ("nope.x=1", ErrorCode.UNKNOWN_REFERENCE, "nope"),
    ("executor.recovery_success=1.5", ErrorCode.INVALID_VALUE, "executor.recovery_success"),
    ("executor.recovery_success=high", ErrorCode.WRONG_TYPE, "executor.recovery_success"),
    ("generator.tasks_per_workload=2.5", ErrorCode.WRONG_TYPE, "generator.tasks_per_workload"),
    ("generator.tasks_per_workload=3", ErrorCode.INVALID_VALUE, "generator.tasks_per_workload"),
    ("policies.static_routes.research=[fly]", ErrorCode.UNKNOWN_ENUM, "policies.static_routes.research[0]"),
    ("policies.static_routes.research=[verify, answer]", ErrorCode.INVALID_VALUE, "policies.static_routes.research"),
    ("executor.min_success=0.99", ErrorCode.INVALID_VALUE, "executor.min_success"),
    ("executor.operations=1", ErrorCode.WRONG_TYPE, "executor.operations"),
])
def test_bad_overrides_raise_located_data_errors(override: str, code: ErrorCode, field: str) -> None:
    with pytest.raises(DataError) as err:
        MetaRouteConfig().with_overrides([override])
    assert err.value.code is code and err.value.field == field


def test_bad_yaml_files_name_the_file(tmp_path: Path) -> None:
    unknown = tmp_path / "unknown.yaml"
    unknown.write_text("executor:\n  recovery: 0.5\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        MetaRouteConfig.load(unknown)
    assert err.value.code is ErrorCode.UNKNOWN_REFERENCE and err.value.file == str(unknown)
    assert err.value.field == "executor.recovery"
    broken = tmp_path / "broken.yaml"
    broken.write_text("executor: [1, 2\n", encoding="utf-8")
    with pytest.raises(DataError) as err:
        MetaRouteConfig.load(broken)
    assert err.value.code is ErrorCode.INVALID_VALUE
    with pytest.raises(DataError) as err:
        MetaRouteConfig.load(tmp_path / "missing.yaml")
    assert err.value.code is ErrorCode.FILE_NOT_FOUND


def test_a_changed_constant_changes_the_results() -> None:
    default = run_benchmark(3, suite=Suite.ABLATIONS)
    certain = run_benchmark(3, suite=Suite.ABLATIONS, config=MetaRouteConfig().with_overrides(
        {"executor.recovery_success": 1.0}))
    assert certain.evaluation.summary("adaptive").success_rate > default.evaluation.summary("adaptive").success_rate
    labels = certain.evaluation.failure_modes["adaptive"]
    assert set(labels) <= {"none", "task_failure"}  # every failure is recovered
    # policies without recovery are untouched: same streams, same model
    assert certain.evaluation.summary("adaptive_no_recovery") == default.evaluation.summary("adaptive_no_recovery")


def test_generator_constants_reach_the_tasks() -> None:
    run = run_benchmark(1, suite=Suite.ABLATIONS, config=MetaRouteConfig().with_overrides(
        ["generator.tasks_per_workload=8", "generator.cost_budget=2.0"]))
    assert len(run.tasks) == 24 and all(t.cost_budget == 2.0 for t in run.tasks)
    assert run.evaluation.summary("adaptive").budget_compliance < 1.0
