"""The run engine: benchmark cases through one system and one backend — concurrent, rate-limited, resumable.

:func:`arun_cases` (awaitable) and :func:`run_cases` (sync, also inside Jupyter's running loop) run RouteBR, the two
interventions (live) or the two baselines over a sequence of cases and write a run directory
(:class:`~routebr_kit.store.ledger.RunLedger`): ``predictions.csv``, ``raw/<case_id>.json`` receipts and
``run_manifest.json``.

* **Concurrency**: a pool of ``concurrency`` workers, each taking the next case; a case's calls (proposal, repair)
  are sequential.  ``rpm`` spaces request starts evenly (``60/rpm`` seconds apart); the OpenAI-compatible adapter
  applies it to network attempts only, so cache hits are free.
* **Durability**: each finished case is committed as receipt then row (fsynced, off the event loop); ``kill -9``
  loses no committed case and ``resume=True`` runs only the rest, after checking that the manifest's inputs
  (system, repeat, backend, case IDs, every hash) are unchanged.  A run written under other inputs (an older kit,
  edited assets) is refused (``INCONSISTENT_ASSETS``) — or, with ``keep_stale=True`` (the notebooks, which treat
  their runs folder as a store of finished work), left as it is while this run goes to a folder beside it named by
  its inputs, ``<out_dir>@<key>``; :attr:`RunResult.stale` says so.  When every case is done, ``predictions.csv`` is
  rewritten in case order, so identical inputs give byte-identical files whatever the completion order.
* **Any reply is recordable**: replies are redacted of secrets as they arrive (:func:`redact_reply`, before the
  controller reads them) and receipts go through :mod:`routebr_kit.store.redact`, so whatever a server sends —
  lone surrogates, ``NaN``, deep nesting, an echoed API key — the case ends in a committed row and a receipt the
  strict reader loads, and no secret reaches a file.
* **Deadlines**: a network backend bounds each model call in wall-clock time (the OpenAI-compatible adapter's
  ``deadline_s``, recorded as ``execution.call_deadline_s``); a call past it is a failure reply, so the case ends in
  its fail-closed row and the run goes on to the next case.
* **Replay misses**: a ``CACHE_MISS`` reply (replay-only cache, replay backend) stops the run with
  :class:`~routebr_kit.backends.cache.CacheMissError` before the case is written: a missing recording is not a
  model outcome, so it must not become a fail-closed row.  Committed cases stay; ``resume`` continues later.

:func:`derive_interventions` builds A-state / A-ground offline from a stored RouteBR run: every recorded reply
(content or failure) is replayed through the controller with the intervention's options — no new calls.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import __version__
from ..backends.cache import CacheMissError
from ..core.aio import run_sync
from ..core.calls import Backend, FailureKind, ModelCall, ModelReply
from ..core.controller import ControllerOptions, Decision, ask_backend
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file, sha256_json
from ..core.records import System, Terminal
from ..prompts.published import Protocol, protocol_of
from ..scale.progress import progress_bar
from ..store.assets import Assets
from ..store.cases import Case, Split
from ..store.ledger import PredictionRow, RunLedger, prediction_from_decision, source_sha256
from ..store.redact import SECRETS, Redactor, redact_value, register_backend_secrets
from ..systems.baselines import DirectBaseline, DirectDecision, prediction_from_direct, rule_citation
from .leakage import leak_summary
from .replay import replay_rows

_KIT_DIR = Path(__file__).resolve().parents[1]

#: Short names accepted wherever a system is named (CLI, notebooks), next to the published ``system_id`` values.
SYSTEM_NAMES = {"routebr": System.ROUTEBR, "b1": System.B1_DIRECT, "b2": System.B2_DIRECT_GUARD,
                "a_state": System.A_STATE, "a_ground": System.A_GROUND,
                **{s.value: s for s in System}}
#: Manifest fields that must be unchanged for ``resume``.
RESUME_KEYS = ("system", "repeat_id", "backend", "case_ids", "hashes", "options", "protocol")


def parse_system(name: System | str) -> System:
    if isinstance(name, System):
        return name
    try:
        return SYSTEM_NAMES[str(name).lower()]
    except KeyError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(sorted(SYSTEM_NAMES)), got=name,
                        field="system") from None


class RateLimiter:
    """Spaces request starts ``60/rpm`` seconds apart (no bursts).  One per run; safe for concurrent callers."""

    def __init__(self, rpm: float, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep) -> None:
        if not rpm or rpm <= 0:
            raise DataError(ErrorCode.INVALID_VALUE, "a positive requests-per-minute limit", got=rpm, field="rpm")
        self.interval = 60.0 / rpm
        self._clock, self._sleep = clock, sleep
        self._next = float("-inf")

    async def acquire(self) -> None:
        now = self._clock()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            await self._sleep(slot - now)


class _RateLimited:
    """Any backend behind a limiter (backends with ``with_rate_limiter`` limit their own network attempts)."""

    def __init__(self, backend: Backend, limiter: RateLimiter) -> None:
        self._backend, self._limiter = backend, limiter
        self.name = backend.name

    async def complete(self, call: ModelCall) -> ModelReply:
        await self._limiter.acquire()
        return await self._backend.complete(call)


def rate_limited(backend: Backend, limiter: RateLimiter) -> Backend:
    limit = getattr(backend, "with_rate_limiter", None)
    return limit(limiter) if callable(limit) else _RateLimited(backend, limiter)


@dataclass(frozen=True, slots=True)
class StaleRun:
    """A run that ``keep_stale`` found written under other inputs: kept untouched; the new run went beside it."""

    kept: Path  # the old run's folder
    changed: tuple[str, ...]  # the manifest fields that differ (``hashes.controller``, ``case_ids``, …)

    def note(self, now: Path) -> str:
        """One Markdown line for a notebook's banner."""
        return (f"**Runs folder:** `{self.kept}` holds a run made under other inputs ({', '.join(self.changed)} "
                f"changed — e.g. by a newer kit); it is kept as it was, and this run went to `{now}`.")


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished run: every row of the directory in case order, the manifest, and this invocation's decisions."""

    out_dir: Path
    system: System
    rows: tuple[PredictionRow, ...]
    manifest: Mapping[str, Any]
    executed: int
    resumed: int
    decisions: Mapping[str, Decision | DirectDecision] = field(default_factory=dict)
    stale: StaleRun | None = None  # keep_stale: the run found in the requested folder, kept (this one is beside it)

    @property
    def stale_note(self) -> str:
        """:meth:`StaleRun.note` of :attr:`stale` (``""`` when the requested folder was used)."""
        return "" if self.stale is None else self.stale.note(self.out_dir)

    @property
    def summary(self) -> Mapping[str, Any]:
        return self.manifest["summary"]

    @property
    def flagged(self) -> tuple[str, ...]:
        """Profile flags raised by the run (``MODEL_IDENTITY_MISMATCH``)."""
        return tuple(self.summary["profile_flags"])


