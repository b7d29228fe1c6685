"""Every notebook's rendered conclusion agrees with the tables beside it, at two seeds or sources.

Each of the 13 notebooks runs with papermill twice (:mod:`tests.notebook_runs`: small parameters, two seeds or
two sources).  For each run the saved ``tables/conclusions.json`` must (1) state every fact verbatim in its
Markdown and carry no other number, (2) be what the executed notebook displays, and (3) — for the notebooks with
a check below — hold facts equal to the values re-read from the CSV tables the same run wrote.  Different seeds
must give different facts, so the prose demonstrably follows the run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from notebook_runs import VARIANTS, executed, variant_names

pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
RQ = ("03_rq1_routing_correctness", "04_rq2_state_flip", "05_rq3_object_contract", "06_ablations")
SEEDS = (1, 2)
NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")
ALL = sorted(VARIANTS)
RUNS = [(name, variant) for name in ALL for variant in variant_names(name)]


class _Runs(dict):
    """``runs[(name, seed)]`` for the seeded RQ notebooks, executed on first use."""

    def __missing__(self, key):
        name, seed = key
        return executed(name, f"seed-{seed}")


@pytest.fixture(scope="module")
def runs() -> _Runs:
    return _Runs()


def test_every_notebook_is_covered() -> None:
    assert ALL == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if p.stem[:2].isdigit() and int(p.stem[:2]) < 13)


def _conclusion(out_dir: Path) -> dict:
    return json.loads((out_dir / "tables" / "conclusions.json").read_text(encoding="utf-8"))


def _table(out_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out_dir / "tables" / f"{name}.csv", keep_default_na=False)


def _count(text: str) -> list[int]:
    hits, n = re.match(r"\s*(\d+)/(\d+)", str(text)).groups()
    return [int(hits), int(n)]


def _stated(c: dict) -> list[str]:
    """Numbers in the Markdown (outside code spans and the source line) that no stated fact contains."""
    body = "\n".join(line for line in c["markdown"].splitlines() if not line.startswith("*Computed from this run"))
    for fact, text in c["texts"].items():
        assert text in body, (fact, text)
    allowed = set(c["texts"].values()) | {"5%", "95%"}  # "the 5% level" of a test, a "95% interval" (a method)
    pieces = {p for text in allowed for p in NUMBER.findall(text)}
    return [n for n in NUMBER.findall(re.sub(r"`[^`]*`", "", body)) if n not in pieces]


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_every_number_in_the_prose_is_a_stated_fact(name, variant) -> None:
    stray = _stated(_conclusion(executed(name, variant)))
    assert not stray, f"numbers in the prose that are not facts of the run: {stray}"


@pytest.mark.parametrize(("name", "variant"), RUNS)
def test_the_notebook_displays_its_saved_conclusion(name, variant) -> None:
    out = executed(name, variant)
    nb = json.loads((out / "executed.ipynb").read_text(encoding="utf-8"))
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert _conclusion(out)["markdown"] in shown


@pytest.mark.parametrize("name", [n for n in ALL if n != "00_quickstart"])  # 00 is scripted: its facts are fixed
def test_the_prose_follows_the_run(name) -> None:
    first, second = (_conclusion(executed(name, v)) for v in variant_names(name))
    assert first["texts"].keys() & second["texts"].keys()
    if name != "05_rq3_object_contract":  # ENTITY is small: two seeds may legitimately agree on every fact
        assert first["values"] != second["values"]


@pytest.mark.parametrize("seed", SEEDS)
def test_rq1_facts_match_the_tables(runs, seed) -> None:
    out = runs[("03_rq1_routing_correctness", seed)]
    values = _conclusion(out)["values"]
    headline = _table(out, "rq1_main_headline").set_index("system")
    assert values["routebr_exact"] == pytest.approx(headline.loc["RouteBR", "exact"])
    assert values["b1_direct_action"] == pytest.approx(headline.loc["B1 Direct", "action"])
    assert values["b2_direct_guard_exact"] == pytest.approx(headline.loc["B2 Direct+Guard", "exact"])
    tests = _table(out, "rq1_mcnemar").set_index("Comparison")
    assert values["b2_direct_guard_a_only"] == tests.loc["RouteBR vs B2 Direct+Guard", "A only correct"]
    assert values["routebr_errors"] == len(_table(out, "rq1_routebr_errors"))


@pytest.mark.parametrize("seed", SEEDS)
def test_rq2_facts_match_the_tables(runs, seed) -> None:
    out = runs[("04_rq2_state_flip", seed)]
    values = _conclusion(out)["values"]
    pairs = _table(out, "rq2_flip_pairs").set_index("system")
    assert values["routebr_pairs"] == _count(pairs.loc["RouteBR", "pairs"])
    assert values["a_state_fd"] == _count(pairs.loc["RouteBR w/o state enforcement", "FD"])
    assert values["b1_pairs"] == _count(pairs.loc["B1 Direct", "pairs"])
    dispatches_allowed, dispatches = values["dispatches_allowed"]
    assert dispatches_allowed == dispatches  # the structural guarantee
    examples = _table(out, "rq2_false_dispatch_examples")
    if values["false_dispatches"][0]:  # this run's own false dispatches are the listed examples
        assert values["false_dispatches"][0] == len(examples)
        assert (examples["misread"].astype(str) == "True").all()


@pytest.mark.parametrize("seed", SEEDS)
def test_rq3_facts_match_the_tables(runs, seed) -> None:
    out = runs[("05_rq3_object_contract", seed)]
    values = _conclusion(out)["values"]
    table = _table(out, "table_vi_rq3").set_index(["Variant", "Split"])
    assert values["a_ground_fb"] == _count(table.loc[("RouteBR w/o closed grounding", "ENTITY"), "FB"])
    assert values["routebr_entity_object"] == pytest.approx(
        float(table.loc[("RouteBR", "ENTITY"), "Object accuracy"]) / 100)
    stops = _table(out, "rq3_who_stops")
    assert values["unresolvable_exact"][1] == stops["cases"].sum()


@pytest.mark.parametrize("seed", SEEDS)
def test_ablation_facts_match_the_tables(runs, seed) -> None:
    out = runs[("06_ablations", seed)]
    values = _conclusion(out)["values"]
    table = _table(out, "ablation_variants")
    for variant, column, fact in (("a_state", "FD", "a_state_fd"), ("a_ground", "FB", "a_ground_fb"),
                                  ("routebr", "FD", "routebr_fd")):
        counts = [_count(v) for v in table.loc[table["variant"] == variant, column]]
        assert values[fact] == [sum(c[0] for c in counts), sum(c[1] for c in counts)]
    assert values["promotions"] == len(_table(out, "ablation_prevented_promotions"))


@pytest.mark.parametrize("variant", variant_names("08_metaroute_bench"))
def test_metaroute_facts_match_the_tables(variant) -> None:
    out = executed("08_metaroute_bench", variant)
    values = _conclusion(out)["values"]
    summary = _table(out, "table2_summary").set_index("policy")
    assert values["adaptive_success"] == pytest.approx(summary.loc["adaptive", "success_rate"], abs=1e-4)
    assert values["static_success"] == pytest.approx(summary.loc["static_workload", "success_rate"], abs=1e-4)
    pairs = _table(out, "paired_differences").set_index("baseline")
    assert values["margin_pts"] == pytest.approx(100 * pairs.loc["static_workload", "success_difference"], abs=0.01)


@pytest.mark.parametrize("variant", variant_names("11_adversarial"))
def test_adversarial_facts_match_the_tables(variant) -> None:
    out = executed("11_adversarial", variant)
    values = _conclusion(out)["values"]
    worst = _table(out, "adversarial_worst_case").set_index("system")
    assert values["routebr_fd"] == worst.loc["routebr", "forbidden_dispatches_reachable"] == 0
    assert values["a_state_fd"] == worst.loc["a_state", "forbidden_dispatches_reachable"]
    assert values["b1_direct_fd"] == worst.loc["b1_direct", "forbidden_dispatches_reachable"]
    scores = _table(out, "adversarial_lexical_scores")
    hostile = scores[(scores["system"] == "routebr") & ~scores["family"].isin(["BENIGN_LOOKALIKE", "CONTROL"])]
    assert values["routebr_forbidden"][1] == hostile["cases"].sum()


@pytest.mark.parametrize("variant", variant_names("12_metaroute_robustness"))
def test_robustness_facts_match_the_tables(variant) -> None:
    out = executed("12_metaroute_robustness", variant)
    values = _conclusion(out)["values"]
    share = _table(out, "robustness").set_index("baseline")
    assert values["static_ahead"] == [share.loc["static_workload", "ahead"], share.loc["static_workload",
                                                                                        "configurations"]]
    assert values["static_behind"] == share.loc["static_workload", "behind"]
    ranking = _table(out, "sensitivity")
    assert values["top_rho"] == pytest.approx(ranking["spearman_rho"].iloc[0], abs=0.005)


def _parameters(name: str, variant: str) -> dict:
    return next(parameters for v, parameters, _ in VARIANTS[name] if v == variant)


def _facts(values: dict, expected: dict) -> None:
    """Every fact of the run is one of ``expected`` (no number left unchecked) and equals the table's value."""
    assert set(values) - {"same_proposal"} == set(expected), "a fact without a table check, or a check without a fact"
    for key, want in expected.items():
        if isinstance(want, float):
            assert values[key] == pytest.approx(want, abs=0.006), key
        else:
            assert values[key] == want, key


