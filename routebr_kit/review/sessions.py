"""Release review over sessions (issue 32): a session ledger (:class:`~routebr_kit.runs.sessions.SessionLedger`)
replayed under a candidate release, each session's history recomputed from the candidate's *own* decisions.

A request's session holds the earlier decisions of the same conversation.  Replaying request *n* under the
candidate with the history the **base** made would judge it on decisions the candidate never took: a candidate
that refuses an early protected operation has one dispatch fewer in the hour, so a later one it would otherwise
refuse may pass (and the other way round).  So, like :class:`~routebr_kit.review.shadow.ReviewReplay` for
stateless ledgers, :class:`SessionReplay` replays each side once — the base controller on its own history, the
candidate on its own — and the shadow (:func:`shadow_sessions`) and the diff (:func:`diff_sessions`) are views of
it.  The diff names, per session, the **first request whose decision changed**; every later change is reported
too, with whether it is *history-only* (the candidate, given the base's history, would have decided as the base:
the change comes from an earlier changed decision, not from the candidate's rules on this request).

No model call: the proposal payload never contains the session, so a recorded reply is what the model would answer
under either release (a request whose candidate decision needs a reply never recorded — a repair — is flagged
``UNRECORDED_CALL``, as in the stateless shadow).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..core.calls import FailureKind
from ..core.controller import Controller, ControllerOptions
from ..core.errors import DataError, ErrorCode
from ..core.session import Event
from ..runs.sessions import RecordedRequest, SessionLedger, decision_summary, replay_session, router_for, step_events
from .assets import AssetEdit

_COMPARED = ("final_path", "object_id", "rule_id")


def _key(summary: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(summary.get(k) for k in _COMPARED)


class SessionReplay:
    """One replay of each side of a session review: per session, the base controller and the candidate controller
    each re-decide every request from its recorded replies on *their own* history, at most once (the first time a
    view asks)."""

    def __init__(self, ledger: SessionLedger, base: Controller, candidate: Controller) -> None:
        self.ledger, self.base_controller, self.candidate_controller = ledger, base, candidate
        self._base: dict[str, tuple[Any, ...]] = {}
        self._candidate: dict[str, tuple[Any, ...]] = {}

    @classmethod
    def of_edit(cls, ledger: SessionLedger, edit: AssetEdit, options: Mapping[str, Any] | None = None
                ) -> SessionReplay:
        """The replay of ``ledger`` under an asset edit (the review's ``options`` apply to the candidate)."""
        return cls(ledger, edit.base_assets.controller(),
                   edit.candidate_assets.controller(ControllerOptions(**dict(options or {}))))

    def base(self, session_id: str) -> tuple[Any, ...]:
        return self._side(self._base, self.base_controller, session_id)

    def candidate(self, session_id: str) -> tuple[Any, ...]:
        return self._side(self._candidate, self.candidate_controller, session_id)

    def _side(self, memo: dict[str, tuple[Any, ...]], controller: Controller, session_id: str) -> tuple[Any, ...]:
        if session_id not in memo:
            memo[session_id] = tuple(replay_session(controller, self._recorded(session_id)))
        return memo[session_id]

    def candidate_on_base_history(self, session_id: str, index: int) -> Any:
        """The candidate's decision of request ``index`` given the history the *base* made (for attribution)."""
        recorded = self._recorded(session_id)
        history: list[Event] = []
        for r, d in zip(recorded[:index], self.base(session_id)):
            history.extend(step_events(d, r.step))
        r = recorded[index]
        return router_for(self.candidate_controller, r.step).decide(r.step.request(history, session_id),
                                                                    r.first_output, r.repair_output)

    def _recorded(self, session_id: str) -> tuple[RecordedRequest, ...]:
        found = self.ledger.sessions.get(session_id)
        if found is None:
            raise DataError(ErrorCode.INVALID_VALUE, "a session of the ledger", got=session_id, field="session_id")
        return found


# --------------------------------------------------------------------------------------------- the shadow view


@dataclass(frozen=True)
class SessionShadow:
    """The candidate side: every session's decisions under the candidate (its own history)."""

    decisions: Mapping[str, tuple[dict[str, Any], ...]]
    unrecorded: tuple[tuple[str, int], ...]  # (session, index) whose candidate decision needs an unrecorded reply
    recorded_mismatch: tuple[tuple[str, int], ...]  # base replay != the ledger's recorded decision


def shadow_sessions(replay: SessionReplay) -> SessionShadow:
    """The candidate view of ``replay``; also checks the base replay reproduces the ledger's recorded decisions."""
    decisions, unrecorded, mismatch = {}, [], []
    for sid, recorded in replay.ledger.sessions.items():
        cand = replay.candidate(sid)
        decisions[sid] = tuple(decision_summary(d) for d in cand)
        for i, d in enumerate(cand):
            failure = d.log.failure if hasattr(d, "items") and d.log is not None else getattr(d, "failure", None)
            if failure is not None and failure.kind is FailureKind.CACHE_MISS:
                unrecorded.append((sid, i))
        for i, (r, d) in enumerate(zip(recorded, replay.base(sid))):
            if r.decision and _key(r.decision) != _key(decision_summary(d)):
                mismatch.append((sid, i))
    return SessionShadow(decisions, tuple(unrecorded), tuple(mismatch))


# --------------------------------------------------------------------------------------------- the diff view


@dataclass(frozen=True)
class SessionChange:
    """One session whose decisions differ between the sides."""

    session_id: str
    first_changed: int  # index of the first request whose decision changed
    changed: tuple[int, ...]
    history_only: tuple[int, ...]  # changed only because an earlier decision changed
    base: tuple[dict[str, Any], ...]
    candidate: tuple[dict[str, Any], ...]
    request_ids: tuple[str, ...] = field(default=())

    @property
    def first_request_id(self) -> str:
        return self.request_ids[self.first_changed]

    def describe(self) -> str:
        i = self.first_changed
        b, c = self.base[i], self.candidate[i]
        later = [j for j in self.changed if j != i]
        text = (f"{self.session_id}: first change at request {i + 1} ({self.first_request_id}): "
                f"{b['final_path']} ({b['rule_id']}) -> {c['final_path']} ({c['rule_id']})")
        if later:
            text += f"; then requests {', '.join(str(j + 1) for j in later)}"
            if self.history_only:
                text += f" ({', '.join(str(j + 1) for j in self.history_only)} through the history only)"
        return text

    def as_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "first_changed": self.first_changed,
                "first_request_id": self.first_request_id, "changed": list(self.changed),
                "history_only": list(self.history_only), "base": list(self.base), "candidate": list(self.candidate)}


