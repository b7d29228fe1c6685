"""What the kit reads and writes: asset loaders, the benchmark vocabulary and cases, ledgers, the published artifact.

Standard library only, like the core it loads for.
"""

from .assets import Assets, assets_beside, load_assets, load_catalog, load_registry, load_rules, read_csv, read_json
from .cases import Case, Gold, Language, ObjectDifficulty, Split, load_cases

__all__ = ["Assets", "Case", "Gold", "Language", "ObjectDifficulty", "Split", "assets_beside", "load_assets",
           "load_cases", "load_catalog", "load_registry", "load_rules", "read_csv", "read_json"]
