"""The section conclusions added to notebooks 02, 10 and 11, and the paired tests of notebooks 04 and 06: every
number is a stated fact, and a comparison between two systems names (and computes) its paired test."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pandas as pd
from test_honest_comparisons import unpaired_comparisons

from routebr_kit.adversarial.scoring import Rate
from routebr_kit.evaluation.stats import mcnemar
from routebr_kit.notebook import conclusions

NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")


def _stray(c: conclusions.Conclusion) -> list[str]:
    body = "\n".join(line for line in c.markdown.splitlines() if not line.startswith("*Computed from this run"))
    for text in c.texts.values():
        assert text in body, text
    pieces = {p for text in c.texts.values() for p in NUMBER.findall(text)} | {"5%", "95%"}
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", body)) if n not in pieces]


def _pair_table(b1_pairs: str) -> pd.DataFrame:
    return pd.DataFrame([{"system": "RouteBR", "pairs": "3/4", "FD": "0/4"},
                         {"system": "B1 Direct", "pairs": b1_pairs, "FD": "2/4"}])


def _anatomy(routebr: list[bool], b1: list[bool]) -> pd.DataFrame:
    """Two members per pair; a pair is right when both are (here: member 2 always right)."""
    rows = []
    for i, (r, b) in enumerate(zip(routebr, b1)):
        for member, ok_r, ok_b in ((1, r, b), (2, True, True)):
            rows.append({"pair_id": f"P{i}", "member": member, "RouteBR": "x ✓" if ok_r else "x ✗",
                         "B1 Direct": "x ✓" if ok_b else "x ✗"})
    return pd.DataFrame(rows)


AUDIT = SimpleNamespace(false_dispatches=(), allowed_dispatches=5, dispatches=5, gold_bounded=4,
                        guarantee_holds=True)


def test_rq2_compares_a_baseline_with_routebr_by_exact_mcnemar_on_the_same_pairs() -> None:
    routebr, b1 = [True, True, True, False], [False, False, True, False]
    c = conclusions.rq2(_pair_table("1/4"), pd.DataFrame(), AUDIT, None, "simulated",
                        anatomy=_anatomy(routebr, b1))
    test = mcnemar(dict(enumerate(routebr)), dict(enumerate(b1)))
    assert c.values["b1_routebr_only"] == test.a_only_correct == 2
    assert c.values["b1_only"] == test.b_only_correct == 0
    assert c.values["b1_mcnemar_p"] == test.p_two_sided
    assert not unpaired_comparisons(c.markdown) and not _stray(c)


def test_rq2_without_pair_outcomes_states_counts_without_comparing() -> None:
    c = conclusions.rq2(_pair_table("1/4"), pd.DataFrame(), AUDIT, None, "simulated")
    assert "b1_mcnemar_p" not in c.values and "fewer than" not in c.markdown
    assert not unpaired_comparisons(c.markdown)


def _row(case_id: str, path: str) -> SimpleNamespace:
    return SimpleNamespace(case_id=case_id, pred_final_path=path)


def test_ablations_compare_false_dispatch_with_routebr_by_exact_mcnemar() -> None:
    """Notebook 06's paired test (experiments.ablations.boundary_mcnemar) and its template: every comparison of a
    variant with RouteBR the rendered section makes names the exact McNemar test."""
    import json
    from pathlib import Path

    from routebr_kit.experiments.ablations import boundary_mcnemar
    from routebr_kit.notebook.display import render_conclusion

    gold = {"C1": "T_CLARIFY", "C2": "T_REJECT", "C3": "A1_ADVISORY"}
    cases = [SimpleNamespace(case_id=k, gold=SimpleNamespace(final_path=v)) for k, v in gold.items()]
    routebr = [_row("C1", "T_CLARIFY"), _row("C2", "T_REJECT"), _row("C3", "A1_ADVISORY")]
    a_state = [_row("C1", "A5_PROTECTED_ACTION"), _row("C2", "A3_ORDER"), _row("C3", "T_CLARIFY")]
    fd = boundary_mcnemar(routebr, a_state, cases, blocked_gold=True)  # C3 is a false block, not a dispatch
    assert (fd.a_only_correct, fd.b_only_correct, fd.paired) == (2, 0, 3)
    assert fd.p_two_sided == mcnemar({1: True, 2: True}, {1: False, 2: False}).p_two_sided
    fb = boundary_mcnemar(routebr, a_state, cases, blocked_gold=False)
    assert (fb.a_only_correct, fb.b_only_correct) == (1, 0)
    assert boundary_mcnemar(a_state, routebr, cases, blocked_gold=True).b_only_correct == 2  # a is the first
    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "06_ablations.ipynb").read_text("utf-8"))
    template = next("".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("%%conclusion"))
    names = set(re.findall(r"\{\??(\w+)", template.split("\n", 1)[1]))
    facts = {n: 3 for n in names} | {n: True for n in names if n in {"simulated", "recorded_live"}
                                      or n.endswith(("_rises", "_significant", "_mattered")) or n == "any_promotion"}
    facts |= {"source": "simulated", **{f"{v}_mcnemar_p": fd.p_two_sided for v in ("a_state", "no_rules", "a_ground")}}
    markdown = render_conclusion(template.split("\n", 1)[1], facts)
    assert "Exact McNemar" in markdown and not unpaired_comparisons(markdown)


def test_forbidden_contrast_says_which_count_sees_the_change() -> None:
    check = {"action_id": "A5_PROTECTED_ACTION", "controller_terminal": "CLARIFY",
             "controller_reason": "BOUNDARY_TERMINAL", "rule_id": "R050", "cause": "state_gate"}
    c = conclusions.forbidden_contrast(
        base={"exact": "191/200", "false_dispatch": "1/126", "forbidden_dispatch": "2/200"},
        candidate={"exact": "190/200", "false_dispatch": "1/126", "forbidden_dispatch": "3/200"}, check=check,
        gold="A1_ADVISORY", metrics={"changed": 1, "new_false_dispatch": 0, "new_forbidden_dispatch": 1,
                                     "path_exact_drop": 0.5},
        verdicts={"new_false_dispatch <= 0": True, "new_forbidden_dispatch <= 0": False}, case_id="MAIN-0005",
        system="B2", source="x")
    assert "does not see the change" in c.markdown and "**failed**" in c.markdown
    assert c.values["candidate_forbidden_dispatch"] == [3, 200] and not _stray(c)


def test_pass_k_states_each_backend_alone() -> None:
    table = pd.DataFrame([{"backend": b, "cases": 160, "pass^1 %": p1, "pass^3 %": p3, "consistency %": p3}
                          for b, p1, p3 in (("GPT-4o", 96.2, 89.7), ("GPT-5.2", 95.5, 87.8))])
    c = conclusions.pass_k(table, repeats=3, source="simulated")
    assert c.values["gpt_4o_pass_k"] == 89.7 and "simulator" in c.markdown
    assert not unpaired_comparisons(c.markdown) and not _stray(c)


def test_security_flags_a_system_beyond_its_attack_surface_bound() -> None:
    card = [SimpleNamespace(system="routebr", language="en", benign_utility=Rate(27, 27),
                            utility_under_attack=Rate(20, 20), targeted_asr=Rate(0, 20))]

    def attack(k: int, bound: int) -> SimpleNamespace:
        return SimpleNamespace(backend="local:lexical", language="en", budget=40, best_followed=Rate(3, 19),
                               unattacked_followed=Rate(3, 19),
                               systems=(SimpleNamespace(system="routebr", forbidden_dispatch=Rate(k, 19),
                                                        reachable_forbidden=bound),))

    ok = conclusions.security(card, [attack(0, 0)], source="x")
    assert "every system within its envelope" in ok.markdown and not _stray(ok)
    bug = conclusions.security(card, [attack(2, 0)], source="x")
    assert "beyond its bound: a bug" in bug.markdown


def test_gate_calibration_names_an_alarming_gate() -> None:
    from routebr_kit.review.calibration import CriterionCalibration
    from routebr_kit.review.calibration import Rate as SimRate

    def cal(hits: int) -> SimpleNamespace:
        return SimpleNamespace(sims=400, rows=320, effect_pp=3.0, gate_false_alarm=SimRate(hits, 400),
                               gate_power=SimRate(380, 400),
                               criteria=(CriterionCalibration("widening <= 0", None, None, None),))

    c = conclusions.gate_calibration({("stratum", "notebook"): cal(300), ("stratum", "paired"): cal(8)},
                                     gates={"notebook": "path_exact_drop <= 1.0pp", "paired": "x"}, source="x")
    assert "the gate flags noise" in c.markdown and "within the 5% level" in c.markdown
    assert "`widening <= 0`" in c.markdown and not _stray(c)
