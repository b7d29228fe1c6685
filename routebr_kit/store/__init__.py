"""What the kit reads and writes: asset loaders, the benchmark vocabulary and cases, ledgers, the published artifact.

Standard library only, like the core it loads for.
"""

from .. import lazy_exports
from .assets import Assets, assets_beside, load_assets, load_catalog, load_registry, load_rules, read_csv, read_json
from .cases import Case, Gold, Language, ObjectDifficulty, Split, load_cases

#: Loaded on first use (the published artifact's reader and the ledger files).
_LAZY: dict[str, str] = {
    "ARTIFACT_ENV": "artifact",
    "CONFIRM": "artifact",
    "SELECT": "artifact",
    "Artifact": "artifact",
    "ArtifactTask": "artifact",
    "artifact_candidates": "artifact",
    "find_artifact": "artifact",
    "is_artifact_dir": "artifact",
    "PredictionRow": "ledger",
    "RunLedger": "ledger",
    "read_predictions": "ledger",
    "write_predictions": "ledger",
}

__all__ = [*sorted(_LAZY), "Assets", "Case", "Gold", "Language", "ObjectDifficulty", "Split", "assets_beside",
           "load_assets", "load_cases", "load_catalog", "load_registry", "load_rules", "read_csv", "read_json"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
