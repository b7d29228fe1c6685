"""Notebook outputs: tables (CSV + Markdown), figures (PNG + PDF) written deterministically, captions indexed."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from routebr_kit.notebook.outputs import CAPTIONS, Outputs, markdown_table


def test_tables_and_captions(tmp_path):
    out = Outputs(tmp_path, notebook="nb")
    frame = pd.DataFrame({"system": ["A|B", "C"], "rate": [0.97501, float("nan")]})
    out.table(frame, "t1", "first caption")
    out.table(frame, "t1", "replaced caption")  # same name: one entry, the latest caption
    assert (tmp_path / "tables" / "t1.csv").read_text() == "system,rate\nA|B,0.9750\nC,\n"
    md = (tmp_path / "tables" / "t1.md").read_text()
    assert md.startswith("**replaced caption**") and "| A\\|B | 0.975 |" in md and "| C |  |" in md
    entries = json.loads((tmp_path / CAPTIONS).read_text())
    assert entries == [{"kind": "table", "name": "t1", "caption": "replaced caption",
                        "files": ["tables/t1.csv", "tables/t1.md"], "notebook": "nb"}]
    assert not (tmp_path / "figures").exists()  # folders appear only when used


def test_figures_are_byte_identical_across_saves(tmp_path):
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    first = Outputs(tmp_path / "a").figure(fig, "f", "a figure")
    second = Outputs(tmp_path / "b").figure(fig, "f", "a figure")
    assert first.read_bytes() == second.read_bytes()
    assert first.with_suffix(".pdf").read_bytes() == second.with_suffix(".pdf").read_bytes()
    plt.close(fig)


def test_markdown_table_with_index():
    frame = pd.DataFrame({"n": [1]}, index=pd.Index(["x"], name="key"))
    assert markdown_table(frame, index=True) == "| key | n |\n|---|---|\n| x | 1 |"
