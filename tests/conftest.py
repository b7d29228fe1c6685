"""Shared test fixtures: the published artifacts, found the way the CLI finds them.

Where an artifact is looked for, in order: ``$ROUTEBR_ARTIFACT`` (``$METAROUTE_ARTIFACT``), ``artifacts/routebr/``
(``artifacts/metaroute/``) of the checkout, then the sibling ``../shared/routebr_artifact``
(``../shared/metaroute_artifact``).  The MetaRoute outputs are also found beside the RouteBR artifact.

Without an artifact, every test that needs one is left out and the run ends with ONE line
``N tests skipped: no published artifact (make artifact)``.  On CI (``$CI`` set) a missing artifact is a failure.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from routebr_kit.dataset.generate import KIT_DATA_DIR

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
KIT_DATA = KIT_DATA_DIR  # the packaged assets (routebr_kit/resources/)
NEEDS_ARTIFACT = frozenset({"routebr_artifact", "metaroute_artifact"})
SKIP_LINE = "{n} tests skipped: no published artifact (make artifact)"


def _is_routebr(path: Path) -> bool:
    return (path / "data").is_dir() and (path / "experiments" / "results").is_dir()


def _is_metaroute(path: Path) -> bool:
    return all((path / suite / "summary.csv").is_file() for suite in ("main", "ablations"))


def _first(candidates: list[Path], looks_right) -> Path | None:
    for path in candidates:
        if looks_right(path):
            return path.resolve()
    return None


def find_routebr() -> Path | None:
    """The RouteBR artifact, like ``routebr-kit reproduce`` finds it (``None`` when there is none)."""
    named = os.environ.get("ROUTEBR_ARTIFACT")
    return _first([*([Path(named)] if named else []), REPO / "artifacts" / "routebr", SHARED / "routebr_artifact"],
                  _is_routebr)


def find_metaroute(routebr: Path | None) -> Path | None:
    """The MetaRoute outputs: ``$METAROUTE_ARTIFACT``, beside the RouteBR artifact, ``artifacts/``, ``../shared``."""
    named = os.environ.get("METAROUTE_ARTIFACT")
    candidates = [*([Path(named)] if named else []), *([routebr.parent / "metaroute_artifact"] if routebr else []),
                  REPO / "artifacts" / "metaroute", SHARED / "metaroute_artifact"]
    return _first(candidates, _is_metaroute)


FOUND_ROUTEBR = find_routebr()
FOUND_METAROUTE = find_metaroute(FOUND_ROUTEBR)
#: Module-level paths some tests use directly (the conventional sibling when nothing is found: those tests are
#: marked ``artifact`` and left out then).
ROUTEBR_ARTIFACT = FOUND_ROUTEBR or SHARED / "routebr_artifact"
METAROUTE_ARTIFACT = FOUND_METAROUTE or SHARED / "metaroute_artifact"
ON_CI = bool(os.environ.get("CI"))


def _needs_artifact(item: pytest.Item) -> bool:
    if item.get_closest_marker("artifact") is not None:
        return True
    if NEEDS_ARTIFACT & set(getattr(item, "fixturenames", ())):
        return True
    spec = getattr(item, "callspec", None)  # a notebook run on the published artifact (variant "artifact")
    return spec is not None and "artifact" in [v for v in spec.params.values() if isinstance(v, str)]


def _missing(item: pytest.Item) -> bool:
    names = set(getattr(item, "fixturenames", ()))
    if FOUND_ROUTEBR is None:
        return True
    return "metaroute_artifact" in names and FOUND_METAROUTE is None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if ON_CI:
        return  # CI requires the artifacts: the fixtures fail instead
    left_out = [item for item in items if _needs_artifact(item) and _missing(item)]
    if left_out:
        kept = [item for item in items if item not in set(left_out)]
        items[:] = kept
        config._routebr_skipped = len(left_out)  # type: ignore[attr-defined]


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    n = getattr(config, "_routebr_skipped", 0)
    if n:
        terminalreporter.write_line(SKIP_LINE.format(n=n))


def _require(path: Path | None, what: str) -> Path:
    if path is None:
        pytest.fail(f"{what} not found: set ${'ROUTEBR' if 'RouteBR' in what else 'METAROUTE'}_ARTIFACT, "
                    f"run make artifact, or clone the kit beside ../shared", pytrace=False)
    return path


@pytest.fixture(scope="session")
def routebr_artifact() -> Path:
    return _require(FOUND_ROUTEBR, "published RouteBR artifact")


@pytest.fixture(scope="session")
def metaroute_artifact() -> Path:
    return _require(FOUND_METAROUTE, "published MetaRoute outputs")


@pytest.fixture(scope="session")
def kit_data() -> Path:
    return KIT_DATA
