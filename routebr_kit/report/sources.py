"""What a report is made from: the folder named on the command line, read through the kit's own readers.

:func:`load_source` recognises five kinds of folder (:class:`SourceKind`) and returns a :class:`ReportSource`: the
ledger tasks (:func:`routebr_kit.review.ledgers.load_ledgers`, the reader ``diff`` uses, so the report's changed
cases are the diff's), where each task came from (:class:`Producer`, stated per task), the figures the folder holds
and, for a ``reproduce`` output, its notebooks.

* ``artifact`` — a published artifact directory, or any folder under its ``experiments/results/`` (a phase, a
  profile, one result folder): the tasks under that folder;
* ``shadow`` — a ``routebr-kit shadow`` output (``shadow_manifest.json``);
* ``runs`` — a run directory written by ``routebr-kit run`` or a tree of them (``--cases`` when a manifest names no
  cases file);
* ``reproduce`` — a ``routebr-kit reproduce`` output (``manifest.json`` with its notebooks): the artifact it read,
  when it used one, and the run directories it wrote under ``runs/``, each scored against the cases file whose
  SHA-256 its manifest records (searched for inside the output folder);

No file is parsed here by hand: ledgers, receipts and manifests go through ``review.ledgers`` and
``store.assets.read_json``.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from ..core.records import System
from ..review.ledgers import SHADOW_KEY, SHADOW_MANIFEST, LedgerSet, LedgerTask, load_ledgers
from ..store.artifact import PUBLISHED_COMMIT, PUBLISHED_REPOSITORY, is_artifact_dir
from ..store.assets import read_json
from ..store.ledger import MANIFEST, PREDICTIONS, RAW
from .urls import safe_href

#: The file a ``routebr-kit reproduce`` output is recognised by, and the keys it must hold.
_REPRODUCE_MANIFEST = "manifest.json"
_REPRODUCE_KEYS = ("params_name", "notebooks")
#: The most ledger rows a report loads per run folder: a bigger ledger is streamed once, summarised (row count,
#: final paths, valid JSON over every row) and sampled (every k-th row, at most this many), and the page says so.
MAX_ROWS = 200_000
#: Where the notebooks' figures are listed (``routebr_kit.notebook.outputs.CAPTIONS``; named here because the
#: notebook layer sits above this one).
CAPTIONS = "captions.json"


class SourceKind(str, enum.Enum):
    ARTIFACT = "artifact"
    SHADOW = "shadow"
    RUNS = "runs"
    REPRODUCE = "reproduce"


class Producer(str, enum.Enum):
    """What produced one task's rows (said per task in the report's header)."""

    PUBLISHED = "published"  # a live model run recorded in the published artifact
    SIMULATED = "simulated"  # the kit's seeded simulator (sim:<profile>): a simulation, not model evidence
    LOCAL = "local"  # a local proposer (local:lexical): keyword rules, not a language model
    LIVE = "live"  # an OpenAI-compatible model called by routebr-kit run
    DERIVED = "derived"  # A-state / A-ground replayed from another run's recorded proposals (no model call)
    SHADOW = "shadow"  # a shadow replay under candidate assets (no model call)
    UNKNOWN = "unknown"  # a manifest that says none of the above


@dataclass(frozen=True)
class TaskOrigin:
    """Where one task's rows came from: the producer, the backend or profile, and the hashes its manifest records."""

    producer: Producer
    backend: str
    model: str = ""
    profile: str = ""
    seed: Any = None
    protocol: str = ""
    kit_version: str = ""
    hashes: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"producer": self.producer.value, "backend": self.backend, "model": self.model,
                "profile": self.profile, "seed": self.seed, "protocol": self.protocol,
                "kit_version": self.kit_version, "hashes": dict(self.hashes), "note": self.note}


@dataclass(frozen=True)
class FigureFile:
    """One figure the source folder holds (a PNG), with its caption and the notebook that made it."""

    path: Path
    caption: str
    notebook: str = ""


@dataclass(frozen=True)
class NotebookEntry:
    """One notebook of a ``reproduce`` output: its status and where its executed copy is (relative to the folder)."""

    name: str
    status: str
    seconds: float
    executed: str
    error: str = ""


