"""One generated session (:class:`~routebr_kit.dataset.sessions.SessionCase`) as the rows of a table, request by
request: what the controller is given (the clock, the external events, the request, its amount and mode) beside
what the gold decided (the decision, its rule(s), and the temporal predicates its rule chain evaluated)."""

from __future__ import annotations

from typing import Any

from .sessions import SessionCase


def timeline(session: SessionCase) -> list[dict[str, Any]]:
    """One row per request: time since the session's first event (``t (s)``), the external events before it (times
    relative to that start), the utterance, the amount, the mode of a composite request, the gold decision (a
    composite: its items joined by ``" + "``), its rule(s) and the temporal predicates it evaluated."""
    start = min([session.steps[0].now, *(e.at for e in session.steps[0].externals)])
    return [{"t (s)": step.now - start,
             "events before": ", ".join(f"{e.kind} at t={e.at - start}" for e in step.externals),
             "request": step.utterance, "amount": step.attributes.get("amount", ""), "mode": step.mode,
             "gold": gold["final_path"], "rule": " + ".join(gold["rule_ids"]), "temporal evaluated": ", ".join(ex)}
            for step, gold, ex in zip(session.steps, session.summaries, session.exercised)]


__all__ = ["timeline"]
