"""A seeded session benchmark (issue 32): multi-request sessions in English or Chinese whose gold decisions the
kit's controller computes, each request seeing the history the earlier gold decisions made.

    bench = generate_sessions(seed=0, language="en", sessions=48)
    bench.cases()          # one Case per request, its RouteRequest carrying its session (teacher forcing)
    bench.audit()          # the composition: per predicate exercised, per language, per terminal, per scenario
    write_sessions(bench, "outputs/sessions-en-0")

**Scenarios** (each names the temporal predicate it is built to exercise; rules in ``data/sessions/rules.csv``):

* ``identity_expiry`` (``within``) — an identity check, a protected operation inside its 10 minutes (dispatched),
  then another after they have passed (``CLARIFY``, T100); sometimes a lookup in between;
* ``third_in_hour`` (``count``) — three protected operations, each right after a fresh identity check; the third
  inside the hour is refused (``REJECT``, T110); in the *boundary* variant the third comes after the hour;
* ``daily_total`` (``sum``) — protected operations more than an hour apart whose running amount crosses
  1000.00 (``REJECT``, T120), or, in the boundary variant, ends exactly on it (dispatched);
* ``analysis_before_check`` (``before``) — account analysis before any identity check (``CLARIFY``, T130), then a
  check, then the same analysis (dispatched);
* ``state_first`` — a state rule decides before any temporal one (an unverified session: R050; a safety
  escalation: R001), next to an advisory request;
* ``composite`` — a protected operation after an identity check, then one **composite** request (contract
  ``routebr-composite/1``, :mod:`routebr_kit.core.composite_decision`) "how is X doing, and sell Y" whose second
  item is blocked: the check has expired (``within``) or two protected operations already ran in the hour
  (``count``), in ``independent`` mode (the analysis is dispatched, the sale not) or ``atomic`` mode (neither:
  the analysis is withheld); the four combinations in turn.

Every third session of a scenario is its variant (the boundary variant, the safety escalation); composite
sessions cycle through their four variants.

Gold: the gold proposal ``{action, object, topk: [action]}`` of each request (a composite request: its gold items
``{"items": [...]}``, through :class:`~routebr_kit.core.composite_decision.CompositeController` in the request's
mode) goes through the controller on the request's session: its time, its amount, the external events before it
and every earlier request's *gold* decision (an event ``dispatch`` / ``non_dispatch``; one per decided item of a
composite request).  :meth:`SessionBenchmark.cases` holds the single-item requests (one :class:`Case` each); a
composite request's gold is its entry of :attr:`SessionCase.summaries`.  Deterministic in ``(seed, language,
sessions)``.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from ..core.controller import Controller
from ..core.errors import DataError, ErrorCode
from ..core.records import NONE, Boundary, Entity, RouteRequest, RuntimeState
from ..core.session import Event, Session, event_of_decision
from ..store.assets import Assets, load_assets
from ..store.cases import Case, Gold, ObjectDifficulty, Split
from .language import Language

A1, A2, A3, A4, A5 = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                      "A5_PROTECTED_ACTION")
PREDICATES = ("within", "count", "sum", "before")
SCENARIOS = ("identity_expiry", "third_in_hour", "daily_total", "analysis_before_check", "state_first", "composite")
#: The session rule program (a checkout's ``data/sessions/``).
SESSION_DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "sessions"
_RESOURCES = Path(__file__).resolve().parents[1] / "resources"
_STATE = MappingProxyType({"safety_escalation_required": False, "identity_verified": True})

#: Utterance templates per language and action; ``{name}`` the object's display name, ``{amount}`` in units.
_TEMPLATES: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "en": MappingProxyType({
        A1: ("Would {name} suit a long-term holder like me?", "Is {name} a sensible buy at the moment?"),
        A2: ("What is the expense ratio of {name}?", "Show me the fact sheet for {name}."),
        A3: ("How is my position in {name} doing?", "Analyse my holding of {name} for me."),
        A4: ("I cannot find the statements page, can you help?", "The app keeps logging me out, what should I do?"),
        A5: ("Sell {amount} worth of {name} now.", "Place an order to buy {amount} of {name}.",
             "Please redeem {amount} of my {name}."),
        "composite": ("How is my position in {name} doing? And sell {amount} of {name2}.",
                      "Check my holding of {name}, then sell {amount} worth of {name2}."),
    }),
    "zh": MappingProxyType({
        A1: ("{name}适合我长期持有吗？", "现在买入{name}合适吗？"),
        A2: ("{name}的管理费率是多少？", "给我看一下{name}的基本资料。"),
        A3: ("帮我分析一下我持有的{name}。", "我在{name}上的仓位表现如何？"),
        A4: ("我找不到对账单页面，能帮我吗？", "应用总是把我登出，怎么办？"),
        A5: ("现在卖出{amount}元的{name}。", "帮我下单买入{amount}元{name}。", "请赎回我持有的{amount}元{name}。"),
        "composite": ("帮我看看{name}的仓位，然后卖出{amount}元{name2}。",
                      "我持有的{name}表现如何？再帮我卖出{amount}元{name2}。"),
    }),
})


@dataclass(frozen=True)
class SessionStep:
    """One request of a session: its time, the external events just before it, what the user said, and the gold
    proposal."""

    request_id: str
    now: int
    externals: tuple[Event, ...]
    utterance: str
    candidates: tuple[Entity, ...]
    gold_action: str
    gold_object: str
    attributes: Mapping[str, int] = field(default_factory=dict)
    state: Mapping[str, bool] = field(default_factory=lambda: _STATE)
    items: tuple[tuple[str, str], ...] = ()  # a composite request's gold items (action, object), in order
    mode: str = ""  # a composite request's mode: "atomic" or "independent"

    @property
    def composite(self) -> bool:
        return bool(self.items)

    def gold_output(self) -> dict[str, Any]:
        """The gold proposal (a composite request: its gold items)."""
        if self.items:
            return {"items": [{"action_id": a, "object_id": o} for a, o in self.items]}
        return {"action_id": self.gold_action, "object_id": self.gold_object, "topk": [self.gold_action]}

    def request(self, history: Sequence[Event], session_id: str) -> RouteRequest:
        """The request with its session: ``history`` (earlier decisions and events) plus this step's externals."""
        session = Session(self.now, (*history, *self.externals), dict(self.attributes), session_id)
        return RouteRequest(self.request_id, self.utterance, (), RuntimeState(dict(self.state)), self.candidates,
                            session)

    def as_dict(self) -> dict[str, Any]:
        return {"request_id": self.request_id, "now": self.now,
                "external_events": [e.as_dict() for e in self.externals],
                "utterance": self.utterance, "state": dict(self.state), "attributes": dict(self.attributes),
                "candidates": [e.prompt_view() for e in self.candidates],
                "gold_proposal": {"action_id": self.gold_action, "object_id": self.gold_object},
                **({"gold_items": [list(i) for i in self.items], "mode": self.mode} if self.items else {})}