@dataclass(slots=True)
class _Exchange:
    call: ModelCall
    reply: ModelReply


class CaseRecorder:
    """Per-case view of the backend that keeps every (call, reply) pair for the receipt."""

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.name = backend.name
        self.exchanges: list[_Exchange] = []

    async def complete(self, call: ModelCall) -> ModelReply:
        reply = _redact_reply(await ask_backend(self._backend, call), SECRETS.redactor())
        self.exchanges.append(_Exchange(call, reply))
        return reply

    def cache_miss(self) -> _Exchange | None:
        return next((x for x in self.exchanges
                     if x.reply.failure is not None and x.reply.failure.kind is FailureKind.CACHE_MISS), None)

    def usage(self) -> dict[str, Any]:
        replies = [x.reply for x in self.exchanges]
        return {"retry_count": sum(len(r.retries) for r in replies),
                "input_tokens": sum(r.prompt_tokens for r in replies),
                "output_tokens": sum(r.completion_tokens for r in replies),
                "latency_ms": round(sum(r.latency_ms for r in replies), 3)}


def _redact_reply(reply: ModelReply, redactor: Redactor) -> ModelReply:
    """``reply`` with every secret removed from its content, reported model and failure message.

    Done as the reply arrives, before the controller reads it, so the live decision is the one a replay of the
    (redacted) receipt reaches.  Non-string content is rebuilt (JSON-ready) only when a secret occurs in it.
    """
    if not redactor.secrets:
        return reply
    content = reply.content
    if isinstance(content, str):
        content = redactor.text(content)
    elif content is not None and any(secret in repr(content) for secret in redactor.secrets):
        content = redactor.value(content)
    failure = reply.failure
    if failure is not None:
        failure = dataclasses.replace(failure, message=redactor.text(failure.message))
    model = redactor.text(reply.model) if isinstance(reply.model, str) else reply.model
    if (content, failure, model) == (reply.content, reply.failure, reply.model):
        return reply
    return dataclasses.replace(reply, content=content, failure=failure, model=model)


