"""A notebook re-run over a runs folder that an older kit wrote: a banner and a fresh run beside, never a traceback.

The research-question notebooks keep their simulated runs in ``runs_dir`` and resume them.  When the kit changes (the
controller's source hash in every run manifest differs), resuming those runs would mix two kits, and the runner
refuses (``INCONSISTENT_ASSETS``).  The notebook must instead say so in its banner, leave the old runs untouched and
run fresh beside them — and reach the same tables as a run on an empty folder.
"""

from __future__ import annotations

import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
NOTEBOOK = REPO / "notebooks" / "03_rq1_routing_correctness.ipynb"
OLDER_KIT = "0" * 64  # the controller hash an older kit recorded


def _execute(out_dir: Path, runs_dir: Path) -> dict:
    import papermill as pm

    out_dir.mkdir()
    pm.execute_notebook(str(NOTEBOOK), str(out_dir / "executed.ipynb"), cwd=str(NOTEBOOK.parent),
                        parameters={"source": "simulated", "seed": 1, "out_dir": str(out_dir),
                                    "runs_dir": str(runs_dir)},
                        progress_bar=False, kernel_name="python3")
    return json.loads((out_dir / "executed.ipynb").read_text(encoding="utf-8"))


def _outputs_text(notebook: dict) -> str:
    parts = []
    for cell in notebook["cells"]:
        for output in cell.get("outputs", ()):
            parts += output.get("text", ())
            for value in output.get("data", {}).values():
                parts += value if isinstance(value, list) else [str(value)]
    return "".join(parts)


def _tables(out_dir: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((out_dir / "tables").glob("*.csv"))}


def test_runs_of_an_older_kit_are_kept_and_the_notebook_runs_fresh_beside_them(tmp_path):
    runs = tmp_path / "runs"
    first = _execute(tmp_path / "first", runs)
    manifests = sorted(runs.rglob("run_manifest.json"))
    assert manifests and "holds a run made under other inputs" not in _outputs_text(first)
    for path in manifests:  # what the same folder looks like after the kit changed
        manifest = json.loads(path.read_text(encoding="utf-8"))
        manifest["hashes"]["controller"] = OLDER_KIT
        path.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    old = {p: p.read_bytes() for p in runs.rglob("*") if p.is_file()}

    again = _execute(tmp_path / "again", runs)  # papermill raises on any cell error

    text = _outputs_text(again)
    assert "holds a run made under other inputs" in text and "hashes.controller" in text
    assert {p: p.read_bytes() for p in old} == old  # the older kit's runs are untouched
    beside = sorted(p.parent for p in runs.rglob("run_manifest.json") if "@" in p.parent.name)
    assert len(beside) == len(manifests)
    assert all(json.loads((p / "run_manifest.json").read_text(encoding="utf-8"))["hashes"]["controller"] != OLDER_KIT
               for p in beside)
    assert _tables(tmp_path / "again") == _tables(tmp_path / "first")  # same inputs, same results
