"""Release review over sessions (issue 32 item 6): the shadow replay of a session ledger recomputes each session's
history from the candidate's own decisions, so it equals re-running the sessions from scratch under the
candidate with the same (deterministic) proposer; the diff names the first request whose decision changed."""

from __future__ import annotations

from pathlib import Path

import pytest

from routebr_kit.backends.simulated import SimulatedBackend
from routebr_kit.core.records import Entity
from routebr_kit.core.session import Event
from routebr_kit.dataset.sessions import SessionStep, generate_sessions, session_assets
from routebr_kit.review.sessions import SessionReplay, diff_sessions, shadow_sessions, stale_history
from routebr_kit.runs.sessions import ItemwiseProposer, SessionLedger, decision_summary, run_sessions
from routebr_kit.store.assets import load_assets

ROOT = Path(__file__).resolve().parents[1]
RULES = (ROOT / "data/sessions/rules.csv").read_text(encoding="utf-8")
A5 = "A5_PROTECTED_ACTION"
#: Candidates: the shipped one (the hourly limit counted over two hours), a stricter daily total (blocks early
#: transfers, so later ones see a smaller running total), and a longer identity window (widens).
CANDIDATES = {
    "two_hours": (ROOT / "data/sessions/rules_candidate.csv").read_text(encoding="utf-8"),
    "daily_50000": RULES.replace('""gt"":100000', '""gt"":50000'),
    "identity_1800": RULES.replace('""s"":600', '""s"":1800'),
}


def _key(decision) -> tuple:
    summary = decision_summary(decision)
    return summary["final_path"], summary["object_id"], summary["rule_id"]


def _controller(tmp_path: Path, name: str, text: str):
    path = tmp_path / f"{name}.csv"
    path.write_text(text, encoding="utf-8")
    return load_assets(ROOT / "routebr_kit/resources/catalog.csv", path).controller()


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    bench = generate_sessions(3, "en", 60)
    backend = ItemwiseProposer(SimulatedBackend("deepseek_v4_primary", bench.cases() + bench.item_cases(), seed=0))
    sessions = [(s.session_id, s.steps) for s in bench.sessions]
    ledger, decisions = run_sessions(bench.assets.controller(), sessions, backend)
    path = ledger.write(tmp_path_factory.mktemp("ledger") / "sessions.jsonl")
    return SessionLedger.read(path), decisions, sessions, backend


@pytest.mark.parametrize("name", sorted(CANDIDATES))
def test_shadow_equals_rerunning_the_sessions_from_scratch(recorded, tmp_path, name):
    ledger, base_run, sessions, backend = recorded
    base_c = session_assets("en").controller()
    cand_c = _controller(tmp_path, name, CANDIDATES[name])
    replay = SessionReplay(ledger, base_c, cand_c)
    shadow = shadow_sessions(replay)
    assert not shadow.recorded_mismatch and not shadow.unrecorded
    _, scratch = run_sessions(cand_c, sessions, backend)  # from scratch: live proposer, the candidate's history
    for sid, decisions in scratch.items():
        assert list(shadow.decisions[sid]) == [decision_summary(d) for d in decisions]
    diff = diff_sessions(replay)
    by_session = {c.session_id: c for c in diff.changes}
    for sid, decisions in scratch.items():
        differ = [i for i, (a, b) in enumerate(zip(base_run[sid], decisions)) if _key(a) != _key(b)]
        assert (by_session[sid].first_changed if sid in by_session else None) == (differ[0] if differ else None)
        if differ:
            assert list(by_session[sid].changed) == differ
    assert diff.changes, f"candidate {name} changes no decision: the test would prove nothing"
    assert any(r.step.composite for rs in ledger.sessions.values() for r in rs)  # composite sessions included
    if name == "identity_1800":  # a longer identity window lets blocked composite sales through
        assert any(ledger.sessions[c.session_id][j].step.composite for c in diff.changes for j in c.changed)


def test_an_identical_candidate_changes_nothing(recorded):
    ledger = recorded[0]
    c = session_assets("en").controller()
    replay = SessionReplay(ledger, c, session_assets("en").controller())
    assert not diff_sessions(replay).changes and not shadow_sessions(replay).recorded_mismatch


def _ledger_of(steps):
    controller = session_assets("en").controller()

    class Scripted:  # proposes the step's gold action: deterministic, never sees the session
        name = "scripted"

        async def complete(self, call):
            from routebr_kit.core.calls import ModelReply
            step = next(s for s in steps if s.utterance == call.payload["request"])
            return ModelReply(content=step.gold_output(), model="scripted")

    ledger, decisions = run_sessions(controller, [("S1", steps)], Scripted())
    return ledger, decisions["S1"]


