"""Execute notebooks in place and strip volatile metadata — the one way committed outputs are regenerated.

    .venv/bin/python tools/refresh_notebooks.py                 # every notebook
    .venv/bin/python tools/refresh_notebooks.py notebooks/00_quickstart.ipynb
    .venv/bin/python tools/refresh_notebooks.py --check         # only verify hygiene (used by tests)

Hygiene rules (also asserted by tests/test_notebook_hygiene.py): kernelspec ``python3``; exactly one cell tagged
``parameters``; no ``papermill`` or ``execution`` cell metadata; execution counts 1..N (nbval needs them);
language_info reduced to its name; progress bars disabled while executing (``TQDM_DISABLE=1``).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
KERNELSPEC = {"name": "python3", "display_name": "Python 3", "language": "python"}


def clean(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    nb.metadata = nbformat.from_dict({"kernelspec": KERNELSPEC, "language_info": {"name": "python"}})
    for cell in nb.cells:
        cell.metadata.pop("papermill", None)
        cell.metadata.pop("execution", None)
        cell.metadata.pop("ExecuteTime", None)
        if cell.metadata.get("tags") == []:
            cell.metadata.pop("tags")
        if cell.cell_type == "code":
            for output in cell.outputs:
                output.get("metadata", {}).pop("execution", None)
    return nb


def problems(nb: nbformat.NotebookNode) -> list[str]:
    found = []
    if nb.metadata.get("kernelspec", {}).get("name") != "python3":
        found.append("kernelspec is not python3")
    tagged = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    if len(tagged) != 1:
        found.append(f"{len(tagged)} cells tagged 'parameters' (expected 1)")
    for i, cell in enumerate(nb.cells):
        if "papermill" in cell.metadata or "execution" in cell.metadata:
            found.append(f"cell {i} carries volatile execution metadata")
    counts = [c.execution_count for c in nb.cells if c.cell_type == "code"]
    if counts != list(range(1, len(counts) + 1)):
        found.append("execution counts are not 1..N in order (execute top to bottom with tools/refresh_notebooks.py)")
    return found


def refresh(path: Path, timeout: int) -> None:
    nb = nbformat.read(path, as_version=4)
    env_backup = dict(os.environ)
    os.environ.update({"TQDM_DISABLE": "1", "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"})
    try:
        NotebookClient(nb, timeout=timeout, kernel_name="python3",
                       resources={"metadata": {"path": str(path.parent)}}).execute()
    finally:
        os.environ.clear()
        os.environ.update(env_backup)
    nbformat.write(clean(nb), path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="only report hygiene problems")
    parser.add_argument("--timeout", type=int, default=900, help="per-cell timeout in seconds")
    args = parser.parse_args(argv)
    paths = args.notebooks or sorted((ROOT / "notebooks").glob("*.ipynb"))
    status = 0
    for path in paths:
        if args.check:
            for p in problems(nbformat.read(path, as_version=4)):
                print(f"{path}: {p}")
                status = 1
            continue
        print(f"executing {path} ...", flush=True)
        refresh(path, args.timeout)
    return status


if __name__ == "__main__":
    sys.exit(main())