@dataclass(frozen=True)
class ReportSource:
    """Everything a report shows about one folder."""

    path: Path
    kind: SourceKind
    ledgers: LedgerSet
    origins: Mapping[str, TaskOrigin]
    figures: tuple[FigureFile, ...] = ()
    notebooks: tuple[NotebookEntry, ...] = ()
    manifest: Mapping[str, Any] = field(default_factory=dict)
    artifact_root: Path | None = None

    @property
    def tasks(self) -> Mapping[str, LedgerTask]:
        return self.ledgers.tasks

    @property
    def simulated(self) -> bool:
        return any(o.producer is Producer.SIMULATED for o in self.origins.values())


# --------------------------------------------------------------------------------------------- recognising folders


def _artifact_root(path: Path) -> Path | None:
    """The artifact directory ``path`` is, or lies under ``experiments/results/`` of; else ``None``."""
    for candidate in (path, *path.parents):
        if is_artifact_dir(candidate):
            results = candidate / "experiments" / "results"
            if candidate == path or path == results or results in path.parents:
                return candidate
            return None
    return None


def _is_reproduce(path: Path) -> bool:
    manifest = path / _REPRODUCE_MANIFEST
    if not manifest.is_file():
        return False
    doc = read_json(manifest, "a reproduce manifest.json object")
    return all(k in doc for k in _REPRODUCE_KEYS)


def load_source(path: str | Path, *, cases: str | Path | None = None, details: bool = True,
                max_rows: int | None = None) -> ReportSource:
    """Read the folder a report is made from (see the module docstring); a bad folder is a located DataError.

    ``details=False`` skips the per-row decision details ``load_ledgers`` derives for the diff (a report without
    ``--base`` builds full decision records itself); a shadow output's own per-row records are always read.
    """
    max_rows = MAX_ROWS if max_rows is None else max_rows
    root = Path(path)
    if not root.exists() and not root.is_symlink():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "a run directory, a shadow output, a reproduce output or an "
                        "artifact (result) folder", file=str(root))
    artifact = _artifact_root(root.resolve())
    if artifact is not None:
        return _artifact_source(root, artifact, details)
    if root.is_dir() and _is_reproduce(root):
        return _reproduce_source(root, cases, details, max_rows)
    kind = SourceKind.SHADOW if (root / SHADOW_MANIFEST).is_file() else SourceKind.RUNS
    ledgers = load_ledgers(root, cases=cases, details=details or kind is SourceKind.SHADOW, max_rows=max_rows)
    top = ledgers.manifest if kind is SourceKind.SHADOW else {}
    return ReportSource(root, kind, ledgers, {k: _origin_of(t) for k, t in ledgers.tasks.items()},
                        _loose_figures(root), manifest=top)


def _artifact_source(path: Path, artifact: Path, details: bool) -> ReportSource:
    ledgers = load_ledgers(artifact, details=details)
    results = (artifact / "experiments" / "results").resolve()
    here = path.resolve()
    prefix = "" if here in (artifact.resolve(), results) else here.relative_to(results).as_posix()
    tasks = {k: t for k, t in ledgers.tasks.items() if not prefix or k == prefix or k.startswith(prefix + "/")}
    if not tasks:
        raise DataError(ErrorCode.FILE_NOT_FOUND, f"a published result folder with {PREDICTIONS}", file=str(path))
    chosen = LedgerSet(ledgers.root, ledgers.kind, tasks, ledgers.assets, ledgers.manifest)
    return ReportSource(path, SourceKind.ARTIFACT, chosen, {k: _origin_of(t) for k, t in tasks.items()},
                        manifest={"artifact": str(artifact), "repository": PUBLISHED_REPOSITORY,
                                  "commit": PUBLISHED_COMMIT, "folder": prefix or "experiments/results"},
                        artifact_root=artifact)


