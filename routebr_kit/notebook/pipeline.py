"""Run every notebook headlessly with papermill into ``outputs/<run_id>/`` — the ``make reproduce`` job.

A run is described by a parameters file (``params/*.yaml``)::

    name: default
    cell_timeout: 600                 # seconds per cell
    globals: {seed: 0, language: en}  # injected into every notebook that declares the parameter
    notebooks:
      - 00_quickstart
      - {name: 02_backend_screening, parameters: {source: simulated}}
      - {name: 07_paper_replay, requires_artifact: true}
      - {name: 13_real_proposers, requires_extra: learned}   # run only when the extra [learned] is installed
    with_artifact:                    # applied when --artifact is given
      globals: {source: artifact}
      notebooks: {02_backend_screening: {cases_path: "{artifact}/data/routebr_select_160.csv"}}

String values may name ``{run}`` (the run's output folder), ``{artifact}`` (the RouteBR artifact in use) and
``{metaroute_artifact}`` (a ``metaroute_artifact`` folder beside it, else empty), so one notebook can read what an
earlier one wrote (e.g. the benchmark notebook 01 generates).

**The artifact is used whenever it is found** (:func:`choose_artifact`): an explicit ``--artifact``, then
``$ROUTEBR_ARTIFACT``, the conventional folder ``artifacts/routebr/`` (where ``routebr-kit fetch-artifact`` puts
it) and the sibling checkout ``../shared/routebr_artifact``; ``--no-artifact`` runs offline on purpose.  The
manifest records which artifact was used and how it was found.

**Nothing runs until everything is checked** (:func:`prepare`): the artifact, every notebook's parameters and every
input path they name (relative paths resolve against ``notebooks/``; paths inside the run must be written by an
earlier notebook of the plan) — before the first notebook starts and before the output folder is created.  An
existing, non-empty output folder is refused unless ``resume``: then the notebooks that already succeeded with
the same parameters are kept and the rest run (a run's manifest is rewritten after every notebook, so even a
killed run can be resumed).

The notebooks and parameter files are the checkout's ``notebooks/`` and ``params/`` — or, from an installed wheel,
the copies it ships in the package (:mod:`routebr_kit.store.kitfiles`); a notebook declaring ``data_dir`` is given
the kit's own data folder unless the plan sets one.  Each notebook runs with ``cwd = notebooks/`` in a checkout
(the current directory for an installed wheel: never inside the package) and writes to
``outputs/<run_id>/<notebook>/`` (its executed copy,
``tables/``, ``figures/``, ``captions.json``).  The run writes ``manifest.json`` (parameters, input hashes, kit
version, git commit, per-notebook durations and status) and ``README.md`` linking every table and figure with its
caption.  A failing notebook stops the run with a non-zero exit and keeps the partial output notebook.  The
kernels' own stderr (ipykernel's transport warning, its shutdown messages) goes to ``kernel.log``, papermill's log
to ``pipeline.log``.
"""

from __future__ import annotations

import ast
import json
import logging
import os
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
from ..dataset.generate import KIT_DATA_DIR
from ..report import write_report
from ..store.artifact import ARTIFACT_ENV, Artifact, artifact_candidates, find_artifact, is_artifact_dir
from ..store.files import read_json, read_yaml
from ..store.kitfiles import notebooks_dir, source_checkout
from .outputs import CAPTIONS, notebook_cwd

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = notebooks_dir()  # the checkout's notebooks/, else the copies the wheel ships
log = logging.getLogger("routebr_kit.notebook.pipeline")


@dataclass(frozen=True)
class NotebookJob:
    name: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    requires_artifact: bool = False
    requires_extra: str = ""  # an optional extra of the kit (EXTRAS) the notebook needs; "" for none

    @property
    def path(self) -> Path:
        return NOTEBOOKS / f"{self.name}.ipynb"


def _missing_local() -> tuple[str, ...]:
    from ..backends.local_server import missing_modules

    return missing_modules()


#: Optional extras a notebook may require → the modules of it that are missing here (empty: installed).
EXTRAS = {"local": _missing_local, "learned": lambda: _missing_modules(("sklearn",))}
#: How to install each extra (the skip reason names it).
_INSTALL = {"local": "make local-model"}  # the checkout's shortcut, beside pip install


def _missing_modules(modules: tuple[str, ...]) -> tuple[str, ...]:
    import importlib.util

    return tuple(m for m in modules if importlib.util.find_spec(m) is None)


