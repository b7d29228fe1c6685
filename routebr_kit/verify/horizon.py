"""Bounded verification over sessions (issue 32): every session of up to ``K`` requests, symbolic in times and
amounts, with counterexample traces replayed through the real controller.  The assertion syntax and exactly what
the search covers are in ``docs/sessions.md``.

**Exact, not sampled.**  Times are integer variables; every temporal predicate reduces to atoms ``now - at <= c``
(or ``now - at >= c + 1``), a difference-bound system decided exactly by Bellman–Ford.  Amounts are integers
``>= 0``; a ``sum`` reduces to atoms ``Σ x >= c`` / ``Σ x <= c`` on the box ``[0, max constant + 1]`` (a larger
value satisfies no more and no fewer atoms), decided by HiGHS and re-checked in integers, with an exact
branch-and-propagate fallback.  So "holds up to K" covers every integer time and amount.  Runtime states are
enumerated (at most ten boolean fields).  A counterexample is ``confirmed`` when the real controller reproduces
its decisions and the violation.  :func:`session_diff` runs two programs on the same sessions (each history made
of its own decisions) and gives, per action, a witness of narrowing or widening.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from functools import lru_cache, partial
from itertools import combinations, product
from typing import Any

from ..core.controller import Controller
from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, UNRESOLVED, Boundary, Catalog, Entity, RouteRequest, RuntimeState
from ..core.rules import PolicyEngine
from ..core.session import EXTERNAL_KINDS, Event, Session, event_of_decision
from ..core.state import StateType
from ..core.temporal import TemporalPredicate, compare
from .properties import SessionAssertion, load_assertions, parse_assertions

OBJECT = "OBJ_1"  # the resolved object of a witness (an entity of the action's first object type)


# --------------------------------------------------------------------------------------------- the solver


@lru_cache(maxsize=1 << 16)
def _times_feasible(n: int, cons: frozenset[tuple[int, int, int]]) -> list[int] | None:
    """Integer times ``p_0..p_{n-1}`` with ``p_i - p_j <= c`` for each ``(i, j, c)``, all ``>= 0``; ``None`` if
    infeasible (Bellman–Ford from a virtual source; integral since every bound is)."""
    dist = [0] * n
    edges = [(j, i, c) for i, j, c in cons]
    for _ in range(n + 1):
        changed = False
        for j, i, c in edges:
            if dist[j] + c < dist[i]:
                dist[i] = dist[j] + c
                changed = True
        if not changed:
            low = min(dist) if dist else 0
            return [d - low for d in dist]
    return None


def _satisfies(x: Sequence[int], cons) -> bool:
    return all((sum(x[i] for i in s) >= c) if kind == "ge" else (sum(x[i] for i in s) <= c) for s, kind, c in cons)


@lru_cache(maxsize=1 << 16)
def _amounts_feasible(n: int, cons: frozenset[tuple[frozenset[int], str, int]]) -> list[int] | None:
    """Integers ``x_0..x_{n-1} >= 0`` with ``Σ_S x >= c`` (``ge``) or ``<= c`` (``le``) for each constraint, or
    ``None``.  An integer program on the box ``[0, max |c| + 1]`` (a larger value satisfies no more and no fewer
    constraints), solved by HiGHS (``scipy.optimize.milp``); a solution it returns is checked exactly in integers,
    and when the check fails (or the solver is unsure) the exact branch-and-propagate search decides."""
    if not cons:
        return [0] * n
    import numpy as np
    from scipy.optimize import Bounds, LinearConstraint, milp
    top = max([abs(c) for _, _, c in cons] + [0]) + 1
    rows = list(cons)
    matrix = np.zeros((len(rows), n))
    lower = np.full(len(rows), -np.inf)
    upper = np.full(len(rows), np.inf)
    for r, (s, kind, c) in enumerate(rows):
        matrix[r, list(s)] = 1
        if kind == "ge":
            lower[r] = c
        else:
            upper[r] = c
    result = milp(np.zeros(n), constraints=LinearConstraint(matrix, lower, upper), integrality=np.ones(n),
                  bounds=Bounds(0, top))
    if result.status == 2:  # infeasible
        return None
    if result.status == 0:
        x = [int(round(v)) for v in result.x]
        if _satisfies(x, cons):
            return x
    return _search_amounts(n, cons, top)


def _search_amounts(n: int, cons: frozenset[tuple[frozenset[int], str, int]], top: int) -> list[int] | None:
    """The exact search: bounds propagation, then branching, on the box ``[0, top]``."""
    lo, hi = [0] * n, [top] * n

    def solve(lo: list[int], hi: list[int]) -> list[int] | None:
        lo, hi = lo[:], hi[:]
        changed, rounds = True, 0
        while changed and rounds < 8:  # (propagation only prunes: a leaf is checked in full below)
            changed, rounds = False, rounds + 1
            for s, kind, c in cons:
                slo, shi = sum(lo[i] for i in s), sum(hi[i] for i in s)
                if kind == "ge":
                    if shi < c:
                        return None
                    for i in s:
                        need = c - (shi - hi[i])
                        if need > lo[i]:
                            lo[i], changed = need, True
                else:
                    if slo > c:
                        return None
                    for i in s:
                        cap = c - (slo - lo[i])
                        if cap < hi[i]:
                            hi[i], changed = cap, True
            if any(a > b for a, b in zip(lo, hi)):
                return None
        wide = [i for i in range(n) if lo[i] < hi[i]]
        if not wide:
            return lo if _satisfies(lo, cons) else None
        i = max(wide, key=lambda k: hi[k] - lo[k])
        mid = (lo[i] + hi[i]) // 2
        return solve(lo, hi[:i] + [mid] + hi[i + 1:]) or solve(lo[:i] + [mid + 1] + lo[i + 1:], hi)

    return solve(lo, hi)


@dataclass(frozen=True, slots=True)
class Sym:
    """Symbolic times (points) and amounts (variables) with their constraints."""

    points: int = 0
    tcons: frozenset = frozenset()
    vars: int = 0
    acons: frozenset = frozenset()

    def new_point(self, after: int | None) -> tuple[Sym, int]:
        p = self.points
        cons = self.tcons | ({(after, p, 0)} if after is not None else set())
        return Sym(p + 1, frozenset(cons), self.vars, self.acons), p

    def new_var(self) -> tuple[Sym, int]:
        return Sym(self.points, self.tcons, self.vars + 1, self.acons), self.vars

    def add_time(self, con: tuple[int, int, int]) -> Sym | None:
        if con in self.tcons:
            return self
        cons = self.tcons | {con}
        return Sym(self.points, cons, self.vars, self.acons) if _times_feasible(self.points, cons) else None

    def add_amount(self, con: tuple[frozenset[int], str, int]) -> Sym | None:
        s, kind, c = con
        if not s:  # a constant: 0 >= c or 0 <= c
            return self if (0 >= c if kind == "ge" else 0 <= c) else None
        cons = self.acons | {con}
        return Sym(self.points, self.tcons, self.vars, cons) if _amounts_feasible(self.vars, cons) is not None else None

    def witness(self) -> tuple[list[int], list[int]]:
        return _times_feasible(self.points, self.tcons) or [], _amounts_feasible(self.vars, self.acons) or []


def _age_atom(sym: Sym, now: int, at: int, c: int, value: bool) -> Sym | None:
    """``now - at <= c`` (value true) or ``now - at >= c + 1``."""
    return sym.add_time((now, at, c) if value else (at, now, -c - 1))


@dataclass(frozen=True, slots=True)
class AEvent:
    """An abstract history event: a time point, concrete identifiers, attribute variables."""

    point: int
    kind: str
    action_id: str | None = None
    object_id: str | None = None
    terminal: str | None = None
    attrs: tuple[tuple[str, int], ...] = ()


def _matches(p: TemporalPredicate, e: AEvent) -> bool:
    return all(getattr(e, name) in accepted for name, accepted in p.filter)


def _bound_atoms(bounds: tuple[tuple[str, int], ...]) -> list[tuple[str, int]]:
    """Bounds as ``(ge|le, c)`` atoms."""
    return [atom for op, c in bounds for atom in {"gt": [("ge", c + 1)], "gte": [("ge", c)], "lt": [("le", c - 1)],
                                                  "lte": [("le", c)], "eq": [("ge", c), ("le", c)]}[op]]


def _conj(sym: Sym, s: frozenset[int], atoms: list[tuple[str, int]]) -> Iterator[tuple[bool, Sym]]:
    """Every feasible value of the conjunction of ``Σ_s x (ge|le) c`` atoms."""
    cur: Sym | None = sym
    for kind, c in atoms:
        neg = ("le", c - 1) if kind == "ge" else ("ge", c + 1)
        if cur is not None:
            alt = cur.add_amount((s, *neg))
            if alt is not None:
                yield False, alt
            cur = cur.add_amount((s, kind, c))
    if cur is not None:
        yield True, cur


def _eval_symbolic(p: TemporalPredicate, sym: Sym, history: Sequence[AEvent], now: int,
                  current: Mapping[str, int]) -> Iterator[tuple[bool, Sym]]:
    """Every feasible value of ``p`` on the abstract session, each with its constraints."""
    matching = [e for e in history if _matches(p, e)]
    neg = p.negate
    if p.op == "before":
        yield bool(matching) is not neg, sym
        return
    if p.op == "within":
        if not matching:
            yield neg, sym
            return
        for value in (True, False):
            s2 = _age_atom(sym, now, matching[-1].point, p.seconds, value)  # type: ignore[arg-type]
            if s2 is not None:
                yield value is not neg, s2
        return
    n = len(matching)
    for k in range(n + 1):  # k = how many (the latest) matching events are in the window
        s2: Sym | None = sym
        if p.window_s is not None:
            if k > 0:
                s2 = _age_atom(s2, now, matching[n - k].point, p.window_s, True)
            if s2 is not None and k < n:
                s2 = _age_atom(s2, now, matching[n - k - 1].point, p.window_s, False)
        elif k < n:
            continue
        if s2 is None:
            continue
        if p.op == "count":
            yield all(compare(op, k, c) for op, c in p.bounds) is not neg, s2
            continue
        vs = {dict(e.attrs)[p.attribute] for e in matching[n - k:] if p.attribute in dict(e.attrs)}
        if p.include_current and p.attribute in current:
            vs.add(current[p.attribute])
        for value, s3 in _conj(s2, frozenset(vs), _bound_atoms(p.bounds)):
            yield value is not neg, s3


def _product(choices: Sequence[Callable[[Sym], Iterator[tuple[Any, Sym]]]], sym: Sym) -> Iterator[tuple[tuple, Sym]]:
    """Every feasible combination of values, ``choices[i](sym)`` giving the ``i``-th one's under the constraints
    of those before it."""
    if not choices:
        yield (), sym
        return
    for value, s2 in choices[0](sym):
        for rest, s3 in _product(choices[1:], s2):
            yield (value, *rest), s3


def _eval_all(preds: Sequence[TemporalPredicate], sym: Sym, history, now, current) -> Iterator[tuple[tuple, Sym]]:
    return _product([partial(_eval_symbolic, p, history=history, now=now, current=current) for p in preds], sym)


# --------------------------------------------------------------------------------------------- the explorer


@dataclass(frozen=True, slots=True)
class Step:
    """One request of an abstract session, and what each program decided."""

    externals: tuple[tuple[str, int], ...]  # (kind, point)
    point: int
    action_id: str
    object_id: str
    attrs: tuple[tuple[str, int], ...]
    state: Mapping[str, bool]
    decisions: tuple[tuple[str, str], ...]  # per program: (rule_id, terminal)


@dataclass
class Counterexample:
    """A concrete session refuting an assertion (or witnessing a diff), and its replay through the controller."""

    requests: list[dict[str, Any]]
    decisions: list[list[dict[str, Any]]]  # per program
    confirmed: bool
    detail: str = ""

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class AssertionResult:
    assertion: SessionAssertion
    holds: bool
    counterexample: Counterexample | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.assertion.name, "assertion": self.assertion.describe(), "holds": self.holds,
                "counterexample": None if self.counterexample is None else self.counterexample.as_dict()}


@dataclass
class HorizonReport:
    horizon: int
    results: list[AssertionResult]
    sessions: int  # abstract sessions (paths) explored
    seconds: float

    @property
    def ok(self) -> bool:
        return all(r.holds for r in self.results)

    def as_dict(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "ok": self.ok, "sessions_explored": self.sessions,
                "seconds": round(self.seconds, 4), "assertions": [r.as_dict() for r in self.results]}


class _Explorer:
    def __init__(self, catalog: Catalog, programs: Sequence[PolicyEngine],
                 assertions: Sequence[SessionAssertion] = ()) -> None:
        self.catalog, self.programs, self.assertions = catalog, tuple(programs), tuple(assertions)
        names: list[str] = []
        for policy in programs:
            if not policy.covers(catalog.ids):
                raise DataError(ErrorCode.INCONSISTENT_ASSETS, "a rule program built for this catalog")
            for f in policy.state_schema.fields:
                if f.types != frozenset({StateType.BOOLEAN}) or not f.required or f.allowed is not None:
                    raise DataError(ErrorCode.INVALID_VALUE, "a state schema of boolean fields (horizon "
                                    "verification enumerates states)", field=f.name, got=f.as_dict())
                if f.name not in names:
                    names.append(f.name)
        if len(names) > 10:
            raise DataError(ErrorCode.LIMIT_EXCEEDED, "at most ten boolean state fields", got=len(names))
        self.fields = tuple(names)
        preds = [t for policy in programs for r in policy.rules for t in r.condition.temporal]
        preds += [t for a in self.assertions for t in a.predicates]
        self.filters = preds
        self.externals = tuple(k for k in EXTERNAL_KINDS
                               if any(k in vals for p in preds for name, vals in p.filter if name == "kind"))
        self.attributes = tuple(sorted({p.attribute for p in preds if p.op == "sum"}))  # type: ignore[misc]
        named_objects = sorted({o for p in preds for name, vals in p.filter if name == "object_id" for o in vals})
        named_actions = {a for p in preds for name, vals in p.filter if name == "action_id" for a in vals}
        named_actions |= {a for x in self.assertions for a in x.dispatch}
        classes: dict[Any, str] = {}
        self.actions: list[str] = []
        for action in catalog.actions:
            key = (action.action_id if action.action_id in named_actions else None, action.requires_object,
                   tuple(tuple(e[-1].rule_id for e in p.chain(action.action_id)) for p in programs))
            if key not in classes:
                classes[key] = action.action_id
                self.actions.append(action.action_id)
        self.objects = {a.action_id: ((*named_objects, OBJECT, UNRESOLVED) if a.requires_object else (NONE,))
                        for a in catalog.actions}
        self._outcomes: dict[Any, dict[tuple, dict[str, bool]]] = {}
        self.chains = {(i, a): [entry[-1] for entry in p.chain(a)] for i, p in enumerate(programs)
                       for a in catalog.ids}
        self.rules = [{r.rule_id: r for r in p.rules} for p in programs]
        self.sessions = 0

    def relevant(self, e: AEvent) -> bool:
        return any(_matches(p, e) for p in self.filters)

    def outcomes(self, action: str, valuations: tuple[tuple, ...]) -> dict[tuple, dict[str, bool]]:
        """``(rule per program) -> a witness state`` for every state, given each program's temporal valuation."""
        key = (action, valuations)
        found = self._outcomes.get(key)
        if found is None:
            found = {}
            for bits in product((False, True), repeat=len(self.fields)):
                state = dict(zip(self.fields, bits))
                picks = []
                for i, valuation in enumerate(valuations):
                    it = iter(valuation)
                    pick = None
                    for r in self.chains[(i, action)]:
                        temporal_ok = all([next(it) for _ in r.condition.temporal])
                        if pick is None and temporal_ok and all(p.holds(state) for p in r.condition.predicates):
                            pick = r
                    picks.append(pick)
                found.setdefault(tuple(r.rule_id for r in picks), state)
            self._outcomes[key] = found
        return found

    def successors(self, sym: Sym, histories: tuple[tuple[AEvent, ...], ...], last: int | None
                   ) -> Iterator[tuple[Sym, tuple, int, Step]]:
        seen: set = set()
        for size in range(len(self.externals) + 1):
            for kinds in combinations(self.externals, size):
                s1, hist1, ext, prev = sym, histories, [], last
                for kind in kinds:
                    s1, p = s1.new_point(prev)
                    ext.append((kind, p))
                    prev = p
                    hist1 = tuple((*h, AEvent(p, kind)) for h in hist1)
                s1, now = s1.new_point(prev)
                attrs = []
                for name in self.attributes:
                    s1, v = s1.new_var()
                    attrs.append((name, v))
                current = dict(attrs)
                for action in self.actions:
                    chains = [partial(_eval_all, [t for r in self.chains[(i, action)] for t in r.condition.temporal],
                                      history=h, now=now, current=current) for i, h in enumerate(hist1)]
                    for valuations, s2 in _product(chains, s1):
                        for picks, state in self.outcomes(action, valuations).items():
                            for obj in self.objects[action]:
                                decisions, new_hist = [], []
                                for i, (rule_id, h) in enumerate(zip(picks, hist1)):
                                    rule = self.rules[i][rule_id]
                                    if rule.decision is Boundary.ALLOW:
                                        terminal = "CLARIFY" if obj == UNRESOLVED else "DISPATCH"
                                    else:
                                        terminal = rule.decision.value
                                    decisions.append((rule.rule_id, terminal))
                                    kind = "dispatch" if terminal == "DISPATCH" else "non_dispatch"
                                    e = AEvent(now, kind, action, obj, terminal, tuple(attrs))
                                    new_hist.append((*h, e) if self.relevant(e) else h)
                                step = Step(tuple(ext), now, action, obj, tuple(attrs), state, tuple(decisions))
                                interesting = any(self._asserted(action, t) for _, t in decisions) or \
                                    len({t == "DISPATCH" for _, t in decisions}) > 1
                                key = (s2, tuple(new_hist), interesting and (action, tuple(decisions)))
                                if key in seen:
                                    continue
                                seen.add(key)
                                yield s2, tuple(new_hist), now, step

    def _asserted(self, action: str, terminal: str) -> bool:
        return terminal == "DISPATCH" and any(a.applies(action) for a in self.assertions)

    def violation(self, a: SessionAssertion, sym: Sym, hist: tuple[AEvent, ...], step: Step) -> Sym | None:
        rule_id, terminal = step.decisions[0]
        if terminal != "DISPATCH" or not a.applies(step.action_id):
            return None
        # the decision's own event is in the history (if no filter can match it, it cannot count)
        for values, s2 in _eval_all(a.predicates, sym, hist, step.point, {}):
            if all(values):
                return s2
        return None


