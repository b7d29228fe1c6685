"""Grouped replay for very large ledgers: one :meth:`Controller.decide` per decision signature, not per row.

Algorithm 1 makes a recorded first output's decision depend on few things:

* the **contract** depends only on the output and the case's candidate list (object IDs and types);
* an **accepted** proposal's gates depend only on its primary action, its object ID and the runtime state
  (``topk[1:]`` is never consulted; the object gate reads the catalog entry, the object and the options);
* a **rejected** output with no recorded repair ends in the fail-closed terminal, whatever the state passing its
  schema — but the schema is checked first: a state that fails it ends in ``FAIL_CLOSED_INVALID_STATE`` with its
  own violations, whatever the output.

So rows are grouped by their signature — ``(action, object, state)`` for accepted proposals, ``(candidate list,
output, state-schema verdict)`` for rejected ones — and each group is decided once by the real
:meth:`Controller.decide` on one of its rows; the other rows share that decision except for their own request ID
and ``topk``.  No gate logic is re-implemented here; equality with row-by-row ``decide`` on every ledger field is
property-tested (``tests/test_review_fast.py``; states that fail their schema: ``tests/test_impact_sound.py``) and
asserted by ``benchmarks/bench_review.py`` on 1,000,000 rows.

Ledgers are columnar (:class:`ColumnarLedger`): tables of distinct requests and distinct first outputs, and one
integer per row into each.  Only first outputs are handled (a row with a recorded repair output goes through
:func:`routebr_kit.runs.replay.replay_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.contract import check_proposal
from ..core.controller import Controller, Decision
from ..core.errors import DataError, ErrorCode
from ..core.records import Proposal, RouteRequest


@dataclass(frozen=True)
class ColumnarLedger:
    """``requests[request_index[i]]`` answered ``outputs[output_index[i]]`` in row ``i``."""

    requests: Sequence[RouteRequest]
    outputs: Sequence[Any]
    request_index: np.ndarray
    output_index: np.ndarray

    def __post_init__(self) -> None:
        ri, oi = np.asarray(self.request_index), np.asarray(self.output_index)
        if ri.shape != oi.shape or ri.ndim != 1:
            raise DataError(ErrorCode.INVALID_VALUE, "two aligned one-dimensional index arrays",
                            got=(ri.shape, oi.shape), field="request_index")
        if len(ri) and (ri.min() < 0 or ri.max() >= len(self.requests) or oi.min() < 0
                        or oi.max() >= len(self.outputs)):
            raise DataError(ErrorCode.INVALID_VALUE, "indices inside the request and output tables",
                            field="request_index")
        object.__setattr__(self, "request_index", ri.astype(np.int64, copy=False))
        object.__setattr__(self, "output_index", oi.astype(np.int64, copy=False))

    def __len__(self) -> int:
        return len(self.request_index)


@dataclass(frozen=True)
class GroupedDecisions:
    """One decision per signature group, and each row's group."""

    decisions: tuple[Decision, ...]
    group_of_row: np.ndarray
    proposal_of_row: np.ndarray  # index into ``proposals`` (-1: rejected)
    proposals: tuple[Proposal | None, ...]

    @property
    def groups(self) -> int:
        return len(self.decisions)

    def __len__(self) -> int:
        return len(self.group_of_row)

    def view(self, row: int) -> tuple[Any, ...]:
        """The ledger fields of one row: terminal, action, object, reason, rule, object gate, final path, topk."""
        d = self.decisions[int(self.group_of_row[row])]
        p = int(self.proposal_of_row[row])
        topk = self.proposals[p].topk if p >= 0 else ()  # type: ignore[union-attr]
        return (d.terminal, d.action_id, d.object_id, d.reason, d.rule_id, d.object_resolution, d.final_path, topk)

    def final_paths(self) -> np.ndarray:
        paths = np.array([d.final_path for d in self.decisions], dtype=object)
        return paths[self.group_of_row]


def decision_view(d: Decision) -> tuple[Any, ...]:
    """:meth:`GroupedDecisions.view` of a row-by-row decision."""
    return (d.terminal, d.action_id, d.object_id, d.reason, d.rule_id, d.object_resolution, d.final_path, d.topk)


def _codes(keys: Sequence[Any]) -> np.ndarray:
    table: dict[Any, int] = {}
    return np.fromiter((table.setdefault(k, len(table)) for k in keys), dtype=np.int64, count=len(keys))


def _candidate_key(request: RouteRequest) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((e.object_id, e.object_type) for e in request.candidates))


def _state_key(request: RouteRequest) -> str:
    return json.dumps(request.state.as_dict(), sort_keys=True, default=repr)


def grouped_decide(controller: Controller, ledger: ColumnarLedger) -> GroupedDecisions:
    """Decide every row of ``ledger`` with one :meth:`Controller.decide` per signature group."""
    n_out = max(len(ledger.outputs), 1)
    ri, oi = ledger.request_index, ledger.output_index
    cand_code = _codes([_candidate_key(r) for r in ledger.requests])
    state_code = _codes([_state_key(r) for r in ledger.requests])
    schema = controller.policy.state_schema if controller.options.enforce_state else None
    verdicts = [schema.check(r.state.values) if schema is not None else () for r in ledger.requests]
    verdict_code = _codes(verdicts)
    state_valid = np.array([not v for v in verdicts], dtype=bool)
    # 1. the contract, once per (candidate list, output)
    pair_key = cand_code[ri] * n_out + oi
    pairs, first_row, pair_of_row = np.unique(pair_key, return_index=True, return_inverse=True)
    proposals: list[Proposal | None] = []
    for row in first_row.tolist():
        request = ledger.requests[int(ri[row])]
        proposals.append(check_proposal(ledger.outputs[int(oi[row])], controller.catalog,
                                        request.candidate_index).proposal)
    actions = _codes([(p.action_id, p.object_id) if p is not None else None for p in proposals])
    accepted = np.array([p is not None for p in proposals], dtype=bool)
    # 2. the gates, once per (action, object, state) of accepted proposals; rejected outputs by their contract pair
    #    and the state's schema verdict (checked before the output is read)
    n_state = int(state_code.max()) + 1 if len(state_code) else 1
    n_verdict = int(verdict_code.max()) + 1 if len(verdict_code) else 1
    row_accepted = accepted[pair_of_row]
    gate_key = np.where(row_accepted, actions[pair_of_row] * n_state + state_code[ri],
                        -1 - (pair_of_row.astype(np.int64) * n_verdict + verdict_code[ri]))
    _, representative, group_of_row = np.unique(gate_key, return_index=True, return_inverse=True)
    decide = controller.decide
    requests, outputs = ledger.requests, ledger.outputs
    decisions = tuple(decide(requests[int(ri[row])], outputs[int(oi[row])]) for row in representative.tolist())
    proposal_of_row = np.where(row_accepted & state_valid[ri], pair_of_row, -1)  # (a failed state reads no output)
    return GroupedDecisions(decisions, group_of_row.reshape(-1), proposal_of_row.reshape(-1), tuple(proposals))


def row_by_row(controller: Controller, ledger: ColumnarLedger) -> list[Decision]:
    """The reference: :meth:`Controller.decide` on every row, in order."""
    decide, requests, outputs = controller.decide, ledger.requests, ledger.outputs
    return [decide(requests[r], outputs[o]) for r, o in zip(ledger.request_index.tolist(),
                                                             ledger.output_index.tolist())]


__all__ = ["ColumnarLedger", "GroupedDecisions", "decision_view", "grouped_decide", "row_by_row"]
