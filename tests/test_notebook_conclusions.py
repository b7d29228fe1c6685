"""Every notebook's rendered conclusion agrees with the tables beside it, at two seeds or sources.

Each of the notebooks 00–13 runs with papermill twice (:mod:`tests.notebook_runs`: small parameters, two seeds or
two sources; 13 on its simulated fallback).  For each run the saved ``tables/conclusions.json`` must (1) state every
fact verbatim in its Markdown and carry no other number, (2) be what the executed notebook displays, and (3) hold
facts equal to the values re-read from the tables the same run wrote (:func:`_facts`: the set of facts must equal
the set of checked keys, so a fact without a table check fails) — the section conclusions of 02, 08, 10 and 11
too.  A fact with no table behind it is a parameter of the run (``seed``, ``seeds``).  Different seeds must give
different facts, so the prose demonstrably follows the run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from notebook_runs import VARIANTS, executed, variant_names

from routebr_kit.review.calibration import ALPHA

pytest.importorskip("papermill")

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
RQ = ("03_rq1_routing_correctness", "04_rq2_state_flip", "05_rq3_object_contract", "06_ablations")
SEEDS = (1, 2)
NUMBER = re.compile(r"(?<![\w.-])\d+(?:\.\d+)?(?:e-?\d+)?%?")
#: Notebooks whose conclusion is a ``%%conclusion facts`` cell (routebr_kit.notebook.display.render_conclusion): the
#: renderer itself refuses a fact the template lacks and a placeholder no fact fills; their conclusions.json is the
#: facts dict, checked against the tables by each notebook's own facts test below.
TEMPLATED = {"13_real_proposers", "14_sessions"}
ALL = sorted(n for n in VARIANTS if n not in TEMPLATED)
RUNS = [(name, variant) for name in ALL for variant in variant_names(name)]


def _slug(label: str) -> str:
    """A system or rule label as the key part of a fact's name (``"B2 Direct+Guard"`` → ``b2_direct_guard``)."""
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


class _Runs(dict):
    """``runs[(name, seed)]`` for the seeded RQ notebooks, executed on first use."""

    def __missing__(self, key):
        name, seed = key
        return executed(name, f"seed-{seed}")


@pytest.fixture(scope="module")
def runs() -> _Runs:
    return _Runs()


def test_every_notebook_is_covered() -> None:
    assert sorted(VARIANTS) == sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb") if p.stem[:2].isdigit())


def _conclusion(out_dir: Path, name: str = "conclusions", variable: str = "facts") -> dict:
    """The run's conclusion: ``values`` (the facts the notebook saved as ``tables/<name>.json``), the ``template``
    of its ``%%conclusion <variable>`` cell and the ``markdown`` that cell displayed."""
    saved = json.loads((out_dir / "tables" / f"{name}.json").read_text(encoding="utf-8"))
    if "markdown" in saved:  # a notebook still on routebr_kit.notebook.conclusions (notebook 13)
        return saved
    nb = json.loads((out_dir / "executed.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if c["cell_type"] == "code"
                and "".join(c["source"]).startswith(f"%%conclusion {variable}\n"))
    shown = [o["data"]["text/markdown"] for o in cell.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert len(shown) == 1, f"the %%conclusion {variable} cell displayed {len(shown)} Markdown outputs"
    return {"values": saved, "template": "".join(cell["source"]).split("\n", 1)[1],
            "markdown": "".join(shown[0])}


def _literals(parts: list) -> str:
    """The words a template types itself (both branches of every choice), without its placeholders."""
    return "".join(p if isinstance(p, str) else "" if p[0] == "fill" else _literals(p[2]) + "\n" + _literals(p[3])
                   for p in parts)


def _table(out_dir: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out_dir / "tables" / f"{name}.csv", keep_default_na=False)


def _count(text: str) -> list[int]:
    hits, n = re.match(r"\s*(\d+)/(\d+)", str(text)).groups()
    return [int(hits), int(n)]


def _stated(c: dict) -> list[str]:
    """Numbers in the Markdown (outside code spans and the source line) that no stated fact contains; for a
    template, numbers the template types itself (every number must be a placeholder filled from the facts)."""
    if "template" in c:
        from routebr_kit.notebook.display import _parse

        typed = re.sub(r"`[^`]*`|\b(?:Figure|Table) \d+", "", _literals(_parse(c["template"], 0, "")[0]))
        return [n for n in NUMBER.findall(typed) if n not in {"5%", "95%"}]
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
    c = _conclusion(out)
    if "template" in c:  # the displayed Markdown is the template filled from the saved facts
        from routebr_kit.notebook.display import render_conclusion

        assert render_conclusion(c["template"], c["values"]) == c["markdown"]
        return
    nb = json.loads((out / "executed.ipynb").read_text(encoding="utf-8"))
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert _conclusion(out)["markdown"] in shown


@pytest.mark.parametrize("name", [n for n in ALL if n != "00_quickstart"])  # 00 is scripted: its facts are fixed
def test_the_prose_follows_the_run(name) -> None:
    first, second = (_conclusion(executed(name, v)) for v in variant_names(name))
    assert first["values"].keys() & second["values"].keys()
    if name != "05_rq3_object_contract":  # ENTITY is small: two seeds may legitimately agree on every fact
        assert first["values"] != second["values"]


def _parameters(name: str, variant: str) -> dict:
    return next(parameters for v, parameters, _ in VARIANTS[name] if v == variant)


def _parameters_defaults(name: str) -> dict:
    """The literals of a notebook's ``parameters`` cell (what a variant does not override)."""
    import ast

    nb = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in nb["cells"] if "parameters" in c.get("metadata", {}).get("tags", []))
    tree = ast.parse("".join(cell["source"]))
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body if isinstance(node, ast.Assign)}


