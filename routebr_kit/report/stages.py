"""The stages of one decision as the paper's Figure 1 draws them, built from a ledger row and its :class:`RowTrace`.

``request → candidates → model call(s) → repair → contract → commit → state gate → object gate → terminal``.
:func:`case_stages` gives the first two (they belong to the case and are shared by every row of it);
:func:`row_stages` the rest.  Every stage is a plain record — ``{"key", "title", "source", "items", "blocks",
"note"}`` — whose items are ``[field, label, value]`` strings and whose blocks hold recorded JSON or text
unchanged, so the browser renders text only (never markup from the data) and a test can compare a shown stage with
the receipt field by field.  Each stage names its source: the receipt, a replay, the shadow record or the row.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..evaluation.metrics import calls_of, first_pass_valid_of
from ..store.cases import Case
from ..store.ledger import PredictionRow
from .traces import RowTrace, TraceSource

#: Stage keys in pipeline order (Figure 1).
STAGES = ("request", "candidates", "model_call", "repair", "contract", "commit", "state_gate", "object_gate",
          "terminal")

#: The explorer stages a :class:`~routebr_kit.review.diff.ChangeStage` value points at (by value, so a stage added
#: to the diff — e.g. ``state_schema`` — maps without an import; an unknown value highlights nothing but is shown).
CHANGE_STAGE_KEYS: Mapping[str, tuple[str, ...]] = {
    "proposal": ("model_call", "commit"), "contract/repair": ("repair", "contract"), "state_schema": ("state_gate",),
    "rule": ("state_gate",), "object_gate": ("object_gate",), "terminal": ("terminal",),
}

#: What each trace source means (the explorer shows it next to every stage built from that source).
SOURCE_TEXT = {
    TraceSource.RECEIPT.value: "receipt (decision record as recorded)",
    TraceSource.REPLAY_RECEIPT.value: "replayed now: the receipt's recorded replies through the assets beside the "
                                      "cases file",
    TraceSource.REPLAY_ROW.value: "replayed now: the proposal rebuilt from the ledger row (no receipt) through the "
                                  "assets beside the cases file",
    TraceSource.SHADOW_RECORD.value: "shadow record (shadow_rows.jsonl: rule, object gate, reason)",
    TraceSource.LEDGER_ROW.value: "ledger row (predictions.csv) only",
}
#: B1/B2 have no state gate: the stage says so.
_NO_STATE_GATE = "No state gate in code: B1 checks no rule; B2's guard is the model's own reading of the rule table."


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value) if value else "[]"
    return str(value)


def _item(field: str, label: str, value: Any) -> list[str]:
    return [field, label, _text(value)]


def _stage(key: str, title: str, source: str, items: Iterable[list[str]] = (),
           blocks: Iterable[dict[str, Any]] = (), note: str = "") -> dict[str, Any]:
    return {"key": key, "title": title, "source": source, "items": list(items), "blocks": list(blocks), "note": note}


def _json_block(field: str, label: str, value: Any) -> dict[str, Any]:
    return {"field": field, "label": label, "json": value}


def _text_block(field: str, label: str, value: Any) -> dict[str, Any]:
    return {"field": field, "label": label, "text": value if isinstance(value, str) else _text(value)}


# --------------------------------------------------------------------------------------------- the case


def case_stages(case: Case) -> list[dict[str, Any]]:
    """Request and candidates: what the controller was given (the gold labels shown apart, never sent)."""
    r, g = case.request, case.gold
    request = _stage("request", "Request", "cases file", [
        _item("case_id", "case", case.case_id), _item("split", "split", case.split.value),
        _item("pair_id", "FLIP pair", case.pair_id or None),
        _item("gold_final_path", "gold final path (never shown to the model)", g.final_path),
        _item("gold_object_id", "gold object", g.object_id), _item("gold_rule_ids", "gold rules", list(g.rule_ids)),
    ], [_text_block("utterance", "utterance", r.utterance), _json_block("history", "history", list(r.history)),
        _json_block("state", "runtime state", r.state.as_dict())])
    candidates = _stage("candidates", "Candidates", "cases file",
                        [_item("count", "closed entity list", f"{len(r.candidates)} candidates")],
                        [_json_block("candidates", "entities (as the model sees them)",
                                     [e.prompt_view() for e in r.candidates])])
    return [request, candidates]


# --------------------------------------------------------------------------------------------- one row


def _calls(row: PredictionRow, trace: RowTrace) -> list[dict[str, Any]]:
    receipt = trace.receipt
    where = f"receipt {trace.receipt_path.name}" if trace.receipt_path is not None else ""
    if trace.calls_from:
        where += f" of the shadow's source ({trace.calls_from})"
    if not isinstance(receipt, dict) or not (receipt.get("calls") or receipt.get("responses")):
        missing = f" (the row names {row.raw_output_path}, which is not in the folder)" if row.raw_output_path else ""
        return [_stage("model_call", "Model call", "ledger row", [
            _item("calls", "calls (ledger)", calls_of(row)), _item("input_tokens", "input tokens", row.input_tokens),
            _item("output_tokens", "output tokens", row.output_tokens),
            _item("latency_ms", "latency ms", f"{row.latency_ms:.3f}"),
            _item("retry_count", "transport retries", row.retry_count)],
            [_json_block("rebuilt_reply", "proposal rebuilt from the row (pred_action, pred_object_id, topk_json)",
                         row.proposal_output)],
            note=f"No receipt recorded for this row{missing}: the request body and the reply text are not available. "
                 "A replay answers with the proposal rebuilt from the row.")]
    calls: Sequence[Any] = receipt.get("calls") or []
    responses: Sequence[Any] = receipt.get("responses") or []
    out = []
    for i in range(max(len(calls), len(responses))):
        call = calls[i] if i < len(calls) and isinstance(calls[i], dict) else {}
        reply = responses[i] if i < len(responses) and isinstance(responses[i], dict) else {}
        usage = reply.get("usage") if isinstance(reply.get("usage"), dict) else {}
        failure = reply.get("failure") if isinstance(reply.get("failure"), dict) else None
        items = [_item("stage", "stage", call.get("stage") or reply.get("stage")),
                 _item("model", "requested model", call.get("model") or reply.get("requested_model")),
                 _item("reported_model", "reported model", reply.get("reported_model")),
                 _item("prompt_tokens", "prompt tokens", usage.get("prompt_tokens")),
                 _item("completion_tokens", "completion tokens", usage.get("completion_tokens")),
                 _item("latency_ms", "latency ms", reply.get("latency_ms")),
                 _item("failure", "failure", None if failure is None else
                       f"{failure.get('kind')}: {failure.get('message')}")]
        if reply.get("simulated") is not None:
            items.append(_item("simulated", "SIMULATED reply", "yes — drawn by the seeded simulator"))
        blocks = []
        if call:
            blocks.append(_json_block("request_body", "request body (as recorded)", call.get("request_body")))
        content = reply.get("content")
        blocks.append(_text_block("reply", "reply (as received)", content) if isinstance(content, str)
                      else _json_block("reply", "reply (as received)", content))
        out.append(_stage("model_call", f"Model call {i + 1}", where, items, blocks))
    return out


def _errors(items: Sequence[Any]) -> list[dict[str, Any]]:
    return [dict(e) for e in items if isinstance(e, dict)]


def _decision_stages(row: PredictionRow, d: Mapping[str, Any], source: str) -> list[dict[str, Any]]:
    controller = "rule" in d or "gate_enforced" in d
    errors = _errors(d.get("errors") or [])
    failure = d.get("failure") if isinstance(d.get("failure"), dict) else None
    repair = _stage("repair", "Repair", source, [
        _item("repair_attempted", "repair attempted", bool(d.get("repair_attempted"))),
        _item("first_pass_valid", "first output accepted as it came", d.get("first_pass_valid"))],
        [_json_block("repair_output", "repair output", d.get("repair_output"))] if d.get("repair_attempted") else [])
    contract = _stage("contract", "Contract", source, [
        _item("valid", "proposal accepted", d.get("proposal") is not None or d.get("route") is not None),
        _item("error_codes", "contract errors", [e.get("code") for e in errors]),
        _item("failure", "backend failure", None if failure is None else
              f"{failure.get('kind')}: {failure.get('message')}")],
        [_json_block("first_output", "first output (as the contract read it)", d.get("first_output"))]
        + ([_json_block("errors", "contract errors (code, field, message, got)", errors)] if errors else []))
    stages = [repair, contract]
    if controller:
        proposal = d.get("proposal") if isinstance(d.get("proposal"), dict) else None
        stages.append(_stage("commit", "Committed action", source, [
            _item("action_id", "primary action", proposal.get("action_id") if proposal else None),
            _item("object_id", "proposed object", proposal.get("object_id") if proposal else None),
            _item("topk", "topk (lower-ranked: diagnostic only)", proposal.get("topk") if proposal else None)],
            note="" if proposal else "No proposal was accepted: nothing was committed."))
        rule = d.get("rule") if isinstance(d.get("rule"), dict) else None
        gate = _trace_event(d, "STATE_GATE")
        state_errors = _errors(d.get("state_errors") or [])
        stages.append(_stage("state_gate", "State gate", source, [
            _item("gate_enforced", "gate enforced", d.get("gate_enforced")),
            _item("rule_id", "winning rule", rule.get("rule_id") if rule else None),
            _item("rule_version", "rule version", rule.get("version") if rule else None),
            _item("rule_decision", "rule decision", rule.get("decision") if rule else None),
            _item("rule_priority", "priority", rule.get("priority") if rule else None),
            _item("condition", "evaluation", gate and f"{gate.get('outcome')}: {gate.get('detail')}")],
            [_json_block("state_errors", "state schema violations", state_errors)] if state_errors else [],
            "" if rule or state_errors else "Not reached: no accepted proposal."))
        stages.append(_stage("object_gate", "Object gate", source, [
            _item("object_resolution", "object resolution", d.get("object_resolution")),
            _item("object_id", "object", d.get("object_id")),
            _item("grounding_enabled", "grounding enabled", d.get("grounding_enabled"))]))
    else:
        route = d.get("route") if isinstance(d.get("route"), dict) else None
        stages.append(_stage("commit", "Route (the model's own)", source, [
            _item("action_id", "action", route.get("action_id") if route else None),
            _item("object_id", "object", route.get("object_id") if route else None),
            _item("topk", "topk", route.get("topk") if route else None)],
            [_json_block("route", "accepted route", route)] if route else []))
        stages.append(_stage("state_gate", "State gate", source, [_item("rule_ids", "rules the model cited",
                                                                         route.get("rule_ids") if route else None)],
                             note=_NO_STATE_GATE))
    stages.append(_terminal(row, d, source))
    return stages


def _trace_event(d: Mapping[str, Any], step: str) -> Mapping[str, Any] | None:
    """The decision record's first trace event of ``step`` (``None``: the decision never reached it)."""
    return next((e for e in d.get("trace") or [] if isinstance(e, dict) and e.get("step") == step), None)