def skip_reason(job: NotebookJob, artifact: str | None) -> str | None:
    """Why ``job`` is skipped in this run (no artifact, or a missing optional extra), else ``None``."""
    if job.requires_artifact and artifact is None:
        return f"needs the RouteBR artifact, and none is used; {_FETCH_HINT} installs it"
    if job.requires_extra and EXTRAS[job.requires_extra]():
        extra = job.requires_extra
        return (f"needs the optional extra [{extra}]; install it with: pip install 'routebr-kit[{extra}]'"
                + (f", or {_INSTALL[extra]} in this checkout" if extra in _INSTALL and source_checkout() is not None
                   else ""))
    return None


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
            extra = spec.get("requires_extra") or ""
            if extra not in ("", *EXTRAS):
                raise DataError(ErrorCode.UNKNOWN_ENUM, "requires_extra: one of " + ", ".join(EXTRAS),
                                file=str(path), field=f"notebooks[{i}].requires_extra", got=extra)
            job = NotebookJob(spec["name"], dict(spec.get("parameters") or {}), bool(spec.get("requires_artifact")),
                              extra)
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
                       run_dir: Path, *, metaroute_artifact: str | None = None) -> dict[str, Any]:
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
        if "data_dir" in declared and "data_dir" not in values:
            values["data_dir"] = str(KIT_DATA_DIR)  # the kit's own assets, wherever the package is installed
        undeclared = sorted(set(values) - set(declared))
        if undeclared:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, f"parameters declared by notebook {job.name}",
                            file=self.source, got=undeclared)
        fill = {"run": str(run_dir), "artifact": artifact or "", "metaroute_artifact": metaroute_artifact or ""}
        filled = {}
        for key, value in values.items():
            try:
                filled[key] = value.format_map(fill) if isinstance(value, str) and "{" in value else value
            except (KeyError, ValueError, IndexError) as exc:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "templates {run}, {artifact}, {metaroute_artifact}",
                                file=self.source, field=f"{job.name}.{key}", got=value, detail=str(exc)) from None
        return filled


@dataclass
class NotebookResult:
    name: str
    status: str  # "ok" | "failed" | "skipped" | "pending"
    seconds: float
    parameters: dict[str, Any]
    error: str = ""
    resumed: bool = False  # kept from the run being resumed, not executed again


@dataclass(frozen=True)
class ArtifactChoice:
    """The RouteBR artifact a run uses (``path`` is ``None`` when it runs offline) and how it was found."""

    path: Path | None
    how: str
    metaroute: Path | None = None  # a ``metaroute_artifact`` folder beside it, when there is one


def choose_artifact(explicit: str | Path | None = None, *, discover: bool = True) -> ArtifactChoice:
    """The artifact for a run: ``explicit`` (must be an artifact), else the first one found, else none.

    A ``$ROUTEBR_ARTIFACT`` that does not name an artifact is an error, not a silent fall-back to the simulation.
    """
    if explicit:
        path = find_artifact(explicit)  # raises FILE_NOT_FOUND naming the path when it is not an artifact
        return _with_metaroute(ArtifactChoice(path, "explicit path, --artifact"))
    if not discover:
        return ArtifactChoice(None, "not used: --no-artifact")
    named = os.environ.get(ARTIFACT_ENV)
    if named and not is_artifact_dir(named):
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an artifact directory with data/ and experiments/results/",
                        file=named, field=f"${ARTIFACT_ENV}")
    for how, path in artifact_candidates():
        if is_artifact_dir(path):
            return _with_metaroute(ArtifactChoice(path.resolve(), how))
    looked = ", ".join(sorted({str(p) for _, p in artifact_candidates()}))
    return ArtifactChoice(None, f"none found; looked in {looked}; {_FETCH_HINT} installs it")


def _with_metaroute(choice: ArtifactChoice) -> ArtifactChoice:
    beside = choice.path.parent / "metaroute_artifact" if choice.path is not None else None
    return ArtifactChoice(choice.path, choice.how, beside if beside is not None and beside.is_dir() else None)


#: How a person gets the artifact: ``make artifact`` in a checkout, the command itself from an installed wheel.
_FETCH_HINT = "make artifact" if source_checkout() is not None else "routebr-kit fetch-artifact"


#: Parameters named ``*_path`` / ``*_dir`` are input paths, except these outputs.
_OUTPUT_PARAMETERS = frozenset({"out_dir", "runs_dir"})