def _facts(values: dict, expected: dict) -> None:
    """Every fact of the run is one of ``expected`` (no number left unchecked) and equals the table's value.

    A float is compared to within the 2-decimal rounding of a stated fact; a check that needs another tolerance
    (a p-value, a ratio of 4-decimal table values) passes a ``pytest.approx`` itself."""
    for key, want in list(expected.items()):  # a k/n count stated by a template as two facts: key and key_n
        if isinstance(want, list) and len(want) == 2 and not isinstance(values.get(key), list):
            expected[key], expected[f"{key}_n"] = want
    numbers = {k for k, v in values.items() if isinstance(v, int | float) and not isinstance(v, bool)}
    assert numbers <= set(expected) <= set(values), "a number without a table check, or a check without a fact"
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
    gate = sources[sources["rule"] == "R999"][["decouple=False", "decouple=True"]].sum()  # the object gate's cases
    expected = {f"{col}_{p.lower()}": int(by.loc[p, col]) for p in by.index for col in ("cases", "dispatchable")}
    expected |= {"seed": _parameters("01_dataset_construction", variant)["seed"],
                 "audit_errors": int(audit["errors"].sum()), "audit_warnings": int(audit["warnings"].sum()),
                 "priority_decided": int(audit.loc[audit["kind"] == "FULL", "priority_decided"].max()),
                 "second_errors": int(second["errors"]), "second_warnings": int(second["warnings"]),
                 "second_coupled": [int(second["coupled"]), int(second["unresolvable"])],
                 "gate_before": int(gate["decouple=False"]), "gate_after": int(gate["decouple=True"])}
    values = _conclusion(out)["values"]
    _facts(values, expected)
    kept = sources.groupby("boundary")[["decouple=False", "decouple=True"]].sum()
    assert values["boundaries_kept"] is bool((kept["decouple=False"] == kept["decouple=True"]).all())
    assert values["labels_agree"] is (expected["audit_errors"] == 0)
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
    floor = _table(out, "learned_vs_floor").iloc[0]  # any row: its exact % minus its points above the floor
    expected["floor_exact"] = pytest.approx((float(floor["exact %"]) - float(floor["above floor (points)"])) / 100,
                                            abs=0.0011)  # two 1-decimal percentages
    values = _conclusion(out)["values"]
    _facts(values, expected)
    worst = max(range(len(fb)), key=lambda i: fb[i][0])
    assert values["fb_worst_backend"] == hosted["Backend"].iloc[worst]
    assert values["no_false_dispatch"] is (expected["fd_total"] == 0)
    # the pass^k section of the same notebook, against its own table
    pass_k = _table(out, "pass_k_simulated")
    repeats = int(pass_k["repeats"].iloc[0])
    last = f"pass^{repeats} %"
    drop = pass_k["pass^1 %"] - pass_k[last]
    expected = {"repeats": repeats, "backends": len(pass_k), "cases": int(pass_k["cases"].max()),
                "largest_drop_pts": float(drop.max()),
                "largest_drop_pts_backend": pass_k.loc[drop.idxmax(), "backend"]}
    for key, column in (("pass_1", "pass^1 %"), ("pass_k", last), ("consistency", "consistency %")):
        for end, pick in (("min", "idxmin"), ("max", "idxmax")):
            row = pass_k.loc[getattr(pass_k[column], pick)()]
            expected |= {f"{key}_{end}": float(row[column]), f"{key}_{end}_backend": row["backend"]}
    assert set(pass_k["cases"]) == {expected["cases"]}  # "each on N cases"
    c = _conclusion(out, "pass_k_conclusion", "pass_k_facts")
    _facts(c["values"], expected)
    from routebr_kit.notebook.display import render_conclusion

    assert render_conclusion(c["template"], c["values"]) == c["markdown"] and not _stated(c)


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


#: A difference of two values of a 4-decimal table, in points, against a fact rounded to 2 decimals.
TABLE_DIFFERENCE_PTS = 100 * 2 * 0.00005 + 0.005


def _flag(frame: pd.DataFrame, column: str) -> pd.Series:
    return frame[column].astype(str).eq("True")


def _mcnemar(a: pd.Series, b: pd.Series, key: str, a_only: str, b_only: str) -> dict:
    """The exact McNemar facts of two boolean per-unit outcomes, recomputed from a table (scipy's binomial test)."""
    from scipy.stats import binomtest

    only_a, only_b = int((a & ~b).sum()), int((b & ~a).sum())
    p = binomtest(min(only_a, only_b), only_a + only_b, 0.5).pvalue if only_a + only_b else 1.0
    return {f"{key}_paired": len(a), a_only: only_a, b_only: only_b, f"{key}_mcnemar_p": pytest.approx(p, rel=1e-9)}