def _terminal(row: PredictionRow, d: Mapping[str, Any] | None, source: str) -> dict[str, Any]:
    items = []
    blocks = []
    if d is not None:
        emit = _trace_event(d, "EMIT")
        emitted = None if emit is None else str(emit.get("outcome"))
        items += [_item("terminal", "terminal", d.get("terminal")), _item("emitted", "emitted", emitted),
                  _item("final_path", "final path", d.get("final_path")),
                  _item("strict_path", "strict path", d.get("strict_path")),
                  _item("reason", "reason code", d.get("reason")),
                  _item("legacy_reason_codes", "published reason codes", d.get("legacy_reason_codes")),
                  _item("fallback", "fail-closed", d.get("fallback"))]
        if d.get("trace"):
            blocks.append(_json_block("trace", "Decision.trace()", d.get("trace")))
    items += [_item("pred_final_path", "ledger: pred_final_path", row.pred_final_path),
              _item("pred_boundary", "ledger: pred_boundary", row.pred_boundary),
              _item("pred_action", "ledger: pred_action", row.pred_action),
              _item("pred_object_id", "ledger: pred_object_id", row.pred_object_id),
              _item("error_code", "ledger: error_code", row.error_code or None)]
    note = ""
    if d is not None and d.get("final_path") is not None and d.get("final_path") != row.pred_final_path:
        note = "The ledger row and the decision record disagree on the final path."
    return _stage("terminal", "Terminal", source, items, blocks, note)