def test_a_blocked_early_request_changes_what_later_requests_see(tmp_path):
    """Protected operations at 0, 3700, 7000 and 10500 s, each after a fresh identity check.  The base (at most two
    an hour) dispatches all four; the candidate (two within two hours) refuses the third — and so, with its own
    history (dispatches at 0 and 3700 only), dispatches the fourth, which the base's history (dispatches at 3700
    and 7000) would have refused."""
    etf = Entity("ETF_1", "ETF", "Alpha ETF")
    steps = [SessionStep(f"S1-R{i + 1}", t, (Event(t - 30, "identity_check"),), f"sell alpha #{i}", (etf,), A5,
                         "ETF_1", {"amount": 1000}) for i, t in enumerate((100, 3800, 7100, 10600))]
    ledger, base = _ledger_of(steps)
    assert [d.final_path for d in base] == [A5] * 4
    replay = SessionReplay(ledger, session_assets("en").controller(),
                           _controller(tmp_path, "two_hours", CANDIDATES["two_hours"]))
    (change,) = diff_sessions(replay).changes
    assert change.first_changed == 2 and change.first_request_id == "S1-R3"
    assert [c["final_path"] for c in change.candidate] == [A5, A5, "T_REJECT", A5]
    assert change.changed == (2,)  # the fourth is dispatched on both sides ...
    naive = replay.candidate_on_base_history("S1", 3)  # ... but on the base's history the candidate would refuse it
    assert naive.final_path == "T_REJECT" and naive.rule_id == "T110"
    assert stale_history(replay) == (("S1", 3),)  # what a per-request shadow would have got wrong
    assert "first change at request 3 (S1-R3)" in change.describe()


def test_history_only_changes_are_attributed(tmp_path):
    """A stricter daily total (500.00) refuses an early 600.00 transfer that the base dispatched; a later 450.00
    one, refused by the base (600 + 450 > 1000), is dispatched by the candidate — because of its own earlier refusal
    only: on the base's history the candidate would refuse it too (history-only)."""
    etf = Entity("ETF_1", "ETF", "Alpha ETF")
    steps = [SessionStep(f"S1-R{i + 1}", t, (Event(t - 30, "identity_check"),), f"sell alpha #{i}", (etf,), A5,
                         "ETF_1", {"amount": a}) for i, (t, a) in enumerate(((100, 60000), (4000, 45000)))]
    ledger, base = _ledger_of(steps)
    assert [d.final_path for d in base] == [A5, "T_REJECT"]
    cand = _controller(tmp_path, "daily", CANDIDATES["daily_50000"])
    diff = diff_sessions(SessionReplay(ledger, session_assets("en").controller(), cand))
    (change,) = diff.changes
    assert [c["final_path"] for c in change.candidate] == ["T_REJECT", A5]
    assert change.first_changed == 0 and change.changed == (0, 1) and change.history_only == (1,)
    assert diff.history_only == 1 and [r["history_only"] for r in diff.rows()] == [False, True]


def test_a_composite_request_changes_the_history_of_the_next(tmp_path):
    """A sale at t=100 after a check at 70; at t=1000 the atomic composite "how is X doing, and sell X": the base
    (checks valid 600 s) blocks the sale and withholds the analysis; a candidate with checks valid 1800 s dispatches
    both.  A third sale at 1100 (fresh check) is then the candidate's second protected operation in the hour and
    is refused (T110) — only because of the composite's own change: on the base's history it would pass."""
    etf = Entity("ETF_1", "ETF", "Alpha ETF")
    check = (Event(70, "identity_check"),)
    steps = [SessionStep("S1-R1", 100, check, "sell alpha", (etf,), A5, "ETF_1", {"amount": 1000}),
             SessionStep("S1-R2", 1000, (), "how is alpha doing, then sell alpha", (etf,), "A3_ACCOUNT_ANALYSIS",
                         "ETF_1", {"amount": 1000}, items=(("A3_ACCOUNT_ANALYSIS", "ETF_1"), (A5, "ETF_1")),
                         mode="atomic"),
             SessionStep("S1-R3", 1100, (Event(1090, "identity_check"),), "sell alpha again", (etf,), A5, "ETF_1",
                         {"amount": 1000})]
    ledger, base = _ledger_of(steps)
    assert [decision_summary(d)["final_path"] for d in base] == [A5, "T_CLARIFY + T_CLARIFY", A5]
    cand = _controller(tmp_path, "id1800", CANDIDATES["identity_1800"])
    diff = diff_sessions(SessionReplay(ledger, session_assets("en").controller(), cand))
    (change,) = diff.changes
    assert change.first_changed == 1 and change.first_request_id == "S1-R2"
    assert [c["final_path"] for c in change.candidate] == [A5, f"A3_ACCOUNT_ANALYSIS + {A5}", "T_REJECT"]
    assert change.changed == (1, 2) and change.history_only == (2,)