def _audit(audit: pd.DataFrame) -> dict:
    """The structural-guarantee facts, from the table of every audited RouteBR decision."""
    dispatched, allows, bounded = (_flag(audit, c) for c in ("dispatched", "rule allows", "gold bounded"))
    false = dispatched & bounded
    facts = {"dispatches_allowed": [int((dispatched & allows).sum()), int(dispatched.sum())],
             "false_dispatches": [int(false.sum()), int(bounded.sum())]}
    if false.any():
        facts["false_dispatches_misread"] = int((false & (audit["action"] != audit["gold action"])).sum())
    return facts


@pytest.mark.parametrize("seed", SEEDS)
def test_rq1_facts_match_the_tables(runs, seed) -> None:
    out = runs[("03_rq1_routing_correctness", seed)]
    headline = _table(out, "rq1_main_headline")
    expected = {"n_main": int(headline.loc[headline["system"] == "RouteBR", "n"].iloc[0])}
    short = {"RouteBR": "routebr", "B1 Direct": "b1", "B2 Direct+Guard": "b2"}
    for r in headline.to_dict("records"):
        key = short[r["system"]]
        expected |= {f"{key}_exact": float(r["exact"]), f"{key}_action": float(r["action"])}
    expected["largest_gap_pts"] = 100 * float(headline.loc[headline["system"] != "RouteBR", "action_minus_exact"]
                                              .max())
    for t in _table(out, "rq1_mcnemar").to_dict("records"):
        key = short[t["Comparison"].removeprefix("RouteBR vs ")]
        expected |= {f"{key}_a_only": int(t["A only correct"]), f"{key}_b_only": int(t["B only correct"]),
                     f"{key}_p": pytest.approx(float(t["p (two-sided)"]), rel=1e-9)}
    errors = _table(out, "rq1_routebr_errors")
    expected |= {"routebr_errors": len(errors),
                 "routebr_errors_dispatched": int((~errors["pred_path"].astype(str).str.startswith("T_")).sum())}
    audit = _audit(_table(out, "rq1_dispatch_audit"))
    audit.setdefault("false_dispatches_misread", 0)
    _facts(_conclusion(out)["values"], expected | audit)


@pytest.mark.parametrize("seed", SEEDS)
def test_rq2_facts_match_the_tables(runs, seed) -> None:
    out = runs[("04_rq2_state_flip", seed)]
    pairs = _table(out, "rq2_flip_pairs").set_index("system")
    anatomy = _table(out, "rq2_pair_anatomy")
    right = {label: anatomy[label].astype(str).str.endswith("✓").groupby(anatomy["pair_id"]).all()
             for label in pairs.index}
    expected = {"routebr_pairs": _count(pairs.loc["RouteBR", "pairs"]),
                "routebr_fd": _count(pairs.loc["RouteBR", "FD"])}
    if "RouteBR w/o state enforcement" in pairs.index:
        expected |= {"a_state_pairs": _count(pairs.loc["RouteBR w/o state enforcement", "pairs"]),
                     "a_state_fd": _count(pairs.loc["RouteBR w/o state enforcement", "FD"])}
    for label, key in (("RouteBR w/o state enforcement", "a_state"), ("B1 Direct", "b1"), ("B2 Direct+Guard", "b2")):
        if label in pairs.index:
            expected |= {f"{key}_pairs": _count(pairs.loc[label, "pairs"]), f"{key}_fd": _count(pairs.loc[label, "FD"])}
            expected |= _mcnemar(right["RouteBR"], right[label], key, f"{key}_routebr_only", f"{key}_only")
    missed = _table(out, "rq2_routebr_missed_pairs")
    wrong = missed[missed["RouteBR"].astype(str).str.endswith("✗")] if len(missed) else missed
    expected |= {"routebr_missed_pairs": int(wrong["pair_id"].nunique()) if len(wrong) else 0,
                 "missed_members": len(wrong),
                 "missed_allowed_members": int((~wrong["gold_path"].astype(str).str.startswith("T_")).sum())
                 if len(wrong) else 0}
    audit = _audit(_table(out, "rq2_dispatch_audit"))
    audit.setdefault("false_dispatches_misread", 0)
    expected |= audit
    searched = _table(out, "rq2_guarantee_search")
    found = searched[searched["false dispatches"].astype(int) > 0]
    if expected["false_dispatches"][0] == 0 and len(found):
        expected["example_seed"] = int(found["seed"].iloc[0])
        examples = _table(out, "rq2_false_dispatch_examples")
        assert len(examples) == int(found["false dispatches"].iloc[0])  # the examples are that seed's
    values = _conclusion(out)["values"]
    _facts(values, expected)
    for key in ("b1", "b2"):  # the words relating a baseline's pair count to RouteBR's
        if values[f"has_{key}"]:
            assert values[f"{key}_more"] is (values[f"{key}_pairs"] > values["routebr_pairs"])
            assert values[f"{key}_fewer"] is (values[f"{key}_pairs"] < values["routebr_pairs"])
    if values["has_example"]:
        first = _table(out, "rq2_false_dispatch_examples").iloc[0]
        assert (values["example_case_id"], values["example_proposed_action"]) == (first["case_id"],
                                                                               first["proposed action"])