@pytest.mark.parametrize("variant", variant_names("00_quickstart"))
def test_quickstart_facts_match_the_tables(variant) -> None:
    out = executed("00_quickstart", variant)
    details = _table(out, "decision_details")
    forbidden, closed = details.iloc[1], details.iloc[2]
    _facts(_conclusion(out)["values"], {
        "permitted_terminal": details.iloc[0]["terminal"], "forbidden_terminal": forbidden["terminal"],
        "forbidden_rule": forbidden["winning_rule"], "forbidden_priority": int(forbidden["rule_priority"]),
        "closed_terminal": closed["terminal"], "closed_reason": closed["reason"], "closed_calls": int(closed["calls"])})
    assert _table(out, "figure1_decisions")["winning_rule"].tolist() == details["winning_rule"].iloc[:2].tolist()


@pytest.mark.parametrize("variant", variant_names("01_dataset_construction"))
def test_dataset_facts_match_the_tables(variant) -> None:
    out = executed("01_dataset_construction", variant)
    by = _table(out, "composition").groupby("partition")[["cases", "dispatchable"]].sum()
    audit = _table(out, "audit")
    second = _table(out, "second_audit_summary").iloc[0]
    findings = _table(out, "second_audit_findings")
    sources = _table(out, "unresolvable_sources")
    gate = sources[sources["rule"] == "R999"][[c for c in sources.columns if c.startswith("decouple=")]].sum()
    expected = {f"{col}_{p.lower()}": int(by.loc[p, col]) for p in by.index for col in ("cases", "dispatchable")}
    expected |= {"seed": _parameters("01_dataset_construction", variant)["seed"],
                 "audit_errors": int(audit["errors"].sum()), "audit_warnings": int(audit["warnings"].sum()),
                 "priority_decided": int(audit.loc[audit["kind"] == "FULL", "priority_decided"].max()),
                 "second_errors": int(second["errors"]), "second_warnings": int(second["warnings"]),
                 "second_coupled": [int(second["coupled"]), int(second["unresolvable"])],
                 "gate_before": int(gate.iloc[0]), "gate_after": int(gate.iloc[1])}
    _facts(_conclusion(out)["values"], expected)
    assert (findings["severity"] == "WARNING").sum() == second["warnings"]
    assert (findings["severity"] == "ERROR").sum() == second["errors"]


