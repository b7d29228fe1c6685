"""The section conclusions added to notebooks 02, 10 and 11, and the paired tests of notebooks 04 and 06: every
number is a stated fact, and a comparison between two systems names (and computes) its paired test.  Notebooks 02
and 04 state theirs in ``%%conclusion`` templates, checked here branch by branch (:mod:`notebook_templates`)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from notebook_templates import flags, render, template, typed_numbers
from test_honest_comparisons import unpaired_comparisons

from routebr_kit.evaluation.stats import mcnemar

NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")


def _anatomy(routebr: list[bool], b1: list[bool]) -> pd.DataFrame:
    """Two members per pair; a pair is right when both are (here: member 2 always right)."""
    rows = []
    for i, (r, b) in enumerate(zip(routebr, b1)):
        for member, ok_r, ok_b in ((1, r, b), (2, True, True)):
            rows.append({"pair_id": f"P{i}", "member": member, "RouteBR": "x ✓" if ok_r else "x ✗",
                         "B1 Direct": "x ✓" if ok_b else "x ✗"})
    return pd.DataFrame(rows)


def test_rq2_compares_a_baseline_with_routebr_by_exact_mcnemar_on_the_same_pairs() -> None:
    """Notebook 04's per-pair outcome (evaluation.analysis.pairs_right) is what its McNemar table compares."""
    from routebr_kit.evaluation.analysis import pairs_right

    routebr, b1 = [True, True, True, False], [False, False, True, False]
    anatomy = _anatomy(routebr, b1)
    assert pairs_right(anatomy, "RouteBR") == {"P0": True, "P1": True, "P2": True, "P3": False}
    test = mcnemar(pairs_right(anatomy, "RouteBR"), pairs_right(anatomy, "B1 Direct"))
    assert (test.a_only_correct, test.b_only_correct, test.paired) == (2, 0, 4)
    assert test.p_two_sided == mcnemar(dict(enumerate(routebr)), dict(enumerate(b1))).p_two_sided


RQ2 = template("04_rq2_state_flip")


@settings(max_examples=80, deadline=None)
@given(st.fixed_dictionaries({flag: st.booleans() for flag in sorted(flags(RQ2))}))
def test_rq2_template_names_the_paired_test_of_every_comparison(chosen) -> None:
    """Every branch of notebook 04's conclusion that sets a system beside RouteBR names its exact McNemar test,
    and the template types no number of its own."""
    markdown = render(RQ2, chosen)
    assert not unpaired_comparisons(markdown), markdown
    assert not typed_numbers(RQ2)
    for key, label in (("b1", "B1 Direct"), ("b2", "B2 Direct+Guard")):
        assert (f"{label} got" in markdown) == chosen[f"has_{key}"]
        if chosen[f"has_{key}"]:
            relation = ("more than" if chosen[f"{key}_more"] else "fewer than" if chosen[f"{key}_fewer"]
                        else "as many as")
            assert f"— {relation} RouteBR —" in markdown
    assert ("A-state replay the same proposals" in markdown) == chosen["has_a_state"]
    assert ("a bug to report" in markdown) == (not chosen["guarantee_holds"])


def test_the_template_checks_can_fail() -> None:
    assert unpaired_comparisons(render("* B1 Direct got {n} pairs, fewer than RouteBR's {m}."))
    assert typed_numbers("* RouteBR missed 3 pairs ({n}).") == ["3"]


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


def _template_stray(text: str) -> list[str]:
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", text)) if n not in {"5%", "95%"}]


def test_forbidden_contrast_says_which_count_sees_the_change() -> None:
    from routebr_kit.notebook.display import render_conclusion
    from routebr_kit.review.contrast import DEFAULT_GATE, OLD_GATE, contrast_facts

    check = SimpleNamespace(action_id="A5_PROTECTED_ACTION", as_dict=lambda: {
        "controller_terminal": "CLARIFY", "controller_reason": "BOUNDARY_TERMINAL", "rule_id": "R050",
        "cause": "state_gate"})
    contrast = SimpleNamespace(
        case_id="MAIN-0005", cases={"MAIN-0005": SimpleNamespace(gold=SimpleNamespace(final_path="A1_ADVISORY"))},
        check=check, counts={"base": {"exact": "191/200", "false_dispatch": "1/126", "forbidden_dispatch": "2/200"},
                             "candidate": {"exact": "190/200", "false_dispatch": "1/126",
                                           "forbidden_dispatch": "3/200"}},
        metrics={"changed": 1, "new_false_dispatch": 0, "new_forbidden_dispatch": 1, "path_exact_drop": 0.5},
        verdicts={OLD_GATE: True, DEFAULT_GATE: False})
    facts = contrast_facts(contrast) | {"source": "x"}
    assert (facts["candidate_forbidden_dispatch"], facts["candidate_forbidden_dispatch_n"]) == (3, 200)
    text = render_conclusion(template("10_release_review", "contrast_view"), facts)
    assert "it does not see the change" in text and "**passed**" in text and "**failed**" in text
    assert "from 2/200 to 3/200 (cause: `state_gate`)" in " ".join(text.split())
    none = render_conclusion(template("10_release_review", "contrast_view"), contrast_facts(None) | {"source": "x"})
    assert "*No contrast on this source" in none and not _template_stray(none.split("\n", 1)[1])


PASS_K = template("02_backend_screening", "pass_k_facts")


@pytest.mark.parametrize("has_rows", [True, False])
def test_pass_k_summary_states_the_simulator_and_no_typed_number(has_rows) -> None:
    markdown = render(PASS_K, {"has_rows": has_rows})
    assert "simulator" in markdown and ("ranges" in markdown) == has_rows
    assert not unpaired_comparisons(markdown) and not typed_numbers(PASS_K)


def test_security_flags_a_system_beyond_its_attack_surface_bound() -> None:
    from routebr_kit.notebook.display import _names, _parse, render_conclusion

    text = template("11_adversarial", "security")
    names = _names(_parse(text, 0, "")[0])
    within = {n for n in names if n.endswith("_within")}
    facts = {n: "x" for n in names} | dict.fromkeys(within, True)
    assert render_conclusion(text, facts).count("every system within its envelope") == len(within) == 4
    bug = " ".join(render_conclusion(text, facts | {"lexical_en_within": False}).split())
    assert "a system beyond its envelope: a bug to report" in bug


def test_gate_calibration_names_an_alarming_gate() -> None:
    from routebr_kit.notebook.display import render_conclusion
    from routebr_kit.review.calibration import CriterionCalibration, calibration_facts
    from routebr_kit.review.calibration import Rate as SimRate

    def cal(hits: int) -> SimpleNamespace:
        return SimpleNamespace(sims=400, rows=320, effect_pp=3.0, gate_false_alarm=SimRate(hits, 400),
                               gate_power=SimRate(380, 400),
                               criteria=(CriterionCalibration("widening <= 0", None, None, None),))

    gates = {"default": "path_exact_drop <= 1.0pp", "re-run": "x", "paired": "y"}
    calibrations = {(m, g): cal(300 if g == "default" else 8) for m in ("stratum", "simulated") for g in gates}
    facts = calibration_facts(calibrations, gates) | {"source": "x"}
    assert facts["stratum_default_noise"] and facts["stratum_paired_below"] and facts["default_noisy"]
    text = render_conclusion(template("10_release_review", "calibration"), facts)
    assert "the gate flags noise" in text and "within the 5% level" in text
    assert "`widening <= 0`" in text and "75.0%–75.0%" in text