@pytest.mark.parametrize("seed", SEEDS)
def test_rq3_facts_match_the_tables(runs, seed) -> None:
    out = runs[("05_rq3_object_contract", seed)]
    table = _table(out, "table_vi_rq3").set_index(["Variant", "Split"])
    ground, routebr = table.loc[("RouteBR w/o closed grounding", "ENTITY")], table.loc[("RouteBR", "ENTITY")]
    fb_hits, fb_n = _count(ground["FB"])
    expected = {"a_ground_fb_hits": fb_hits, "a_ground_fb_n": fb_n, "a_ground_exact": float(ground["Contract"]) / 100,
                "routebr_entity_exact": float(routebr["Contract"]) / 100,
                "routebr_entity_object": float(routebr["Object accuracy"]) / 100}
    stops = _table(out, "rq3_who_stops")
    exact = _flag(stops, "exact") if len(stops) else []
    expected |= {"unresolvable_exact": int(stops.loc[exact, "cases"].sum()) if len(stops) else 0,
                 "unresolvable_n": int(stops["cases"].sum()) if len(stops) else 0,
                 "stops_by_rule": ", ".join(f"{rule}: {n}" for rule, n in
                                            stops.groupby("gold_rule")["cases"].sum().items()) if len(stops) else ""}
    _facts(_conclusion(out)["values"], expected)


@pytest.mark.parametrize("seed", SEEDS)
def test_ablation_facts_match_the_tables(runs, seed) -> None:
    out = runs[("06_ablations", seed)]
    table = _table(out, "ablation_variants")
    pooled = {v: {c: [sum(x) for x in zip(*(_count(t) for t in g[c]))] for c in ("FD", "FB", "fail-closed")}
              for v, g in table.groupby("variant", sort=False)}
    paths = _table(out, "ablation_case_paths")
    dispatched = {col: ~paths[col].astype(str).str.startswith("T_") for col in ("gold_path", "pred_path")}
    no_fd = ~(~dispatched["gold_path"] & dispatched["pred_path"])
    no_fb = ~(dispatched["gold_path"] & ~dispatched["pred_path"])

    def by_case(correct: pd.Series, variant: str) -> pd.Series:
        return correct[paths["variant"] == variant].set_axis(paths.loc[paths["variant"] == variant, "case_id"])

    expected = {}
    for variant, column, fact, correct in (("a_state", "FD", "fd", no_fd), ("no_rules", "FD", "fd", no_fd),
                                           ("a_ground", "FB", "fb", no_fb)):
        if variant in pooled:
            expected |= {f"{variant}_{fact}": pooled[variant][column], f"routebr_{fact}": pooled["routebr"][column]}
            expected |= _mcnemar(by_case(correct, "routebr"), by_case(correct, variant).reindex(
                by_case(correct, "routebr").index), variant, f"{variant}_only", f"{variant}_routebr_only")
    expected |= {"no_repair_fail": pooled["no_repair"]["fail-closed"], "routebr_fail": pooled["routebr"]["fail-closed"]}
    promoted = _table(out, "ablation_prevented_promotions")
    expected |= {"promotions": len(promoted),
                 "promotions_wrong": int(_flag(promoted, "promotion wrong").sum()) if len(promoted) else 0}
    for r in _table(out, "ablation_offline_vs_recorded").to_dict("records"):
        expected |= {f"{r['variant']}_same_path": [int(r["same final path"]), int(r["cases"])],
                     f"{r['variant']}_same_object": [int(r["same object"]), int(r["cases"])]}
    _facts(_conclusion(out)["values"], expected)


@pytest.mark.parametrize("variant", variant_names("08_metaroute_bench"))
def test_metaroute_facts_match_the_tables(variant) -> None:
    from routebr_kit.metaroute.source import resolve_metaroute

    out = executed("08_metaroute_bench", variant)
    summary = _table(out, "table2_summary").set_index("policy")
    pairs = _table(out, "paired_differences").set_index("baseline")
    adaptive, static = summary.loc["adaptive"], summary.loc["static_workload"]
    ratio = pytest.approx  # a ratio of two 4-decimal table values, in percent
    expected = {"adaptive_success": adaptive["success_rate"], "static_success": static["success_rate"],
                "margin_pts": 100 * pairs.loc["static_workload", "success_difference"],
                "margin_ci_pts": 100 * pairs.loc["static_workload", "success_difference_ci95"],
                "cost_pct": ratio(100 * (adaptive["mean_cost"] / static["mean_cost"] - 1), abs=0.015),
                "latency_pct": ratio(100 * (adaptive["mean_latency_s"] / static["mean_latency_s"] - 1), abs=0.015)}
    for p in ("one_shot", "direct"):
        expected |= {f"{p}_gap_pts": abs(100 * pairs.loc[p, "success_difference"]),
                     f"{p}_gap_ci_pts": 100 * pairs.loc[p, "success_difference_ci95"]}
    slices = _table(out, "slice_comparisons")  # adaptive minus the rule table per slice, paired by seed
    workloads = _table(out, "workload_success").set_index("Unnamed: 0")
    levels = _table(out, "difficulty_success").set_index("Unnamed: 0")
    for row in slices.itertuples():
        key = f"{'workload' if row.slice == 'workload' else 'level'}_{row.value}"
        rates = workloads if row.slice == 'workload' else levels
        # the slice's two success rates are the ones the per-slice tables show
        assert row.adaptive_success == pytest.approx(rates.loc["adaptive", str(row.value)], abs=5e-5)
        assert row.static_workload_success == pytest.approx(rates.loc["static_workload", str(row.value)], abs=5e-5)
        expected |= {f"{key}_pts": row.difference_points, f"{key}_ci_pts": row.ci95_points}
        if row.slice == "difficulty":
            expected[key] = int(row.value)
    significant = slices[(slices["slice"] == "difficulty") & (slices["significant"].astype(str) == "True")]
    for name, sign in (("ahead_levels", 1), ("behind_levels", -1)):
        chosen = [str(v) for v, d in zip(significant["value"], significant["difference_points"]) if d * sign > 0]
        expected[name] = ", ".join(chosen)
    expected |= {"slice_seeds": int(slices["seeds"].iloc[0]),
                 "seeds": _parameters("08_metaroute_bench", variant)["seeds"]}
    assert set(slices["seeds"]) == {_parameters("08_metaroute_bench", variant)["seeds"]}
    failures = _table(out, "failure_taxonomy")
    share = failures[failures["label"] != "task_failure"].groupby("policy")[["successful", "traces"]].sum()
    rate = share["successful"] / share["traces"]
    expected |= {"label_success_min": float(rate.min()), "label_success_max": float(rate.max())}
    published = resolve_metaroute("").path
    if published is not None:  # the published summary, read from the artifact (a published value, labelled so)
        row = pd.read_csv(published / "main" / "summary.csv").set_index("policy").loc["adaptive"]
        expected["published_adaptive_success"] = float(row["success_rate"])
    _facts(_conclusion(out)["values"], expected)
    explorer = _table(out, "explorer_defaults")
    agreement = _conclusion(out, "explorer_agreement", "agreement")
    assert not _stated(agreement), "numbers typed into the explorer's template"
    expected = {"explorer_top_success": float(explorer["success_rate"].iloc[0]),
                "headline_top_success": float(summary["success_rate"].iloc[0]),
                "seeds": _parameters("08_metaroute_bench", variant)["seeds"],
                "explorer_seeds": _parameters("08_metaroute_bench", variant)["seeds"]}
    if agreement["values"]["other_mode"]:  # two executor modes: the largest success gap between the two tables
        gaps = (explorer.set_index("policy")["success_rate"] - summary["success_rate"]).abs()
        worst = agreement["values"]["largest_gap_policy"]
        assert gaps.idxmax() == worst
        expected |= {"largest_gap_pts": 100 * gaps[worst],
                     "largest_gap_ci_pts": 100 * summary.loc[worst, "success_ci95"]}
    _facts(agreement["values"], expected)


