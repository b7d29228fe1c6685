"""Folders the report tests build: a small simulated run (with one hostile case text), a loosening rule edit shadowed
over the published artifact, and a synthetic ledger of any size."""

from __future__ import annotations

import csv
import random
import shutil
from pathlib import Path

from routebr_kit.backends.registry import make_backend
from routebr_kit.core.records import System
from routebr_kit.review.ledgers import SHADOW_KEY, LedgerSet, LedgerTask, RowDetail
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.assets import assets_beside
from routebr_kit.store.cases import load_cases
from routebr_kit.store.ledger import prediction_from_decision

#: A case text that would end a naively embedded <script> element and run code of its own.
HOSTILE = '</script><script>window.__pwned = 1</script><!-- "quoted" & <b>bold</b> \u2028 end'
HOSTILE_CASE = "MAIN-0004"


def hostile_cases(artifact: Path, folder: Path) -> Path:
    """The published CONFIRM cases and assets copied to ``folder``, one utterance replaced by :data:`HOSTILE`."""
    folder.mkdir(parents=True, exist_ok=True)
    data = artifact / "data"
    for name in ("catalog.csv", "boundary_rules.csv", "entity_catalog.csv"):
        shutil.copy(data / name, folder / name)
    with open(data / "routebr_confirm_320.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
        fields = list(rows[0].keys())
    for row in rows:
        if row["case_id"] == HOSTILE_CASE:
            row["utterance"] = HOSTILE
    path = folder / "routebr_confirm_320.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def simulated_run(artifact: Path, folder: Path, *, per_split: int = 30) -> tuple[Path, Path]:
    """A routebr run with ``sim:deepseek_v4_primary`` over the first ``per_split`` cases of each split (hostile case
    included); returns (run directory, cases file)."""
    cases_path = hostile_cases(artifact, folder / "cases")
    cases = load_cases(cases_path)
    chosen = []
    for split in ("MAIN", "FLIP", "ENTITY"):
        chosen += [c for c in cases if c.split.value == split][:per_split]
    assets = assets_beside(cases_path)
    backend = make_backend("sim:deepseek_v4_primary", cases=chosen, catalog=assets.catalog, seed=0)
    out = folder / "run"
    run_cases(chosen, backend, system=System.ROUTEBR, assets=assets, out_dir=out, progress=False,
              cases_path=cases_path)
    return out, cases_path


def loosening_edit(artifact: Path, folder: Path) -> Path:
    """Candidate assets: the published rules without R060 (permission) and R070 at version v2 deciding HANDOFF."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = (artifact / "data" / "boundary_rules.csv").read_text(encoding="utf-8").splitlines(keepends=True)
    out = []
    for line in lines:
        if line.startswith("R060,"):
            continue
        if line.startswith("R070,"):
            line = line.replace(",CLARIFY,", ",HANDOFF,").replace(",v1\n", ",v2\n")
        out.append(line)
    (folder / "boundary_rules.csv").write_text("".join(out), encoding="utf-8")
    return folder


def synthetic_ledger(artifact: Path, rows: int, *, seed: int = 0, per_task: int = 3200) -> LedgerSet:
    """``rows`` controller rows over the published CONFIRM cases, in tasks of ``per_task`` rows (one repeat per pass
    over the cases), each decided by ``Controller.decide`` on a seeded proposal (gold, or a wrong action/object).

    The tasks look like a shadow written without receipts (a per-row record of rule, object gate and reason), so the
    report shows them without replaying anything: the fixture measures the browser, not the replay.
    """
    data = artifact / "data"
    cases = {c.case_id: c for c in load_cases(data / "routebr_confirm_320.csv")}
    assets = assets_beside(data / "routebr_confirm_320.csv")
    controller = assets.controller()
    actions = list(assets.catalog.ids)
    rng = random.Random(seed)
    ordered = sorted(cases.values(), key=lambda c: c.case_id)
    tasks: dict[str, LedgerTask] = {}
    made = 0
    task_no = 0
    while made < rows:
        chunk, details = [], {}
        repeat = 0
        while len(chunk) < per_task and made < rows:
            for case in ordered:
                if len(chunk) >= per_task or made >= rows:
                    break
                gold = case.gold
                action = gold.action if gold.action in actions and rng.random() > 0.1 else rng.choice(actions)
                ids = [e.object_id for e in case.request.candidates]
                obj = gold.object_id if rng.random() > 0.05 else rng.choice(ids + ["UNRESOLVED"])
                if not assets.catalog[action].requires_object:
                    obj = "NONE"
                d = controller.decide(case.request, {"action_id": action, "object_id": obj, "topk": [action]})
                row = prediction_from_decision(d, "routebr", repeat_id=str(repeat))
                chunk.append(row)
                details[(row.case_id, row.repeat_id)] = RowDetail.of_decision(d)
                made += 1
            repeat += 1
        key = f"synthetic/task-{task_no:03d}"
        manifest = {"system": "routebr", SHADOW_KEY: {"source": str(artifact / "no-such-source"),
                                                      "source_key": "synthetic", "source_backend": "synthetic"}}
        tasks[key] = LedgerTask(key, System.ROUTEBR, tuple(chunk), cases, artifact / key, (), manifest, details,
                                data / "routebr_confirm_320.csv")
        task_no += 1
    return LedgerSet(artifact / "synthetic", "runs", tasks, assets)


#: Where a ``reproduce`` output keeps each copy of the simulated run (relative to its ``runs/``), in the order the
#: report must list them: the headline study run, a near-duplicate beside it, a side run in a folder of its own.
REPRODUCE_RUNS = ("sim-deepseek_v4_primary/seed-0/benchmark/routebr/main",
                  "sim-deepseek_v4_primary/seed-0/routebr-main",
                  "guarantee-search/sim-deepseek_v4_primary/seed-1/en-1/routebr/main")


def reproduce_output(run: Path, cases: Path, folder: Path) -> Path:
    """A folder shaped like a ``routebr-kit reproduce`` output holding ``run`` at each of :data:`REPRODUCE_RUNS`."""
    import json

    for relative in REPRODUCE_RUNS:
        shutil.copytree(run, folder / "runs" / relative)
    shutil.copytree(cases.parent, folder / "01_dataset_construction" / "benchmark")
    (folder / "manifest.json").write_text(json.dumps({"params_name": "default", "artifact": None, "notebooks": [
        {"name": "01_dataset_construction", "status": "ok", "seconds": 1.0, "parameters": {}}]}), encoding="utf-8")
    return folder
