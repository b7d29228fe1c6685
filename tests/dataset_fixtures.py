"""Shared, cached generated benchmarks for the dataset tests (each takes well under a second to build)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from routebr_kit.dataset import Benchmark, Manifest, generate_benchmark, write_benchmark

SEEDS = (0, 1, 2, 3, 4)
LANGUAGES = ("en", "zh")
VARIANTS = [(seed, lang, decouple) for seed in SEEDS for lang in LANGUAGES for decouple in (False, True)]


@cache
def bench(seed: int, language: str, decouple: bool = False) -> Benchmark:
    return generate_benchmark(seed, language, decouple_entity_state=decouple)


def written(tmp: Path, seed: int = 0, language: str = "en", decouple: bool = False) -> Manifest:
    return write_benchmark(bench(seed, language, decouple), tmp / f"{language}-{seed}-{int(decouple)}")
