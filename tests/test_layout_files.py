"""Layout: one strict file reader.  Outside :mod:`routebr_kit.store` no code parses file contents itself.

Every call of a parser — ``json.load(s)``, a ``json.JSONDecoder``, any ``yaml`` loader, ``csv.reader`` /
``csv.DictReader``, ``tomllib``, ``pickle``, ``pandas.read_*`` — and every ``from json import loads``-style import
of one is found by walking the AST of each module.  The reader itself (``store/``) and the core's strict JSON for
model replies (``core/strict_json.py``, which ``store/files.py`` builds on) may parse; the few other places that
parse text that is not a file the kit reads are listed in :data:`ALLOWED`, each with its reason.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "routebr_kit"

PARSERS = {
    "json": {"load", "loads", "JSONDecoder"},
    "yaml": {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all", "full_load_all",
             "unsafe_load_all", "compose", "compose_all", "parse", "scan", "SafeLoader", "CSafeLoader", "Loader",
             "CLoader", "FullLoader", "UnsafeLoader", "BaseLoader"},
    "csv": {"reader", "DictReader", "Sniffer"},
    "tomllib": {"load", "loads"},
    "pickle": {"load", "loads", "Unpickler"},
    "marshal": {"load", "loads"},
    "pandas": {"read_csv", "read_json", "read_table", "read_pickle", "read_parquet", "read_excel"},
    "pd": {"read_csv", "read_json", "read_table", "read_pickle", "read_parquet", "read_excel"},
}
READER_MODULES = ("routebr_kit/store/", "routebr_kit/core/strict_json.py")

#: (module path, enclosing function, parser) → why it is not a file read that belongs in the reader.
ALLOWED = {
    ("routebr_kit/prompts/published.py", "parse", "json.loads"):
        "the published validator's own parse of a model reply (lenient on purpose: it is what the published code "
        "accepted); the kit's validation of the same reply is core/strict_json",
    ("routebr_kit/runs/leakage.py", "_walk", "json.loads"):
        "the leak detector decodes JSON held in strings of a request body leniently, to find gold text even in "
        "text the strict rules would reject; nothing it decodes is used",
    ("routebr_kit/review/assets.py", "registry_without", "csv.reader"):
        "splits one line of a registry (read by store.files.read_text) to drop it while copying the others byte "
        "for byte",
    ("routebr_kit/metaroute/sweep.py", "load_sweep", "pd.read_csv"):
        "tables the sweep itself wrote, each checked against the SHA-256 in its manifest before it is read",
}


def _parser_uses(path: Path) -> list[tuple[str, str, int]]:
    """``(enclosing function, "module.name", line)`` for every parser a module calls or imports by name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[tuple[str, str, int]] = []
    aliases = {}  # local name -> module, for `import yaml as y`, `import pandas as pd`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                root = alias.name.split(".")[0]
                if root in PARSERS:
                    aliases[alias.asname or root] = root
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PARSERS:
            for alias in node.names:
                if alias.name in PARSERS[node.module.split(".")[0]]:
                    found.append(("<import>", f"{node.module}.{alias.name}", node.lineno))

    def visit(node: ast.AST, function: str) -> None:
        for child in ast.iter_child_nodes(node):
            name = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function
            if isinstance(child, ast.Attribute) and isinstance(child.value, ast.Name):
                module = aliases.get(child.value.id, child.value.id if child.value.id == "pd" else None)
                if module is not None and child.attr in PARSERS.get(module, ()):
                    found.append((function, f"{child.value.id}.{child.attr}", child.lineno))
            visit(child, name)

    visit(tree, "<module>")
    return found


def _uses() -> dict[tuple[str, str, str], int]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        if rel.startswith(READER_MODULES):
            continue
        for function, parser, line in _parser_uses(path):
            out[(rel, function, parser)] = line
    return out


def test_no_code_outside_store_parses_file_contents():
    stray = [f"{rel}:{line} {function}() calls {parser}" for (rel, function, parser), line in _uses().items()
             if (rel, function, parser) not in ALLOWED]
    assert stray == [], "read files with routebr_kit.store.files (read_json, read_yaml, read_document, parse_json)"


def test_every_allowed_parser_use_still_exists():
    assert set(ALLOWED) <= set(_uses()), "drop allow-list entries whose parser call is gone"


def test_the_scan_finds_calls_aliases_and_imports(tmp_path):
    module = tmp_path / "m.py"
    module.write_text("import json\nimport yaml as y\nfrom csv import reader\n"
                      "def f(p):\n    return json.loads(p), y.safe_load(p)\n", encoding="utf-8")
    assert sorted((f, p) for f, p, _ in _parser_uses(module)) == [
        ("<import>", "csv.reader"), ("f", "json.loads"), ("f", "y.safe_load")]