@dataclass(frozen=True)
class SessionCase:
    """A generated session and its gold decisions (computed)."""

    session_id: str
    language: str
    scenario: str
    variant: str
    steps: tuple[SessionStep, ...]
    gold: tuple[Case | None, ...]  # per step: a single request's case (its request carrying the gold history)
    exercised: tuple[tuple[str, ...], ...]  # per step: the temporal ops the controller evaluated
    fired: tuple[tuple[str, ...], ...]  # per step: the temporal ops of the deciding rule(s)
    summaries: tuple[Mapping[str, Any], ...] = ()  # per step: the gold decision (a composite: per item)
    item_cases: tuple[Case, ...] = ()  # each composite item as a single request ``<request_id>.<n>`` (its gold)
    requests: tuple[RouteRequest, ...] = ()  # per step: the request on the gold history (teacher forcing)

    def as_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "language": self.language, "scenario": self.scenario,
                "variant": self.variant,
                "requests": [{**s.as_dict(), "gold": dict(g), "exercised": list(ex), "fired": list(fi)}
                             for s, g, ex, fi in zip(self.steps, self.summaries, self.exercised, self.fired)]}


@dataclass(frozen=True)
class SessionBenchmark:
    seed: int
    language: str
    sessions: tuple[SessionCase, ...]
    assets: Assets

    def cases(self) -> tuple[Case, ...]:
        """The single-item requests, one case each (composite requests are not cases: see ``summaries``)."""
        return tuple(c for s in self.sessions for c in s.gold if c is not None)

    def item_cases(self) -> tuple[Case, ...]:
        """Every composite item as a single request ``<request_id>.<n>`` (the whole utterance), its gold the item's
        own decision: what a simulated proposer answering item by item is drawn from."""
        return tuple(c for s in self.sessions for c in s.item_cases)

    def audit(self) -> dict[str, Any]:
        return audit_sessions(self.sessions)


