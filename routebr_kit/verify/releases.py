"""The release gate's hook (``routebr-kit diff --gate 'widening <= 0'``): the releases two ledger sets ran under, and
the number of actions whose dispatch set the candidate widens.

A ledger root is resolved to its assets when it is the published artifact (or its ``experiments/results``) or a
shadow output (its ``shadow_manifest.json`` names the candidate files it was replayed under).  Run directories record
only their assets' hashes, so they cannot be resolved: the gate then fails loudly (pass the releases explicitly).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.artifact import Artifact, is_artifact_dir
from ..store.assets import Assets, load_assets, read_json
from .semdiff import semantic_diff

#: Gate metrics computed from the two releases rather than from the paired rows.
RELEASE_METRICS = ("widening",)
SHADOW_MANIFEST = "shadow_manifest.json"


def release_assets(root: str | Path) -> Assets:
    """The assets a ledger set ran under (see the module docstring)."""
    path = Path(root)
    for candidate in (path, path.parent.parent):
        if is_artifact_dir(candidate):
            return Artifact(candidate).assets
    manifest = path / SHADOW_MANIFEST
    if manifest.is_file():
        doc = read_json(manifest, "a shadow_manifest.json object")
        files = ((doc.get("edit") or {}).get("candidate") or {}).get("files") or {}
        if not files.get("catalog") or not files.get("rules"):
            raise DataError(ErrorCode.MISSING_COLUMN, "edit.candidate.files with catalog and rules", file=str(manifest),
                            field="edit")
        return load_assets(files["catalog"], files["rules"], files.get("registry"), files.get("state_schema"))
    raise DataError(ErrorCode.UNKNOWN_REFERENCE, "the published artifact or a shadow output (whose manifest names "
                    "its asset files) for a release metric such as widening", file=str(path), field="widening")


def release_metrics(base_root: str | Path, candidate_root: str | Path,
                    releases: tuple[Assets, Assets] | None = None) -> Mapping[str, Any]:
    """``{"widening": n}``: actions whose dispatch set grows (relation widening or incomparable)."""
    a, b = releases if releases is not None else (release_assets(base_root), release_assets(candidate_root))
    diff = semantic_diff(a.catalog, a.policy, b.catalog, b.policy, a.registry, b.registry, witnesses=False)
    return {"widening": float(diff.widening)}


__all__ = ["RELEASE_METRICS", "release_assets", "release_metrics"]
