"""What the kit reads and writes: asset loaders, the benchmark vocabulary and cases, ledgers, the published artifact.

Standard library only, like the core it loads for.
"""

from .. import lazy_exports
from .assets import Assets, assets_beside, load_assets, load_catalog, load_registry, load_rules, read_csv, read_json
from .cases import Case, Gold, Language, ObjectDifficulty, Split, load_cases

#: Loaded on first use (the published artifact's reader and the ledger files): name -> module.
_LAZY: dict[str, str] = {name: module for module, names in {
    "artifact": "ARTIFACT_ENV CONFIRM SELECT Artifact ArtifactTask artifact_candidates find_artifact is_artifact_dir",
    "ledger": "PredictionRow RunLedger read_predictions write_predictions",
}.items() for name in names.split()}

__all__ = [*sorted(_LAZY), "Assets", "Case", "Gold", "Language", "ObjectDifficulty", "Split", "assets_beside",
           "load_assets", "load_cases", "load_catalog", "load_registry", "load_rules", "read_csv", "read_json"]


__getattr__, __dir__ = lazy_exports(__name__, _LAZY)
