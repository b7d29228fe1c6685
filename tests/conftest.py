"""Shared test fixtures: paths to the published artifacts (tests fail, not skip, when they are missing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from routebr_kit.dataset.generate import KIT_DATA_DIR

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
ROUTEBR_ARTIFACT = SHARED / "routebr_artifact"
METAROUTE_ARTIFACT = SHARED / "metaroute_artifact"
KIT_DATA = KIT_DATA_DIR  # the packaged assets (routebr_kit/resources/)


def _require(path: Path) -> Path:
    if not path.exists():
        pytest.fail(f"published artifact missing: {path} (clone the kit next to ../shared)", pytrace=False)
    return path


@pytest.fixture(scope="session")
def routebr_artifact() -> Path:
    return _require(ROUTEBR_ARTIFACT)


@pytest.fixture(scope="session")
def metaroute_artifact() -> Path:
    return _require(METAROUTE_ARTIFACT)


@pytest.fixture(scope="session")
def kit_data() -> Path:
    return KIT_DATA