# --------------------------------------------------------------------------------------------- generation


def session_assets(language: Language | str, rules: str | Path | None = None) -> Assets:
    """The kit catalog, the session rule program and the language's registry."""
    lang = Language(language)
    path = Path(rules) if rules is not None else SESSION_DATA_DIR / "rules.csv"
    if not path.exists():
        raise DataError(ErrorCode.INVALID_VALUE, "a session rule program (data/sessions/rules.csv in a checkout)",
                        file=str(path))
    return load_assets(_RESOURCES / "catalog.csv", path, _RESOURCES / f"registry_{lang.value}.csv")


class _Writer:
    """Draws times, objects, amounts and wording for one session."""

    def __init__(self, rng: random.Random, language: str, entities: Sequence[Entity], session_id: str) -> None:
        self.rng, self.language, self.entities, self.session_id = rng, language, entities, session_id
        self.steps: list[SessionStep] = []
        self.clock = rng.randrange(8 * 3600, 12 * 3600)  # a morning, in seconds

    def tick(self, seconds: int) -> int:
        self.clock += seconds
        return self.clock

    def step(self, action: str, *, check_before: int | None = None, amount: int | None = None,
             state: Mapping[str, bool] | None = None, same: bool = False) -> None:
        externals = ()
        if check_before is not None:
            externals = (Event(self.clock - check_before, "identity_check", attributes={"method": "otp"}),)
        target = self.rng.choice(self.entities)
        if same and self.steps and self.steps[-1].candidates:  # the object of the previous request
            target = next(e for e in self.steps[-1].candidates if e.object_id == self.steps[-1].gold_object)
        others = [e for e in self.entities if e.object_id != target.object_id]
        candidates = tuple(self.rng.sample([target, *self.rng.sample(others, 2)], 3))
        attrs = {"amount": amount} if amount is not None else {}
        units = f"{amount / 100:.2f}" if amount is not None else ""
        text = self.rng.choice(_TEMPLATES[self.language][action]).format(name=target.display_name, amount=units)
        obj = NONE if action == A4 else target.object_id
        if action == A4:
            candidates = ()
        n = len(self.steps) + 1
        self.steps.append(SessionStep(f"{self.session_id}-R{n}", self.clock, externals, text, candidates, action, obj,
                                      MappingProxyType(attrs), MappingProxyType(dict(state or _STATE))))

    def composite(self, mode: str, *, check_before: int | None = None) -> None:
        """A composite request "how is X doing, and sell Y": items (A3, X), (A5, Y) in ``mode``."""
        externals = ()
        if check_before is not None:
            externals = (Event(self.clock - check_before, "identity_check", attributes={"method": "otp"}),)
        x, y, z = self.rng.sample(list(self.entities), 3)
        amount = self.rng.randrange(1, 10) * 1000
        text = self.rng.choice(_TEMPLATES[self.language]["composite"]).format(name=x.display_name, name2=y.display_name,
                                                                             amount=f"{amount / 100:.2f}")
        candidates = tuple(self.rng.sample([x, y, z], 3))
        n = len(self.steps) + 1
        self.steps.append(SessionStep(f"{self.session_id}-R{n}", self.clock, externals, text, candidates, A3,
                                      x.object_id, MappingProxyType({"amount": amount}), MappingProxyType(dict(_STATE)),
                                      ((A3, x.object_id), (A5, y.object_id)), mode))


def _identity_expiry(w: _Writer, k: int) -> str:
    w.step(A5, check_before=w.rng.randrange(10, 120), amount=w.rng.randrange(1, 20) * 1000)
    if w.rng.random() < 0.5:
        w.tick(w.rng.randrange(30, 200))
        w.step(A2)
    w.tick(w.rng.randrange(601, 1800))  # past the check's 600 s (measured from the check: later still)
    w.step(A5, amount=w.rng.randrange(1, 20) * 1000)
    return "expired"