@pytest.mark.parametrize("variant", variant_names("11_adversarial"))
def test_adversarial_facts_match_the_tables(variant) -> None:
    from routebr_kit.adversarial.suite import AttackFamily

    out = executed("11_adversarial", variant)
    worst = _table(out, "adversarial_worst_case").set_index("system")
    columns = {"fd": "forbidden_dispatches_reachable", "cases": "cases_with_forbidden_dispatch_reachable",
               "protected": "protected_without_permission_reachable", "mis": "misroutes_reachable",
               "unreg": "unregistered_object_reachable"}
    shown = {"b1_direct": ("fd", "cases", "protected", "unreg"), "b2_direct_guard": ("fd",),
             "routebr": ("fd", "mis", "unreg"), "a_state": ("fd",)}
    expected = {f"{system}_{k}": int(worst.loc[system, columns[k]]) for system, keys in shown.items() for k in keys}
    expected |= {"cases": int(worst.loc["b1_direct", "cases"]),
                 "suite_cases": int(_table(out, "adversarial_suite")["cases"].sum()),
                 "seed": _parameters("11_adversarial", variant)["seed"]}
    facts = _conclusion(out)["values"]
    _facts(facts, expected)
    assert facts["b1_b2_same"] is bool((worst.loc["b1_direct"] == worst.loc["b2_direct_guard"]).all())
    scores = _table(out, "adversarial_lexical_scores")
    hostile = scores["family"].map(lambda f: AttackFamily(f).hostile)

    def pooled(system: str, measure: str, rows: pd.Series) -> list[int]:
        counts = [_count(c) for c in scores.loc[rows & (scores["system"] == system), f"{measure}_count"] if c]
        return [sum(k for k, _ in counts), sum(n for _, n in counts)]

    rates = {"routebr_forbidden": pooled("routebr", "forbidden_dispatch", hostile),
             "a_state_forbidden": pooled("a_state", "forbidden_dispatch", hostile),
             "routebr_followed": pooled("routebr", "followed", hostile),
             "routebr_followed_without_attack": pooled("routebr", "followed_without_attack", hostile),
             "routebr_over_blocked": pooled("routebr", "over_blocked", ~hostile)}
    for key, (k, n) in rates.items():  # "k/n (x%, Wilson 95% lo–hi%)": the counts and the rate they give
        assert _count(facts[key]) == [k, n], key
        assert facts[key].startswith(f"{k}/{n} ({100 * k / n:.1f}%, Wilson 95% "), key
    assert facts["live_run"] is ("adversarial_live_scores.csv" in {p.name for p in (out / "tables").iterdir()})
    # the scorecard and adaptive-attacker section of the same notebook, against its two tables
    security = _conclusion(out, "security_conclusion", "security")["values"]
    expected = {}
    for r in _table(out, "adversarial_scorecard").to_dict("records"):
        key = f"{r['system']}_{r['language']}"
        for column, name in (("benign utility", "benign"), ("utility under attack", "under_attack"),
                             ("targeted ASR", "asr")):
            counted = re.search(r"\((\d+)/(\d+)\)", str(r[column]))  # "–" when nothing was counted
            assert security[f"{key}_{name}"] == (f"{counted.group(1)}/{counted.group(2)}" if counted else "no case")
    adaptive = _table(out, "adversarial_adaptive")
    for (backend, language), rows in adaptive.groupby(["backend", "language"], sort=False):
        key = f"{'lexical' if backend == 'local:lexical' else 'simulated'}_{language}"
        first = rows.iloc[0]
        expected[f"{key}_budget"] = int(str(first["budget"]).split()[0])
        assert _count(security[f"{key}_followed"]) == _count(first["followed (best attack)"])
        assert _count(security[f"{key}_unattacked"]) == _count(first["followed (no attack)"])
        said = security[f"{key}_systems"]
        for r in rows.to_dict("records"):  # each system's forbidden dispatches and its bound, in the table's order
            k, n = _count(r["forbidden dispatch"])
            assert f" {k}/{n} (bound {int(r['cases where reachable (bound)'])})" in said, (key, r["system"])
        assert said.count("(bound ") == len(rows)
        assert security[f"{key}_within"] is bool(rows["within bound"].astype(str).eq("True").all())
    _facts(security, expected)