@dataclass(frozen=True)
class PreparedRun:
    """A checked run: where it goes, the artifact, every job's final parameters, and what a resume keeps."""

    plan: RunPlan
    out: Path
    artifact: ArtifactChoice
    jobs: tuple[tuple[NotebookJob, dict[str, Any] | None], ...]  # parameters None: skipped (see skip_reason)
    kept: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # resumed: name -> its manifest entry
    resume: bool = False


def prepare(plan: RunPlan, out: str | Path, *, artifact: ArtifactChoice | None = None,
            resume: bool = False) -> PreparedRun:
    """Check everything a run needs before anything is written (see the module docstring)."""
    out = Path(out).resolve()
    choice = artifact if artifact is not None else choose_artifact()
    art = str(choice.path) if choice.path is not None else None
    meta = str(choice.metaroute) if choice.metaroute is not None else None
    jobs: list[tuple[NotebookJob, dict[str, Any] | None]] = []
    earlier: set[str] = set()
    for job in plan.jobs:
        if skip_reason(job, art) is not None:
            jobs.append((job, None))
            continue
        parameters = plan.parameters_for(job, declared_parameters(job.path), art, out, metaroute_artifact=meta)
        _check_input_paths(plan, job, parameters, out, earlier)
        jobs.append((job, parameters))
        earlier.add(job.name)
    kept = _resumable(plan, out, choice, jobs) if resume else {}
    if not resume and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise DataError(ErrorCode.INVALID_VALUE, "an output folder that does not exist yet or is empty "
                        "(or --resume to continue the run in it)", file=str(out), field="--out")
    return PreparedRun(plan, out, choice, tuple(jobs), kept, resume)


def declared_parameters(notebook: Path) -> list[str]:
    """Names assigned in the notebook's ``parameters``-tagged cell (read without starting papermill)."""
    cells = read_json(notebook, "a notebook (JSON)").get("cells")
    try:
        source = next(("".join(c["source"]) if isinstance(c["source"], list) else c["source"] for c in cells
                       if "parameters" in (c.get("metadata") or {}).get("tags", [])), "")
        tree = ast.parse(source)
    except (OSError, ValueError, KeyError, TypeError, SyntaxError) as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, "a notebook with a parameters cell of literals",
                        file=str(notebook), detail=str(exc)) from None
    names: list[str] = []
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        names += [t.id for t in targets if isinstance(t, ast.Name) and t.id not in names]
    return names


def _check_input_paths(plan: RunPlan, job: NotebookJob, parameters: Mapping[str, Any], out: Path,
                       earlier: set[str]) -> None:
    for key, value in parameters.items():
        if key in _OUTPUT_PARAMETERS or not key.endswith(("_path", "_dir")) or not isinstance(value, str) \
                or not value:
            continue
        path = Path(value) if Path(value).is_absolute() else notebook_cwd() / value
        path = Path(os.path.normpath(path))
        if path.is_relative_to(out):
            producer = path.relative_to(out).parts[:1]
            if not producer or producer[0] not in earlier:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a path inside the run written by an earlier notebook "
                                "of the plan", file=plan.source, field=f"{job.name}.{key}", got=value)
            continue
        if not path.exists():
            raise DataError(ErrorCode.FILE_NOT_FOUND, f"an existing path for parameter {key} of {job.name}",
                            file=str(path), field=key, detail=f"set by {plan.source}")


def _resumable(plan: RunPlan, out: Path, choice: ArtifactChoice,
               jobs: Sequence[tuple[NotebookJob, dict[str, Any] | None]]) -> dict[str, Mapping[str, Any]]:
    """The notebooks of the run in ``out`` that succeeded with the same parameters (an empty folder: none)."""
    if not out.exists() or (out.is_dir() and not any(out.iterdir())):
        return {}
    manifest_path = out / "manifest.json"
    if not manifest_path.is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a run folder written by reproduce (manifest.json) to resume",
                        file=str(manifest_path), field="--resume")
    previous = read_json(manifest_path, "the run's manifest.json (a JSON object)")
    artifact = str(choice.path) if choice.path is not None else None
    for key, now in (("params_name", plan.name), ("artifact", artifact)):
        if previous.get(key) != now:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the same parameters file and artifact as the run "
                            "being resumed", file=str(manifest_path), field=key, got=previous.get(key),
                            detail=f"now {now!r}")
    before = {n.get("name"): n for n in previous.get("notebooks") or [] if isinstance(n, dict)}
    kept = {}
    for job, parameters in jobs:
        entry = before.get(job.name)
        if parameters is not None and entry is not None and entry.get("status") == "ok" \
                and entry.get("parameters") == parameters and (out / job.name / f"{job.name}.ipynb").is_file():
            kept[job.name] = entry
    return kept