def _third_in_hour(w: _Writer, k: int) -> str:
    boundary = k % 3 == 2  # every third one
    gaps = [w.rng.randrange(300, 1500), w.rng.randrange(300, 1500)]
    if boundary:  # the third falls just after the hour from the first
        gaps[1] = 3601 - gaps[0] + w.rng.randrange(0, 600)
    w.step(A5, check_before=w.rng.randrange(10, 300), amount=w.rng.randrange(1, 10) * 1000)
    for gap in gaps:
        w.tick(gap)
        w.step(A5, check_before=w.rng.randrange(10, 300), amount=w.rng.randrange(1, 10) * 1000)
    return "after_the_hour" if boundary else "inside_the_hour"


def _daily_total(w: _Writer, k: int) -> str:
    boundary = k % 3 == 2
    first, second = w.rng.randrange(30, 50) * 1000, w.rng.randrange(20, 40) * 1000
    third = 100000 - first - second if boundary else 100000 - first - second + w.rng.randrange(1, 30) * 1000
    for n, amount in enumerate((first, second, third)):
        if n:
            w.tick(w.rng.randrange(3700, 7200))
        w.step(A5, check_before=w.rng.randrange(10, 300), amount=amount)
    return "exactly_at_the_limit" if boundary else "over_the_limit"


def _analysis_before_check(w: _Writer, k: int) -> str:
    w.step(A3)
    w.tick(w.rng.randrange(60, 600))
    w.step(A3, check_before=w.rng.randrange(5, 50), same=True)
    if w.rng.random() < 0.5:
        w.tick(w.rng.randrange(30, 300))
        w.step(A1)
    return "check_later"


def _state_first(w: _Writer, k: int) -> str:
    safety = k % 3 == 2
    state = {"safety_escalation_required": safety, "identity_verified": safety}
    w.step(A1)
    w.tick(w.rng.randrange(30, 300))
    w.step(A5, check_before=w.rng.randrange(10, 100), amount=w.rng.randrange(1, 10) * 1000, state=state)
    w.tick(w.rng.randrange(30, 300))
    w.step(A4)
    return "safety_escalation" if safety else "unverified"


def _composite(w: _Writer, k: int) -> str:
    by_count = k % 4 >= 2  # in fours: expired/independent, expired/atomic, count/independent, count/atomic
    mode = "atomic" if k % 2 else "independent"
    w.step(A5, check_before=w.rng.randrange(10, 200), amount=w.rng.randrange(1, 10) * 1000)
    if by_count:  # a second protected operation inside the hour, after a fresh check
        w.tick(w.rng.randrange(300, 900))
        w.step(A5, check_before=w.rng.randrange(10, 200), amount=w.rng.randrange(1, 10) * 1000)
        w.tick(w.rng.randrange(60, 300))
        w.composite(mode, check_before=w.rng.randrange(10, 50))  # fresh check: the hourly count blocks the sale
    else:
        w.tick(w.rng.randrange(700, 1800))
        w.composite(mode)  # the check has expired
    return f"{'count' if by_count else 'expired'}_{mode}"


_BUILDERS = {"identity_expiry": _identity_expiry, "third_in_hour": _third_in_hour, "daily_total": _daily_total,
             "analysis_before_check": _analysis_before_check, "state_first": _state_first,
             "composite": _composite}


def _gold_summary(d: Any) -> dict[str, Any]:
    """A gold decision as the benchmark records it: terminal, final path and rule; a composite decision per item."""
    if not hasattr(d, "items"):
        return {"terminal": d.terminal.value, "final_path": d.final_path, "boundary": d.boundary,
                "rule_ids": [d.rule_id] if d.rule_id else []}
    items = [{"action_id": o.output.get("action_id"), "object_id": o.output.get("object_id"),
              "status": o.status.value, "emitted": o.emitted.value,
              "final_path": o.decision.final_path if o.dispatched else f"T_{o.emitted.value}",
              "rule_id": o.decision.rule_id if o.decision is not None else None} for o in d.items]
    return {"terminal": d.terminal.value, "mode": d.mode.value, "terminals": [t.value for t in d.terminals],
            "final_path": " + ".join(i["final_path"] for i in items), "items": items,
            "rule_ids": [i["rule_id"] for i in items if i["rule_id"]]}


