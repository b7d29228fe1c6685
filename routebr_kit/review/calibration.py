"""How much to trust a release gate: each criterion's false-alarm rate under no change (A/A), its power against a
declared regression, and the number of cases that power needs.

A gate (:mod:`routebr_kit.review.gate`) compares a candidate's ledger with a base's, row by row.  When the candidate
is a **re-run** (every proposal drawn again), two runs of the *same* system differ by chance, and a threshold such as
``path_exact_drop <= 1.0pp`` over 200 rows can fail without any change.  This module estimates how often, by Monte
Carlo over simulated pairs (base re-run, candidate re-run) of the paired rows of a ledger set.

**The re-run model** (:class:`~routebr_kit.review.rerun.ReRunModel`: ``stratum``, ``repeats`` or ``simulated``)
gives each paired row a pool of outcomes its re-run draws from (:mod:`routebr_kit.review.rerun`).

**No change (A/A)**: base and candidate are two independent draws of every row.  **A declared effect of δ pp**: the
candidate loses each right answer with probability ``q = δ / (100 · p̄)`` (``p̄`` the design's expected path-exact
rate), so its expected path-exact rate drops by exactly δ; a lost answer becomes a wrong path on the same side of
the dispatch boundary (a misroute, not a new false dispatch or block).

**Sample size**: for ``n`` rows the clusters (a FLIP pair, or one row) are resampled with replacement,
``round(n / mean cluster size)`` per simulation; the recommended ``n`` is the smallest point of one fixed grid
(:data:`GRID`, ``50 · 2^(i/8)`` up to :data:`MAX_N`: the doubling points, then the bracket below the first doubling
point that qualifies) at which power reaches 80% *and* the A/A rate is at most 5% (a count threshold such as
``new_false_dispatch <= 0`` alarms more often as ``n`` grows, and may never qualify).  The search is **stable**: every
grid point reads the same ``search_sims`` simulations (common random numbers: one draw of :data:`MAX_N`'s clusters,
a size reads its prefix, and a larger effect loses a superset of answers), so for a seed the power cannot fall as
the effect grows and the recommended ``n`` cannot fall as the effect shrinks (tested for every seed).  It is
reported **with its Monte-Carlo range**: the same rule read at either end of the Wilson intervals of power and A/A.

Every rate is a count of simulations with its Wilson 95% interval.  The metrics are the diff's
(:meth:`routebr_kit.review.diff.DiffReport.metrics`), recomputed on outcome arrays (:func:`outcome_metrics`, tested
equal to the diff on real ledgers); criteria on trace-level changes, live re-runs or the release itself
(:data:`UNCALIBRATED`) are reported as not calibrated.  Deterministic for a seed: every draw comes from
``numpy.random.default_rng(SeedSequence([seed, purpose, n]))``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from ..core.errors import DataError, ErrorCode
from ..evaluation.paired import drop_lcb
from ..evaluation.stats import wilson
from ..store.cases import Split
from .diff import check_comparable
from .gate import OPERATORS, Criterion, Gate
from .ledgers import LedgerSet
from .rerun import (
    SPLITS,
    Design,
    ReRunModel,
    build_design,
    merge_repeats,
    parse_models,
    select_tasks,
)

#: Criteria that are not a function of re-run outcomes (their A/A false-alarm rate is not estimated).  The forbidden-
#: dispatch counts depend on *which* action and object a re-drawn row dispatches and on its state, which the re-run
#: models (correctness, FD and FB per row) do not draw.
UNCALIBRATED = frozenset({"changed", "other_path_change", "trace_only", "needs_live_rerun", "widening",
                          "new_forbidden_dispatch", "forbidden_dispatch", "forbidden_dispatch_increase"})
#: The power the recommended sample size must reach, and the A/A false-alarm rate it may not exceed there.
TARGET_POWER = 0.80
ALPHA = 0.05
#: The largest sample size the search tries.
MAX_N = 12_800
_PURPOSE = {"aa": 1, "effect": 2, "search": 3}
_CHUNK_ELEMENTS = 2_000_000


def parse_effect(value: str) -> float:
    """``"2pp"`` (or ``"2"``) → 2.0 percentage points, in ``[0, 100)``."""
    text = str(value).strip()
    number = text[:-2].strip() if text.endswith("pp") else text
    try:
        effect = float(number)
    except ValueError:
        raise DataError(ErrorCode.INVALID_VALUE, "an effect in percentage points, e.g. 2pp", got=value,
                        field="effect") from None
    if not 0.0 <= effect < 100.0:
        raise DataError(ErrorCode.INVALID_VALUE, "an effect in [0, 100) percentage points", got=value, field="effect")
    return effect


@dataclass(frozen=True)
class Draws:
    """One batch of simulated (base, candidate) outcomes: arrays of shape ``(sims, rows)``; ``valid`` masks the
    padding of resampled designs; ``pair_ok_*`` (sims, clusters) flags a scored FLIP pair both of whose members
    are exact."""

    valid: np.ndarray
    split: np.ndarray
    gold_bounded: np.ndarray
    base: Mapping[str, np.ndarray]
    cand: Mapping[str, np.ndarray]
    pair_split: np.ndarray  # (sims, clusters) split of the scored pair (-1: not a scored pair)
    pair_base: np.ndarray
    pair_cand: np.ndarray


def outcome_metrics(draws: Draws, split: str | None, metric: str) -> np.ndarray:
    """One gate metric per simulation, as :meth:`DiffReport.metrics` defines it (``split=None``: every row)."""
    mask = draws.valid if split is None else draws.valid & (draws.split == SPLITS.index(split))
    b, c = draws.base, draws.cand
    n = mask.sum(axis=1)

    def total(x: np.ndarray) -> np.ndarray:
        return (x & mask).sum(axis=1)

    def drop(name: str) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, 100.0 * (total(b[name]) - total(c[name])) / np.maximum(n, 1), 0.0)

    drops = {"path_exact_drop": "exact", "strict_exact_drop": "strict", "object_accuracy_drop": "object"}
    if metric in drops:
        return drop(drops[metric])
    gb, bd, cd = draws.gold_bounded, b["dispatched"], c["dispatched"]
    counts = {"new_false_dispatch": lambda: total(gb & cd & ~bd), "new_false_block": lambda: total(~gb & ~cd & bd),
              "fixed": lambda: total(~b["exact"] & c["exact"]), "new_errors": lambda: total(b["exact"] & ~c["exact"]),
              "false_dispatch_increase": lambda: total(gb & cd) - total(gb & bd),
              "false_block_increase": lambda: total(~gb & ~cd) - total(~gb & ~bd)}
    if metric in counts:
        return counts[metric]().astype(float)
    if metric == "flip_pairs_drop":
        if split not in (None, Split.FLIP.value):
            return np.zeros(mask.shape[0])
        scored = draws.pair_split >= 0
        return ((draws.pair_base & scored).sum(axis=1) - (draws.pair_cand & scored).sum(axis=1)).astype(float)
    if metric in ("path_exact_regression_p", "path_exact_drop_lcb"):
        regressions = total(b["exact"] & ~c["exact"])
        fixes = total(~b["exact"] & c["exact"])
        if metric == "path_exact_regression_p":
            from scipy.stats import binom

            discordant = regressions + fixes
            p = binom.sf(regressions - 1, np.maximum(discordant, 1), 0.5)
            return np.where(discordant > 0, np.minimum(p, 1.0), 1.0)
        triples = np.stack([regressions, fixes, n], axis=1)
        unique, inverse = np.unique(triples, axis=0, return_inverse=True)
        values = np.array([drop_lcb(int(r), int(f), int(k)) for r, f, k in unique])
        return values[inverse.reshape(-1)]
    raise DataError(ErrorCode.UNKNOWN_ENUM, "a gate metric that is a function of re-run outcomes", got=metric,
                    field="gate")


def _draw(design: Design, rng: np.random.Generator, sims: int, clusters: np.ndarray | None,
          effect_q: float, candidate: Design | None = None) -> Draws:
    """``clusters``: (sims, k) chosen cluster indices (``None``: every cluster once, the fixed design);
    ``candidate``: the design the candidate side draws from (default ``design``; same rows and clusters)."""
    every = design.clusters.shape[0]
    chosen = np.broadcast_to(np.arange(every), (sims, every)) if clusters is None else clusters
    rows = design.clusters[chosen].reshape(sims, -1)  # (sims, 2k)
    valid = rows >= 0
    safe = np.where(valid, rows, 0)

    def side(d: Design, planted: float) -> dict[str, np.ndarray]:
        size, start = d.size[safe], d.start[safe]
        index = start + np.minimum((rng.random(safe.shape) * size).astype(np.int64), size - 1)
        out = {"exact": d.pool_exact[index], "strict": d.pool_strict[index],
               "object": d.pool_object[index], "dispatched": d.pool_dispatched[index]}
        return _lose(out, rng.random(safe.shape) < planted) if planted > 0 else out

    base, cand = side(design, 0.0), side(candidate if candidate is not None else design, effect_q)
    pair = design.is_pair[chosen]
    k = chosen.shape[1]
    split = design.split[safe]
    pair_split = np.where(pair, split.reshape(sims, k, 2)[:, :, 0], -1)
    return Draws(valid, split, design.gold_bounded[safe], base, cand, pair_split, _pairs_ok(base, valid, pair_split),
                 _pairs_ok(cand, valid, pair_split))


def _lose(side: Mapping[str, np.ndarray], lost: np.ndarray) -> dict[str, np.ndarray]:
    """The planted effect on one side's draws: every right answer flagged in ``lost`` becomes a misroute (wrong
    path, so not strict either; the dispatch boundary and the object are kept)."""
    gone = side["exact"] & lost
    return {**side, "exact": side["exact"] & ~gone, "strict": side["strict"] & ~gone}


def _pairs_ok(side: Mapping[str, np.ndarray], valid: np.ndarray, pair_split: np.ndarray) -> np.ndarray:
    """(sims, clusters): a scored FLIP pair both of whose members are exact on this side."""
    sims, k = pair_split.shape
    return (side["exact"] & valid).reshape(sims, k, 2).all(axis=2) & (pair_split >= 0)


def _prefix(draws: Draws, k: int) -> Draws:
    """The first ``k`` clusters of every simulation of a resampled batch (a design of ``k`` clusters: a prefix of
    i.i.d. cluster draws is itself a sample of ``k`` i.i.d. clusters)."""
    def cut(value: Any, width: int) -> Any:
        return {m: v[:, :width] for m, v in value.items()} if isinstance(value, Mapping) else value[:, :width]

    return Draws(*(cut(getattr(draws, f.name), k if f.name.startswith("pair_") else 2 * k) for f in fields(draws)))


def observed_draws(base: LedgerSet, candidate: LedgerSet) -> Draws:
    """The one "simulation" that is the observed comparison of two comparable ledger sets (for testing
    :func:`outcome_metrics` against :meth:`DiffReport.metrics`)."""
    check_comparable(base, candidate)
    b, c = build_design(base, None), build_design(candidate, None)
    return _draw(b, np.random.default_rng(0), 1, None, 0.0, candidate=c)


@dataclass(frozen=True, slots=True)
class Rate:
    """``hits`` simulations out of ``sims``, with the Wilson 95% interval as its Monte-Carlo error."""

    hits: int
    sims: int

    @property
    def rate(self) -> float:
        return self.hits / self.sims if self.sims else float("nan")

    @property
    def interval(self) -> tuple[float, float]:
        return wilson(self.hits, self.sims).as_tuple()

    def text(self) -> str:
        low, high = self.interval
        return f"{100 * self.rate:.1f}% [{100 * low:.1f}, {100 * high:.1f}]"

    def as_dict(self) -> dict[str, Any]:
        low, high = self.interval
        return {"hits": self.hits, "sims": self.sims, "rate": self.rate, "wilson_low": low, "wilson_high": high}


def _effect_q(design: Design, effect_pp: float) -> float:
    """The probability that the candidate loses a right answer, so that expected path exact drops by ``effect_pp``."""
    if effect_pp <= 0:
        return 0.0
    p = design.expected_exact
    if not p > 0 or effect_pp / 100.0 > p:
        raise DataError(ErrorCode.INVALID_VALUE, f"an effect no larger than the expected exact rate "
                        f"({100 * p:.1f}%)", got=f"{effect_pp}pp", field="effect")
    return effect_pp / (100.0 * p)


def _clusters_for(design: Design, n: int) -> int:
    """How many clusters make a design of about ``n`` rows."""
    mean_cluster = float((design.clusters >= 0).sum()) / design.clusters.shape[0]
    return max(1, round(n / mean_cluster))


def _failures(draws: Draws, criteria: Sequence[Criterion]) -> dict[str | None, int]:
    """How many simulations of ``draws`` fail each criterion (by its text), and the whole gate (``None``: any)."""
    failed = {str(c): ~OPERATORS[c.op](outcome_metrics(draws, c.split, c.metric), c.threshold) for c in criteria}
    return {**{k: int(v.sum()) for k, v in failed.items()},
            None: int(np.logical_or.reduce([*failed.values(), np.zeros(draws.valid.shape[0], dtype=bool)]).sum())}


def alarm_counts(design: Design, gate: Gate, *, sims: int, seed: int, effect_pp: float = 0.0, n: int | None = None,
                 purpose: str = "aa") -> tuple[dict[str, int], int]:
    """How many of ``sims`` simulated pairs fail each calibrated criterion (by its text) and the whole gate."""
    if sims < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "at least one simulation", got=sims, field="sims")
    rng = np.random.default_rng(np.random.SeedSequence([seed, _PURPOSE[purpose], n or 0]))
    criteria = [c for c in gate.criteria if c.metric not in UNCALIBRATED]
    k = design.clusters.shape[0] if n is None else _clusters_for(design, n)
    q = _effect_q(design, effect_pp)
    total: Counter[str | None] = Counter(dict.fromkeys([*map(str, criteria), None], 0))
    for m in _chunks(sims, k):
        chosen = None if n is None else rng.integers(0, design.clusters.shape[0], size=(m, k))
        total.update(_failures(_draw(design, rng, m, chosen, q), criteria))
    whole = total.pop(None)
    return dict(total), whole


def _chunks(sims: int, k: int) -> list[int]:
    """``sims`` simulations of ``k`` clusters each, in batches of about :data:`_CHUNK_ELEMENTS` drawn rows."""
    per_chunk = max(1, _CHUNK_ELEMENTS // (2 * k))
    return [min(per_chunk, sims - done) for done in range(0, sims, per_chunk)]


#: The sample sizes the search evaluates: ``50 · 2^(i/8)`` rows (steps of about 9%) up to :data:`MAX_N` — one grid
#: for every criterion, effect and seed, so the recommendation is a minimum over the same set of points.
GRID = tuple(sorted({round(50 * 2 ** (i / 8)) for i in range(8 * 8 + 1)}))


@dataclass(frozen=True, slots=True)
class SearchPoint:
    """Power (against the declared effect) and A/A alarms at one grid size, per criterion (by its text) and for
    the whole gate (``None``), each out of ``sims`` simulations that share their random numbers."""

    n: int
    sims: int
    power: Mapping[str | None, int]
    aa: Mapping[str | None, int]


def search_points(design: Design, gate: Gate, *, sims: int, seed: int, effect_pp: float,
                  grid: Sequence[int] = GRID) -> tuple[SearchPoint, ...]:
    """Every point of ``grid`` from **common random numbers**: each simulation draws :data:`MAX_N`'s clusters, both
    sides' outcomes and one uniform per row once; a size ``n`` reads the first ``n`` rows' worth of clusters (a
    prefix of i.i.d. cluster draws is a sample of that size), A/A compares the two sides as drawn and the effect
    loses a candidate's right answer where its uniform is below ``q`` — so the same simulations serve every ``n``,
    A/A and power, and a larger effect loses a superset of the answers a smaller one loses (same seed)."""
    if sims < 1:
        raise DataError(ErrorCode.INVALID_VALUE, "at least one simulation", got=sims, field="search_sims")
    criteria = [c for c in gate.criteria if c.metric not in UNCALIBRATED]
    q = _effect_q(design, effect_pp)
    ks = {n: _clusters_for(design, n) for n in grid}
    k_max = max(ks.values())
    rng = np.random.default_rng(np.random.SeedSequence([seed, _PURPOSE["search"]]))
    names = [*map(str, criteria), None]
    aa = {n: Counter(dict.fromkeys(names, 0)) for n in grid}
    power = {n: Counter(dict.fromkeys(names, 0)) for n in grid}
    for m in _chunks(sims, k_max):
        full = _draw(design, rng, m, rng.integers(0, design.clusters.shape[0], size=(m, k_max)), 0.0)
        uniforms = rng.random(full.valid.shape)
        for n, k in ks.items():
            drawn = _prefix(full, k)
            cand = _lose(drawn.cand, uniforms[:, :2 * k] < q)
            aa[n].update(_failures(drawn, criteria))
            power[n].update(_failures(replace(drawn, cand=cand, pair_cand=_pairs_ok(cand, drawn.valid,
                                                                                    drawn.pair_split)), criteria))
    return tuple(SearchPoint(n, sims, dict(power[n]), dict(aa[n])) for n in grid)


def _qualifies(point: SearchPoint, name: str | None, bound: str) -> bool:
    """Power >= :data:`TARGET_POWER` and A/A <= :data:`ALPHA` at ``point``: by the point estimates (``"rate"``), or
    by the Monte-Carlo interval read in the criterion's favour (``"optimistic"``: upper power bound, lower A/A
    bound) or against it (``"conservative"``: lower power bound, upper A/A bound)."""
    hits, alarms = point.power[name], point.aa[name]
    if bound == "rate":
        return hits >= TARGET_POWER * point.sims and alarms <= ALPHA * point.sims
    end = 1 if bound == "optimistic" else 0
    return wilson(hits, point.sims).as_tuple()[end] >= TARGET_POWER and \
        wilson(alarms, point.sims).as_tuple()[1 - end] <= ALPHA


BOUNDS = ("rate", "optimistic", "conservative")


def recommend_n(points: Sequence[SearchPoint], name: str | None) -> tuple[int | None, int | None, int | None]:
    """``(n, optimistic n, conservative n)``: the smallest size of ``points`` that qualifies (:func:`_qualifies`) by
    the point estimates and by either end of their Monte-Carlo intervals (``None``: none does)."""
    return tuple(next((p.n for p in points if _qualifies(p, name, bound)), None)  # type: ignore[return-value]
                 for bound in BOUNDS)


def _search(design: Design, gate: Gate, *, sims: int, seed: int, effect_pp: float, names: Sequence[str | None]
            ) -> tuple[dict[str | None, tuple[int | None, int | None, int | None]], tuple[SearchPoint, ...]]:
    """:func:`recommend_n` on :data:`GRID`, evaluated in two passes of the same simulations: the doubling points
    (every 8th), then, for each criterion and bound, only the grid points between its first qualifying doubling
    point and the one before.  Each answer is the smallest qualifying point of the doubling points and its own
    bracket; as the effect grows the doubling answer cannot rise (nested losses), so neither can the refined one."""
    coarse = search_points(design, gate, sims=sims, seed=seed, effect_pp=effect_pp, grid=GRID[::8])
    first = {name: recommend_n(coarse, name) for name in names}

    def bracket(n: int | None) -> list[int]:
        return [] if n is None or n == GRID[0] else [g for g in GRID if n // 2 < g < n]

    wanted = sorted({g for ns in first.values() for n in ns for g in bracket(n)} - set(GRID[::8]))
    fine = {p.n: p for p in (search_points(design, gate, sims=sims, seed=seed, effect_pp=effect_pp, grid=wanted)
                             if wanted else ())}
    out = {name: tuple(next((g for g in bracket(n) if _qualifies(fine[g], name, bound)), n)
                       for bound, n in zip(BOUNDS, first[name])) for name in names}
    return out, tuple(sorted((*coarse, *fine.values()), key=lambda p: p.n))  # type: ignore[return-value]


@dataclass(frozen=True)
class CriterionCalibration:
    criterion: str
    false_alarm: Rate | None  # None: not a function of re-run outcomes
    power: Rate | None
    recommended_n: int | None  # None: not reached by MAX_N (or no effect declared)
    #: the smallest qualifying n with the search's Monte-Carlo intervals read for and against the criterion
    n_range: tuple[int | None, int | None] = (None, None)

    def as_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion,
                "false_alarm": self.false_alarm.as_dict() if self.false_alarm else None,
                "power": self.power.as_dict() if self.power else None, "recommended_n": self.recommended_n,
                "recommended_n_range": list(self.n_range)}

    def n_text(self, searched: bool) -> str:
        """``640 [530, 760]`` (the n, then the optimistic and conservative ends), ``> 12800`` or ``not searched``."""
        if not searched:
            return "not searched"
        ends = ", ".join(f"> {MAX_N}" if n is None else str(n) for n in self.n_range)
        if self.recommended_n is None:
            return f"> {MAX_N}" if self.n_range[0] is None else f"> {MAX_N} [{ends}]"
        return f"{self.recommended_n} [{ends}]"


@dataclass(frozen=True)
class Calibration:
    """The calibration of one gate on one ledger set under one re-run model."""

    gate: str
    model: ReRunModel
    rows: int
    expected_exact: float
    sims: int
    seed: int
    effect_pp: float
    criteria: tuple[CriterionCalibration, ...]
    gate_false_alarm: Rate
    gate_power: Rate | None
    gate_recommended_n: int | None
    search_sims: int
    power_curve: tuple[tuple[int, float, float], ...]  # (n, whole-gate power, whole-gate A/A) on the search grid
    models: Mapping[str, str]
    gate_n_range: tuple[int | None, int | None] = (None, None)

    def by_criterion(self) -> dict[str, CriterionCalibration]:
        return {c.criterion: c for c in self.criteria}

    def table(self) -> list[dict[str, Any]]:
        whole = CriterionCalibration("whole gate", self.gate_false_alarm, self.gate_power, self.gate_recommended_n,
                                     self.gate_n_range)
        return [{"criterion": c.criterion,
                 "A/A false alarm": c.false_alarm.text() if c.false_alarm else "not calibrated",
                 f"power ({self.effect_pp:g}pp drop)": c.power.text() if c.power else "–",
                 f"n for {100 * TARGET_POWER:.0f}% power, A/A <= {100 * ALPHA:.0f}% [MC range]": (
                     "–" if self.effect_pp <= 0 or not c.false_alarm else c.n_text(bool(self.search_sims)))}
                for c in (*self.criteria, whole)]

    def as_dict(self) -> dict[str, Any]:
        return {"gate": self.gate, "model": self.model.value, "rows": self.rows, "expected_exact": self.expected_exact,
                "sims": self.sims, "seed": self.seed, "effect_pp": self.effect_pp,
                "criteria": [c.as_dict() for c in self.criteria], "gate_false_alarm": self.gate_false_alarm.as_dict(),
                "gate_power": self.gate_power.as_dict() if self.gate_power else None,
                "gate_recommended_n": self.gate_recommended_n, "gate_recommended_n_range": list(self.gate_n_range),
                "search_sims": self.search_sims, "search_grid": list(GRID),
                "power_curve": [list(p) for p in self.power_curve], "target_power": TARGET_POWER, "alpha": ALPHA,
                "max_n": MAX_N, "models": dict(self.models)}


def calibrate(ledgers: LedgerSet, gate: Gate, *, model: ReRunModel = ReRunModel.STRATUM, sims: int = 2000,
              seed: int = 0, effect_pp: float = 0.0, reruns: int = 20, search_sims: int | None = None,
              design: Design | None = None, recommend: bool = True) -> Calibration:
    """A/A false-alarm rate (``sims`` simulations), power against ``effect_pp`` and the recommended ``n``
    (``search_sims`` simulations per grid point, default ``min(sims, 500)``) of every criterion of ``gate``."""
    design = design if design is not None else build_design(ledgers, model, reruns=reruns, seed=seed)
    aa, aa_gate = alarm_counts(design, gate, sims=sims, seed=seed)
    names = [str(c) for c in gate.criteria if c.metric not in UNCALIBRATED]
    power, power_gate = {}, None
    found: dict[str | None, tuple[int | None, int | None, int | None]] = {}
    curve: list[tuple[int, float, float]] = []
    search = 0 if not recommend else search_sims if search_sims is not None else min(sims, 500)
    if effect_pp > 0:
        power, power_gate = alarm_counts(design, gate, sims=sims, seed=seed, effect_pp=effect_pp, purpose="effect")
        if recommend:
            found, points = _search(design, gate, sims=search, seed=seed, effect_pp=effect_pp, names=[*names, None])
            curve = [(p.n, p.power[None] / search, p.aa[None] / search) for p in points]
    whole_n = found.pop(None, (None, None, None))
    results = tuple(CriterionCalibration(str(c), None, None, None) if c.metric in UNCALIBRATED else
                    CriterionCalibration(str(c), Rate(aa[str(c)], sims),
                                         Rate(power[str(c)], sims) if effect_pp > 0 else None,
                                         found.get(str(c), (None,) * 3)[0], found.get(str(c), (None,) * 3)[1:])
                    for c in gate.criteria)
    return Calibration(str(gate), model, design.rows, design.expected_exact, sims, seed, effect_pp, results,
                       Rate(aa_gate, sims), Rate(power_gate, sims) if power_gate is not None else None, whole_n[0],
                       search, tuple(curve), dict(design.models), whole_n[1:])


def criterion_note(calibration: Calibration, criterion: Criterion) -> str:
    """`` · A/A false alarm 3.1% [2.4, 3.9] (stratum, 2000 sims)`` for a gate line (empty when not calibrated)."""
    found = calibration.by_criterion().get(str(criterion))
    if found is None or found.false_alarm is None:
        return " · A/A false alarm: not calibrated (not a function of re-run outcomes)"
    return f" · A/A false alarm {found.false_alarm.text()} ({calibration.model.value} re-run model, " \
           f"{calibration.sims} sims)"


# --- every gate under both re-run models (notebook 10) -------------------------------------------------------

def routebr_runs(ledgers: LedgerSet) -> LedgerSet:
    """The RouteBR tasks of ``ledgers`` (only the CONFIRM-sized ones when there are any, as in the artifact)."""
    confirm_only = any(k.startswith("confirm/") for k in ledgers.tasks)
    chosen = {k: t for k, t in ledgers.tasks.items()
              if t.system.value == "routebr" and (not confirm_only or k.startswith("confirm/"))}
    return LedgerSet(ledgers.root, ledgers.kind, chosen, ledgers.assets, ledgers.manifest)


def calibrate_gates(ledgers: LedgerSet, gates: Mapping[str, str], *, sims: int, seed: int, effect_pp: float
                    ) -> tuple[dict[tuple[str, str], Any], Any]:
    """``({(re-run model, gate name): Calibration}, table)`` over both re-run models (stratum, simulated) and every
    named gate spec, on :func:`routebr_runs` of ``ledgers`` (one design per re-run model, shared by the gates); the
    table is a DataFrame, one row per model, gate and criterion."""
    import pandas as pd

    runs = routebr_runs(ledgers)
    calibrations, rows = {}, []
    for model in (ReRunModel.STRATUM, ReRunModel.SIMULATED):
        design = build_design(runs, model, seed=seed)
        for name, spec in gates.items():
            c = calibrate(runs, Gate.parse(spec), model=model, sims=sims, seed=seed, effect_pp=effect_pp,
                          design=design, recommend=False)
            calibrations[(model.value, name)] = c
            rows += [{"re-run model": model.value, "gate": name,
                      **{k: v for k, v in r.items() if not k.startswith("n for")}} for r in c.table()]
    return calibrations, pd.DataFrame(rows)


def calibration_facts(calibrations: Mapping[tuple[str, str], Any], gates: Mapping[str, str]) -> dict[str, Any]:
    """The facts of notebook 10's gate-calibration conclusion, from :func:`calibrate_gates`: the shared ``sims``,
    ``rows``, ``effect_pp`` and ``alpha``; per re-run model and gate (key ``<model>_<gate>``, e.g.
    ``stratum_re_run``) the whole gate's A/A false alarm and power as the table prints them, and where the false
    alarm's Wilson interval lies against ``alpha`` (``_noise``: above one half; ``_above``/``_below``: the whole
    interval above / at or below ``alpha``); each gate's spec (``gate_<name>``); the default gate's false-alarm range
    over the models where it alarms above ``alpha`` (``default_noisy``); and the criteria no simulation calibrates."""
    import re

    first = next(iter(calibrations.values()))
    facts: dict[str, Any] = {"sims": first.sims, "rows": first.rows, "effect_pp": first.effect_pp, "alpha": ALPHA}
    facts |= {"gate_" + re.sub(r"[^a-z0-9]+", "_", name): spec for name, spec in gates.items()}
    for (model, name), c in calibrations.items():
        key = re.sub(r"[^a-z0-9]+", "_", f"{model}_{name}")
        low, high = c.gate_false_alarm.interval
        facts |= {f"{key}_false_alarm": c.gate_false_alarm.text(),
                  f"{key}_power": c.gate_power.text() if c.gate_power is not None else "–",
                  f"{key}_noise": bool(c.gate_false_alarm.rate > 0.5), f"{key}_above": bool(low > ALPHA),
                  f"{key}_below": bool(high <= ALPHA)}
    noisy = [c.gate_false_alarm.rate for (_, name), c in calibrations.items()
             if name == "default" and c.gate_false_alarm.interval[0] > ALPHA]
    facts |= {"default_noisy": bool(noisy), "default_false_alarm_min": float(min(noisy, default=0.0)),
              "default_false_alarm_max": float(max(noisy, default=0.0))}
    uncalibrated = sorted({c.criterion for cal in calibrations.values() for c in cal.criteria if c.false_alarm is None})
    facts |= {"has_uncalibrated": bool(uncalibrated), "uncalibrated": ", ".join(f"`{u}`" for u in uncalibrated)}
    return facts


__all__ = ["ALPHA", "GRID", "MAX_N", "SPLITS", "TARGET_POWER", "UNCALIBRATED", "Calibration", "CriterionCalibration",
           "Design", "Draws", "Rate", "ReRunModel", "SearchPoint", "alarm_counts", "build_design", "calibrate",
           "calibrate_gates", "calibration_facts", "criterion_note", "merge_repeats", "observed_draws",
           "outcome_metrics", "parse_effect", "parse_models", "recommend_n", "routebr_runs", "search_points",
           "select_tasks"]