async def arun_cases(cases: Sequence[Case], backend: Backend, *, system: System | str, assets: Assets,
                     out_dir: str | Path, concurrency: int = 8, rpm: float | None = None, resume: bool = False,
                     repeat_id: str = "0", progress: bool = True, fallback: Terminal = Terminal.CLARIFY,
                     cases_path: str | Path | None = None, keep_stale: bool = False) -> RunResult:
    """Run ``cases`` through ``system`` with ``backend`` into ``out_dir`` (see the module docstring)."""
    system = parse_system(system)
    if type(concurrency) is not int or concurrency < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "a concurrency of at least 1", got=concurrency, field="concurrency")
    register_backend_secrets(backend)  # before anything is written: the manifest, receipts, cache entries
    protocol = protocol_of(backend)  # the backend's request protocol also selects the B1/B2 acceptance rule
    engine = _engine(system, assets, fallback, protocol)
    described = describe_backend(backend)
    manifest = _manifest(system, repeat_id, cases, assets, described, _options(engine), cases_path)
    manifest["protocol"] = protocol.value
    manifest["execution"] = {"concurrency": concurrency, "rpm": rpm}
    deadline = getattr(backend, "deadline_s", None)
    if deadline is not None:  # a network backend's wall-clock deadline per model call, retries included
        manifest["execution"]["call_deadline_s"] = deadline
    live = rate_limited(backend, RateLimiter(rpm)) if rpm is not None else backend

    async def one(case: Case) -> tuple[dict[str, Any], PredictionRow, Decision | DirectDecision]:
        recorder = CaseRecorder(live)
        decision = await engine.aroute(case.request, recorder)
        missed = recorder.cache_miss()
        if missed is not None:
            raise CacheMissError(case.case_id, missed.call.stage.value, missed.reply.failure.message)
        usage = recorder.usage()
        if isinstance(decision, DirectDecision):
            row = prediction_from_direct(decision, repeat_id=repeat_id, **usage)
        else:
            row = prediction_from_decision(decision, system.value, repeat_id=repeat_id, **usage)
        receipt = _receipt(case, system, repeat_id, described["name"], recorder.exchanges, row, decision)
        if isinstance(engine, DirectBaseline) and engine.guard:
            citation = rule_citation(decision, case.request, assets.policy)
            receipt["summary"]["rule_citation"] = None if citation is None else citation.as_dict()
        return receipt, row, decision

    try:
        return await _run(cases, one, out_dir=out_dir, manifest=manifest, concurrency=concurrency,
                          resume=resume, progress=progress, system=system, keep_stale=keep_stale)
    finally:
        for used in {id(b): b for b in (live, backend)}.values():  # a rate-limited adapter is its own client
            closer = getattr(used, "aclose", None)
            if callable(closer):
                await closer()


def run_cases(cases: Sequence[Case], backend: Backend, **kwargs: Any) -> RunResult:
    """Synchronous :func:`arun_cases` (safe inside a running event loop, e.g. Jupyter)."""
    return run_sync(arun_cases(cases, backend, **kwargs))