def _reproduce_source(path: Path, cases: str | Path | None, details: bool, max_rows: int) -> ReportSource:
    manifest = read_json(path / _REPRODUCE_MANIFEST, "a reproduce manifest.json object")
    tasks: dict[str, LedgerTask] = {}
    assets = None
    artifact = manifest.get("artifact")
    artifact_root = None
    if isinstance(artifact, str) and artifact and is_artifact_dir(artifact):
        artifact_root = Path(artifact)
        published = load_ledgers(artifact_root, details=details)
        assets = published.assets
        tasks.update({f"artifact/{k}": _rekeyed(t, f"artifact/{k}") for k, t in published.tasks.items()})
    runs = sorted({p.parent for p in (path / "runs").rglob(PREDICTIONS)
                   if RAW not in p.relative_to(path).parts[:-1]},
                  key=lambda f: (_run_rank(f.relative_to(path / "runs")), f)) if (path / "runs").is_dir() else []
    chosen = _runs_cases(runs, _cases_files(path) if runs and cases is None else {}, cases)
    for folder in runs:
        key = folder.relative_to(path).as_posix()
        for sub, task in load_ledgers(folder, cases=chosen[folder], details=details,
                                             max_rows=max_rows).tasks.items():
            name = key if sub == "." else f"{key}/{sub}"
            tasks[name] = _rekeyed(task, name)
    ledgers = LedgerSet(path, "runs", tasks, assets, {})
    notebooks = tuple(NotebookEntry(str(n.get("name")), str(n.get("status")), float(n.get("seconds") or 0.0),
                                    f"{n.get('name')}/{n.get('name')}.ipynb", str(n.get("error") or ""))
                      for n in manifest.get("notebooks") or [] if isinstance(n, dict))
    return ReportSource(path, SourceKind.REPRODUCE, ledgers, {k: _origin_of(t) for k, t in tasks.items()},
                        _notebook_figures(path, notebooks), notebooks, manifest, artifact_root)


def _run_rank(relative: Path) -> int:
    """Where a run folder of a ``reproduce`` output's ``runs/`` is listed: headline runs first, side runs after.

    0 — a study run of the research-question notebooks, ``<backend>/seed-<n>/<benchmark>/<system>/<split>``;
    1 — another run under a ``<backend>/seed-<n>/`` folder (a near-duplicate such as notebook 10's base traffic,
    ``<system>-<split>`` of the same benchmark);
    2 — a side run in a folder of its own (``guarantee-search/…``, a benchmark search, anything else).
    """
    parts = relative.parts
    seeded = len(parts) >= 2 and parts[1].startswith("seed-")
    if seeded and len(parts) == 5:
        return 0
    return 1 if seeded else 2


def _rekeyed(task: LedgerTask, key: str) -> LedgerTask:
    return LedgerTask(key, task.system, task.rows, task.cases, task.path, task.receipts, task.manifest, task.details,
                      task.cases_path, task.sample)


def _cases_files(root: Path) -> dict[str, Path]:
    """Every CSV under ``root`` by SHA-256 (the candidates for a run's recorded ``hashes.cases_file``)."""
    out: dict[str, Path] = {}
    for csv_path in sorted(root.rglob("*.csv")):
        if csv_path.name == PREDICTIONS or RAW in csv_path.parts:
            continue
        out.setdefault(sha256_file(csv_path), csv_path)
    return out


def _runs_cases(runs: Sequence[Path], by_hash: Mapping[str, Path], explicit: str | Path | None) -> dict[Path, Path]:
    """The cases file of each run directory of a reproduce output.

    ``explicit`` for all; else the file whose SHA-256 the manifest records (``hashes.cases_file``); else — for a run
    derived from another (A-state, A-ground), whose manifest records only the hash of the case contents — the file
    of a run with the same ``hashes.cases``.  Anything else is a located error (never a guess).
    """
    if explicit is not None:
        return {folder: Path(explicit) for folder in runs}
    manifests = {folder: read_json(folder / MANIFEST, "a run_manifest.json object") for folder in runs}
    out: dict[Path, Path] = {}
    by_content: dict[str, Path] = {}
    for folder, m in manifests.items():
        hashes = m.get("hashes") if isinstance(m.get("hashes"), dict) else {}
        recorded = hashes.get("cases_file")
        if isinstance(recorded, str) and recorded in by_hash:
            out[folder] = by_hash[recorded]
            if isinstance(hashes.get("cases"), str):
                by_content.setdefault(hashes["cases"], by_hash[recorded])
    for folder, m in manifests.items():
        if folder in out:
            continue
        hashes = m.get("hashes") if isinstance(m.get("hashes"), dict) else {}
        content = hashes.get("cases")
        if isinstance(content, str) and content in by_content:
            out[folder] = by_content[content]
            continue
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "the cases file whose sha256 the run manifest records, inside "
                        "the reproduce output (or pass --cases FILE)", file=str(folder / MANIFEST),
                        field="hashes.cases_file", got=hashes.get("cases_file"))
    return out


