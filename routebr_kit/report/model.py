"""The report as data: header, scorecards, diff and the trace explorer's rows, ready to embed in one HTML file.

:func:`build_report` reads nothing itself: it takes a :class:`~routebr_kit.report.sources.ReportSource` (and, for a
diff, the base one) and returns a :class:`ReportData`.  Metrics come from :mod:`routebr_kit.evaluation.metrics`
(``score``, ``flip_pairs``); the paired diff, its per-split table and the gate from :mod:`routebr_kit.review`
(``diff_ledgers``, ``split_table``, ``Gate``), so every number equals ``routebr-kit score`` / ``diff``.

The explorer's table is columnar: each categorical column is a list of small integers into its own dictionary,
so a browser filters 100,000 rows with integer comparisons.  The stages of every row (Figure 1, built by
:mod:`~routebr_kit.report.stages`) are stored in compressed chunks of :data:`CHUNK_ROWS` rows and inflated only
when a case is opened.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..evaluation.floor import Floor, trivial_floor
from ..evaluation.metrics import Count, calls_of, flip_pairs, score
from ..review.diff import ChangedRow, DiffReport, diff_ledgers, split_table
from ..review.gate import Gate, choose_gate
from ..review.ledgers import LedgerTask, RowKey
from ..store.cases import Case, Split
from ..store.files import parse_json
from ..store.ledger import PredictionRow
from .sources import Producer, ReportSource, SourceKind
from .stages import CHANGE_STAGE_KEYS, SOURCE_TEXT, STAGES, case_stages, row_reason, row_rule, row_stages
from .traces import AssetsCache, RowTrace, _assets_for, task_traces
from .urls import anchor_id

#: Rows per compressed detail chunk (one chunk is inflated when one of its cases opens).
_CHUNK_ROWS = 500
#: The explorer's categorical columns (each a dictionary + one code per row).
_CATEGORICAL = ("task", "split", "system", "repeat", "pred", "gold", "strict", "terminal", "reason", "rule",
               "change", "stage", "base_pred")


@dataclass
class Column:
    """A dictionary-encoded column: ``values[codes[i]]`` is row ``i``'s value."""

    values: list[str] = field(default_factory=list)
    codes: list[int] = field(default_factory=list)
    _index: dict[str, int] = field(default_factory=dict)

    def add(self, value: str) -> None:
        self.declare(value)
        self.codes.append(self._index[value])

    def declare(self, value: str) -> None:
        """Give ``value`` the next code without a row (the dictionary's order is the filter's order)."""
        if value not in self._index:
            self._index[value] = len(self.values)
            self.values.append(value)

    def as_dict(self) -> dict[str, Any]:
        return {"values": self.values, "codes": self.codes}


@dataclass(frozen=True)
class ReportData:
    """Everything the HTML file embeds (:meth:`as_json` for the plain part, ``chunks`` compressed)."""

    header: Mapping[str, Any]
    scorecard: Sequence[Mapping[str, Any]]
    diff: Mapping[str, Any] | None
    explorer: Mapping[str, Any]
    chunks: Sequence[str]
    base_chunks: Sequence[str]
    case_chunk: str
    figures: Sequence[Mapping[str, Any]]
    notebooks: Sequence[Mapping[str, Any]]

    @property
    def rows(self) -> int:
        return len(self.explorer["columns"]["task"]["codes"])

    def plain(self) -> dict[str, Any]:
        return {"header": self.header, "scorecard": self.scorecard, "diff": self.diff, "explorer": self.explorer,
                "notebooks": self.notebooks}