def run(plan: RunPlan, out: Path, *, artifact: str | Path | ArtifactChoice | None = None, discover: bool = False,
        resume: bool = False, progress: bool = True) -> int:
    """Check, then execute the plan into ``out``; returns the exit status (0 when every notebook succeeded).

    ``artifact``: a path (must be an artifact) or a :func:`choose_artifact` result; with ``discover`` and no
    ``artifact`` the first artifact found is used.  Every check of :func:`prepare` happens before ``out`` exists.
    """
    choice = artifact if isinstance(artifact, ArtifactChoice) else choose_artifact(artifact, discover=discover)
    return execute(prepare(plan, out, artifact=choice, resume=resume), progress=progress)


def execute(prepared: PreparedRun, *, progress: bool = True) -> int:
    """Run a :class:`PreparedRun`: every notebook in order, the manifest and index rewritten after each one."""
    plan, out = prepared.plan, prepared.out
    out.mkdir(parents=True, exist_ok=True)
    _configure_logging(out / "pipeline.log", append=prepared.resume)
    results: list[NotebookResult] = [NotebookResult(job.name, "pending", 0.0, parameters or {})
                                     for job, parameters in prepared.jobs]
    started = time.perf_counter()
    _write_manifest(out, prepared, results, 0.0, "running")
    try:
        status = _execute_jobs(prepared, results, started, progress)
    except KeyboardInterrupt:  # Ctrl-C: what finished is kept (the next --resume reuses it)
        done = [r for r in results if r.status != "pending"]
        _write_manifest(out, prepared, done, time.perf_counter() - started, "interrupted")
        _write_index(out, plan, done)
        raise
    done = [r for r in results if r.status != "pending"]
    _write_manifest(out, prepared, done, time.perf_counter() - started, "complete" if status == 0 else "failed")
    _write_index(out, plan, done)
    if status == 0:
        write_report(out, out / "report.html")  # one file: every notebook's section, figures, the runs' traces
        _write_index(out, plan, done, report=True)  # the index links the report once it exists
    return status