async def aderive_interventions(source_dir: str | Path, cases: Sequence[Case] | Mapping[str, Case], assets: Assets,
                                out_dir: str | Path, *, system: System | str = System.A_STATE,
                                resume: bool = False, progress: bool = True,
                                fallback: Terminal = Terminal.CLARIFY, keep_stale: bool = False) -> RunResult:
    """A-state or A-ground from a stored RouteBR run (kit run directory or published result folder), no calls.

    Each case replays its recorded replies (receipt ``responses``, failures included; where a published folder
    has no receipt, the proposal rebuilt from the row) through the controller with the intervention's options.
    Rows keep the source row's tokens, latency and retries: they describe the calls that produced the proposal.
    """
    system = parse_system(system)
    if system not in (System.A_STATE, System.A_GROUND):
        raise DataError(ErrorCode.INVALID_VALUE, "a_state or a_ground", got=system.value, field="system")
    source = RunLedger(source_dir)
    source_manifest = source.manifest()
    if source_manifest.get("system") != System.ROUTEBR.value:
        raise DataError(ErrorCode.INVALID_VALUE, "a RouteBR run directory (manifest system 'routebr')",
                        file=str(source.manifest_path), field="system", got=source_manifest.get("system"))
    source_rows = {row.case_id: row for row in source.committed()}
    by_id = cases if isinstance(cases, Mapping) else {c.case_id: c for c in cases}
    missing = [case_id for case_id in source_rows if case_id not in by_id]
    if missing:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "cases for every row of the source run", field="case_id",
                        got=missing[:5], file=str(source.predictions_path))
    chosen = [by_id[case_id] for case_id in source_rows]
    controller = assets.controller(ControllerOptions.for_system(system, fallback=fallback))
    described = {"name": f"derived:{source_manifest.get('backend') or source_manifest.get('profile_name')}",
                 "derived_from": {"system": System.ROUTEBR.value,
                                  "manifest_sha256": sha256_file(source.manifest_path),
                                  "predictions_sha256": sha256_file(source.predictions_path)}}
    manifest = _manifest(system, next(iter(source_rows.values())).repeat_id if source_rows else "0", chosen, assets,
                         described, _options(controller), None)
    manifest["execution"] = {"concurrency": 1, "rpm": None, "live_calls": 0}

    receipts = {case_id: path for case_id in source_rows if (path := source.receipt_path(case_id)).exists()}
    replayed = replay_rows(controller, tuple(source_rows.values()), by_id, receipts=receipts.values(),
                           system_id=system.value, name=described["name"])
    derived = {row.case_id: (row, decision) for row, decision in zip(replayed.rows, replayed.decisions)}

    async def one(case: Case) -> tuple[dict[str, Any], PredictionRow, Decision]:
        out, decision = derived[case.case_id]
        path = receipts.get(case.case_id)
        recorded = source.receipt(case.case_id) if path else {"calls": [], "responses": []}
        receipt = {"case_id": case.case_id, "system": system.value, "repeat_id": out.repeat_id,
                   "backend": described["name"],
                   "derived_from": {"receipt_sha256": sha256_file(path) if path else None,
                                    "replayed_from": "receipt" if path else "predictions_row", "live_calls": 0},
                   "calls": recorded.get("calls", []), "responses": recorded.get("responses", []),
                   "summary": _summary(out, decision)}
        return receipt, out, decision

    return await _run(chosen, one, out_dir=out_dir, manifest=manifest, concurrency=1, resume=resume,
                      progress=progress, system=system, keep_stale=keep_stale)


def derive_interventions(source_dir: str | Path, cases: Sequence[Case] | Mapping[str, Case], assets: Assets,
                         out_dir: str | Path, **kwargs: Any) -> RunResult:
    """Synchronous :func:`aderive_interventions`."""
    return run_sync(aderive_interventions(source_dir, cases, assets, out_dir, **kwargs))


