"""What the kit reads and writes: asset loaders, the benchmark vocabulary and cases, ledgers, the published artifact.

Standard library only, like the core it loads for.
"""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "artifact": "ARTIFACT_ENV Artifact ArtifactTask CONFIRM SELECT artifact_candidates find_artifact "
        "is_artifact_dir",
    "assets": "Assets assets_beside load_assets load_catalog load_registry load_rules read_csv read_json",
    "cases": "Case Gold Language ObjectDifficulty Split load_cases",
    "ledger": "PredictionRow RunLedger read_predictions write_predictions",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