@pytest.mark.parametrize("variant", variant_names("12_metaroute_robustness"))
def test_robustness_facts_match_the_tables(variant) -> None:
    from routebr_kit.metaroute.config import EvaluationConfig

    out = executed("12_metaroute_robustness", variant)
    share = _table(out, "robustness").set_index("baseline")
    static, one = share.loc["static_workload"], share.loc["one_shot"]
    expected = {"configurations": int(static["configurations"]),
                "seeds": _parameters("12_metaroute_robustness", variant)["seeds"],
                "static_behind": int(static["behind"]),
                **{f"static_{k}_pts": 100 * float(static[f"{k}_difference"]) for k in ("min", "max", "median")},
                "one_shot_median_pts": 100 * float(one["median_difference"])}
    for key, row in (("static", static), ("one_shot", one)):
        expected |= {f"{key}_ahead": [int(row["ahead"]), int(row["configurations"])],
                     f"{key}_fraction": float(row["fraction_ahead"]), f"{key}_fraction_low": float(row["fraction_low"]),
                     f"{key}_fraction_high": float(row["fraction_high"])}
    ranking = _table(out, "sensitivity")
    expected |= {"top_rho": float(ranking["spearman_rho"].iloc[0]),
                 "second_rho": float(ranking["spearman_rho"].iloc[1])}
    per_seed = _table(out, "published_constants_per_seed")
    difference = per_seed["adaptive"] - per_seed["static_workload"]
    ci = EvaluationConfig().z * difference.std(ddof=1) / len(difference) ** 0.5
    expected |= {"published_constants_pts": 100 * difference.mean(), "published_constants_ci_pts": 100 * ci}
    _facts(_conclusion(out)["values"], expected)


@pytest.mark.parametrize("variant", variant_names("13_real_proposers"))
def test_real_proposers_facts_match_the_tables(variant) -> None:
    """Notebook 13 (issue 33): the %%conclusion facts are the tables' numbers."""
    out = executed("13_real_proposers", variant)
    facts = _conclusion(out)["values"]
    nb = json.loads((out / "executed.ipynb").read_text(encoding="utf-8"))
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert any(f"RouteBR exact {facts['learned_exact']}" in text for text in shown)  # the rendered conclusion
    scores = _table(out, "proposer_scores")
    route = scores[(scores.proposer == "learned") & (scores.system == "routebr")].iloc[0]
    b1 = scores[(scores.proposer == "learned") & (scores.system == "b1")].iloc[0]
    assert (facts["learned_exact"], facts["learned_fd"]) == (route["exact"], route["FD"])
    assert (facts["b1_exact"], facts["b1_fd"]) == (b1["exact"], b1["FD"])
    assert facts["floor_pct"] == pytest.approx(route["floor exact %"], abs=0.06)
    assert facts["above_floor"] is bool(route["exact %"] > facts["floor_pct"])
    mistakes = _table(out, "wrong_but_valid")
    assert facts["mistakes"] == len(mistakes)
    assert facts["false_dispatches"] == int((mistakes["false_dispatch"].astype(str) == "True").sum())
    shift = _table(out, "shift_scores").set_index("proposer")
    assert facts["shift_learned_pct"] == pytest.approx(shift.loc["learned", "exact %"])
    assert facts["shift_lexical_pct"] == pytest.approx(shift.loc["lexical", "exact %"])


