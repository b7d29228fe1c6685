"""Release review on the kit's own benchmark: `run` directories in, shadow ledgers out, diff and impact over them."""

from __future__ import annotations

import csv
import json

import pytest

from routebr_kit.backends.registry import make_backend
from routebr_kit.cli.app import main
from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.cases import Split, load_cases
from routebr_kit.store.ledger import RunLedger


@pytest.fixture(scope="module")
def kit_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("kit")
    bench = root / "bench"
    write_benchmark(generate_benchmark(0, "en"), bench)
    cases_path = bench / "routebr_confirm_320.csv"
    assets = assets_beside(cases_path)
    cases = [c for c in load_cases(cases_path) if c.split is Split.ENTITY]
    backend = make_backend("sim:deepseek_v4_primary", cases=cases, catalog=assets.catalog, seed=0)
    run_cases(cases, backend, system="routebr", assets=assets, out_dir=root / "run", progress=False,
              cases_path=cases_path)
    return root, bench, cases_path


def test_identical_shadow_of_a_run_changes_nothing_and_receipts_replay(kit_run, tmp_path):
    root, bench, cases_path = kit_run
    assert main(["shadow", "--ledger", str(root / "run"), "--cases", str(cases_path), "--receipts",
                 "--out", str(tmp_path / "s")]) == 0
    assert json.loads((tmp_path / "s" / "shadow_manifest.json").read_text())["changed_decisions"] == 0
    assert RunLedger(tmp_path / "s").committed() == RunLedger(root / "run").committed()
    # a shadow output is itself a ledger: shadow it again, from its receipts
    assert main(["shadow", "--ledger", str(tmp_path / "s"), "--base-assets", str(bench),
                 "--out", str(tmp_path / "s2")]) == 0
    assert main(["diff", str(root / "run"), str(tmp_path / "s2"), "--cases", str(cases_path),
                 "--gate", "changed <= 0"]) == 0


def test_delisting_an_entity_flags_every_affected_row_and_diff_needs_cases(kit_run, tmp_path, capsys):
    root, bench, cases_path = kit_run
    rows = RunLedger(root / "run").committed()
    target = next(r.pred_object_id for r in rows if not r.pred_final_path.startswith("T_")
                  and r.pred_object_id not in ("NONE", "UNRESOLVED"))
    registry = tmp_path / "registry.csv"
    with open(bench / "registry.csv", encoding="utf-8", newline="") as src, \
            open(registry, "w", encoding="utf-8", newline="") as dst:
        reader = csv.reader(src)
        writer = csv.writer(dst)
        for record in reader:
            if record[0] != target:
                writer.writerow(record)
    assert main(["shadow", "--ledger", str(root / "run"), "--cases", str(cases_path), "--registry", str(registry),
                 "--out", str(tmp_path / "s")]) == 0
    manifest = RunLedger(tmp_path / "s").manifest()
    flagged = {e["case_id"] for e in manifest["shadow"]["needs_live_rerun"]}
    entries = manifest["shadow"]["needs_live_rerun"]
    assert flagged and all("CANDIDATES_CHANGED" in e["flags"] for e in entries)
    # the recorded object is now outside the closed list: the controller would ask for a repair nobody recorded
    assert any("UNRECORDED_CALL" in e["flags"] for e in entries)
    assert main(["diff", str(root / "run"), str(tmp_path / "s")]) == 2  # the plain run names no cases file
    assert "--cases" in capsys.readouterr().err
    out = tmp_path / "d.json"
    # the shadow changed the registry by a file the manifests only hash: the exact widening check cannot load the
    # candidate release, so the default gate fails closed and says why (the paired diff is still written)
    assert main(["diff", str(root / "run"), str(tmp_path / "s"), "--cases", str(cases_path),
                 "--json", str(out)]) == 1
    assert "widening <= 0 (not measured: the releases are not known)" in capsys.readouterr().out
    changed = json.loads(out.read_text())["changed"]
    assert changed and {c["case_id"] for c in changed} <= flagged
    assert all(c["needs_live_rerun"] for c in changed)
    cand = tmp_path / "cand"
    cand.mkdir()
    for name in ("catalog.csv", "boundary_rules.csv"):
        (cand / name).write_bytes((bench / name).read_bytes())
    (cand / "registry.csv").write_bytes(registry.read_bytes())
    assert main(["impact", "--base-assets", str(bench), "--candidate-assets", str(cand), "--ledger",
                 str(root / "run"), "--cases", str(cases_path), "--json", str(tmp_path / "i.json")]) == 0
    selection = json.loads((tmp_path / "i.json").read_text())
    assert {r["case_id"] for r in selection["exact"]["registry"]} == flagged
    assert f"{target} (removed)" in capsys.readouterr().out
