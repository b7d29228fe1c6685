"""Hostile server replies and the invariants a run directory must keep whatever a server sends.

:class:`HostileResponder` is an :class:`~openai_server.OpenAIServer` responder: every request gets a reply drawn
from a seeded generator over bytes, arbitrary JSON (deeply nested, any Unicode including lone surrogates, ``NaN``,
huge numbers), malformed completion envelopes, mutated proposals (wrong, foreign or missing identifiers, duplicate
keys, fences, type swaps), echoed secrets, HTTP statuses with odd ``Retry-After`` values, wrong content types,
truncated and huge bodies — plus untouched valid answers, so dispatches happen and the gates are exercised.  The
reply a request gets is keyed by (seed, request body, how often that body was seen), so it does not depend on
concurrency.

:func:`check_run` returns the invariant violations of a finished run directory (empty = none): exactly one row per
case, every receipt strict UTF-8 JSON that the kit's strict reader loads, no secret in any file, no dispatch outside
the catalog or the case's candidates or against a non-ALLOW rule, and the receipts replaying to the same decisions.

Used by ``tests/test_fail_closed_io.py`` (a few hundred replies per test run) and ``benchmarks/fuzz_server.py``
(10,000 and more).
"""

from __future__ import annotations

import hashlib
import json
import random
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openai_server import DEFAULT_MODEL, Reply, completion, user_payload, valid_answer

import routebr_kit as rk
from routebr_kit.core.controller import ControllerOptions
from routebr_kit.core.records import NONE
from routebr_kit.runs.replay import replay_rows
from routebr_kit.store.ledger import RunLedger, read_predictions

#: Code point pools for hostile strings: controls, separators, BOM, CJK, emoji, combining, RTL, lone surrogates.
POOLS = (
    [chr(c) for c in range(0x20, 0x7F)],
    [chr(c) for c in range(0x00, 0x20)] + ["\x7f", "\u2028", "\u2029", "\ufeff", "\ufffe", "\uffff"],
    [chr(c) for c in range(0x4E00, 0x4E40)] + ["\U0001F600", "\U0001F9EA", "\u0301", "\u200d", "\u202e"],
    [chr(c) for c in (0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xD83D, 0xDE00)],
)
STATUSES = (200, 200, 201, 204, 301, 400, 401, 403, 404, 408, 409, 413, 422, 429, 500, 502, 503, 504)
CONTENT_TYPES = (None, "text/html", "text/plain", "text/plain; charset=latin-1", "application/octet-stream",
                 "application/json; charset=utf-16", "application/json; charset=bogus", "text/event-stream",
                 "application/x-ndjson", "multipart/form-data; boundary=x")
KINDS = ("valid", "proposal", "proposal", "proposal", "content_text", "content_json", "envelope", "body_json",
         "bytes", "transport", "nested", "secret", "huge")


def text(rng: random.Random, max_len: int = 40) -> str:
    pools = rng.sample(POOLS, rng.randint(1, len(POOLS)))
    return "".join(rng.choice(rng.choice(pools)) for _ in range(rng.randint(0, max_len)))