def pack(value: Any) -> str:
    """JSON → zlib (deflate, level 9) → base64: what the page's ``DecompressionStream('deflate')`` reverses."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return base64.b64encode(zlib.compress(text.encode("utf-8"), 9)).decode("ascii")


def unpack(blob: str) -> Any:
    """The inverse of :func:`pack` (tests read chunks with it)."""
    return parse_json(zlib.decompress(base64.b64decode(blob)).decode("utf-8"), "a packed report chunk", record=True)


def _finite(value: float) -> float | None:
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _count(c: Count | None, *, interval: bool = False) -> dict[str, Any] | None:
    """A count as data; ``interval``: with its Wilson 95% bounds (the scorecard shows them for exact match)."""
    if c is None:
        return None
    out = {"hits": c.hits, "n": c.n, "rate": _finite(c.rate)}
    if interval:
        low, high = c.wilson
        out |= {"low": low, "high": high}
    return out


# --------------------------------------------------------------------------------------------- scorecard


#: Floors already computed, keyed by (assets folder, the scored case ids): the systems and repeats of one benchmark
#: share their cases, so each floor is computed once per report.
_FloorCache = dict[tuple[str, tuple[str, ...]], Floor]


def _floor(task: LedgerTask, rows: Sequence[PredictionRow], assets: AssetsCache,
           floors: _FloorCache) -> dict[str, Any] | None:
    """The trivial-proposer floor of the cases of ``rows`` (:mod:`routebr_kit.evaluation.floor`): the best constant
    proposer, named by its action, with its exact match, FD and FB; ``None`` without the release's assets."""
    found = _assets_for(task, assets)
    if found is None:
        return None
    ids = tuple(sorted(dict.fromkeys(r.case_id for r in rows)))
    key = (str(Path(task.cases_path).parent.resolve()), ids)  # type: ignore[arg-type]
    if key not in floors:
        floors[key] = trivial_floor([task.cases[c] for c in ids], found.controller())
    f = floors[key]
    return {"action_id": f.action_id, "exact": _count(f.exact, interval=True),
            "false_dispatch": _count(f.scores.false_dispatch), "false_block": _count(f.scores.false_block)}


def scorecard(task: LedgerTask, assets: AssetsCache | None = None,
              floors: _FloorCache | None = None) -> list[dict[str, Any]]:
    """One record per (split, repeat) of a task: the paper's metrics with their denominators, and the floor of the
    same cases (``floor``: ``None`` when the task's cases have no catalog and rules beside them)."""
    assets = assets if assets is not None else {}
    floors = floors if floors is not None else {}
    out = []
    groups: dict[tuple[str, str], list[PredictionRow]] = {}
    for r in task.rows:
        groups.setdefault((task.cases[r.case_id].split.value, r.repeat_id), []).append(r)
    order = [s.value for s in Split]
    repeats = len({r.repeat_id for r in task.rows})
    for (split, repeat), rows in sorted(groups.items(), key=lambda kv: (order.index(kv[0][0]), kv[0][1])):
        s = score(rows, task.cases)
        pairs = None
        if split == Split.FLIP.value:
            members = Counter(task.cases[r.case_id].pair_id for r in rows)
            complete = [r for r in rows if members[task.cases[r.case_id].pair_id] == 2]
            pairs = flip_pairs(complete, task.cases).pairs if complete else None
        out.append({"task": task.key, "system": task.system.value, "split": split,
                    "repeat": repeat if repeats > 1 else "", "n": s.n, "exact": _count(s.contract_exact, interval=True),
                    "strict": _count(s.strict_exact), "false_dispatch": _count(s.false_dispatch),
                    "false_block": _count(s.false_block), "object": _count(s.object), "flip_pairs": _count(pairs),
                    "valid_json": _count(s.valid_json), "first_pass_valid": _count(s.first_pass_valid),
                    "fail_closed": _count(s.fallback), "calls": s.calls, "tokens": s.tokens,
                    "latency_ms_median": _finite(s.latency_ms_median),
                    "floor": _floor(task, rows, assets, floors)})
    return out


# --------------------------------------------------------------------------------------------- header