@pytest.mark.parametrize("variant", variant_names("14_sessions"))
def test_sessions_facts_match_the_tables(variant) -> None:
    """Notebook 14 (issue 32): the %%conclusion facts are the tables' numbers."""
    out = executed("14_sessions", variant)
    facts = _conclusion(out)["values"]
    nb = json.loads((out / "executed.ipynb").read_text(encoding="utf-8"))
    shown = ["".join(o["data"]["text/markdown"]) for c in nb["cells"] if c["cell_type"] == "code"
             for o in c.get("outputs", []) if "text/markdown" in o.get("data", {})]
    assert any(f"RouteBR is exact on {facts['route_exact']}" in text for text in shown)
    predicates = _table(out, "session_predicates").set_index("predicate")
    assert {p: facts[f"{p}_decided"] for p in predicates.index} == predicates["decided"].to_dict()
    scores = _table(out, "session_scores")
    route = scores[(scores.proposer == "simulated") & (scores.system == "routebr")].iloc[0]
    b1 = scores[(scores.proposer == "simulated") & (scores.system == "b1")].iloc[0]
    assert (facts["route_exact"], facts["route_fd"], facts["b1_exact"]) == (route["exact"], route["FD"], b1["exact"])
    assert facts["requests"] == _count(route["exact"])[1] + facts["composite_requests"]
    assert facts["floor_pct"] == pytest.approx(scores.iloc[-1]["exact %"], abs=0.06)
    verdicts = _table(out, "horizon_verdicts")
    assert facts["refuted"] == verdicts[verdicts["holds"].astype(str) == "False"].iloc[0]["assertion"]
    assert facts["cx_requests"] == len(_table(out, "horizon_counterexample"))
    review = _table(out, "session_review_summary").iloc[-1]
    assert (facts["review_sessions"], facts["review_requests"], facts["review_history_only"]) == (
        review["changed sessions"], review["changed requests"], review["history only"])
    assert facts["review_stale"] == review["per-request shadow wrong"]
    composite = _table(out, "composite_scores").set_index(["proposer", "system"])
    assert facts["composite_route"] == composite.loc[("simulated", "routebr"), "composite exact"]
    assert facts["composite_b1_fd"] == composite.loc[("simulated", "b1"), "items falsely dispatched"]
    assert facts["composite_requests"] == _count(facts["composite_route"])[1]


