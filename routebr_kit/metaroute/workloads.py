"""The task-profile generator: a balanced suite of workloads × difficulty levels from one seeded stream."""

from __future__ import annotations

import random

from .config import GeneratorConfig
from .records import TaskSpec, Workload


def _clamp(value: float) -> float:
    return max(0.0, min(1.0, value))


def generate_tasks(config: GeneratorConfig = GeneratorConfig()) -> tuple[TaskSpec, ...]:
    """The task suite: workloads in enum order, ``tasks_per_workload`` each, difficulty cycling 1..levels.

    One ``random.Random(config.seed)`` stream is consumed in a fixed order — per task, one jitter per need
    (D, T, C, G, V) and then one for ambiguity — so the suite depends only on the configuration.
    """
    rng = random.Random(config.seed)
    tasks = []
    for workload in Workload:
        profile = config.profiles[workload]
        for index in range(config.tasks_per_workload):
            difficulty = 1 + index % config.difficulty_levels
            shift = (difficulty - config.difficulty_center) * config.difficulty_shift
            needs = [_clamp(base + shift + rng.uniform(-config.need_jitter, config.need_jitter))
                     for base in profile.values()]
            ambiguity = _clamp(config.ambiguity_base + config.ambiguity_step * (difficulty - 1)
                               + rng.uniform(-config.ambiguity_jitter, config.ambiguity_jitter))
            tasks.append(TaskSpec(f"{workload.value}-{index:03d}", workload, difficulty, ambiguity, *needs,
                                  cost_budget=config.cost_budget, latency_budget_s=config.latency_budget_s))
    return tuple(tasks)
