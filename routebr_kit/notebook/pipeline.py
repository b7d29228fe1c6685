"""Run every notebook headlessly with papermill into ``outputs/<run_id>/`` — the ``make reproduce`` job.

A run is described by a parameters file (``params/*.yaml``)::

    name: default
    cell_timeout: 600                 # seconds per cell
    globals: {seed: 0, language: en}  # injected into every notebook that declares the parameter
    notebooks:
      - 00_quickstart
      - {name: 02_backend_screening, parameters: {source: simulated}}
      - {name: 07_paper_replay, requires_artifact: true}
    with_artifact:                    # applied when --artifact is given
      globals: {source: artifact}
      notebooks: {02_backend_screening: {cases_path: "{artifact}/data/routebr_select_160.csv"}}

String values may name ``{run}`` (the run's output folder) and ``{artifact}`` (the ``--artifact`` folder), so one
notebook can read what an earlier one wrote (e.g. the benchmark notebook 01 generates).

Each notebook runs with ``cwd = notebooks/`` and writes to ``outputs/<run_id>/<notebook>/`` (its executed copy,
``tables/``, ``figures/``, ``captions.json``).  The run writes ``manifest.json`` (parameters, input hashes, kit
version, git commit, per-notebook durations and status) and ``README.md`` linking every table and figure with its
caption.  A failing notebook stops the run with a non-zero exit and keeps the partial output notebook.
"""

from __future__ import annotations

import json
import logging
import platform
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .. import __version__
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..store.artifact import Artifact
from ..store.files import read_yaml
from .outputs import CAPTIONS

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = REPO / "notebooks"
log = logging.getLogger("routebr_kit.notebook.pipeline")


@dataclass(frozen=True)
class NotebookJob:
    name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    requires_artifact: bool = False

    @property
    def path(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"


@dataclass(frozen=True)
class RunPlan:
    """A parsed, validated parameters file."""

    name: str
    source: str
    cell_timeout: int
    globals: Mapping[str, Any]
    jobs: tuple[NotebookJob, ...]
    with_artifact: Mapping[str, Any]

    @classmethod
    def load(cls, path: str | Path) -> RunPlan:
        path = Path(path)
        raw = read_yaml(path, "a parameters file")
        if not isinstance(raw, dict):
            raise DataError(ErrorCode.WRONG_TYPE, "a YAML mapping", file=str(path), got=raw)
        unknown = set(raw) - {"name", "cell_timeout", "globals", "notebooks", "with_artifact"}
        if unknown:
            raise DataError(ErrorCode.INVALID_VALUE, "keys name, cell_timeout, globals, notebooks, with_artifact",
                            file=str(path), got=sorted(unknown))
        jobs = []
        for i, item in enumerate(raw.get("notebooks") or []):
            spec = {"name": item} if isinstance(item, str) else item
            if not isinstance(spec, dict) or not isinstance(spec.get("name"), str):
                raise DataError(ErrorCode.WRONG_TYPE, "a notebook name or {name: ..., parameters: {...}}",
                                file=str(path), field=f"notebooks[{i}]", got=item)
            job = NotebookJob(spec["name"], dict(spec.get("parameters") or {}), bool(spec.get("requires_artifact")))
            if not job.path.is_file():
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a notebook in notebooks/", file=str(path),
                                field=f"notebooks[{i}]", got=job.name)
            jobs.append(job)
        if not jobs:
            raise DataError(ErrorCode.EMPTY_VALUE, "at least one notebook", file=str(path), field="notebooks")
        timeout = raw.get("cell_timeout", 600)
        if type(timeout) is not int or timeout <= 0:
            raise DataError(ErrorCode.INVALID_INTEGER, "a positive number of seconds", file=str(path),
                            field="cell_timeout", got=timeout)
        return cls(str(raw.get("name") or path.stem), str(path), timeout, dict(raw.get("globals") or {}),
                   tuple(jobs), dict(raw.get("with_artifact") or {}))

    def parameters_for(self, job: NotebookJob, declared: Sequence[str], artifact: str | None,
                       run_dir: Path) -> dict[str, Any]:
        """Globals the notebook declares, then its own parameters; artifact overlays last; templates filled."""
        values: dict[str, Any] = {k: v for k, v in self.globals.items() if k in declared}
        values.update(job.parameters)
        if artifact is not None:
            overlay = self.with_artifact
            values.update({k: v for k, v in (overlay.get("globals") or {}).items() if k in declared})
            values.update((overlay.get("notebooks") or {}).get(job.name) or {})
            if "artifact_dir" in declared:
                values["artifact_dir"] = artifact
        if "out_dir" in declared:
            values["out_dir"] = str(run_dir / job.name)
        undeclared = sorted(set(values) - set(declared))
        if undeclared:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"parameters declared by notebook {job.name}",
                            file=self.source, got=undeclared)
        fill = {"run": str(run_dir), "artifact": artifact or ""}
        return {k: v.format_map(fill) if isinstance(v, str) and "{" in v else v for k, v in values.items()}


