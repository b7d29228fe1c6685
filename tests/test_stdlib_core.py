"""The controller core and everything replay needs import nothing outside the standard library."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "routebr_kit"
STDLIB_MODULES = sorted([*(PACKAGE / "core").glob("*.py"),
                         *(PACKAGE / "backends" / name for name in ("__init__.py", "scripted.py", "replay.py")),
                         *(PACKAGE / "store" / name for name in ("__init__.py", "assets.py", "cases.py", "ledger.py",
                                                                 "artifact.py", "redact.py", "fetch.py")),
                         PACKAGE / "runs" / "replay.py"])


def _top_level_imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
             for alias in node.names}
    names |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module}
    return names


@pytest.mark.parametrize("path", STDLIB_MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_module_imports_only_the_standard_library(path):
    third_party = _top_level_imports(path) - set(sys.stdlib_module_names) - {"__future__"}
    assert not third_party, f"{path.name} imports {sorted(third_party)}"


def test_importing_the_kit_and_replaying_loads_no_third_party_package():
    import subprocess

    code = ("import sys, routebr_kit, routebr_kit.store.artifact, routebr_kit.store.ledger, routebr_kit.runs.replay; "
            "heavy = {'numpy', 'pandas', 'scipy', 'openai', 'matplotlib', 'yaml'} & set(sys.modules); "
            "print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_core_imports_nothing_outside_itself():
    """The online path depends on no other part of the kit (records, rules, contract, controller, calls)."""
    for path in (PACKAGE / "core").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level == 2 and node.module is None and [a.name for a in node.names] == ["lazy_exports"]:
                    continue  # the package's one export hook (standard library only), as in every namespace
                assert node.level <= 1, f"{path.name} reaches outside core: {'.' * node.level}{node.module}"
                assert not (node.module or "").startswith("routebr_kit"), f"{path.name} imports {node.module}"