def json_value(rng: random.Random, depth: int = 0) -> Any:
    """An arbitrary JSON-like value (``NaN``/``Infinity`` and lone surrogates included)."""
    kind = rng.randrange(9 if depth < 4 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice([0, -1, 1, 2**31, -(2**63), 10**30, rng.randint(-10**6, 10**6)])
    if kind == 3:
        return rng.choice([0.5, -0.0, 1e308, 1e-320, float("nan"), float("inf"), -float("inf"), rng.random()])
    if kind in (4, 5):
        return text(rng)
    if kind in (6, 7):
        return [json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {text(rng, 8): json_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def dumps(rng: random.Random, value: Any) -> str:
    """JSON text, non-ASCII either escaped or raw (a raw lone surrogate makes the bytes invalid UTF-8)."""
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


def nested(rng: random.Random) -> str:
    depth = rng.choice([10, 100, 500, 990, 1500, 5000, 100_000])
    return rng.choice(["[", '{"a":']) * depth if rng.random() < 0.2 else _balanced(depth, rng.random() < 0.5)


def _balanced(depth: int, lists: bool) -> str:
    return "[" * depth + "]" * depth if lists else '{"a":' * depth + "0" + "}" * depth


class HostileResponder:
    """A seeded responder (see the module docstring); counts the replies it gave per kind."""

    def __init__(self, seed: int, *, secrets: Sequence[str] = (), model: str = DEFAULT_MODEL,
                 huge_bytes: int = 2_000_000) -> None:
        self.seed, self.secrets, self.model, self.huge_bytes = seed, tuple(secrets), model, huge_bytes
        self.kinds: Counter[str] = Counter()
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()

    def __call__(self, request: dict, number: int) -> Reply:
        body = json.dumps(request, sort_keys=True)
        with self._lock:
            self._seen[body] += 1
            occurrence = self._seen[body]
        key = hashlib.sha256(f"{self.seed}|{occurrence}|{body}".encode()).digest()
        rng = random.Random(key)
        kind = rng.choice(KINDS)
        with self._lock:
            self.kinds[kind] += 1
        return getattr(self, f"_{kind}")(rng, request)

    # ------------------------------------------------------------------------------------------ kinds
    def _ok(self, content: Any, **kwargs: Any) -> Reply:
        return Reply(200, completion(content, model=self.model), **kwargs)

    def _valid(self, rng: random.Random, request: dict) -> Reply:
        return self._ok(valid_answer(request))

    def _proposal(self, rng: random.Random, request: dict) -> Reply:
        answer = json.loads(valid_answer(request))
        payload = user_payload(request)
        payload = payload.get("original_payload", payload)
        actions = [a["action_id"] for a in payload.get("catalog", [])] or ["X"]
        objects = [e["object_id"] for e in payload.get("entities", [])] or ["O"]
        pool = [*actions, *objects, NONE, "UNRESOLVED", "", None, 0, [], {}, text(rng, 12)]
        for _ in range(rng.randint(0, 3)):
            field = rng.choice(["action_id", "object_id", "topk", "extra", "drop", "terminal", "boundary"])
            if field == "drop" and answer:
                answer.pop(rng.choice(list(answer)))
            elif field == "topk":
                answer["topk"] = rng.choice([[], rng.sample(actions, min(len(actions), rng.randint(1, 4))),
                                             [rng.choice(pool)], rng.choice(pool), actions * 3])
            elif field == "extra":
                answer[text(rng, 10)] = json_value(rng)
            else:
                answer[field] = rng.choice(pool) if rng.random() < 0.7 else rng.choice(actions).lower()
        raw = json.dumps(answer, ensure_ascii=rng.random() < 0.5)
        shape = rng.randrange(8)
        if shape == 0:
            raw = f"```json\n{raw}\n```"
        elif shape == 1 and "action_id" in answer:  # a duplicate key, first value different
            raw = '{"action_id":' + json.dumps(rng.choice(actions)) + "," + raw[1:]
        elif shape == 2:
            raw = json.dumps(raw)  # JSON inside a JSON string
        elif shape == 3:
            raw = raw + text(rng, 5)
        elif shape == 4:
            raw = "\ufeff" + raw
        return self._ok(raw)

    def _content_text(self, rng: random.Random, request: dict) -> Reply:
        return self._ok(text(rng, 200))

    def _content_json(self, rng: random.Random, request: dict) -> Reply:
        return self._ok(dumps(rng, json_value(rng)))

    def _envelope(self, rng: random.Random, request: dict) -> Reply:
        body: Any = completion(valid_answer(request), model=self.model)
        target = rng.randrange(9)
        if target == 0:
            body["choices"] = rng.choice([[], None, {}, "x", [None], [{"message": None}]])
        elif target == 1:
            body["choices"][0]["message"]["content"] = json_value(rng)
        elif target == 2:
            body["model"] = rng.choice([None, 7, "", "impostor", [self.model], text(rng, 20)])
        elif target == 3:
            body.pop("model")
        elif target == 4:
            body["usage"] = rng.choice([None, "x", {"prompt_tokens": -5, "completion_tokens": 10**40},
                                        {"prompt_tokens": float("nan")}, json_value(rng)])
        elif target == 5:
            body["choices"][0]["finish_reason"] = json_value(rng)
            body["system_fingerprint"] = json_value(rng)
        elif target == 6:
            body[text(rng, 10)] = json_value(rng)
        elif target == 7:
            body["choices"] = body["choices"] * rng.randint(2, 5)
        else:
            body = rng.choice([[body], json.dumps(body), None])
        return Reply(200, dumps(rng, body) if rng.random() < 0.5 else body)

    def _body_json(self, rng: random.Random, request: dict) -> Reply:
        return Reply(200, dumps(rng, json_value(rng)))

    def _bytes(self, rng: random.Random, request: dict) -> Reply:
        size = rng.choice([0, 1, 2, 16, 300, 5000])
        data = bytes(rng.randrange(256) for _ in range(size))
        if rng.random() < 0.5:  # bytes that start like a completion, then break
            data = json.dumps(completion(valid_answer(request), model=self.model)).encode()[:rng.randint(0, 200)] + data
        return Reply(200, data)

    def _transport(self, rng: random.Random, request: dict) -> Reply:
        body = rng.choice([completion(valid_answer(request), model=self.model), {"error": {"message": text(rng)}},
                           text(rng, 50), b"", None])
        status = rng.choice(STATUSES)
        headers = {}
        if rng.random() < 0.4:
            headers[rng.choice(["Retry-After", "retry-after-ms"])] = rng.choice(
                ["0", "-1", "abc", "1e309", "nan", "Wed, 21 Oct 2015 07:28:00 GMT", "99999999999", ""])
        encoded = dumps(rng, body) if isinstance(body, dict) else body
        truncate = None
        if rng.random() < 0.4:
            length = len(encoded.encode("utf-8", "surrogatepass") if isinstance(encoded, str) else encoded or b"")
            truncate = rng.randint(0, max(0, length - 1)) if length else None
        return Reply(status, encoded, headers, content_type=rng.choice(CONTENT_TYPES + ("application/json",)),
                     truncate_to=truncate)

    def _nested(self, rng: random.Random, request: dict) -> Reply:
        deep = nested(rng)
        where = rng.randrange(3)
        if where == 0:
            return Reply(200, deep)
        if where == 1:
            return self._ok(deep)
        return Reply(200, '{"model":' + json.dumps(self.model) + ',"choices":[{"message":{"content":'
                     + json.dumps(valid_answer(request)) + '}}],"usage":' + deep + "}")

    def _secret(self, rng: random.Random, request: dict) -> Reply:
        if not self.secrets:
            return self._valid(rng, request)
        secret = rng.choice(self.secrets)
        escaped = "".join(f"\\u{ord(c):04x}" for c in secret)
        where = rng.randrange(6)
        if where == 0:  # in the content, as text
            return self._ok(f"your key is {secret}, " + valid_answer(request))
        if where == 1:  # as an identifier of the proposal
            answer = json.loads(valid_answer(request))
            answer[rng.choice(["action_id", "object_id"])] = secret
            return self._ok(json.dumps(answer))
        if where == 2:  # as the reported model
            return Reply(200, completion(valid_answer(request), model=secret))
        if where == 3:  # straddling the 80 characters a non-JSON body keeps in its failure message
            return Reply(200, "x" * rng.randint(60, 79) + secret + " not json", content_type="text/plain")
        if where == 4:  # JSON-escaped, so only the parsed value holds it
            return Reply(200, '{"model":' + json.dumps(self.model) + ',"choices":[{"message":{"content":"'
                         + escaped + '"}}],"usage":{"note":"' + escaped + '"}}')
        return Reply(400, {"error": {"message": f"invalid key {secret}"}})

    def _huge(self, rng: random.Random, request: dict) -> Reply:
        size = rng.randint(self.huge_bytes // 2, self.huge_bytes)
        shape = rng.randrange(3)
        if shape == 0:
            return self._ok("x" * size)
        if shape == 1:
            return Reply(200, b"\xff" * size)
        body = json.dumps(completion(valid_answer(request), model=self.model))
        return Reply(200, body[:-1] + ',"pad":"' + "y" * size + '"}')


# --------------------------------------------------------------------------------------------- invariants


def check_run(out_dir: Path, cases: Sequence[rk.Case], assets: rk.Assets, *, secrets: Sequence[str] = (),
              system: str = "routebr", extra_dirs: Sequence[Path] = ()) -> list[str]:
    """The invariant violations of a finished run directory (empty: none); see the module docstring."""
    problems: list[str] = []
    out_dir = Path(out_dir)
    for root in (out_dir, *extra_dirs):
        for path in (p for p in Path(root).rglob("*") if p.is_file()):
            data = path.read_bytes()
            problems += [f"secret in {path}" for s in secrets if s.encode() in data]
    ledger = RunLedger(out_dir)  # the kit's strict readers: what resume and replay read
    try:
        rows = read_predictions(ledger.predictions_path)
        manifest = ledger.manifest()
    except Exception as exc:  # noqa: BLE001 - a violation to report, not a crash
        return [*problems, f"unreadable run: {type(exc).__name__}: {exc}"]
    ids = [r.case_id for r in rows]
    if ids != [c.case_id for c in cases]:
        problems.append(f"rows {len(ids)} ({len(set(ids))} distinct) for {len(cases)} cases")
    if manifest.get("status") != "complete":
        problems.append(f"manifest status {manifest.get('status')!r}")
    by_id = {c.case_id: c for c in cases}
    catalog = assets.catalog
    receipts = []
    for row in rows:
        path = out_dir / row.raw_output_path
        try:
            if path != ledger.receipt_path(row.case_id):
                raise ValueError(f"raw_output_path {row.raw_output_path!r}")
            receipt = ledger.receipt(row.case_id)
            rk.ReasonCode(receipt["summary"]["reason"])
            receipts.append(path)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{row.case_id}: receipt {type(exc).__name__}: {str(exc)[:120]}")
            continue
        case = by_id.get(row.case_id)
        if case is None or row.pred_boundary != "ALLOW":
            continue
        request = case.request
        if row.pred_action not in catalog:
            problems.append(f"{row.case_id}: dispatch of {row.pred_action!r} outside the catalog")
            continue
        action = catalog[row.pred_action]
        if action.requires_object:
            entity = request.candidate_index.get(row.pred_object_id)
            if entity is None or not action.permits(entity.object_type):
                problems.append(f"{row.case_id}: dispatch on {row.pred_object_id!r}, not a fitting candidate")
        elif row.pred_object_id != NONE:
            problems.append(f"{row.case_id}: object-free {row.pred_action} dispatched on {row.pred_object_id!r}")
        if system == "routebr":
            rule = assets.policy.evaluate(row.pred_action, request.state.values)
            if rule.decision is not rk.Boundary.ALLOW:
                problems.append(f"{row.case_id}: dispatch against {rule.rule_id} ({rule.decision.value})")
    if system == "routebr" and not problems:
        problems += _replay_differences(rows, by_id, assets, receipts)
    return problems


def _replay_differences(rows: Sequence[Any], cases: Mapping[str, rk.Case], assets: rk.Assets,
                        receipts: Sequence[Path]) -> list[str]:
    controller = assets.controller(ControllerOptions.for_system(rk.System.ROUTEBR))
    replayed = replay_rows(controller, rows, cases, receipts=receipts)
    fields = ("pred_action", "pred_object_id", "pred_boundary", "pred_final_path", "topk", "valid_json",
              "fallback_used", "error_code", "first_pass_valid", "repair_count", "calls")
    return [f"{live.case_id}: replayed {name} {getattr(again, name)!r} != live {getattr(live, name)!r}"
            for live, again in zip(rows, replayed.rows) for name in fields
            if getattr(live, name) != getattr(again, name)]
