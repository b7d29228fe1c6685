"""Notebook 08 finds the published MetaRoute outputs through ``$ROUTEBR_ARTIFACT`` (beside the RouteBR artifact, as
09 does) and its explorer opens agreeing with the headline run — or says exactly where and why it does not.

Two papermill runs: the published setup (30 seeds, exact mode) with the artifacts found only through
``$ROUTEBR_ARTIFACT`` (a temporary ``shared/`` whose folders link to the published ones), and a 10-seed run, where
the fast executor ranks the policies differently from the exact one and the text must say so.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest

pm = pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOK = NOTEBOOKS / "08_metaroute_bench.ipynb"
SEEDS = (30, 10)


def _linked(root: Path, artifact: Path) -> Path:
    root.mkdir(parents=True)
    for child in artifact.iterdir():
        (root / child.name).symlink_to(child)
    return root


@pytest.fixture(scope="module")
def runs(tmp_path_factory, routebr_artifact, metaroute_artifact) -> dict:
    base = tmp_path_factory.mktemp("metaroute_nb")
    routebr = _linked(base / "shared" / "routebr_artifact", routebr_artifact)
    metaroute = _linked(base / "shared" / "metaroute_artifact", metaroute_artifact)
    saved = {k: os.environ.get(k) for k in ("ROUTEBR_ARTIFACT", "METAROUTE_ARTIFACT")}
    os.environ["ROUTEBR_ARTIFACT"] = str(routebr)
    os.environ.pop("METAROUTE_ARTIFACT", None)
    out: dict = {"metaroute": metaroute}
    try:
        for seeds in SEEDS:
            out_dir = base / f"seeds-{seeds}"
            out_dir.mkdir()
            pm.execute_notebook(str(NOTEBOOK), str(out_dir / "executed.ipynb"),
                                parameters={"seeds": seeds, "out_dir": str(out_dir)}, cwd=str(NOTEBOOKS),
                                progress_bar=False, kernel_name="python3")
            out[seeds] = out_dir
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    return out


def _json(out_dir: Path, name: str) -> dict:
    return json.loads((out_dir / "tables" / f"{name}.json").read_text(encoding="utf-8"))


def _table(out_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out_dir / "tables" / f"{name}.csv", keep_default_na=False)


def _outputs(out_dir: Path) -> str:
    nb = json.loads((out_dir / "executed.ipynb").read_text(encoding="utf-8"))
    return "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                     for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", []))


def _rendered(out_dir: Path, variable: str) -> str:
    """The Markdown the notebook's ``%%conclusion <variable>`` cell displayed."""
    nb = json.loads((out_dir / "executed.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "".join(c["source"]).startswith(f"%%conclusion {variable}\n"))
    return "".join("".join(o["data"]["text/markdown"]) for o in cell["outputs"] if "text/markdown" in o.get("data", {}))


def test_the_published_outputs_are_found_through_the_routebr_variable(runs) -> None:
    text = _outputs(runs[30])
    assert f"beside the RouteBR artifact `{runs['metaroute']}`" in text
    assert "identical to the published files" in text  # the byte-for-byte check ran against the linked copy


@pytest.mark.parametrize("seeds", SEEDS)
def test_the_explorer_opens_at_the_headline_seeds(runs, seeds) -> None:
    out = runs[seeds]
    agreement = _json(out, "explorer_agreement")  # the facts of the %%conclusion agreement cell
    explorer, headline = _table(out, "explorer_defaults"), _table(out, "table2_summary")
    assert agreement["seeds"] == agreement["explorer_seeds"] == seeds and agreement["same_seeds"]
    assert f"fast mode, {seeds} seeds" in _outputs(out)
    assert agreement["explorer_top_success"] == pytest.approx(explorer["success_rate"].iloc[0], abs=1e-4)
    assert agreement["headline_top_success"] == pytest.approx(headline["success_rate"].iloc[0], abs=1e-4)
    same = explorer["policy"].iloc[0] == headline["policy"].iloc[0]
    text = _rendered(out, "agreement")
    assert f"with the headline's {seeds} seeds" in text
    assert (f"ranks *{headline['policy'].iloc[0]}* first too" in text) is same
    assert ("the two disagree" in text) is (not same)


def test_the_headline_and_the_explorer_agree_in_the_published_setup(runs) -> None:
    """The defect of issue 23: at the published setup the explorer ranked static_workload first."""
    out = runs[30]
    assert _table(out, "explorer_defaults")["policy"].iloc[0] == _table(out, "table2_summary")["policy"].iloc[0]
    conclusion = _json(out, "conclusions")
    assert conclusion["margin_pts"] > 0  # the closing section reports adaptive ahead, as the explorer shows