@pytest.mark.parametrize("variant", variant_names("02_backend_screening"))
def test_screening_facts_match_the_tables(variant) -> None:
    from routebr_kit.experiments.screening import COUNT_TOLERANCE, PATH_TOLERANCE_POINTS

    out = executed("02_backend_screening", variant)
    table = _table(out, "table_iv_screening")
    hosted = table[table["Backend"] != "local:lexical"]
    contract, latency = hosted["Contract"].astype(float), hosted["Median latency (ms)"].astype(float)
    fb = [_count(v) for v in hosted["FB"]]
    per = _table(out, "simulated_seed_scores").groupby("backend")["contract % (sim)"]
    sweep = _table(out, "simulated_seed_sweep")
    share = sweep["share within tolerance"].astype(float)
    held_out = _table(out, "lexical_held_out")["Contract"].astype(float)
    expected = {"backends": len(hosted), "contract_min": contract.min() / 100, "contract_max": contract.max() / 100,
                "fd_total": sum(_count(v)[0] for v in hosted["FD"]), "fb_worst": max(fb, key=lambda c: c[0]),
                "latency_ratio": latency.max() / latency.min(), "tolerance_points": float(PATH_TOLERANCE_POINTS),
                "tolerance_count": COUNT_TOLERANCE,
                "within_tolerance": [int(_table(out, "screening_vs_published")["within tolerance"].astype(str)
                                         .eq("True").sum()), len(_table(out, "screening_vs_published"))],
                "sweep_mean_within": [int(((sweep["contract % mean"] - sweep["contract % (pub)"]).abs()
                                           <= PATH_TOLERANCE_POINTS).sum()), len(sweep)],
                "sweep_share_min": share.min(), "sweep_share_max": share.max(),
                "spread_seeds": int(_table(out, "simulated_seed_scores")["seed"].nunique()),
                "spread_width_pts": float((per.max() - per.min()).max()),
                "lexical_min": held_out.min() / 100, "lexical_max": held_out.max() / 100}
    _facts(_conclusion(out)["values"], expected)
    # the pass^k section of the same notebook, against its own table
    from routebr_kit.notebook.conclusions import _slug

    pass_k = _table(out, "pass_k_simulated")
    repeats = int(pass_k["repeats"].iloc[0])
    expected = {"repeats": repeats}
    for r in pass_k.to_dict("records"):
        key = _slug(str(r["backend"]))
        expected |= {f"{key}_pass_1": float(r["pass^1 %"]), f"{key}_pass_k": float(r[f"pass^{repeats} %"]),
                     f"{key}_consistency": float(r["consistency %"]), f"{key}_cases": int(r["cases"])}
    values = json.loads((out / "tables" / "pass_k_conclusion.json").read_text(encoding="utf-8"))["values"]
    _facts(values, expected)