def _notebook_figures(root: Path, notebooks: Sequence[NotebookEntry]) -> tuple[FigureFile, ...]:
    figures = []
    for nb in notebooks:
        if safe_href(nb.name) is None or "/" in nb.name:  # a name from the manifest: one plain folder name only
            continue
        captions = root / nb.name / CAPTIONS
        if not captions.is_file():
            continue
        for entry in read_json(captions, "a JSON list of captions", kind=list):
            if not isinstance(entry, dict) or entry.get("kind") != "figure":
                continue
            png = next((f for f in entry.get("files") or [] if str(f).endswith(".png")), None)
            if png and ((root / nb.name / png).exists() or (root / nb.name / png).is_symlink()):
                figures.append(FigureFile(root / nb.name / png, str(entry.get("caption") or ""), nb.name))
    return tuple(figures)


def _loose_figures(root: Path) -> tuple[FigureFile, ...]:
    """PNG files a run or shadow folder holds (outside ``raw/``), captioned by their file name."""
    if not root.is_dir():
        return ()
    return tuple(FigureFile(p, p.stem.replace("_", " "), "") for p in sorted(root.rglob("*.png"))
                 if RAW not in p.relative_to(root).parts)


# --------------------------------------------------------------------------------------------- provenance


def _origin_of(task: LedgerTask) -> TaskOrigin:
    """What a task's manifest says produced it (published, kit run, derived or shadow manifests)."""
    m = task.manifest
    if SHADOW_KEY in m:
        shadow = m[SHADOW_KEY] if isinstance(m[SHADOW_KEY], dict) else {}
        return TaskOrigin(Producer.SHADOW, "shadow", kit_version=str(m.get("kit_version") or ""),
                          hashes={"base": shadow.get("base_hashes"), "candidate": shadow.get("candidate_hashes")},
                          note=f"replay of {shadow.get('source_key') or shadow.get('source')} "
                               f"(recorded by {shadow.get('source_backend')}); no model call")
    if "profile_name" in m and "kit_version" not in m:  # a published run manifest
        return TaskOrigin(Producer.PUBLISHED, str(m.get("provider") or ""), str(m.get("requested_model") or ""),
                          str(m.get("profile_name") or ""), hashes=dict(m.get("frozen_run_input_hashes") or {}),
                          note=f"evidence status {m.get('evidence_status')}; dry run {m.get('dry_run')}")
    detail = m.get("backend_detail") if isinstance(m.get("backend_detail"), dict) else {}
    backend = str(m.get("backend") or "")
    kind = str(detail.get("kind") or "")
    if m.get("simulated") or kind == "simulated" or backend.startswith("sim:"):
        producer = Producer.SIMULATED
    elif backend.startswith("derived:"):
        producer = Producer.DERIVED
    elif kind == "local" or backend.startswith("local:"):
        producer = Producer.LOCAL
    elif kind == "openai_compatible":
        producer = Producer.LIVE
    else:
        producer = Producer.UNKNOWN
    profile = detail.get("profile") if isinstance(detail.get("profile"), dict) else {}
    return TaskOrigin(producer, backend, str(profile.get("model") or ""),
                      str(profile.get("id") or profile.get("name") or ""), detail.get("seed"),
                      str(m.get("protocol") or ""), str(m.get("kit_version") or ""), dict(m.get("hashes") or {}),
                      _origin_note(task.system, producer, detail))


def _origin_note(system: System, producer: Producer, detail: Mapping[str, Any]) -> str:
    if producer is Producer.SIMULATED:
        return ("SIMULATION: seeded error models calibrated in-sample on the published SELECT-160 numbers — not "
                "evidence about any model")
    if producer is Producer.LOCAL:
        return "a keyword proposer, not a language model"
    if producer is Producer.DERIVED:
        source = detail.get("source") if isinstance(detail.get("source"), dict) else {}
        return f"{system.value} replayed from recorded proposals (no model call) {source.get('dir') or ''}".strip()
    return ""


__all__ = ["CAPTIONS", "FigureFile", "NotebookEntry", "Producer", "ReportSource", "SourceKind", "TaskOrigin",
           "load_source"]