def _decide_gold(controller: Controller, step: SessionStep, request: RouteRequest) -> tuple[Any, list[Any]]:
    """The gold decision of a step and the single-item decisions it is made of."""
    if not step.composite:
        d = controller.decide(request, step.gold_output())
        return d, [d]
    from ..core.composite_decision import CompositeController

    d = CompositeController(controller, step.mode).decide(request, step.gold_output())
    return d, [o.decision for o in d.items if o.decision is not None]


def _label_session(controller: Controller, steps: Sequence[SessionStep], session_id: str
                  ) -> tuple[list[Case | None], list[tuple[str, ...]], list[tuple[str, ...]], list[dict[str, Any]],
                             list[Case], list[RouteRequest]]:
    """Gold per step: the controller on the gold proposal and the gold history; the temporal ops it evaluated,
    the ones of the deciding rule(s), and the gold summary."""
    history: list[Event] = []
    cases: list[Case | None] = []
    exercised, fired, summaries, items, requests = [], [], [], [], []
    for step in steps:
        request = step.request(history, session_id)
        requests.append(request)
        d, singles = _decide_gold(controller, step, request)
        if (step.composite and d.reason is not None) or any(x.proposal is None or x.rule is None for x in singles):
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "a valid gold proposal", got=d.terminal.value,
                            field=step.request_id)
        ops_reached, ops_fired = set(), set()
        for x, (action, _) in zip(singles, step.items or ((step.gold_action, step.gold_object),)):
            reached = [r for r in controller.policy.rules if r.applies(action) and r.priority <= x.rule.priority]
            ops_reached |= {t.op for r in reached for t in r.condition.temporal}
            ops_fired |= {t.op for t in x.rule.condition.temporal}
        exercised.append(tuple(sorted(ops_reached)))
        fired.append(tuple(sorted(ops_fired)))
        summaries.append(_gold_summary(d))
        cases.append(None if step.composite else _case(step, request, d))
        if step.composite:  # each decided item as a single request with its own gold
            for n, ((action, obj), x) in enumerate(zip(step.items, singles), start=1):
                one = SessionStep(f"{step.request_id}.{n}", step.now, (), step.utterance, step.candidates, action, obj)
                items.append(_case(one, RouteRequest(one.request_id, step.utterance, (), request.state,
                                                     step.candidates, request.session), x))
        history.extend(step.externals)
        history.extend(d.events(step.now, step.attributes) if step.composite
                       else (event_of_decision(d, step.now, step.attributes),))
    return cases, exercised, fired, summaries, items, requests


def _case(step: SessionStep, request: RouteRequest, d: Any) -> Case:
    gold = Gold(step.gold_action, ObjectDifficulty.NONE if step.gold_object == NONE else
                ObjectDifficulty.EXPLICIT_NAME, step.gold_object, Boundary(d.boundary), d.final_path, (d.rule_id,))
    return Case(request, Split.MAIN, gold, "", "|".join((step.gold_action, d.boundary, d.rule_id)))


def generate_sessions(seed: int = 0, language: Language | str = Language.EN, sessions: int = 40, *,
                      rules: str | Path | None = None) -> SessionBenchmark:
    """``sessions`` sessions (scenarios in turn, seeded order), labelled by the controller (module docstring)."""
    if type(seed) is not int or seed < 0 or type(sessions) is not int or not 1 <= sessions <= 10_000:
        raise DataError(ErrorCode.INVALID_INTEGER, "a seed >= 0 and 1..10000 sessions", got=(seed, sessions))
    lang = Language(language)
    assets = session_assets(lang, rules)
    assert assets.registry is not None
    controller = assets.controller()
    rng = random.Random(f"routebr-sessions:{seed}:{lang.value}")
    entities = [e for e in assets.registry if e.object_type == "ETF"]
    order = [SCENARIOS[i % len(SCENARIOS)] for i in range(sessions)]
    rng.shuffle(order)
    out: list[SessionCase] = []
    seen: Counter[str] = Counter()
    for n, scenario in enumerate(order, start=1):
        session_id = f"S{lang.value.upper()}-{n:04d}"
        writer = _Writer(rng, lang.value, entities, session_id)
        variant = _BUILDERS[scenario](writer, seen[scenario])
        seen[scenario] += 1
        cases, exercised, fired, summaries, items, requests = _label_session(controller, writer.steps, session_id)
        out.append(SessionCase(session_id, lang.value, scenario, variant, tuple(writer.steps), tuple(cases),
                               tuple(exercised), tuple(fired), tuple(summaries), tuple(items), tuple(requests)))
    return SessionBenchmark(seed, lang.value, tuple(out), assets)