# --------------------------------------------------------------------------------------------- replay


def _replay(catalog: Catalog, programs: Sequence[PolicyEngine], steps: Sequence[Step], sym: Sym
            ) -> tuple[list[dict[str, Any]], list[list[Any]]]:
    times, amounts = sym.witness()
    controllers = [Controller(catalog, p) for p in programs]
    histories: list[list[Event]] = [[] for _ in programs]
    requests, decisions = [], [[] for _ in programs]
    for n, step in enumerate(steps):
        attrs = {name: amounts[v] if v < len(amounts) else 0 for name, v in step.attrs}
        t = times[step.point]
        externals = [Event(times[p], kind) for kind, p in step.externals]
        action, obj = catalog[step.action_id], step.object_id
        output = {"action_id": step.action_id, "object_id": obj, "topk": [step.action_id]}
        candidates = (Entity(obj if obj != UNRESOLVED else OBJECT, action.required_object_types[0], "witness object"),
                      ) if action.requires_object else ()
        requests.append({"request": n + 1, "now": t, "external_events": [e.as_dict() for e in externals],
                         "state": dict(step.state), "proposal": output, "attributes": attrs})
        for i, controller in enumerate(controllers):
            histories[i].extend(externals)
            session = Session(t, tuple(histories[i]), attrs)
            req = RouteRequest(f"s{n + 1}", "(horizon witness)", (), RuntimeState(step.state), candidates, session)
            d = controller.decide(req, output)
            decisions[i].append(d)
            histories[i].append(event_of_decision(d, t, attrs))
    return requests, decisions


