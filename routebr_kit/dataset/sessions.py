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
  escalation: R001), next to an advisory request.

Every third session of a scenario is its variant (the boundary variant, the safety escalation).

Gold: the gold proposal ``{action, object, topk: [action]}`` of each request goes through the controller on the
request's session: its time, its amount, the external events before it and every earlier request's *gold*
decision (an event ``dispatch`` / ``non_dispatch``).  Deterministic in ``(seed, language, sessions)``.
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
SCENARIOS = ("identity_expiry", "third_in_hour", "daily_total", "analysis_before_check", "state_first")
#: The session rule program (a checkout's ``data/sessions/``).
SESSION_DATA_DIR = Path(__file__).resolve().parents[2] / "data" / "sessions"
_RESOURCES = Path(__file__).resolve().parents[1] / "resources"
_STATE = MappingProxyType({"safety_escalation_required": False, "identity_verified": True})

#: Utterance templates per language and action; ``{name}`` the object's display name, ``{amount}`` in units.
TEMPLATES: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType({
    "en": MappingProxyType({
        A1: ("Would {name} suit a long-term holder like me?", "Is {name} a sensible buy at the moment?"),
        A2: ("What is the expense ratio of {name}?", "Show me the fact sheet for {name}."),
        A3: ("How is my position in {name} doing?", "Analyse my holding of {name} for me."),
        A4: ("I cannot find the statements page, can you help?", "The app keeps logging me out, what should I do?"),
        A5: ("Sell {amount} worth of {name} now.", "Place an order to buy {amount} of {name}.",
             "Please redeem {amount} of my {name}."),
    }),
    "zh": MappingProxyType({
        A1: ("{name}适合我长期持有吗？", "现在买入{name}合适吗？"),
        A2: ("{name}的管理费率是多少？", "给我看一下{name}的基本资料。"),
        A3: ("帮我分析一下我持有的{name}。", "我在{name}上的仓位表现如何？"),
        A4: ("我找不到对账单页面，能帮我吗？", "应用总是把我登出，怎么办？"),
        A5: ("现在卖出{amount}元的{name}。", "帮我下单买入{amount}元{name}。", "请赎回我持有的{amount}元{name}。"),
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
                "gold_proposal": {"action_id": self.gold_action, "object_id": self.gold_object}}


@dataclass(frozen=True)
class SessionCase:
    """A generated session and its gold decisions (computed)."""

    session_id: str
    language: str
    scenario: str
    variant: str
    steps: tuple[SessionStep, ...]
    gold: tuple[Case, ...]  # one per step, its request carrying the gold history
    exercised: tuple[tuple[str, ...], ...]  # per step: the temporal ops the controller evaluated
    fired: tuple[tuple[str, ...], ...]  # per step: the temporal ops of the deciding rule

    def as_dict(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "language": self.language, "scenario": self.scenario,
                "variant": self.variant,
                "requests": [{**s.as_dict(), "gold": {"final_path": c.gold.final_path,
                                                      "boundary": c.gold.boundary.value,
                                                      "rule_ids": list(c.gold.rule_ids)},
                              "exercised": list(ex), "fired": list(fi)}
                             for s, c, ex, fi in zip(self.steps, self.gold, self.exercised, self.fired)]}


@dataclass(frozen=True)
class SessionBenchmark:
    seed: int
    language: str
    sessions: tuple[SessionCase, ...]
    assets: Assets

    def cases(self) -> tuple[Case, ...]:
        return tuple(c for s in self.sessions for c in s.gold)

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
        text = self.rng.choice(TEMPLATES[self.language][action]).format(name=target.display_name, amount=units)
        obj = NONE if action == A4 else target.object_id
        if action == A4:
            candidates = ()
        n = len(self.steps) + 1
        self.steps.append(SessionStep(f"{self.session_id}-R{n}", self.clock, externals, text, candidates, action, obj,
                                      MappingProxyType(attrs), MappingProxyType(dict(state or _STATE))))


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


_BUILDERS = {"identity_expiry": _identity_expiry, "third_in_hour": _third_in_hour, "daily_total": _daily_total,
             "analysis_before_check": _analysis_before_check, "state_first": _state_first}


def label_session(controller: Controller, steps: Sequence[SessionStep], session_id: str
                  ) -> tuple[list[Case], list[tuple[str, ...]], list[tuple[str, ...]]]:
    """Gold per step: the controller on the gold proposal and the gold history; the temporal ops it evaluated
    and the ones of the deciding rule."""
    history: list[Event] = []
    cases, exercised, fired = [], [], []
    for step in steps:
        request = step.request(history, session_id)
        d = controller.decide(request, {"action_id": step.gold_action, "object_id": step.gold_object,
                                        "topk": [step.gold_action]})
        if d.proposal is None or d.rule is None:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "a valid gold proposal", got=d.final_path,
                            field=step.request_id)
        gold = Gold(step.gold_action, ObjectDifficulty.NONE if step.gold_object == NONE else
                    ObjectDifficulty.EXPLICIT_NAME, step.gold_object, Boundary(d.boundary), d.final_path,
                    (d.rule_id,))
        cell = "|".join((step.gold_action, d.boundary, d.rule_id))
        cases.append(Case(request, Split.MAIN, gold, "", cell))
        reached = [r for r in controller.policy.rules if r.applies(step.gold_action) and r.priority <= d.rule.priority]
        exercised.append(tuple(sorted({t.op for r in reached for t in r.condition.temporal})))
        fired.append(tuple(sorted({t.op for t in d.rule.condition.temporal})))
        history.extend(step.externals)
        history.append(event_of_decision(d, step.now, step.attributes))
    return cases, exercised, fired


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
        cases, exercised, fired = label_session(controller, writer.steps, session_id)
        out.append(SessionCase(session_id, lang.value, scenario, variant, tuple(writer.steps), tuple(cases),
                               tuple(exercised), tuple(fired)))
    return SessionBenchmark(seed, lang.value, tuple(out), assets)


# --------------------------------------------------------------------------------------------- audit


def _terminal(final_path: str) -> str:
    return final_path[2:] if final_path.startswith("T_") else "DISPATCH"


def audit_sessions(sessions: Iterable[SessionCase]) -> dict[str, Any]:
    """The composition: sessions and requests per language, scenario (and variant) and gold terminal; per
    temporal predicate the requests that evaluated it and those it decided; requests per session."""
    sessions = list(sessions)
    requests = [(s, c, ex, fi) for s in sessions for c, ex, fi in zip(s.gold, s.exercised, s.fired)]
    per_pred = {p: {"evaluated": sum(p in ex for _, _, ex, _ in requests),
                    "decided": sum(p in fi for _, _, _, fi in requests),
                    "sessions": sum(any(p in fi for fi in s.fired) for s in sessions)} for p in PREDICATES}
    return {
        "sessions": len(sessions), "requests": len(requests),
        "per_language": dict(sorted(Counter(s.language for s in sessions).items())),
        "requests_per_language": dict(sorted(Counter(s.language for s, *_ in requests).items())),
        "per_scenario": dict(sorted(Counter(f"{s.scenario}/{s.variant}" for s in sessions).items())),
        "per_terminal": dict(sorted(Counter(_terminal(c.gold.final_path) for _, c, _, _ in requests).items())),
        "per_rule": dict(sorted(Counter(c.gold.rule_ids[0] for _, c, _, _ in requests).items())),
        "per_predicate": per_pred,
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


__all__ = ["PREDICATES", "SCENARIOS", "SessionBenchmark", "SessionCase", "SessionStep", "audit_sessions",
           "generate_sessions", "label_session", "session_assets", "write_sessions"]
