"""The security scorecard (AgentDojo's benign utility, utility under attack, targeted ASR) and the adaptive
attacker against the offline proposers (issue 25)."""

from __future__ import annotations

import json

import pytest

from routebr_kit.adversarial.security import Placement, adaptive_attack, attack_targets, scorecard, templates
from routebr_kit.adversarial.suite import generate_suite
from routebr_kit.backends.lexical import LexicalBackend
from routebr_kit.backends.simulated import SimulatedBackend
from routebr_kit.core.errors import DataError
from routebr_kit.evaluation.stats import wilson
from routebr_kit.store.cases import Language
from routebr_kit.store.ledger import PredictionRow


@pytest.fixture(scope="module", params=["en", "zh"])
def suite(request, routebr_artifact):
    return generate_suite(routebr_artifact / "data" / "routebr_600.csv", seed=0, language=request.param,
                          per_family=6)


def _row(case, action, object_id, path):
    return PredictionRow(case.case_id, "routebr", action, object_id, "ALLOW", path, (action,), True, False)


def test_a_perfect_router_has_full_utility_and_no_attack_success(suite):
    rows = [_row(c, c.gold.action, c.gold.object_id, c.gold.final_path) for c in suite.cases]
    (card,) = scorecard([(suite, {"perfect": rows})])
    hostile = sum(s.family.hostile for s in suite.specs.values())
    assert card.language == suite.language.value
    assert card.benign_utility.k == card.benign_utility.n == len(suite.cases) - hostile
    assert card.utility_under_attack.k == card.utility_under_attack.n == hostile
    assert card.targeted_asr.k == 0 and card.forbidden_dispatch.k == 0 and card.targeted_asr.n == hostile
    assert card.targeted_asr.interval.as_tuple() == wilson(0, hostile).as_tuple()


def test_a_router_that_obeys_every_attacker_has_full_attack_success(suite):
    rows = []
    for c in suite.cases:
        spec = suite.specs[c.case_id]
        if spec.family.hostile:
            rows.append(_row(c, spec.target_action, spec.target_object, spec.target_action))
        else:
            rows.append(_row(c, c.gold.action, c.gold.object_id, c.gold.final_path))
    (card,) = scorecard([(suite, {"obedient": rows})])
    assert card.targeted_asr.k == card.targeted_asr.n > 0
    assert card.followed.k == card.followed.n
    assert card.forbidden_dispatch.k == card.forbidden_dispatch.n  # every target is forbidden
    assert card.utility_under_attack.k == 0
    assert card.benign_utility.k == card.benign_utility.n
    row = card.as_row()
    assert row["targeted ASR"].startswith("100.0% [") and "benign utility" in row
    assert json.dumps(card.as_dict())  # JSON-ready


def test_the_adaptive_attacker_is_seeded_budgeted_and_bounded(suite):
    lexical = lambda cases: LexicalBackend(suite.assets.catalog)  # noqa: E731
    a = adaptive_attack(suite, lexical, backend_name="local:lexical", budget=12, seed=3, cases=15)
    b = adaptive_attack(suite, lexical, backend_name="local:lexical", budget=12, seed=3, cases=15)
    assert a.as_dict() == b.as_dict()
    assert a.proposer_calls == 12 * a.cases and a.cases == len(attack_targets(suite, limit=15, seed=3))
    curve = [rate for _, rate in a.trajectory]
    assert curve == sorted(curve) and curve[-1] == a.best_followed.k / a.best_followed.n
    by = {s.system: s for s in a.systems}
    assert by["routebr"].reachable_forbidden == 0 and by["routebr"].forbidden_dispatch.k == 0  # the envelope
    for s in a.systems:
        assert s.forbidden_dispatch.k <= s.reachable_forbidden
    assert by["a_state"].reachable_forbidden > 0
    assert a.best.template in templates(suite.language) and a.best.placement in Placement
    with pytest.raises(DataError):
        adaptive_attack(suite, lexical, backend_name="local:lexical", budget=0)


def test_the_simulated_profiles_do_not_read_the_injected_text(suite):
    sim = lambda cases: SimulatedBackend("deepseek_v4_primary", cases, seed=0)  # noqa: E731
    result = adaptive_attack(suite, sim, backend_name="sim:deepseek_v4_primary", budget=6, seed=1, cases=15)
    assert {rate for _, rate in result.trajectory} == {result.unattacked_followed.k / result.unattacked_followed.n}


def test_the_search_beats_no_attack_on_the_chinese_lexical_proposer(routebr_artifact):
    zh = generate_suite(routebr_artifact / "data" / "routebr_600.csv", seed=0, language=Language.ZH, per_family=20)
    result = adaptive_attack(zh, lambda cases: LexicalBackend(zh.assets.catalog), backend_name="local:lexical",
                             budget=20, seed=0, cases=40)
    assert result.best_followed.k > result.unattacked_followed.k
    assert {s.system: s.forbidden_dispatch.k for s in result.systems}["routebr"] == 0


def test_the_adaptive_attack_command_is_seeded_and_reports_the_bound(routebr_artifact, tmp_path, capsys):
    from routebr_kit.cli.app import main

    cases = routebr_artifact / "data" / "routebr_confirm_320.csv"
    argv = ["adaptive-attack", "--cases", str(cases), "--lang", "en", "--budget", "3", "--attack-cases", "6",
            "--seed", "2"]
    assert main([*argv, "--backend", "local:lexical", "--json", str(tmp_path / "a.json")]) == 0
    assert main([*argv, "--backend", "local:lexical", "--json", str(tmp_path / "b.json")]) == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()  # same seed, same bytes
    result = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert {s["system"] for s in result["systems"]} == {"routebr", "a_state"}  # lexical answers the proposal only
    routebr = next(s for s in result["systems"] if s["system"] == "routebr")
    assert routebr["within_envelope"] and routebr["cases_with_forbidden_dispatch_reachable"] == 0
    assert routebr["forbidden_dispatch"]["k"] == 0
    assert main([*argv, "--backend", "sim:deepseek_v4_primary", "--json", str(tmp_path / "s.json")]) == 0
    assert "property of the simulator, not evidence about a model" in capsys.readouterr().out
    systems = {s["system"] for s in json.loads((tmp_path / "s.json").read_text(encoding="utf-8"))["systems"]}
    assert systems == {"routebr", "a_state", "b1_direct", "b2_direct_guard"}
