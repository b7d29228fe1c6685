"""Where the published MetaRoute-Bench outputs are found (notebooks 08 and 09), and the banner that says so.

The search order mirrors the RouteBR artifact's: an explicit path, ``$METAROUTE_ARTIFACT``, the kit's
``artifacts/metaroute/`` folder, a ``metaroute_artifact`` folder beside the RouteBR artifact that was found, and
the sibling checkout ``../shared/metaroute_artifact``.  A folder counts when it holds the published ``main/`` and
``ablations/`` summaries.  Nothing here fails: without the outputs the notebook still runs the benchmark and only
skips the byte-for-byte comparison — the banner says which.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

from ..store.artifact import SIBLING_DIR, find_artifact
from ..store.kitfiles import source_checkout

METAROUTE_ENV = "METAROUTE_ARTIFACT"
_SUITES = ("main", "ablations")


class MetaRouteSource(NamedTuple):
    path: Path | None
    banner: str


def is_metaroute_artifact(path: str | Path) -> bool:
    root = Path(path)
    return all((root / suite / "summary.csv").is_file() for suite in _SUITES)


def metaroute_candidates(explicit: str | Path | None = None) -> tuple[tuple[str, Path], ...]:
    found: list[tuple[str, Path]] = []
    if explicit:
        found.append(("explicit path", Path(explicit)))
    if os.environ.get(METAROUTE_ENV):
        found.append((f"${METAROUTE_ENV}", Path(os.environ[METAROUTE_ENV])))
    checkout = source_checkout()
    found.append(("conventional folder", (checkout or Path.cwd()) / "artifacts" / "metaroute"))
    routebr = find_artifact()
    if routebr is not None:
        found.append(("beside the RouteBR artifact", routebr.parent / "metaroute_artifact"))
    if checkout is not None:  # an installed wheel has no sibling checkout (never a path inside the venv)
        found.append(("sibling checkout", SIBLING_DIR.parent / "metaroute_artifact"))
    return tuple(found)


def resolve_metaroute(explicit: str | Path | None = None) -> MetaRouteSource:
    """The published MetaRoute outputs to compare with (``None`` when none is found) and a Markdown banner."""
    if explicit and not is_metaroute_artifact(explicit):
        return MetaRouteSource(None, f"**Published MetaRoute outputs: not used.** The given `{explicit}` holds no "
                               "`main/summary.csv` and `ablations/summary.csv`; the benchmark runs as usual and the "
                               "byte-for-byte comparison is skipped. Fix the path or leave it empty to discover.")
    for how, path in metaroute_candidates(explicit):
        if is_metaroute_artifact(path):
            return MetaRouteSource(path.resolve(), f"**Published MetaRoute outputs found** ({how} `{path.resolve()}`):"
                                   " with the published setup the exported files are compared with them byte for "
                                   "byte. To skip the comparison, set `overrides` or another `seeds`.")
    looked = ", ".join(f"{how} `{path}`" for how, path in metaroute_candidates(explicit))
    return MetaRouteSource(None, "**Published MetaRoute outputs not found** (looked in: " + looked + "). The "
                           "benchmark is seeded and offline, so every number below is still computed; only the "
                           f"byte-for-byte comparison is skipped. Point `${METAROUTE_ENV}` or "
                           "`metaroute_artifact_dir` at a copy to enable it.")


__all__ = ["METAROUTE_ENV", "MetaRouteSource", "is_metaroute_artifact", "metaroute_candidates", "resolve_metaroute"]