@dataclass(frozen=True)
class SessionDiffReport:
    sessions: int
    requests: int
    changes: tuple[SessionChange, ...]

    @property
    def changed_requests(self) -> int:
        return sum(len(c.changed) for c in self.changes)

    @property
    def history_only(self) -> int:
        return sum(len(c.history_only) for c in self.changes)

    def rows(self) -> list[dict[str, Any]]:
        """One row per changed request (for a table)."""
        return [{"session_id": c.session_id, "request": j + 1, "request_id": c.request_ids[j],
                 "first": j == c.first_changed, "history_only": j in c.history_only,
                 "base": f"{c.base[j]['final_path']} ({c.base[j]['rule_id']})",
                 "candidate": f"{c.candidate[j]['final_path']} ({c.candidate[j]['rule_id']})"}
                for c in self.changes for j in c.changed]

    def as_dict(self) -> dict[str, Any]:
        return {"sessions": self.sessions, "requests": self.requests, "changed_sessions": len(self.changes),
                "changed_requests": self.changed_requests, "history_only": self.history_only,
                "changes": [c.as_dict() for c in self.changes]}


def _session_change(replay: SessionReplay, session_id: str) -> SessionChange | None:
    """The change of one session (``None`` when every decision is the same on both sides)."""
    base = tuple(decision_summary(d) for d in replay.base(session_id))
    cand = tuple(decision_summary(d) for d in replay.candidate(session_id))
    changed = tuple(i for i, (b, c) in enumerate(zip(base, cand)) if _key(b) != _key(c))
    if not changed:
        return None
    history_only = tuple(j for j in changed[1:]
                         if _key(decision_summary(replay.candidate_on_base_history(session_id, j))) == _key(base[j]))
    ids = tuple(r.step.request_id for r in replay.ledger.sessions[session_id])
    return SessionChange(session_id, changed[0], changed, history_only, base, cand, ids)


def diff_sessions(replay: SessionReplay) -> SessionDiffReport:
    """The paired view of ``replay``: per session, the first request whose decision changed, and the rest."""
    changes = [c for sid in replay.ledger.sessions if (c := _session_change(replay, sid)) is not None]
    return SessionDiffReport(len(replay.ledger.sessions), replay.ledger.requests, tuple(changes))


def stale_history(replay: SessionReplay) -> tuple[tuple[str, int], ...]:
    """The requests a per-request shadow would get wrong: those whose candidate decision on the history the
    *base* made differs from the candidate's decision on its own history."""
    return tuple((sid, i) for sid in replay.ledger.sessions for i, d in enumerate(replay.candidate(sid))
                 if i and _key(decision_summary(replay.candidate_on_base_history(sid, i))) != _key(decision_summary(d)))


def review_candidates(ledger: SessionLedger, base: Controller, candidates: Mapping[str, Controller]
                      ) -> tuple[Any, dict[str, SessionDiffReport]]:
    """A session review of several candidate controllers against ``base``: a table (pandas) with one row per
    candidate (sessions and requests whose decision changed, history-only changes, the requests a per-request
    shadow on the base's history would get wrong, whether the base replay reproduces the ledger) and each
    candidate's diff by name."""
    import pandas as pd

    rows, diffs = [], {}
    for name, candidate in candidates.items():
        replay = SessionReplay(ledger, base, candidate)
        shadow, diff = shadow_sessions(replay), diff_sessions(replay)
        diffs[name] = diff
        rows.append({"candidate": name, "sessions": diff.sessions, "requests": diff.requests,
                     "changed sessions": len(diff.changes), "changed requests": diff.changed_requests,
                     "history only": diff.history_only, "per-request shadow wrong": len(stale_history(replay)),
                     "base replay = ledger": not shadow.recorded_mismatch})
    return pd.DataFrame(rows), diffs


def review_facts(summary: Any, diffs: Mapping[str, SessionDiffReport], name: str) -> dict[str, Any]:
    """The facts a conclusion states about candidate ``name`` of :func:`review_candidates`: changed sessions and
    requests, history-only changes, per-request shadow errors, and one change described (a history-only one when
    there is one)."""
    diff = diffs[name]
    first = next((c for c in diff.changes if c.history_only), diff.changes[0] if diff.changes else None)
    stale = summary.loc[summary["candidate"] == name, "per-request shadow wrong"]
    return {"review_sessions": len(diff.changes), "review_requests": diff.changed_requests,
            "review_history_only": diff.history_only, "review_stale": int(stale.iloc[0]),
            "review_first": first.describe() if first is not None else "no session changed"}


__all__ = ["SessionChange", "SessionDiffReport", "SessionReplay", "SessionShadow", "diff_sessions",
           "review_candidates", "review_facts", "shadow_sessions", "stale_history"]