def _row_only_stages(row: PredictionRow, trace: RowTrace, controller: bool) -> list[dict[str, Any]]:
    source = trace.source.value
    detail = trace.detail
    stages = [
        _stage("repair", "Repair", source, [
            _item("repair_attempted", "repair attempted", detail.repair_attempted if detail else None),
            _item("repair_count", "repair count (ledger)", row.repair_count)]),
        _stage("contract", "Contract", "ledger row", [
            _item("valid", "proposal accepted (valid_json)", row.valid_json),
            _item("first_pass_valid", "first pass valid", first_pass_valid_of(row)),
            _item("fallback_used", "fallback used", row.fallback_used),
            _item("error_code", "error code", row.error_code or None)]),
        _stage("commit", "Committed action" if controller else "Route (the model's own)", "ledger row", [
            _item("action_id", "action", row.pred_action), _item("object_id", "object", row.pred_object_id),
            _item("topk", "topk", list(row.topk))]),
    ]
    if controller:
        stages.append(_stage("state_gate", "State gate", source, [
            _item("rule_id", "winning rule", detail.rule_id if detail else None),
            _item("rule_version", "rule version", detail.rule_version if detail else None),
            _item("rule_decision", "rule decision", detail.rule_decision if detail else None)],
            note="" if detail else "Not recorded for this row."))
        stages.append(_stage("object_gate", "Object gate", source, [
            _item("object_resolution", "object resolution", detail.object_resolution if detail else None)]))
    else:
        stages.append(_stage("state_gate", "State gate", "system", note=_NO_STATE_GATE))
    terminal = _terminal(row, None, "ledger row")
    if detail is not None:
        terminal["items"].insert(0, _item("reason", "reason code", detail.reason))
    stages.append(terminal)
    return stages