async def _run(cases: Sequence[Case], one: Callable[[Case], Awaitable[tuple[dict[str, Any], PredictionRow, Any]]],
               *, out_dir: str | Path, manifest: dict[str, Any], concurrency: int, resume: bool, progress: bool,
               system: System, keep_stale: bool = False) -> RunResult:
    ledger = RunLedger(out_dir)
    order = [c.case_id for c in cases]
    if len(set(order)) != len(order):
        dupes = sorted({c for c in order if order.count(c) > 1})
        raise DataError(ErrorCode.DUPLICATE_ID, "unique case IDs in a run", field="case_id", got=dupes[:5])
    done: dict[str, PredictionRow] = {}
    if ledger.exists():
        if not resume:
            raise DataError(ErrorCode.INVALID_VALUE, "an output directory without a run (or --resume to continue it)",
                            file=str(ledger.dir))
        changed = _changed_inputs(ledger, manifest) if ledger.manifest_path.exists() else ()
        if changed and keep_stale:
            key = sha256_json({k: manifest.get(k) for k in RESUME_KEYS})[:12]  # the inputs this run is resumable on
            beside = ledger.dir.with_name(f"{ledger.dir.name}@{key}")
            result = await _run(cases, one, out_dir=beside, manifest=manifest, concurrency=concurrency, resume=True,
                                progress=progress, system=system)
            return dataclasses.replace(result, stale=StaleRun(ledger.dir, changed))
        if changed:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the same inputs as the run being resumed",
                            file=str(ledger.manifest_path), field=changed[0], got=list(changed))
        for row in ledger.committed():
            if row.case_id in done:
                raise DataError(ErrorCode.DUPLICATE_ID, "one row per case", file=str(ledger.predictions_path),
                                line=row.line, field="case_id", got=row.case_id)
            if row.case_id not in manifest["case_ids"]:
                raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a case of this run", file=str(ledger.predictions_path),
                                line=row.line, field="case_id", got=row.case_id)
            done[row.case_id] = row
    ledger.prepare()
    ledger.write_manifest({**manifest, "status": "running"})
    pending = [c for c in cases if c.case_id not in done]
    decisions: dict[str, Any] = {}
    fresh: dict[str, PredictionRow] = {}
    receipts: dict[str, Mapping[str, Any]] = {}
    bar = progress_bar(total=len(pending), desc=system.value, unit="case", show=progress, dynamic_ncols=True)
    todo = iter(pending)

    async def worker() -> None:
        for case in todo:
            receipt, row, decision = await one(case)
            await asyncio.to_thread(ledger.commit, receipt, row)
            fresh[case.case_id] = row
            receipts[case.case_id] = receipt
            decisions[case.case_id] = decision
            bar.update(1)

    try:
        async with asyncio.TaskGroup() as group:
            for _ in range(min(concurrency, len(pending))):
                group.create_task(worker())
    except BaseExceptionGroup as failed:
        raise _first(failed) from None
    except (asyncio.CancelledError, KeyboardInterrupt):  # Ctrl-C: asyncio.run cancels the run, then raises
        ledger.write_manifest({**manifest, "status": "interrupted"})  # committed rows stay; --resume continues
        raise
    finally:
        bar.close()
    rows = tuple((done.get(case_id) or fresh[case_id]) for case_id in order)
    ledger.finalize(rows)
    receipt_of = lambda case_id: receipts.get(case_id) or ledger.receipt(case_id)  # noqa: E731
    summary = _run_summary(rows, receipt_of, system)
    by_id = {c.case_id: c for c in cases}
    leaks = leak_summary((by_id[row.case_id], receipt_of(row.case_id)) for row in rows)
    manifest = {**manifest, "status": "complete", "summary": summary,
                "gold_fields_passed_to_model": leaks["passed_to_model"], "gold_leak_check": leaks}
    ledger.write_manifest(manifest)
    return RunResult(ledger.dir, system, rows, manifest, len(fresh), len(done), decisions)


def _first(group: BaseExceptionGroup) -> BaseException:
    exc = group.exceptions[0]  # a raised group is never empty
    return _first(exc) if isinstance(exc, BaseExceptionGroup) else exc


def _engine(system: System, assets: Assets, fallback: Terminal, protocol: Protocol = Protocol.KIT) -> Any:
    if system.uses_controller:  # the published RouteBR acceptance equals the kit's (property-tested)
        return assets.controller(ControllerOptions.for_system(system, fallback=fallback))
    return DirectBaseline.for_system(system, assets.catalog, assets.policy, fallback=fallback, protocol=protocol)


