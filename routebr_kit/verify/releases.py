"""The release gate's hook (``routebr-kit diff --gate 'widening <= 0'``): the releases two ledger sets ran under, and
the number of actions whose dispatch set the candidate widens.

A ledger root is resolved to its assets when it is the published artifact (or its ``experiments/results``) or a
shadow output (its ``shadow_manifest.json`` names the candidate files it was replayed under).  Run directories record
only their assets' hashes, so they cannot be resolved: the gate then fails loudly (pass the releases explicitly).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.artifact import Artifact, is_artifact_dir
from ..store.assets import Assets, load_assets, read_json
from .semdiff import SemanticDiff, semantic_diff

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


# --------------------------------------------------------------------------------------------- the default gates

#: The assets whose change can change a controller decision: the semantic diff runs whenever one of them differs.
DECISION_ASSETS = ("catalog", "rules", "registry", "state_schema")


def assets_hashes(assets: Assets) -> dict[str, str | None]:
    """The hashes a run manifest records for the decision assets (``runs.runner``, ``review.shadow``)."""
    return {"catalog": assets.catalog.sha256, "rules": assets.policy.sha256,
            "registry": assets.registry.sha256 if assets.registry is not None else None,
            "state_schema": assets.policy.state_schema.sha256 or None}


def manifest_hashes(ledgers: Any) -> dict[str, Any] | None:
    """The release hashes a ledger set's manifests record (``None`` when a task records none, or tasks disagree)."""
    found: dict[str, Any] | None = None
    for task in getattr(ledgers, "tasks", {}).values():
        hashes = (task.manifest or {}).get("hashes")
        if not isinstance(hashes, Mapping) or not any(k in hashes for k in ("catalog", "rules")):
            return None
        mine = {k: hashes.get(k) for k in (*DECISION_ASSETS, "prompts", "profile")}
        if found is not None and found != mine:
            return None
        found = mine
    return found


def differing_assets(base: Mapping[str, Any] | None, candidate: Mapping[str, Any] | None,
                     keys: tuple[str, ...] = DECISION_ASSETS) -> tuple[str, ...] | None:
    """The assets whose hashes differ (``None``: a side records no hashes, so the releases cannot be compared)."""
    if base is None or candidate is None:
        return None
    return tuple(k for k in keys if base.get(k) != candidate.get(k))


@dataclass(frozen=True)
class ReleaseCheck:
    """The exact verifier's part of a default gate: which decision assets differ, and the semantic diff."""

    differs: tuple[str, ...]
    diff: SemanticDiff | None
    allow_widening: tuple[str, ...] = ()
    unresolved: str = ""  # why the releases could not be loaded (then the widening criterion fails)

    @property
    def widening(self) -> float:
        if self.diff is None:
            return math.nan if self.unresolved else 0.0
        return float(len(self.diff.blocking(self.allow_widening)))

    def lines(self, show: int = 2) -> list[str]:
        if not self.differs:
            return []
        out = [f"semantic diff of the releases ({', '.join(self.differs)} differ):"]
        if self.diff is None:
            return out + [f"  not computed: {self.unresolved}"]
        d = self.diff
        out += [f"  {a.action_id}: {a.relation.value.upper()}" + (
            " (allowed)" if a.action_id in self.allow_widening and a.relation.value in ("widening", "incomparable")
            else "") for a in d.actions if a.relation.value != "equivalent"] or ["  every action equivalent"]
        for a in d.actions:
            if a.action_id in d.blocking(self.allow_widening):
                out += ["    " + w.line() for w in a.witnesses if w.candidate.terminal.value == "DISPATCH"
                        and w.base.terminal.value != "DISPATCH"][:show]
        out += [f"  schema change: {n}" for n in d.notes] + [f"  warning: {w}" for w in d.warnings]
        return out + [f"  {d.coverage_line()}"]

    def as_dict(self) -> dict[str, Any]:
        return {"differs": list(self.differs), "widening": self.widening, "unresolved": self.unresolved or None,
                "semantic_diff": None if self.diff is None else self.diff.as_dict(self.allow_widening)}


def release_check(base: Assets | None, candidate: Assets | None, *, observations: Sequence[Any] = (),
                  allow_widening: Sequence[str] = (), differs: tuple[str, ...] | None = None,
                  unresolved: str = "") -> ReleaseCheck:
    """The semantic diff of two releases when their decision assets differ (``differs`` from the manifests'
    hashes when given, else from the loaded assets)."""
    if differs is None:
        differs = differing_assets(assets_hashes(base), assets_hashes(candidate)) if base and candidate else ()
    if not differs:
        return ReleaseCheck((), None, tuple(allow_widening))
    if base is None or candidate is None:
        return ReleaseCheck(differs, None, tuple(allow_widening), unresolved or "the releases' asset files are not "
                            "known (run directories record only hashes): pass the releases (review --candidate-assets,"
                            " verify --base --candidate)")
    diff = semantic_diff(base.catalog, base.policy, candidate.catalog, candidate.policy, base.registry,
                         candidate.registry, observations=observations)
    return ReleaseCheck(differs, diff, tuple(allow_widening))


__all__ += ["DECISION_ASSETS", "ReleaseCheck", "assets_hashes", "differing_assets",
            "manifest_hashes", "release_check"]
