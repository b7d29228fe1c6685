"""The session benchmark (issue 32 item 5): seeded and byte-stable, gold equal to an independent closed-loop
re-decision of the gold proposals, every temporal predicate decided in both languages, and an audit whose counts
add up."""

from __future__ import annotations

import json
import re

import pytest

from routebr_kit.cli.app import main
from routebr_kit.core.composite_decision import CompositeController
from routebr_kit.core.session import Event, event_of_decision
from routebr_kit.dataset.sessions import PREDICATES, SCENARIOS, generate_sessions, write_sessions


@pytest.fixture(scope="module", params=["en", "zh"])
def bench(request):
    return generate_sessions(5, request.param, 30)


def test_seeded_and_byte_stable(tmp_path, bench):
    again = generate_sessions(5, bench.language, 30)
    a = write_sessions(bench, tmp_path / "a") / "sessions.jsonl"
    b = write_sessions(again, tmp_path / "b") / "sessions.jsonl"
    assert a.read_bytes() == b.read_bytes()
    other = write_sessions(generate_sessions(6, bench.language, 30), tmp_path / "c") / "sessions.jsonl"
    assert other.read_bytes() != a.read_bytes()


def test_gold_is_the_controller_on_the_gold_history(bench):
    """Re-decided here from the documented rule: single requests by the controller, composite ones item by item by
    the composite controller in their mode, each history made of the earlier gold decisions."""
    controller = bench.assets.controller()
    for s in bench.sessions:
        history: list[Event] = []
        for step, case, gold in zip(s.steps, s.gold, s.summaries):
            request = step.request(history, s.session_id)
            if step.items:
                d = CompositeController(controller, step.mode).decide(request, {"items": [
                    {"action_id": a, "object_id": o} for a, o in step.items]})
                assert [t.value for t in d.terminals] == gold["terminals"] and d.terminal.value == gold["terminal"]
                history += [*step.externals, *d.events(step.now, step.attributes)]
                continue
            assert request.session == case.request.session  # the case carries the gold history
            d = controller.decide(request, {"action_id": step.gold_action, "object_id": step.gold_object,
                                            "topk": [step.gold_action]})
            assert (d.final_path, (d.rule_id,)) == (case.gold.final_path, case.gold.rule_ids)
            history += [*step.externals, event_of_decision(d, step.now, step.attributes)]
        times = [st.now for st in s.steps]
        assert times == sorted(times)


def test_composite_requests_block_their_second_item(bench):
    """"How is X doing, and sell Y": the analysis is allowed, the sale is blocked (an expired check or the hourly
    count); independent emits both terminals, atomic withholds the analysis."""
    composite = [(s, g) for s in bench.sessions for g in s.summaries if "items" in g]
    assert composite and {s.variant.split("_")[1] for s, _ in composite} == {"atomic", "independent"}
    for s, g in composite:
        first, second = g["items"]
        assert second["action_id"] == "A5_PROTECTED_ACTION" and second["status"] == "NOT_DISPATCHED"
        assert second["rule_id"] == ("T110" if s.variant.startswith("count") else "T100")
        assert first["status"] == ("DISPATCHED" if g["mode"] == "independent" else "WITHHELD")
    audit = bench.audit()["composite"]
    assert audit["requests"] == len(composite) and audit["items"] == 2 * len(composite)


def test_every_predicate_and_scenario_is_exercised(bench):
    audit = bench.audit()
    assert audit["unexercised"] == []
    assert set(audit["per_predicate"]) == set(PREDICATES)
    for p in PREDICATES:
        assert audit["per_predicate"][p]["decided"] >= 3 and audit["per_predicate"][p]["evaluated"] >= 3
    assert {k.split("/")[0] for k in audit["per_scenario"]} == set(SCENARIOS)
    assert sum(audit["per_terminal"].values()) == audit["requests"] == len(bench.cases()) + audit["composite"][
        "requests"]
    assert {"DISPATCH", "CLARIFY", "REJECT"} <= set(audit["per_terminal"])
    fired = {s.scenario: {op for f in s.fired for op in f} for s in bench.sessions}
    assert "count" in fired["third_in_hour"] or any(s.variant == "after_the_hour" for s in bench.sessions)
    cjk = re.compile(r"[\u4e00-\u9fff]")
    assert all(bool(cjk.search(c.request.utterance)) == (bench.language == "zh") for c in bench.cases())


def test_cli_writes_sessions_and_audit(tmp_path, capsys):
    assert main(["generate-sessions", "--seed", "1", "--sessions", "10", "--out", str(tmp_path)]) == 0
    audit = json.loads((tmp_path / "audit.json").read_text(encoding="utf-8"))
    assert audit["per_language"] == {"en": 10, "zh": 10} and audit["seeds"] == [1]
    lines = (tmp_path / "sessions.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 20 and json.loads(lines[0])["requests"][0]["gold"]["final_path"]
    assert "wrote sessions.jsonl" in capsys.readouterr().out