def header(source: ReportSource, written_utc: str, base: ReportSource | None = None) -> dict[str, Any]:
    producers = sorted({o.producer.value for o in source.origins.values()})
    tasks = []
    for key, task in source.tasks.items():
        o = source.origins[key]
        tasks.append({"task": key, "system": task.system.value, "split": task.split, "rows": len(task.rows),
                      "sample": task.sample.as_dict() if task.sample is not None else None,
                      "cases_file": str(task.cases_path) if task.cases_path else "", **o.as_dict()})
    m = source.manifest
    facts: list[list[str]] = [["folder", str(source.path)], ["kind", source.kind.value]]
    if source.artifact_root is not None:
        facts.append(["artifact", f"{source.artifact_root} (published: {m.get('repository') or ''} "
                                  f"{m.get('commit') or ''})".replace("  ", " ")])
    for name in ("params_name", "git_commit", "finished_utc", "artifact_found_by", "status", "python"):
        if m.get(name) is not None and source.kind.value == "reproduce":
            facts.append([name.replace("_", " "), str(m[name])])
    if source.kind.value == "shadow":
        facts += [["shadow of", str(m.get("source"))], ["edit", ", ".join((m.get("edit") or {}).get("classes") or [])
                                                        or "none"],
                  ["live calls", str(m.get("live_calls"))]]
    facts += [["kit version (report)", __version__], ["report written (UTC)", written_utc]]
    banner = []
    if source.simulated:
        banner.append("SIMULATION: rows from the kit's seeded simulator (sim:<profile>), calibrated in-sample on the "
                      "published SELECT-160 numbers. They exercise the pipeline; they are not evidence about any "
                      "model.")
    if Producer.LOCAL.value in producers:
        banner.append("Rows from local:lexical, a keyword proposer: not a language model.")
    if Producer.SHADOW.value in producers:
        banner.append("Shadow replay: recorded proposals re-decided under candidate assets; no model was called.")
    for key, task in source.tasks.items():
        s = task.sample
        if s is not None:
            paths = ", ".join(f"{p} {n:,}" for p, n in s.final_paths.items())
            banner.append(f"SAMPLED: {key} holds {s.total:,} rows, over the report's cap of {s.cap:,} rows per "
                          f"ledger, so it was never loaded whole: the scorecard and the explorer show every "
                          f"{s.every}th row ({s.kept:,} rows). Over all {s.total:,} rows: final paths {paths}; "
                          f"valid JSON {s.valid_json:,}.")
    if Producer.PUBLISHED.value in producers:
        banner.append("Published artifact: rows recorded by live model runs, read from the artifact (not re-run).")
    return {"title": f"routebr-kit report — {source.path.name or source.path}", "producers": producers,
            "simulated": source.simulated, "banner": banner, "facts": facts, "tasks": tasks,
            "base": None if base is None else {"folder": str(base.path), "kind": base.kind.value,
                                               "producers": sorted({o.producer.value
                                                                    for o in base.origins.values()})}}


# --------------------------------------------------------------------------------------------- diff


def _diff_view(report: DiffReport, gate: Gate, release: Any = None) -> dict[str, Any]:
    """``release``: the exact verifier's check (:func:`~routebr_kit.review.gate.choose_gate`), whose lines
    (witnesses, coverage) precede the gate's."""
    values = None if release is None or not release.differs else {"widening": release.widening}
    verdict = gate.evaluate(report, release_values=values)
    m = report.metrics()
    extra = [] if release is None else release.lines()
    return {"base": report.base_root, "candidate": report.candidate_root, "rows": report.rows,
            "changed": len(report.changed), "metrics": m, "split_table": split_table(report),
            "gate": {"passed": verdict.passed, "source": verdict.source, "lines": [*extra, *verdict.lines()]}}


# --------------------------------------------------------------------------------------------- explorer


def _terminal(path: str) -> str:
    return path[2:] if path.startswith("T_") else "DISPATCH"