def _summary(d: Any) -> dict[str, Any]:
    return {"final_path": d.final_path, "rule": d.rule_id, "reason": d.reason.value,
            "temporal": [f"{o} | {x}" for o, x in d.temporal_evidence()]}


def _confirm(catalog, programs, steps, sym, check) -> Counterexample:
    requests, decisions = _replay(catalog, programs, steps, sym)
    agree = all((d.rule_id, d.terminal.value) == step.decisions[i]
                for i in range(len(programs)) for d, step in zip(decisions[i], steps))
    confirmed, detail = check(requests, decisions)
    return Counterexample(requests, [[_summary(d) for d in ds] for ds in decisions], agree and confirmed,
                          detail + ("" if agree else "; the replay disagrees with the abstract decisions"))


def _explore(ex: _Explorer, horizon: int, visit: Callable[[list[Step], Sym, tuple], None]) -> None:
    """Depth first over every abstract session of 1 to ``horizon`` requests: ``visit(path, sym, histories)``."""
    if type(horizon) is not int or not 1 <= horizon <= 8:
        raise DataError(ErrorCode.INVALID_VALUE, "a horizon from 1 to 8", got=horizon, field="horizon")

    def dfs(depth: int, sym: Sym, hists, last, steps: list[Step]) -> None:
        for s2, h2, now, step in ex.successors(sym, hists, last):
            ex.sessions += 1
            path = [*steps, step]
            visit(path, s2, h2)
            if depth < horizon:
                dfs(depth + 1, s2, h2, now, path)

    dfs(1, Sym(), tuple(() for _ in ex.programs), None, [])