@pytest.mark.parametrize("variant", variant_names("07_paper_replay"))
def test_paper_replay_facts_match_the_tables(variant) -> None:
    out = executed("07_paper_replay", variant)
    total = _table(out, "replay_agreement").set_index("task").loc["TOTAL"]
    expected = {"independent": [int(total[["final_path", "boundary"]].min()), int(total["rows"])],
                "rebuilt": [int(total[["action", "object"]].min()), int(total["rows"])]}
    if variant == "artifact":
        card = _table(out, "scorecard")
        missed = _table(out, "rq2_missed_flip_members")
        expected |= {"published_reproduced": [int(card["match"].astype(str).eq("True").sum()), len(card)],
                     "missed_pairs": int(missed["pair"].nunique())}
    _facts(_conclusion(out)["values"], expected)


@pytest.mark.parametrize("variant", variant_names("09_metaroute_ablations"))
def test_metaroute_ablation_facts_match_the_tables(variant) -> None:
    out = executed("09_metaroute_ablations", variant)
    differences = _table(out, "ablation_differences")
    expected = {f"{row.baseline}_pts": 100 * row.success_difference for row in differences.itertuples()}
    expected |= {f"{row.baseline}_ci_pts": 100 * row.success_difference_ci95 for row in differences.itertuples()}
    design = _table(out, "recovery_power_design")
    power_col = next(c for c in design.columns if c.startswith("power at"))
    power = _table(out, "recovery_power_study")
    largest = power[power["seeds"] == power["seeds"].max()]
    expected |= {f"power_{row.mode}_pts": row.difference_pts for row in largest.itertuples()}
    expected |= {f"power_{row.mode}_ci_pts": row.ci95_pts for row in largest.itertuples()}
    expected |= {"seeds": _parameters("09_metaroute_ablations", variant)["seeds"],
                 "recovery_expected_pts": float(design["expected difference (pts)"].iloc[0]),
                 "recovery_sd_pts": float(design["per-seed sd (pts)"].iloc[0]),
                 "recovery_power": float(design[power_col].iloc[0]), "power_target": 0.8,
                 "recovery_seeds_80": int(design["seeds for 80% power"].iloc[0]),
                 "power_design_seeds": int(re.findall(r"\d+", power_col)[0]),
                 "power_largest_seeds": int(power["seeds"].max())}
    _facts(_conclusion(out)["values"], expected)