def row_stages(row: PredictionRow, trace: RowTrace, *, controller: bool) -> list[dict[str, Any]]:
    """Model call(s) to terminal for one row (see the module docstring)."""
    calls = _calls(row, trace)
    if trace.decision is not None:
        return calls + _decision_stages(row, trace.decision, trace.source.value)
    return calls + _row_only_stages(row, trace, controller)


def row_reason(row: PredictionRow, trace: RowTrace) -> str:
    """The reason code the explorer filters on: the decision's, the shadow record's, else the ledger's error code."""
    if trace.decision is not None and trace.decision.get("reason"):
        return str(trace.decision["reason"])
    if trace.detail is not None and trace.detail.reason:
        return trace.detail.reason
    return row.error_code or "—"


def row_rule(trace: RowTrace) -> str:
    """``rule_id@version`` of the winning rule, ``—`` when none was reached or recorded."""
    d = trace.decision
    rule = d.get("rule") if isinstance(d, Mapping) and isinstance(d.get("rule"), dict) else None
    if rule is not None:
        return f"{rule.get('rule_id')}@{rule.get('version')}"
    if trace.detail is not None and trace.detail.rule_id:
        return f"{trace.detail.rule_id}@{trace.detail.rule_version}"
    return "—"


__all__ = ["CHANGE_STAGE_KEYS", "SOURCE_TEXT", "STAGES", "case_stages", "row_reason", "row_rule", "row_stages"]