def _options(engine: Any) -> dict[str, Any]:
    if isinstance(engine, DirectBaseline):
        return {"fallback": engine.fallback.value, "repair": engine.repair}
    o = engine.options
    return {"fallback": o.fallback.value, "enforce_state": o.enforce_state, "enable_grounding": o.enable_grounding,
            "repair": o.repair}


def describe_backend(backend: Backend) -> dict[str, Any]:
    """What the manifest records about a backend: its own ``manifest()`` if it has one, else its name."""
    describe = getattr(backend, "manifest", None)
    described = dict(describe()) if callable(describe) else {}
    described.setdefault("name", backend.name)
    return described


def _manifest(system: System, repeat_id: str, cases: Sequence[Case], assets: Assets, backend: Mapping[str, Any],
              options: Mapping[str, Any], cases_path: str | Path | None) -> dict[str, Any]:
    hashes = {
        "cases": sha256_json([_case_view(c) for c in cases]),
        "cases_file": sha256_file(cases_path) if cases_path is not None else None,
        "catalog": assets.catalog.sha256,
        "rules": assets.policy.sha256,
        # the runtime-state schema: a file's hash, or None when it is derived from the rules (hashed above)
        "state_schema": assets.policy.state_schema.sha256 or None,
        "registry": assets.registry.sha256 if assets.registry is not None else None,
        "prompts": (backend.get("prompts") or {}).get("sha256"),
        "profile": (backend.get("profile") or {}).get("sha256"),
        "controller": source_sha256(_KIT_DIR / "core"),
        "baselines": None if system.uses_controller else sha256_file(_KIT_DIR / "systems" / "baselines.py"),
    }
    splits = [s.value for s in Split if any(c.split is s for c in cases)]
    return {
        "kit_version": __version__,
        "system": system.value,
        "split": "+".join(splits),
        "repeat_id": str(repeat_id),
        "backend": backend["name"],
        "simulated": str(backend["name"]).startswith("sim:"),
        "backend_detail": dict(backend),
        "options": dict(options),
        "hashes": hashes,
        "gold_fields_passed_to_model": None,  # computed from the recorded request bodies when the run completes
        "case_ids": [c.case_id for c in cases],
    }