def verify_horizon(catalog: Catalog, policy: PolicyEngine, assertions: Sequence[SessionAssertion],
                   horizon: int) -> HorizonReport:
    """Check every assertion over every session of up to ``horizon`` requests (see the module docstring)."""
    start = time.perf_counter()
    ex = _Explorer(catalog, (policy,), assertions)
    found: dict[int, tuple[list[Step], Sym]] = {}

    def visit(path: list[Step], sym: Sym, hists) -> None:
        for i, a in enumerate(assertions):
            if i not in found or len(found[i][0]) > len(path):
                bad = ex.violation(a, sym, hists[0], path[-1])
                if bad is not None:
                    found[i] = (path, bad)

    _explore(ex, horizon, visit)
    results = []
    for i, a in enumerate(assertions):
        if i not in found:
            results.append(AssertionResult(a, True))
            continue
        steps, sym = found[i]

        def check(requests, decisions, a=a):
            d = decisions[0][-1]
            hist = []
            for req, dd in zip(requests, decisions[0]):
                hist += [Event(**e) for e in req["external_events"]]
                hist.append(event_of_decision(dd, req["now"], req["attributes"]))
            after = Session(requests[-1]["now"], tuple(hist))
            holds = d.dispatched and a.applies(d.action_id) and all(p.evaluate(after)[0] for p in a.predicates)
            return holds, f"request {len(requests)}: {d.final_path}; " + "; ".join(
                f"{p.describe()} measured {p.measure(after)}" for p in a.predicates)

        results.append(AssertionResult(a, False, _confirm(catalog, (policy,), steps, sym, check)))
    return HorizonReport(horizon, results, ex.sessions, time.perf_counter() - start)