# --------------------------------------------------------------------------------------------- audit


def audit_sessions(sessions: Iterable[SessionCase]) -> dict[str, Any]:
    """The composition: sessions and requests per language, scenario (and variant) and gold terminal (a composite
    request: the request's terminal); per temporal predicate the requests that evaluated it and those it decided;
    composite requests per mode, items per status; requests per session."""
    sessions = list(sessions)
    requests = [(s, g, ex, fi) for s in sessions for g, ex, fi in zip(s.summaries, s.exercised, s.fired)]
    per_pred = {p: {"evaluated": sum(p in ex for _, _, ex, _ in requests),
                    "decided": sum(p in fi for _, _, _, fi in requests),
                    "sessions": sum(any(p in fi for fi in s.fired) for s in sessions)} for p in PREDICATES}
    composite = [g for _, g, _, _ in requests if "items" in g]
    return {
        "sessions": len(sessions), "requests": len(requests),
        "per_language": dict(sorted(Counter(s.language for s in sessions).items())),
        "requests_per_language": dict(sorted(Counter(s.language for s, *_ in requests).items())),
        "per_scenario": dict(sorted(Counter(f"{s.scenario}/{s.variant}" for s in sessions).items())),
        "per_terminal": dict(sorted(Counter(g["terminal"] for _, g, _, _ in requests).items())),
        "per_rule": dict(sorted(Counter(r for _, g, _, _ in requests for r in g["rule_ids"]).items())),
        "per_predicate": per_pred,
        "composite": {"requests": len(composite), "items": sum(len(g["items"]) for g in composite),
                      "per_mode": dict(sorted(Counter(g["mode"] for g in composite).items())),
                      "item_status": dict(sorted(Counter(i["status"] for g in composite
                                                         for i in g["items"]).items()))},
        "requests_per_session": dict(sorted(Counter(len(s.steps) for s in sessions).items())),
        "unexercised": [p for p in PREDICATES if not per_pred[p]["decided"]],
    }


def write_sessions(bench: SessionBenchmark | Sequence[SessionBenchmark], out_dir: str | Path) -> Path:
    """``sessions.jsonl`` (one session a line, gold included) and ``audit.json`` into ``out_dir``; returns it."""
    benches = [bench] if isinstance(bench, SessionBenchmark) else list(bench)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(s.as_dict(), ensure_ascii=False, separators=(",", ":")) for b in benches for s in b.sessions]
    (out / "sessions.jsonl").write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    audit = {"seeds": sorted({b.seed for b in benches}), **audit_sessions(s for b in benches for s in b.sessions)}
    (out / "audit.json").write_text(json.dumps(audit, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return out


def timeline(session: SessionCase) -> list[dict[str, Any]]:
    """One row per request: time since the session's first event (``t (s)``), the external events before it (times
    relative to that start), the utterance, the amount, the mode of a composite request, the gold decision (a
    composite: its items joined by ``" + "``), its rule(s) and the temporal predicates it evaluated."""
    start = min([session.steps[0].now, *(e.at for e in session.steps[0].externals)])
    return [{"t (s)": step.now - start,
             "events before": ", ".join(f"{e.kind} at t={e.at - start}" for e in step.externals),
             "request": step.utterance, "amount": step.attributes.get("amount", ""), "mode": step.mode,
             "gold": gold["final_path"], "rule": " + ".join(gold["rule_ids"]), "temporal evaluated": ", ".join(ex)}
            for step, gold, ex in zip(session.steps, session.summaries, session.exercised)]


__all__ = ["PREDICATES", "SCENARIOS", "SessionBenchmark", "SessionCase", "SessionStep", "audit_sessions",
           "generate_sessions", "session_assets", "timeline", "write_sessions"]
