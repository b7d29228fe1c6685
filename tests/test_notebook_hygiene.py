"""Committed notebooks: kernel python3, one literals-only parameters cell, no volatile metadata, a teaching shape."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def _load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_there_are_notebooks() -> None:
    assert NOTEBOOKS, "notebooks/ is empty"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_kernelspec_is_python3(path: Path) -> None:
    nb = _load(path)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert set(nb["metadata"]) <= {"kernelspec", "language_info"}
    assert nb["metadata"].get("language_info", {}) in ({}, {"name": "python"})


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_one_parameters_cell_of_literals(path: Path) -> None:
    cells = _load(path)["cells"]
    tagged = [c for c in cells if "parameters" in c.get("metadata", {}).get("tags", [])]
    assert len(tagged) == 1
    tree = ast.parse("".join(tagged[0]["source"]))
    assert tree.body, "empty parameters cell"
    for node in tree.body:
        assert isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name)
        ast.literal_eval(node.value)  # raises if a parameter is derived rather than literal
    # papermill must see every parameter (it cannot parse e.g. '=' inside a trailing comment)
    import papermill as pm

    assert list(pm.inspect_notebook(str(path))) == [node.targets[0].id for node in tree.body]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_no_volatile_metadata(path: Path) -> None:
    cells = _load(path)["cells"]
    for i, cell in enumerate(cells):
        meta = cell.get("metadata", {})
        assert "papermill" not in meta and "execution" not in meta and "ExecuteTime" not in meta, f"cell {i}"
    # nbval needs execution counts; executed top to bottom once they are simply 1..N
    counts = [c.get("execution_count") for c in cells if c["cell_type"] == "code"]
    assert counts == list(range(1, len(counts) + 1))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_teaches(path: Path) -> None:
    """Opens with its research question in words, explains before showing, ends with what the numbers mean."""
    cells = _load(path)["cells"]
    assert cells[0]["cell_type"] == "markdown"
    opening = "".join(cells[0]["source"]).lower()
    assert "question" in opening
    assert cells[-1]["cell_type"] == "markdown"
    assert "mean" in "".join(cells[-1]["source"]).lower()
    checked = [c for c in cells if c["cell_type"] == "code" and "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")]
    assert checked, "no cell is checked by nbval"