def _changed_inputs(ledger: RunLedger, manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The inputs (:data:`RESUME_KEYS`; a hash as ``hashes.<name>``) on which the stored run differs from this one."""
    previous = ledger.manifest()
    old_hashes, new_hashes = previous.get("hashes") or {}, manifest.get("hashes") or {}
    changed: list[str] = []
    for key in RESUME_KEYS:
        if previous.get(key) == manifest.get(key):
            continue
        if key == "hashes" and isinstance(old_hashes, Mapping):
            changed += [f"hashes.{k}" for k in sorted({*old_hashes, *new_hashes})
                        if old_hashes.get(k) != new_hashes.get(k)]
        else:
            changed.append(key)
    return tuple(changed)


def _case_view(case: Case) -> dict[str, Any]:
    r, g = case.request, case.gold
    return {
        "case_id": case.case_id, "split": case.split.value, "pair_id": case.pair_id,
        "scenario_cell": case.scenario_cell, "utterance": r.utterance, "history": list(r.history),
        "state": r.state.as_dict(),
        "candidates": [{**e.prompt_view(), "attributes": dict(e.attributes)} for e in r.candidates],
        "gold": {"action": g.action, "object_difficulty": g.object_difficulty.value, "object_id": g.object_id,
                 "boundary": g.boundary.value, "final_path": g.final_path, "rule_ids": list(g.rule_ids)},
    }


def _receipt(case: Case, system: System, repeat_id: str, backend: str, exchanges: Sequence[_Exchange],
             row: PredictionRow, decision: Decision | DirectDecision) -> dict[str, Any]:
    """Every call's request body and reply, the reported models, the retry events and the decision."""
    responses = [_response_entry(x) for x in exchanges]
    return {
        "case_id": case.case_id,
        "system": system.value,
        "repeat_id": repeat_id,
        "backend": backend,
        "calls": [{"stage": x.call.stage.value,
                   "request_body": redact_value(x.reply.extra.get("request_body", {"payload": x.call.payload}))}
                  for x in exchanges],
        "responses": responses,
        "reported_models": sorted({x.reply.model for x in exchanges if x.reply.model}),
        "transport_retries": [{"stage": x.call.stage.value, **event} for x in exchanges for event in x.reply.retries],
        "summary": _summary(row, decision),
    }


def _response_entry(x: _Exchange) -> dict[str, Any]:
    reply, extra = x.reply, x.reply.extra
    entry = {
        "stage": x.call.stage.value,
        "requested_model": extra.get("requested_model"),
        "reported_model": reply.model,
        "usage": redact_value(extra.get("usage") or {"prompt_tokens": reply.prompt_tokens,
                                                       "completion_tokens": reply.completion_tokens}),
        "content": redact_value(reply.content),
        "latency_ms": round(reply.latency_ms, 3),
        "retries": [dict(event) for event in reply.retries],
        "cache": extra.get("cache"),
        "failure": None if reply.failure is None else reply.failure.as_dict(),
    }
    for key in ("system_fingerprint", "finish_reason", "simulated"):
        if key in extra:
            entry[key] = redact_value(extra[key])
    return entry


def _summary(row: PredictionRow, decision: Decision | DirectDecision) -> dict[str, Any]:
    return {
        "pred_action": row.pred_action, "pred_object_id": row.pred_object_id, "pred_boundary": row.pred_boundary,
        "pred_final_path": row.pred_final_path, "topk": list(row.topk), "valid_json": row.valid_json,
        "first_pass_valid": row.first_pass_valid, "repair_count": row.repair_count, "calls": row.calls,
        "fallback_used": row.fallback_used, "reason": decision.reason.value, "decision": decision.as_dict(),
    }


def _run_summary(rows: Sequence[PredictionRow], receipt_of: Callable[[str], Mapping[str, Any]],
                 system: System) -> dict[str, Any]:
    """Counts over every row and receipt of the directory, so a resumed run reports the same as a fresh one."""
    reasons: dict[str, int] = {}
    identity: list[str] = []
    reported: set[str] = set()
    hits = misses = 0
    citations = []
    for row in rows:
        receipt = receipt_of(row.case_id)
        summary = receipt.get("summary", {})
        reason = summary.get("reason", "")
        reasons[reason] = reasons.get(reason, 0) + 1
        reported.update(receipt.get("reported_models", []))
        for entry in receipt.get("responses", []):
            failure = entry.get("failure") or {}
            if failure.get("kind") == FailureKind.MODEL_IDENTITY.value:
                identity.append(row.case_id)
            hits += entry.get("cache") == "hit"
            misses += entry.get("cache") == "miss"
        citation = summary.get("rule_citation")
        if citation:
            citations.append(citation["correct"])
    out = {
        "cases": len(rows),
        "fail_closed": sum(r.fallback_used for r in rows),
        "valid_json": sum(r.valid_json for r in rows),
        "first_pass_valid": sum(bool(r.first_pass_valid) for r in rows),
        "repairs": sum(r.repair_count or 0 for r in rows),
        "calls": sum(r.calls or 0 for r in rows),
        "transport_retries": sum(r.retry_count for r in rows),
        "input_tokens": sum(r.input_tokens for r in rows),
        "output_tokens": sum(r.output_tokens for r in rows),
        "reasons": dict(sorted(reasons.items())),
        "reported_models": sorted(reported),
        "model_identity_failures": sorted(set(identity)),
        "profile_flags": ["MODEL_IDENTITY_MISMATCH"] if identity else [],
        "cache": {"hits": hits, "misses": misses},
    }
    if system is System.B2_DIRECT_GUARD:
        out["rule_citation"] = {"cited": len(citations), "correct": sum(citations),
                                "accuracy": round(sum(citations) / len(citations), 6) if citations else None}
    return out


__all__ = ["RESUME_KEYS", "SYSTEM_NAMES", "RateLimiter", "RunResult", "StaleRun", "aderive_interventions", "arun_cases",
           "derive_interventions", "describe_backend", "parse_system", "rate_limited", "run_cases"]
