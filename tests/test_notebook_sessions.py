"""Notebook 14's helpers (issue 32), each in its domain package: the session explorer (notebook widgets) re-decides
on the clock and the events it is given, a horizon counterexample replayed request by request (verify) reproduces
the verifier's decisions, a session's timeline (dataset) is the controller's view beside the gold, and the learned
proposer (experiments) falls back to an in-memory model."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("ipywidgets")

from routebr_kit.dataset.sessions import generate_sessions, timeline  # noqa: E402
from routebr_kit.experiments.session_grid import open_learned  # noqa: E402
from routebr_kit.notebook.widgets import SessionExplorer  # noqa: E402
from routebr_kit.store.assets import load_catalog, load_rules  # noqa: E402
from routebr_kit.verify import horizon  # noqa: E402
from routebr_kit.verify.horizon_replay import replay_counterexample  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def test_the_explorer_moves_the_clock_and_adds_events():
    bench = generate_sessions(0, "en", 10)
    session = next(s for s in bench.sessions if s.scenario == "identity_expiry")
    ex = SessionExplorer(bench.assets.controller(), session)
    assert ex.decision.rule_id == "T100"  # the check has expired
    now = ex.clock.value
    ex.add_event("identity_check")
    assert ex.decision.dispatched and "1 added" in ex.summary()
    ex.set_clock(now + 601)  # the added check is now 601 s old
    assert ex.decision.rule_id == "T100"
    assert 'data-terminal="CLARIFY"' in ex.terminal.value
    ex.clear.click()
    ex.request_no.value = 0
    assert ex.decision.dispatched and ex.amount.value == session.steps[0].attributes["amount"]


def test_a_counterexample_replays_to_the_verifiers_decisions():
    catalog = load_catalog(ROOT / "routebr_kit/resources/catalog.csv")
    policy = load_rules(ROOT / "data/sessions/rules.csv", catalog)
    wrong = horizon.parse_assertions({"assertions": [{"name": "one_protected_per_day", "never": {
        "dispatch": "A5_PROTECTED_ACTION", "count": {"kind": "dispatch", "action": "A5_PROTECTED_ACTION",
                                                     "window_s": 86400, "gt": 1}}}]}, catalog)
    (result,) = horizon.verify_horizon(catalog, policy, wrong, 2).results
    assert not result.holds and result.counterexample.confirmed
    rows, decisions = replay_counterexample(catalog, policy, result.counterexample)
    assert [d.final_path for d in decisions] == [d["final_path"] for d in result.counterexample.decisions[0]]
    assert [r["decision"] for r in rows] == [d.final_path for d in decisions]
    assert len(rows) == 2 and decisions[-1].dispatched


def test_a_timeline_is_the_session_as_the_controller_sees_it_beside_the_gold():
    session = next(s for s in generate_sessions(0, "en", 10).sessions if s.scenario == "identity_expiry")
    rows = timeline(session)
    assert len(rows) == len(session.steps)
    assert [r["gold"] for r in rows] == [g["final_path"] for g in session.summaries]
    assert rows[0]["t (s)"] >= 0 and "identity_check at t=" in rows[0]["events before"]


def test_the_explorer_decides_a_composite_request():
    bench = generate_sessions(0, "en", 12)
    session = next(s for s in bench.sessions if s.scenario == "composite" and s.steps[-1].mode == "independent"
                   and s.variant.startswith("expired"))
    ex = SessionExplorer(bench.assets.controller(), session)
    assert "A3_ACCOUNT_ANALYSIS + T_CLARIFY" in ex.summary()  # the analysis passes, the sale's check expired
    ex.add_event("identity_check")
    assert "A3_ACCOUNT_ANALYSIS + A5_PROTECTED_ACTION" in ex.summary()
    assert 'data-terminal="DISPATCH"' in ex.terminal.value


def test_a_missing_learned_model_file_falls_back_with_a_banner(tmp_path):
    pytest.importorskip("sklearn")
    backend, banner = open_learned(str(tmp_path / "no-model"), [0])
    assert backend is not None and "no model file" in banner and "trained in memory" in banner