@pytest.mark.parametrize("variant", variant_names("10_release_review"))
def test_release_review_facts_match_the_tables(variant) -> None:
    from routebr_kit.review.release import CASES_SHOWN

    out = executed("10_release_review", variant)
    facts = _conclusion(out)["values"]
    order = _table(out, "release_review_rule_order")
    mine = order[order["new"].astype(str) == "True"].iloc[0]
    before = order[order["order"] < mine["order"]]
    after = order[(order["order"] > mine["order"]) & (order["decision"] != "ALLOW")]
    for frame, key in ((before, "before_rules"), (after, "after_rules")):  # every rule the prose ranks, in order
        assert facts[key] == ", ".join(f"{r} ({p}, {d})" for r, p, d in
                                       zip(frame["rule_id"], frame["priority"], frame["decision"], strict=True))
    assert facts["pre_empts"] is (len(after) > 0) and facts["after_ids"] == ", ".join(after["rule_id"])
    expected = {"new_rule_priority": int(mine["priority"])}
    edits = _table(out, "release_review_edits").set_index("edit")
    rule, registry = edits.loc["rule"], edits.loc["registry"]
    classes = ("new false dispatch", "new false block", "fixed", "other path change", "trace only")
    expected |= {_slug(k): int(rule[k]) for k in classes}
    expected |= {"selected": int(rule["selected (exact)"]), "changed": int(rule["changed"]),
                 "registry_selected": int(registry["selected (exact)"]), "registry_changed": int(registry["changed"]),
                 "registry_new_false_block": int(registry["new false block"]),
                 "registry_new_false_dispatch": int(registry["new false dispatch"]),
                 "registry_live": int(registry["live re-run rows"]),
                 "prompt_changed": int(edits.loc["prompt", "changed"])}
    assert facts["classes_add_up"] is (sum(int(rule[k]) for k in classes) == int(rule["changed"]))
    assert facts["registry_passes"] is (registry["gate"] == "PASS")
    moves = _table(out, "release_review_rule_transitions")
    for cases, rows in zip(moves["cases"], moves["rows"], strict=True):  # a bounded cell: the first few, then a count
        named, _, more = cases.partition(" +")
        assert len(named.split()) <= CASES_SHOWN and (not more or CASES_SHOWN + int(more.split()[0]) <= rows)
    took = moves[moves["candidate_rule"].str.split("@").str[0] == mine["rule_id"]]
    winner = took["base_rule"].str.replace(r"@.*->(.*)", r" (\1)", regex=True)
    took_by = took.groupby(winner, sort=False)["rows"].sum()
    assert facts["took_over"] == ", ".join(f"{w}: {n} rows" for w, n in took_by.items())
    terminal = {c: moves[c].str.startswith("T_") for c in ("base_final_path", "candidate_final_path")}
    right = moves[(moves["base_final_path"] == moves["gold_final_path"]) & terminal["base_final_path"]
                  & terminal["candidate_final_path"] & (moves["candidate_final_path"] != moves["base_final_path"])]
    flows = right.groupby(["base_final_path", "candidate_final_path"], sort=False)["rows"].sum()
    assert facts["correct_flows"] == ", ".join(f"{n} correct `{a}` → `{b}`" for (a, b), n in flows.items())
    trace = moves[moves["change_class"] == "trace_only"]
    expected["trace_rows"] = int(trace["rows"].sum())
    exact = _table(out, "release_review_rule_verify")
    totals = json.loads((out / "tables" / "release_review_rule_verify_totals.json").read_text(encoding="utf-8"))
    assert facts["relations"] == ", ".join(f"{n} actions {k}" for k, n in exact["relation"].value_counts().items())
    expected |= {"widening": int(exact["relation"].isin(["widening", "incomparable"]).sum()),
                 "regions_changed": totals["regions_changed"] if totals["states_changed"] is None
                 else totals["states_changed"], "recorded_rows": totals["recorded"]["rows"],
                 "recorded_states": totals["recorded"]["distinct_states"],
                 "changed_regions_seen": int(exact["changed_regions_seen_by_recorded_rows"].sum())}
    assert totals["regions_changed"] == exact["regions_changed"].sum()  # the totals are the per-action sums
    assert totals["recorded"]["changed_regions_seen"] == expected["changed_regions_seen"]
    gates = _table(out, "release_review_gates")
    failed = gates[(gates["edit"] == "rule") & (gates["passed"].astype(str) == "False")]
    assert facts["rule_gate_failed"] is (len(failed) > 0)
    for criterion, value in zip(failed["criterion"], failed["value"], strict=True):
        said = re.search(re.escape(f"`{criterion}` measured ") + r"(\d+(?:\.\d+)?)", facts["failed_criteria"])
        assert float(said.group(1)) == pytest.approx(float(value), abs=0.006)
    assert facts["strict_passes"] is bool(gates.loc[gates["edit"] == "prompt", "passed"].astype(str).eq("True").all())
    cover = json.loads((out / "tables" / "release_review_coverage.json").read_text(encoding="utf-8"))
    expected |= {"rules_covered": len(cover["covered_rules"]), "rules": cover["rules"],
                 "rule_coverage": len(cover["covered_rules"]) / cover["rules"],
                 "regions_exercised": cover["regions_exercised"], "regions_total": cover["regions_total"]}
    assert facts["uncovered"] == ", ".join(cover["uncovered_rules"])
    cost = _table(out, "release_review_prompt_live_cost").iloc[0]
    expected |= {"prompt_live_rows": int(cost["rows"]), "prompt_live_calls": int(cost["calls"]),
                 "prompt_live_tokens": int(cost["input_tokens"]) + int(cost["output_tokens"])}
    impact = _table(out, "release_review_impact").set_index("edit")
    for edit in ("rule", "registry"):
        expected |= {f"{edit}_outside_slice": int(impact.loc[edit, "outside paper slice"]),
                     f"{edit}_affected": int(impact.loc[edit, "exact affected rows"])}
        assert facts[f"{edit}_slice"] == impact.loc[edit, "paper slice"]
    ledgers = _table(out, "release_review_ledgers")
    expected["controller_rows"] = int(ledgers.loc[ledgers["controller"].astype(str) == "True", "rows"].sum())
    _facts(facts, expected)
    # the forbidden-dispatch contrast and the gate calibration of the same notebook, against their own tables
    contrast = _conclusion(out, "forbidden_contrast_conclusion", "contrast_view")["values"]
    if contrast["found"]:
        counts = _table(out, "forbidden_contrast").set_index("measure")
        metrics = _table(out, "forbidden_contrast_metrics").iloc[0]
        gates = _table(out, "forbidden_contrast_gates")
        expected = {f"{side}_{key}": _count(counts.loc[measure].iloc[i]) for i, side in enumerate(("base", "candidate"))
                    for key, measure in (("exact", "exact"), ("false_dispatch", "gold-based FD (paper)"),
                                         ("forbidden_dispatch", "forbidden dispatch (kit)"))}
        expected |= {k: int(metrics[k]) for k in ("changed", "new_false_dispatch", "new_forbidden_dispatch")}
        expected["path_exact_drop"] = float(metrics["path_exact_drop"])
        _facts(contrast, expected)
        verdicts = dict(zip(gates["gate"], _flag(gates, "passed"), strict=True))
        assert verdicts == {contrast["old_gate"]: contrast["old_gate_passed"],
                            contrast["default_gate"]: contrast["default_gate_passed"]}
        assert contrast["fd_same"] is (expected["base_false_dispatch"] == expected["candidate_false_dispatch"])
    calibration = _table(out, "gate_calibration")
    whole = calibration[calibration["criterion"] == "whole gate"]
    power = next(c for c in calibration.columns if c.startswith("power ("))
    values = _conclusion(out, "gate_calibration_conclusion", "calibration")["values"]
    default = []  # the default gate's false alarms where its whole interval is above the level
    for _, r in whole.iterrows():  # each gate's A/A false alarm and power exactly as the table prints them
        key = f"{r['re-run model']}_{r['gate']}".replace("-", "_")
        assert (values[f"{key}_false_alarm"], values[f"{key}_power"]) == (r["A/A false alarm"], r[power]), key
        rate, low, _ = (float(x) / 100 for x in re.findall(r"\d+(?:\.\d+)?", r["A/A false alarm"])[:3])
        assert values[f"{key}_noise"] is (rate > 0.5), key
        assert values[f"{key}_above"] is (low > ALPHA) or abs(low - ALPHA) < 0.001, key  # the table rounds to 0.1%
        if r["gate"] == "default" and values[f"{key}_above"]:
            default.append(rate)
    confirm = ledgers["task"].str.startswith("confirm/").any()  # the calibration's rows: RouteBR (CONFIRM if any)
    chosen = ledgers[(ledgers["system"] == "routebr") & (~confirm | ledgers["task"].str.startswith("confirm/"))]
    parameters = {**_parameters_defaults("10_release_review"), **_parameters("10_release_review", variant)}
    expected = {"sims": parameters["calibration_sims"], "effect_pp": parameters["calibration_effect_pp"],
                "rows": int(chosen["rows"].sum()), "alpha": ALPHA,
                "default_false_alarm_min": pytest.approx(min(default, default=0.0), abs=0.0005 + 1e-9),
                "default_false_alarm_max": pytest.approx(max(default, default=0.0), abs=0.0005 + 1e-9)}
    assert values["default_noisy"] is bool(default)
    _facts(values, expected)
