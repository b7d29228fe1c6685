"""Where notebook 10 gets its recorded traffic: the published artifact or the kit's simulated benchmark runs.

``source="auto"`` uses the artifact whenever :func:`~routebr_kit.store.artifact.find_artifact` finds one — an
explicit ``artifact_dir``, then ``$ROUTEBR_ARTIFACT``, the conventional ``artifacts/routebr/`` folder and the
sibling checkout, exactly as notebooks 02–07 and 11 do — and otherwise records base runs of the kit's generated
benchmark with a simulated backend (a simulation, not model evidence).  ``"artifact"`` demands the artifact (a
typed error when none is found); ``"simulated"`` never reads it.  An explicit ``artifact_dir`` that is not an
artifact is an error, never a silent fall-back.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core.errors import DataError, ErrorCode
from ..review import AssetFiles, ReviewSource, artifact_asset_files, load_ledgers, load_many
from ..store.artifact import ARTIFACT_ENV, find_artifact

SOURCES = ("auto", "artifact", "simulated")
#: The base runs recorded on the kit benchmark: (system, split).
KIT_TASKS = (("routebr", "MAIN"), ("routebr", "FLIP"), ("routebr", "ENTITY"), ("b2", "FLIP"))


def release_files(source: ReviewSource) -> pd.DataFrame:
    """The base release's files and the first 16 hex digits of their hashes."""
    hashes = source.base.hashes()
    return pd.DataFrame([{"asset": k, "file": Path(v).name if v else "—", "sha256": (hashes[k] or "")[:16]}
                         for k, v in source.base.describe()["files"].items()])


def review_source(source: str = "auto", artifact_dir: str = "", *, seed: int = 0, language: str = "en",
                  profile: str = "sim:deepseek_v4_primary", runs_dir: str = "", out_dir: str = ".") -> ReviewSource:
    if source not in SOURCES:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(SOURCES), got=source, field="source")
    found = find_artifact(artifact_dir or None) if source != "simulated" else None
    if found is not None:
        ledgers = load_ledgers(found)
        label = f"published artifact `{found}`: {ledgers.rows:,} recorded rows in {len(ledgers.tasks)} result folders"
        return ReviewSource(ledgers, artifact_asset_files(found), label)
    if source == "artifact":
        raise DataError(ErrorCode.FILE_NOT_FOUND, "the published artifact (artifact_dir, "
                        f"${ARTIFACT_ENV}, artifacts/routebr/ or ../shared/routebr_artifact)", field="source")
    return _kit_runs(seed, language, profile, Path(runs_dir) if runs_dir else Path(out_dir) / "runs")


def _kit_runs(seed: int, language: str, profile: str, runs: Path) -> ReviewSource:
    from ..backends.registry import make_backend
    from ..dataset import generate_benchmark, write_benchmark
    from ..prompts import prompt_path
    from ..runs.runner import run_cases
    from ..store.assets import assets_beside
    from ..store.cases import Split, load_cases

    bench = runs / "benchmarks" / f"{language}-{seed}"
    cases_path = bench / "routebr_confirm_320.csv"
    if not cases_path.exists():
        write_benchmark(generate_benchmark(seed, language), bench)
    assets = assets_beside(cases_path)
    cases = [c for c in load_cases(cases_path) if c.split is not Split.DEV]
    folders = []
    for system, split in KIT_TASKS:
        folder = runs / profile.replace(":", "-") / f"seed-{seed}" / f"{system}-{split.lower()}"
        backend = make_backend(profile, cases=cases, catalog=assets.catalog, seed=seed)
        run_cases([c for c in cases if c.split.value == split], backend, system=system, assets=assets,
                  out_dir=folder, resume=True, progress=False, cases_path=cases_path)
        folders.append(folder)
    ledgers = load_many(folders, cases=cases_path, assets=assets)
    label = f"kit benchmark {language}-{seed}, simulated backend {profile} (a simulation, not model evidence)"
    return ReviewSource(ledgers, AssetFiles.from_dir(bench).replace(prompts=prompt_path(language)), label)





def first_match_order(policy, action: str, new_rule_id: str | None = None) -> pd.DataFrame:
    """The rules that apply to ``action``, in the order the engine tries them (ascending ``(priority, rule_id)``;
    the first whose condition holds decides)."""
    rows = [{"order": i + 1, "rule_id": r.rule_id, "priority": r.priority, "decision": r.decision.value,
             "applies_to": ", ".join(r.applies_to), "new": r.rule_id == new_rule_id}
            for i, r in enumerate(r for r in policy.rules if "*" in r.applies_to or action in r.applies_to)]
    return pd.DataFrame(rows, columns=["order", "rule_id", "priority", "decision", "applies_to", "new"])


def transitions(report) -> pd.DataFrame:
    """The changed rows of a diff grouped by change class, task, gold path, base → candidate path and winning
    rules (``rows`` per group: the groups add up to the diff's ``changed``)."""
    cols = ["change_class", "task", "gold_final_path", "base_final_path", "candidate_final_path", "base_rule",
            "candidate_rule"]
    frame = pd.DataFrame([c.as_dict() for c in report.changed], columns=[*cols, "case_id"])
    frame[["base_rule", "candidate_rule"]] = frame[["base_rule", "candidate_rule"]].fillna("—")
    grouped = frame.groupby(cols, sort=False).agg(rows=("case_id", "size"),
                                                  cases=("case_id", lambda ids: " ".join(sorted(set(ids)))))
    grouped = grouped.reset_index()
    return grouped.sort_values(["change_class", "rows"], ascending=[True, False], kind="stable").reset_index(drop=True)
__all__ = ["KIT_TASKS", "SOURCES", "first_match_order", "release_files", "review_source", "transitions"]