def build_report(source: ReportSource, *, base: ReportSource | None = None, gate: Gate | None = None,
                 written_utc: str = "", figures: Sequence[Mapping[str, Any]] = ()) -> ReportData:
    """The report of ``source`` (with ``base``: the paired diff of ``base`` → ``source`` as well)."""
    diff: DiffReport | None = None
    changed: dict[tuple[str, str, str], ChangedRow] = {}
    if base is not None:
        diff = diff_ledgers(base.ledgers, source.ledgers)
        changed = {(c.task, c.case_id, c.repeat_id): c for c in diff.changed}
    cache: AssetsCache = {}
    columns = {name: Column() for name in _CATEGORICAL}
    for key in source.tasks:  # the task filter lists the tasks in the report's order (headline runs first)
        columns["task"].declare(key)
    numeric: dict[str, list[int]] = {"case": [], "ok": [], "strict_ok": [], "fail_closed": [], "calls": [],
                                     "tokens": [], "base_detail": []}
    keys: list[list[str]] = []
    cases: list[Case] = []
    case_index: dict[tuple[str, str], int] = {}
    details: list[dict[str, Any]] = []
    base_details: list[dict[str, Any]] = []
    sources_used: Counter[str] = Counter()

    ordered: list[tuple[LedgerTask, PredictionRow]] = [(t, r) for t in source.tasks.values() for r in t.rows]
    rank = {k: i for i, k in enumerate(changed)}
    ordered.sort(key=lambda tr: rank.get((tr[0].key, tr[1].case_id, tr[1].repeat_id), len(rank)))
    traces: dict[str, dict[RowKey, RowTrace]] = {k: task_traces(t, cache) for k, t in source.tasks.items()}
    base_traces: dict[str, dict[RowKey, RowTrace]] = {}
    base_rows: dict[str, dict[RowKey, PredictionRow]] = {}
    if base is not None:
        wanted: dict[str, set[RowKey]] = {}
        for task_key, case_id, repeat_id in changed:
            wanted.setdefault(task_key, set()).add((case_id, repeat_id))
        base_traces = {k: task_traces(base.tasks[k], cache, only=w) for k, w in wanted.items()}
        base_rows = {k: {(r.case_id, r.repeat_id): r for r in base.tasks[k].rows} for k in wanted}

    for task, row in ordered:
        key = (row.case_id, row.repeat_id)
        case = task.cases[row.case_id]
        ck = (str(task.cases_path or task.key), row.case_id)
        if ck not in case_index:
            case_index[ck] = len(cases)
            cases.append(case)
        trace = traces[task.key][key]
        sources_used[trace.source.value] += 1
        c = changed.get((task.key, row.case_id, row.repeat_id))
        columns["task"].add(task.key)
        columns["split"].add(case.split.value)
        columns["system"].add(task.system.value)
        columns["repeat"].add(row.repeat_id)
        columns["pred"].add(row.pred_final_path)
        columns["gold"].add(case.gold.final_path)
        columns["strict"].add(row.strict_path)
        columns["terminal"].add(_terminal(row.pred_final_path))
        columns["reason"].add(row_reason(row, trace))
        columns["rule"].add(row_rule(trace))
        columns["change"].add(c.change_class.value if c else ("unchanged" if base is not None else "—"))
        columns["stage"].add(c.first_changed_stage.value if c else "—")
        columns["base_pred"].add(c.base_final_path if c else (row.pred_final_path if base is not None else "—"))
        numeric["case"].append(case_index[ck])
        numeric["ok"].append(int(row.pred_final_path == case.gold.final_path))
        numeric["strict_ok"].append(int(row.strict_path == case.gold.strict_path))
        numeric["fail_closed"].append(int(row.fallback_used))
        numeric["calls"].append(calls_of(row))
        numeric["tokens"].append(row.input_tokens + row.output_tokens)
        keys.append([row.case_id, row.repeat_id])
        controller = task.system.uses_controller
        details.append({"source": trace.source.value, "stages": row_stages(row, trace, controller=controller)})
        if c is not None and base is not None:
            base_task = base.tasks[task.key]
            base_row = base_rows[task.key][key]
            bt = base_traces[task.key][key]
            numeric["base_detail"].append(len(base_details))
            base_details.append({"source": bt.source.value,
                                 "stages": row_stages(base_row, bt, controller=base_task.system.uses_controller)})
        else:
            numeric["base_detail"].append(-1)

    chunks = [pack(details[i:i + _CHUNK_ROWS]) for i in range(0, len(details), _CHUNK_ROWS)]
    base_chunks = [pack(base_details[i:i + _CHUNK_ROWS]) for i in range(0, len(base_details), _CHUNK_ROWS)]
    case_chunk = pack([case_stages(c) for c in cases])
    explorer = {
        "columns": {name: col.as_dict() for name, col in columns.items()},
        "numeric": numeric, "keys": keys,
        "cases": [[c.case_id, c.split.value, c.request.utterance] for c in cases],
        "chunk_rows": _CHUNK_ROWS, "stages": list(STAGES),
        "change_stage_keys": {k: list(v) for k, v in CHANGE_STAGE_KEYS.items()},
        "trace_sources": sources_used, "source_text": SOURCE_TEXT, "diff": base is not None,
    }
    floors: _FloorCache = {}
    cards = [card for t in source.tasks.values() for card in scorecard(t, cache, floors)]
    replay = source.kind is SourceKind.SHADOW  # a shadow output replays recorded proposals; anything else redrew them
    view = None
    if diff is not None and base is not None:
        chosen, release = choose_gate(gate, base.ledgers, source.ledgers, diff, replay=replay)
        view = _diff_view(diff, chosen, release)
    notebooks = [{"name": n.name, "status": n.status, "seconds": n.seconds, "executed": n.executed,
                  "error": n.error, "anchor": anchor_id("nb", n.name, i)} for i, n in enumerate(source.notebooks)]
    return ReportData(header(source, written_utc, base), cards, view, explorer, chunks, base_chunks, case_chunk,
                      list(figures), notebooks)


__all__ = ["Column", "ReportData", "build_report", "header", "pack", "scorecard", "unpack"]