@dataclass
class SessionDiff:
    horizon: int
    narrowing: dict[str, Counterexample]  # action -> witness: base dispatches, candidate does not
    widening: dict[str, Counterexample]
    sessions: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {"horizon": self.horizon, "sessions_explored": self.sessions, "seconds": round(self.seconds, 4),
                "narrowing": {a: w.as_dict() for a, w in self.narrowing.items()},
                "widening": {a: w.as_dict() for a, w in self.widening.items()}}


def session_diff(catalog: Catalog, base: PolicyEngine, candidate: PolicyEngine, horizon: int) -> SessionDiff:
    """Where ``candidate`` dispatches less (narrowing) or more (widening) than ``base`` over every session of up
    to ``horizon`` requests, each program's history made of its own decisions; a confirmed witness per action."""
    start = time.perf_counter()
    ex = _Explorer(catalog, (base, candidate))
    found: dict[tuple[str, str], tuple[list[Step], Sym]] = {}

    def visit(path: list[Step], sym: Sym, hists) -> None:
        (_, t0), (_, t1) = path[-1].decisions
        if (t0 == "DISPATCH") != (t1 == "DISPATCH"):
            key = ("narrowing" if t0 == "DISPATCH" else "widening", path[-1].action_id)
            if key not in found or len(found[key][0]) > len(path):
                found[key] = (path, sym)

    _explore(ex, horizon, visit)
    out: dict[str, dict[str, Counterexample]] = {"narrowing": {}, "widening": {}}
    for (direction, action), (steps, sym) in sorted(found.items()):
        def check(requests, decisions, direction=direction):
            a, b = decisions[0][-1], decisions[1][-1]
            ok = a.dispatched != b.dispatched and (a.dispatched if direction == "narrowing" else b.dispatched)
            return ok, f"request {len(requests)}: base {a.final_path}, candidate {b.final_path}"
        out[direction][action] = _confirm(catalog, (base, candidate), steps, sym, check)
    return SessionDiff(horizon, out["narrowing"], out["widening"], ex.sessions, time.perf_counter() - start)


def format_report(report: HorizonReport) -> str:
    lines = [f"horizon K={report.horizon}: {report.sessions} abstract sessions in {report.seconds:.2f}s"]
    for r in report.results:
        lines.append(f"  {'HOLDS  ' if r.holds else 'REFUTED'} {r.assertion.name}: {r.assertion.describe()}")
        if r.counterexample is not None:
            cx = r.counterexample
            lines.append(f"    counterexample ({'confirmed' if cx.confirmed else 'NOT confirmed'} by the controller):"
                         f" {cx.detail}")
            for req, d in zip(cx.requests, cx.decisions[0]):
                ext = ", ".join(f"{e['kind']}@{e['at']}" for e in req["external_events"])
                lines.append(f"      t={req['now']} {('[' + ext + '] ') if ext else ''}"
                             f"{req['proposal']['action_id']}/{req['proposal']['object_id']} "
                             f"attrs={req['attributes']} -> {d['final_path']} ({d['rule']})")
    return "\n".join(lines)


__all__ = ["AssertionResult", "Counterexample", "HorizonReport", "SessionAssertion", "SessionDiff", "format_report",
           "load_assertions", "parse_assertions", "session_diff", "verify_horizon"]