@dataclass
class NotebookResult:
    name: str
    status: str  # "ok" | "failed" | "skipped"
    seconds: float
    parameters: dict[str, Any]
    error: str = ""


def run(plan: RunPlan, out: Path, *, artifact: str | Path | None = None, progress: bool = True) -> int:
    """Execute the plan into ``out``; returns the exit status (0 when every notebook succeeded)."""
    import papermill as pm
    from tqdm.auto import tqdm

    out = out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    artifact = str(Path(artifact).resolve()) if artifact is not None else None
    _configure_logging(out / "pipeline.log")
    results: list[NotebookResult] = []
    started = time.perf_counter()
    status = 0
    jobs = tqdm(plan.jobs, desc=f"reproduce {plan.name}", unit="notebook", disable=not progress)
    for job in jobs:
        jobs.set_postfix_str(job.name)
        if job.requires_artifact and artifact is None:
            results.append(NotebookResult(job.name, "skipped", 0.0, {}, "needs --artifact"))
            continue
        target = out / job.name
        target.mkdir(parents=True, exist_ok=True)
        declared = list(pm.inspect_notebook(str(job.path)))
        parameters = plan.parameters_for(job, declared, artifact, out)
        t0 = time.perf_counter()
        try:
            pm.execute_notebook(str(job.path), str(target / f"{job.name}.ipynb"), parameters=parameters,
                                kernel_name="python3", cwd=str(NOTEBOOKS), progress_bar=False, log_output=True,
                                execution_timeout=plan.cell_timeout, start_timeout=120)
        except Exception as exc:  # noqa: BLE001 - papermill raises several types; all stop the run
            results.append(NotebookResult(job.name, "failed", time.perf_counter() - t0, parameters,
                                          f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"))
            log.error("notebook %s failed; partial output kept in %s", job.name, target)
            status = 1
            break
        results.append(NotebookResult(job.name, "ok", time.perf_counter() - t0, parameters))
    total = time.perf_counter() - started
    _write_manifest(out, plan, artifact, results, total)
    _write_index(out, plan, results)
    return status


def _configure_logging(path: Path) -> None:
    handler = logging.FileHandler(path, mode="w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("papermill", "routebr_kit"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.handlers = [handler]
        logger.propagate = False


def _git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _input_hashes(plan: RunPlan, artifact: str | None) -> dict[str, str]:
    files = [Path(plan.source), *sorted((REPO / "data").glob("*.csv")), *sorted(NOTEBOOKS.glob("*.ipynb"))]
    hashes = {str(p.relative_to(REPO) if p.is_relative_to(REPO) else p): sha256_file(p) for p in files}
    if artifact is not None:
        hashes.update({f"artifact/data/{k}": v for k, v in Artifact(artifact).input_hashes().items()})
    return hashes


def _write_manifest(out: Path, plan: RunPlan, artifact: str | None, results: list[NotebookResult],
                    total: float) -> None:

    manifest = {
        "run": out.name,
        "params_file": plan.source,
        "params_name": plan.name,
        "artifact": artifact,
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "kit_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "input_hashes": _input_hashes(plan, artifact),
        "total_seconds": round(total, 1),
        "notebooks": [{"name": r.name, "status": r.status, "seconds": round(r.seconds, 1),
                       "parameters": r.parameters, **({"error": r.error} if r.error else {})} for r in results],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _write_index(out: Path, plan: RunPlan, results: list[NotebookResult]) -> None:
    lines = [f"# Run `{out.name}`", "", f"Parameters: `{Path(plan.source).name}`. "
             "Machine-readable record: [`manifest.json`](manifest.json).", ""]
    for r in results:
        head = f"## {r.name} — {r.status}"
        lines += [head, ""]
        if r.status == "skipped":
            lines += [f"Skipped ({r.error}).", ""]
            continue
        lines += [f"Executed notebook: [`{r.name}/{r.name}.ipynb`]({r.name}/{r.name}.ipynb)"
                  + (f" — failed: `{r.error}`" if r.error else ""), ""]
        captions = out / r.name / CAPTIONS
        entries = json.loads(captions.read_text(encoding="utf-8")) if captions.exists() else []
        for kind, title in (("table", "Tables"), ("figure", "Figures")):
            chosen = [e for e in entries if e["kind"] == kind]
            if not chosen:
                continue
            lines += [f"**{title}**", ""]
            for e in chosen:
                links = " · ".join(f"[{Path(f).suffix[1:]}]({r.name}/{f})" for f in e["files"])
                lines.append(f"- {e['caption']} ({links})")
            lines.append("")
    (out / "README.md").write_text("\n".join(lines), encoding="utf-8")


def listed_outputs(out: Path) -> list[Path]:
    """Every table and figure file the run's README links (for tests and checks)."""
    files = []
    for captions in sorted(out.glob(f"*/{CAPTIONS}")):
        for entry in json.loads(captions.read_text(encoding="utf-8")):
            files.extend(captions.parent / f for f in entry["files"])
    return files