def _execute_jobs(prepared: PreparedRun, results: list[NotebookResult], started: float, progress: bool) -> int:
    import papermill as pm

    from ..scale.progress import progress_bar

    plan, out = prepared.plan, prepared.out
    status = 0
    with open(out / "kernel.log", "a", encoding="utf-8") as kernel_log:
        manager = _quiet_kernel_manager(kernel_log)
        jobs = progress_bar(list(enumerate(prepared.jobs)), desc=f"reproduce {plan.name}", unit="notebook",
                            show=progress)
        for i, (job, parameters) in jobs:
            jobs.set_postfix_str(job.name)
            if i and jobs.disable:  # without a bar (--no-progress, no terminal, TQDM_DISABLE): a line per notebook
                _print_line(i, len(results), results[i - 1])
            if parameters is None:
                art = str(prepared.artifact.path) if prepared.artifact.path is not None else None
                results[i] = NotebookResult(job.name, "skipped", 0.0, {}, skip_reason(job, art) or "skipped")
                continue
            if job.name in prepared.kept:
                entry = prepared.kept[job.name]
                results[i] = NotebookResult(job.name, "ok", float(entry.get("seconds") or 0.0), parameters,
                                            resumed=True)
                continue
            target = out / job.name
            target.mkdir(parents=True, exist_ok=True)
            t0 = time.perf_counter()
            try:
                pm.execute_notebook(str(job.path), str(target / f"{job.name}.ipynb"), parameters=parameters,
                                    kernel_name="python3", cwd=str(notebook_cwd()), progress_bar=False, log_output=True,
                                    execution_timeout=plan.cell_timeout, start_timeout=120,
                                    kernel_manager_class=manager)
            except Exception as exc:  # noqa: BLE001 - papermill raises several types; all stop the run
                results[i] = NotebookResult(job.name, "failed", time.perf_counter() - t0, parameters,
                                            f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
                log.error("notebook %s failed; partial output kept in %s", job.name, target)
                status = 1
                break
            finally:
                kernel_log.flush()
            results[i] = NotebookResult(job.name, "ok", time.perf_counter() - t0, parameters)
            _write_manifest(out, prepared, results, time.perf_counter() - started, "running")
            _write_index(out, plan, results)
        last = max((i for i, r in enumerate(results) if r.status != "pending"), default=None)
        if jobs.disable and last is not None:
            _print_line(last + 1, len(results), results[last])
    return status


def _print_line(done: int, total: int, result: NotebookResult) -> None:
    """``[3/14] 02_backend_screening: ok, 41 s`` (``reproduce --no-progress``)."""
    how = {"ok": "kept from the resumed run" if result.resumed else f"ok, {result.seconds:.0f} s",
           "skipped": f"skipped: {result.error}", "failed": f"FAILED after {result.seconds:.0f} s: {result.error}"}
    print(f"[{done}/{total}] {result.name}: {how.get(result.status, result.status)}", flush=True)


def _quiet_kernel_manager(sink: Any) -> type:
    """A kernel manager whose kernels write their own stderr (transport warning, shutdown messages) to ``sink``."""
    from jupyter_client import AsyncKernelManager

    class QuietKernelManager(AsyncKernelManager):
        async def _async_launch_kernel(self, kernel_cmd: list[str], **kw: Any) -> None:
            kw["stderr"] = sink
            await super()._async_launch_kernel(kernel_cmd, **kw)

    return QuietKernelManager


def _configure_logging(path: Path, *, append: bool = False) -> None:
    handler = logging.FileHandler(path, mode="a" if append else "w", encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("papermill", "routebr_kit"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.handlers = [handler]
        logger.propagate = False


def _git_commit() -> str:
    try:
        if source_checkout() is None:
            return "not a source checkout (installed package)"
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _input_hashes(plan: RunPlan, artifact: str | None) -> dict[str, str]:
    files = [Path(plan.source), *sorted(KIT_DATA_DIR.glob("*.csv")), *sorted(NOTEBOOKS.glob("*.ipynb"))]
    hashes = {str(p.relative_to(REPO) if p.is_relative_to(REPO) else p): sha256_file(p) for p in files}
    if artifact is not None:
        hashes.update({f"artifact/data/{k}": v for k, v in Artifact(artifact).input_hashes().items()})
    return hashes


def _write_manifest(out: Path, prepared: PreparedRun, results: list[NotebookResult], total: float,
                    status: str) -> None:
    """``manifest.json``, replaced atomically (written before the first notebook and after every one)."""
    plan, choice = prepared.plan, prepared.artifact
    artifact = str(choice.path) if choice.path is not None else None
    manifest = {
        "run": out.name,
        "status": status,  # running | complete | failed | interrupted
        "params_file": plan.source,
        "params_name": plan.name,
        "artifact": artifact,
        "artifact_found_by": choice.how,
        "metaroute_artifact": str(choice.metaroute) if choice.metaroute is not None else None,
        "resumed": prepared.resume and bool(prepared.kept),
        "finished_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "kit_version": __version__,
        "git_commit": _git_commit(),
        "python": platform.python_version(),
        "input_hashes": _input_hashes(plan, artifact),
        "total_seconds": round(total, 1),
        "notebooks": [{"name": r.name, "status": r.status, "seconds": round(r.seconds, 1),
                       "parameters": r.parameters, **({"error": r.error} if r.error else {}),
                       **({"resumed": True} if r.resumed else {})} for r in results],
    }
    text = json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"
    partial = out / ".manifest.json.tmp"
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, out / "manifest.json")


def _write_index(out: Path, plan: RunPlan, results: list[NotebookResult], *, report: bool = False) -> None:
    lines = [f"# Run `{out.name}`", ""]
    if report:
        lines += ["**Report: [`report.html`](report.html)** — every notebook's tables and figures, the runs' "
                  "traces and the provenance, in one file for a browser.", ""]
    lines += [f"Parameters: `{Path(plan.source).name}`. "
             "Machine-readable record: [`manifest.json`](manifest.json) (it also says which artifact was used and "
             "how it was found). Logs: [`pipeline.log`](pipeline.log), [`kernel.log`](kernel.log).", ""]
    for r in results:
        head = f"## {r.name} — {r.status}"
        lines += [head, ""]
        if r.status == "skipped":
            lines += [f"Skipped: {r.error}.", ""]
            continue
        if r.status == "pending":
            lines += ["Not run yet.", ""]
            continue
        lines += [f"Executed notebook: [`{r.name}/{r.name}.ipynb`]({r.name}/{r.name}.ipynb)"
                  + (f" — failed: `{r.error}`" if r.error else "")
                  + (" (kept from the run being resumed)" if r.resumed else ""), ""]
        captions = out / r.name / CAPTIONS
        entries = read_json(captions, "a captions file", kind=list) if captions.exists() else []
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
        for entry in read_json(captions, "a captions file", kind=list):
            files.extend(captions.parent / f for f in entry["files"])
    return files
