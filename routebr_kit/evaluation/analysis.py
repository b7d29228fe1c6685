"""Case-level views behind the research-question notebooks: confusion matrices, error lists, FLIP pair
anatomy and per-group scores.  Everything reads ledgers (prediction rows) and gold cases only."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import pandas as pd

from ..store.cases import Case
from ..store.ledger import PredictionRow
from .metrics import Cases, index_cases, score
from .tables import fmt_count, fmt_pct

Rows = Sequence[PredictionRow]


def confusion(rows: Rows, cases: Cases) -> pd.DataFrame:
    """Counts of (gold final path, predicted final path); rows gold, columns predicted, labels sorted."""
    index = index_cases(cases)
    frame = pd.DataFrame({"gold": [index[r.case_id].gold.final_path for r in rows],
                          "predicted": [r.pred_final_path for r in rows]})
    labels = sorted(set(frame["gold"]) | set(frame["predicted"]))
    table = pd.crosstab(frame["gold"], frame["predicted"]).reindex(index=labels, columns=labels, fill_value=0)
    table.index.name, table.columns.name = "gold path", "predicted path"
    return table


def errors(rows: Rows, cases: Cases) -> pd.DataFrame:
    """Every row whose final path differs from gold, with what the system did and what gold expected."""
    index = index_cases(cases)
    records = []
    for r in rows:
        gold = index[r.case_id].gold
        if r.pred_final_path != gold.final_path:
            records.append({"case_id": r.case_id, "gold_action": gold.action, "pred_action": r.pred_action,
                            "gold_object": gold.object_id, "pred_object": r.pred_object_id,
                            "gold_path": gold.final_path, "pred_path": r.pred_final_path,
                            "gold_rules": ",".join(gold.rule_ids)})
    return pd.DataFrame(records, columns=["case_id", "gold_action", "pred_action", "gold_object", "pred_object",
                                          "gold_path", "pred_path", "gold_rules"])


def _flipped_predicates(a: Case, b: Case) -> list[str]:
    """The runtime-state fields on which the two members of a FLIP pair differ."""
    left, right = a.request.state.values, b.request.state.values
    return sorted(k for k in set(left) | set(right) if left.get(k) != right.get(k))


def pair_anatomy(systems: Mapping[str, Rows], cases: Cases) -> pd.DataFrame:
    """One row per FLIP case: its pair, the flipped predicate, gold path, and each system's path (✓/✗)."""
    index = index_cases(cases)
    predicted = {label: {r.case_id: r.pred_final_path for r in rows} for label, rows in systems.items()}
    members: dict[str, list[Case]] = {}
    for case_id in next(iter(predicted.values())):
        case = index[case_id]
        members.setdefault(case.pair_id, []).append(case)
    records = []
    for pair_id in sorted(members):
        pair = sorted(members[pair_id], key=lambda c: c.case_id)
        flipped = ", ".join(_flipped_predicates(*pair)) if len(pair) == 2 else "?"
        for case in pair:
            record = {"pair_id": pair_id, "case_id": case.case_id, "flipped": flipped,
                      "state": f"{flipped}={_value(case, flipped)}", "gold_path": case.gold.final_path}
            for label, paths in predicted.items():
                path = paths.get(case.case_id, "")
                record[label] = path + (" ✓" if path == case.gold.final_path else " ✗")
            records.append(record)
    return pd.DataFrame(records)


def _value(case: Case, field: str) -> str:
    value = case.request.state.get(field)
    return str(value).lower() if isinstance(value, bool) else str(value)


def missed_pairs(anatomy: pd.DataFrame, system: str) -> pd.DataFrame:
    """The pairs of ``anatomy`` that ``system`` did not get fully right (both members shown)."""
    wrong = anatomy.loc[anatomy[system].str.endswith("✗"), "pair_id"].unique()
    return anatomy[anatomy["pair_id"].isin(wrong)].reset_index(drop=True)


def pairs_right(anatomy: pd.DataFrame, system: str) -> dict[str, bool]:
    """FLIP pair ID → both members of the pair on their gold path for ``system`` (a column of :func:`pair_anatomy`):
    the per-pair outcome an exact McNemar test compares between two systems on the same pairs."""
    right = anatomy[system].astype(str).str.endswith("✓")
    return {str(k): bool(v) for k, v in right.groupby(anatomy["pair_id"]).all().items()}


def scores_by(rows: Rows, cases: Cases, group: Callable[[Case], str], *, label: str = "group") -> pd.DataFrame:
    """Exact path, object accuracy, FD and FB per group of cases (e.g. object-reference difficulty)."""
    index = index_cases(cases)
    groups: dict[str, list[PredictionRow]] = {}
    for r in rows:
        groups.setdefault(group(index[r.case_id]), []).append(r)
    records = []
    for name in sorted(groups):
        s = score(groups[name], index)
        records.append({label: name, "n": s.n, "Contract": fmt_pct(s.contract_exact.rate),
                        "Object accuracy": fmt_pct(s.object.rate), "FD": fmt_count(s.false_dispatch, pct=False),
                        "FB": fmt_count(s.false_block, pct=False)})
    return pd.DataFrame(records)


def summary(systems: Mapping[str, Rows], cases: Cases) -> pd.DataFrame:
    """Numeric headline metrics per system (rates in [0, 1], rounded to 3 decimals)."""
    index = index_cases(cases)
    records = []
    for label, rows in systems.items():
        s = score(rows, index)
        lo, hi = s.contract_exact.wilson
        records.append({"system": label, "n": s.n, "exact": s.contract_exact.rate, "exact_lo": lo, "exact_hi": hi,
                        "strict": s.strict_exact.rate, "action": s.action.rate, "object": s.object.rate,
                        "macro_f1": s.path_macro_f1, "fd": s.false_dispatch.rate, "fb": s.false_block.rate,
                        "action_minus_exact": s.action.rate - s.contract_exact.rate})
    return pd.DataFrame(records).round(3)
