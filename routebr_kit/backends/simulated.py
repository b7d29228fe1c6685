"""``sim:<profile>`` — seeded, documented error models of the six hosted backends screened on SELECT-160.

**A simulator, never a proposer.** A :class:`SimulatedBackend` is given the benchmark cases *with their gold
labels*; every answer starts from the gold route and then has a profile's errors applied.  Its numbers say how the
kit's pipeline behaves on a backend with a given error profile; they are never evidence about a model, and every
table or figure built from them is labelled *simulated*.

The error model, per call (every rate is a per-case probability):

1. **Action confusion.**  ``Confusion(source, target, rate)``: a case whose gold action is ``source`` gets
   ``target``, at ``rate × (1 + w·(n − 1)) / (1 + w·(n̄ − 1))`` with ``w`` the profile's ``cue_weight``, ``n`` the
   case's number of gold cues and ``n̄ = 1.725`` their SELECT-160 mean (so the fitted rates stay the average rates).
2. **Object errors by reference difficulty.**  ``object_drop[d]``: a resolvable gold object reported as
   ``UNRESOLVED``; ``object_guess[d]``: an unresolvable reference resolved to a candidate anyway.  A confusion into
   an object-free action reports ``NONE``; a confusion out of one reports ``UNRESOLVED``.
3. **First-pass output failures.**  With probability ``invalid_first_pass`` the output is spoiled in one
   :class:`FailureForm` (weights ``failure_forms``).  The repair call returns the intended output with probability
   ``repair_fixes`` for a format-only failure; a contract failure comes back unchanged (as the published repair did
   for DeepSeek V4 Flash on MAIN-0158) and the case ends fail-closed.
4. **Latency and tokens.**  Latency is lognormal around the profile's median (``latency_sigma``: the MAD-based
   spread of the published log-latencies); reported, not slept, unless ``sleep_scale`` asks for it.  Tokens are
   estimated from the payload sent and the content returned (:func:`estimate_tokens`) plus per-profile overheads.

The one-call baselines use the same action and object model plus :class:`DirectBehaviour`: **B1 Direct** (no rule
program) dispatches unless it sees a visibly non-unique reference, a self-declared vague request (an ``AMBIGUITY``
cue) or one of a few self-explanatory runtime flags — so it false-dispatches on blocks only the runtime state
explains, as the published B1 did.  **B2 Direct+Guard** evaluates the rule table it is sent (first match) on the
state it is sent, with small per-case slips.

**Calibration.**  Every rate is an aggregate published count over eligible cases (e.g. DeepSeek V4 Pro proposed A2
for 7 of the 33 A3 cases of SELECT-160: ``A3→A2`` is ``7/33``); per-case outcomes are never replayed.  RouteBR
profiles are fitted on SELECT-160, :data:`DIRECT` on the published CONFIRM B1/B2 runs (DeepSeek V4 Pro, MAIN+FLIP);
token overheads so that mean tokens per case match the published means.

**Determinism.**  Every random choice is a keyed draw: the SHA-256 of ``(seed, profile, case_id, stage, decision)``
mapped to a uniform number, so an answer does not depend on call order, concurrency or the other cases of the run.
"""

from __future__ import annotations

import asyncio
import enum
import hashlib
import itertools
import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from statistics import NormalDist
from types import MappingProxyType
from typing import Any, NamedTuple

from ..core.calls import FailureKind, ModelCall, ModelReply
from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file, sha256_json
from ..core.records import NONE, OBJECT_FREE_TYPE, UNRESOLVED, Boundary, Stage, Terminal
from ..core.rules import PolicyEngine, rule
from ..store.cases import Case, ObjectDifficulty

D = ObjectDifficulty
A1, A2, A3, A4 = "A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE"

#: Mean number of gold cues per case on SELECT-160 (76 single, 52 dual, 32 triple): the cue-weight pivot.
_REFERENCE_CUES = 1.725
#: Gold cue families and the catalog action each one points to (used to rank the lower ``topk`` candidates).
_CUE_ACTIONS = MappingProxyType({"ADVISORY": A1, "INFORMATION": A2, "ACCOUNT_CONTEXT": A3, "SUPPORT_SENSITIVE": A4,
                                "ACTION_SENSITIVE": "A5_PROTECTED_ACTION"})
#: The gold cue family that marks a request as self-declared vague.
_AMBIGUITY_CUE = "AMBIGUITY"
#: Token estimate: per CJK character, per other character (fitted on the published DeepSeek prompts, sd 2.2).
TOKENS_PER_CJK, TOKENS_PER_CHAR = 0.6, 0.3
_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uf900-\ufaff\uff00-\uffef]")
_UNRESOLVABLE = (D.UNDERSPECIFIED, D.CONFLICTING)
_NORMAL = NormalDist()


class FailureForm(str, enum.Enum):
    """How a spoiled first-pass output is spoiled."""

    CODE_FENCE = "CODE_FENCE"  # the object wrapped in ```json ... ``` — not JSON
    TRUNCATED = "TRUNCATED"  # the object cut off halfway — not JSON
    OBJECT_SENTINEL = "OBJECT_SENTINEL"  # valid JSON, wrong sentinel: NONE for an object-requiring action (or v.v.)

    @property
    def format_only(self) -> bool:
        """A format failure a format-only repair can fix (a contract failure it must not)."""
        return self is not FailureForm.OBJECT_SENTINEL


#: What the simulator did to a case (listed in ``reply.extra["events"]``, so receipts explain every error).
SimEvent = enum.Enum("SimEvent", {name: name for name in (
    "ACTION_CONFUSED OBJECT_DROPPED OBJECT_GUESSED FIRST_PASS_SPOILED REPAIR_FIXED REPAIR_UNCHANGED "
    "B1_CLARIFY_UNRESOLVABLE B1_CLARIFY_AMBIGUOUS B1_STATE_NOTICED B2_SLIP_DISPATCH B2_SLIP_TERMINAL "
    "B2_CLARIFY_AMBIGUOUS B2_HANDOFF_SUPPORT").split()}, type=str, module=__name__)


def _rate(value: float, name: str) -> None:
    if not (isinstance(value, (int, float)) and 0.0 <= value <= 1.0):
        raise DataError(ErrorCode.INVALID_VALUE, "a probability in [0, 1]", got=value, field=name)


@dataclass(frozen=True, slots=True)
class Confusion:
    """A case whose gold action is ``source`` is proposed as ``target`` with probability ``rate``."""

    source: str
    target: str
    rate: float

    def __post_init__(self) -> None:
        _rate(self.rate, f"confusion {self.source}->{self.target}")
        if self.source == self.target:
            raise DataError(ErrorCode.INVALID_VALUE, "two different actions", got=self.source, field="confusion")


@dataclass(frozen=True, slots=True)
class SimProfile:
    """The error model of one simulated backend (see the module docstring for what each field does)."""

    profile_id: str
    label: str
    confusions: tuple[Confusion, ...] = ()
    object_drop: Mapping[ObjectDifficulty, float] = field(default_factory=dict)
    object_guess: Mapping[ObjectDifficulty, float] = field(default_factory=dict)
    invalid_first_pass: float = 0.0
    failure_forms: Mapping[FailureForm, float] = field(
        default_factory=lambda: {FailureForm.CODE_FENCE: 1.0, FailureForm.TRUNCATED: 1.0})
    repair_fixes: float = 0.9  # not observable in the published runs (no format failures); assumed
    latency_median_ms: float = 1500.0
    latency_sigma: float = 0.12
    prompt_overhead: int = 250  # system prompt + chat framing, on top of the payload estimate
    completion_overhead: int = 0
    cue_weight: float = 0.25

    def __post_init__(self) -> None:
        for name in ("object_drop", "object_guess", "failure_forms"):
            object.__setattr__(self, name, MappingProxyType(dict(getattr(self, name))))
        for name in ("invalid_first_pass", "repair_fixes"):
            _rate(getattr(self, name), name)
        for table in (self.object_drop, self.object_guess):
            for difficulty, value in table.items():
                if not isinstance(difficulty, ObjectDifficulty):
                    raise DataError(ErrorCode.UNKNOWN_ENUM, "an ObjectDifficulty", got=difficulty,
                                    field=self.profile_id)
                _rate(value, f"{self.profile_id} object rate for {difficulty.value}")
        totals = {s: sum(c.rate for c in self.confusions if c.source == s) for s in {c.source for c in self.confusions}}
        if any(t > 1.0 for t in totals.values()):
            raise DataError(ErrorCode.INVALID_VALUE, "confusion rates per source action summing to at most 1",
                            got=totals, field=self.profile_id)
        if not self.failure_forms or any(w < 0 for w in self.failure_forms.values()) or \
                sum(self.failure_forms.values()) <= 0:
            raise DataError(ErrorCode.INVALID_VALUE, "non-negative failure-form weights with a positive sum",
                            got=dict(self.failure_forms), field="failure_forms")
        if not (self.latency_median_ms > 0 and self.latency_sigma >= 0 and self.cue_weight >= 0):
            raise DataError(ErrorCode.INVALID_VALUE, "a positive latency median, non-negative sigma and cue weight",
                            got=(self.latency_median_ms, self.latency_sigma, self.cue_weight), field=self.profile_id)

    def as_dict(self) -> dict[str, Any]:
        """Every parameter as JSON-ready values (hashed into run manifests)."""
        out = {name: getattr(self, name) for name in self.__slots__}
        out["confusions"] = [[c.source, c.target, c.rate] for c in self.confusions]
        for name in ("object_drop", "object_guess", "failure_forms"):
            out[name] = {k.value: v for k, v in getattr(self, name).items()}
        return out

    def as_row(self) -> dict[str, Any]:
        """A flat, printable summary (one row of the notebook's parameter table)."""
        return {"profile": self.profile_id, "label": self.label,
                "confusions": "; ".join(f"{c.source[:2]}→{c.target[:2]} {c.rate:.3f}" for c in self.confusions),
                "object_drop": "; ".join(f"{d.value} {r:.3f}" for d, r in self.object_drop.items()),
                "object_guess": "; ".join(f"{d.value} {r:.3f}" for d, r in self.object_guess.items()),
                "invalid_first_pass": self.invalid_first_pass, "latency_median_ms": self.latency_median_ms,
                "latency_sigma": self.latency_sigma}


@dataclass(frozen=True, slots=True)
class StateCue:
    """A runtime flag whose meaning B1 may read without any rule: ``field == value`` → ``terminal``."""

    field: str
    value: Any
    rate: float
    terminal: Terminal

    def __post_init__(self) -> None:
        _rate(self.rate, f"state cue {self.field}")
        if self.terminal is Terminal.DISPATCH:
            raise DataError(ErrorCode.INVALID_VALUE, "a bounded terminal", got="DISPATCH", field=self.field)


@dataclass(frozen=True, slots=True)
class DirectBehaviour:
    """How the simulated one-call baselines choose their terminal (shared by every profile)."""

    b1_clarify_unresolvable: float
    b1_clarify_ambiguous: float
    b1_state_cues: tuple[StateCue, ...]
    b1_guess_object: float
    b2_slip_dispatch: float
    b2_slip_terminal: float
    b2_clarify_ambiguous: float
    b2_handoff_support: float

    def as_dict(self) -> dict[str, Any]:
        out = {name: getattr(self, name) for name in self.__slots__ if name != "b1_state_cues"}
        out["b1_state_cues"] = [[c.field, c.value, c.rate, c.terminal.value] for c in self.b1_state_cues]
        return out

    def __post_init__(self) -> None:
        for name in self.__slots__:
            if name != "b1_state_cues":
                _rate(getattr(self, name), name)


#: The six screened profiles.  Rates are published aggregate counts over eligible SELECT-160 cases
#: (33 cases each of A1, A2, A3, A5; 28 of A4; 39 ANAPHORA, 33 EXPLICIT_NAME, 19 UNDERSPECIFIED references);
#: latency medians and robust sigmas, and token means, are the published ones.
PROFILES: Mapping[str, SimProfile] = MappingProxyType({p.profile_id: p for p in (
    SimProfile(
        "deepseek_v4_primary", "DeepSeek V4 Pro",
        confusions=(Confusion(A3, A2, 7 / 33), Confusion(A4, A1, 2 / 28)),
        latency_median_ms=1367, latency_sigma=0.139, prompt_overhead=257, completion_overhead=16,
    ),
    SimProfile(
        "deepseek_v4_flash_efficiency", "DeepSeek V4 Flash",
        confusions=(Confusion(A3, A2, 6 / 33), Confusion(A4, A1, 1 / 28)),
        invalid_first_pass=1 / 160, failure_forms={FailureForm.OBJECT_SENTINEL: 1.0},
        latency_median_ms=996, latency_sigma=0.152, prompt_overhead=261, completion_overhead=17,
    ),
    SimProfile(
        "qwencloud_qwen38max_robustness", "Qwen3.8 Max",
        confusions=(Confusion(A1, A2, 3 / 33), Confusion(A1, A3, 1 / 33), Confusion(A3, A2, 4 / 33)),
        latency_median_ms=1930, latency_sigma=0.101, prompt_overhead=245, completion_overhead=3,
    ),
    SimProfile(
        "ohmygpt_gpt4o_historical", "GPT-4o",
        confusions=(Confusion(A1, A2, 2 / 33), Confusion(A2, A1, 2 / 33), Confusion(A3, A2, 4 / 33),
                    Confusion(A4, A1, 1 / 28)),
        object_drop={D.EXPLICIT_NAME: 1 / 33}, object_guess={D.UNDERSPECIFIED: 2 / 19},
        latency_median_ms=1853, latency_sigma=0.051, prompt_overhead=238, completion_overhead=3,
    ),
    SimProfile(
        "qwencloud_qwen37plus_robustness", "Qwen3.7 Plus",
        confusions=(Confusion(A1, A2, 1 / 33), Confusion(A3, A2, 8 / 33), Confusion(A4, A1, 1 / 28)),
        latency_median_ms=2293, latency_sigma=0.102, prompt_overhead=245, completion_overhead=5,
    ),
    SimProfile(
        "ohmygpt_gpt52_frontier", "GPT-5.2",
        confusions=(Confusion(A2, A1, 4 / 33), Confusion(A3, A2, 1 / 33)),
        object_drop={D.ANAPHORA: 7 / 39, D.EXPLICIT_NAME: 1 / 33},
        latency_median_ms=2329, latency_sigma=0.058, prompt_overhead=237, completion_overhead=15,
    ),
)})

#: B1/B2 behaviour, from the published CONFIRM runs (DeepSeek V4 Pro, MAIN+FLIP, 280 cases each): B1 clarified
#: 22 of 61 visibly unresolvable references and 8 of 24 self-declared vague requests, noticed 4 of 4
#: ``action_permission=false``, 1 of 3 ``identity_verified=false``, 3 of 12 ``request_scope_clear=false`` and
#: 2 of 35 ``service_available=false``, and named a candidate for 22 of 39 unresolvable references it dispatched;
#: B2 dispatched 1 and mis-terminated 2 of 166 blocked cases, clarified 2 of 14 vague allowed requests and reported
#: the support action on 18 of 37 hand-offs.
DIRECT = DirectBehaviour(
    b1_clarify_unresolvable=22 / 61, b1_clarify_ambiguous=8 / 24,
    b1_state_cues=(StateCue("action_permission", False, 4 / 4, Terminal.CLARIFY),
                   StateCue("identity_verified", False, 1 / 3, Terminal.CLARIFY),
                   StateCue("request_scope_clear", False, 3 / 12, Terminal.CLARIFY),
                   StateCue("service_available", False, 2 / 35, Terminal.DEFER)),
    b1_guess_object=22 / 39, b2_slip_dispatch=1 / 166, b2_slip_terminal=2 / 166, b2_clarify_ambiguous=2 / 14,
    b2_handoff_support=18 / 37,
)

#: Prompt tokens added by each stage's system prompt relative to ROUTEBR, and each stage's latency relative to
#: ROUTEBR (published CONFIRM, DeepSeek V4 Pro: median 1,439 ms RouteBR, 1,492 ms B1, 1,539 ms B2).
_STAGE_PROMPT_OFFSET = MappingProxyType({Stage.ROUTEBR: 0, Stage.B1_DIRECT: -101, Stage.B2_DIRECT_GUARD: -30})
_STAGE_LATENCY_FACTOR = MappingProxyType({Stage.ROUTEBR: 1.0, Stage.B1_DIRECT: 1492 / 1439,
                                         Stage.B2_DIRECT_GUARD: 1539 / 1439})
#: A repair call's system prompt is short; its payload (which embeds the original one) carries the weight.
_REPAIR_PROMPT_OFFSET = -150


def profile_table(profiles: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """The simulated profiles' parameters, one row each (for documentation and notebooks)."""
    chosen = PROFILES.values() if profiles is None else (resolve_profile(p) for p in profiles)
    return [p.as_row() for p in chosen]


def resolve_profile(profile: str | SimProfile) -> SimProfile:
    """A profile by id (``deepseek_v4_primary`` or ``sim:deepseek_v4_primary``), or the profile itself."""
    if isinstance(profile, SimProfile):
        return profile
    key = str(profile).removeprefix("sim:")
    try:
        return PROFILES[key]
    except KeyError:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "one of the simulated profiles: " + ", ".join(PROFILES),
                        got=profile, field="profile") from None


def estimate_tokens(text: str) -> float:
    """A tokenizer-free token estimate: 0.6 per CJK character, 0.3 per other character."""
    cjk = len(_CJK.findall(text))
    return TOKENS_PER_CJK * cjk + TOKENS_PER_CHAR * (len(text) - cjk)


class _Draft(NamedTuple):
    """The output a simulated call intends, the events that shaped it, and how its first pass is spoiled."""

    output: dict[str, Any]
    events: tuple[SimEvent, ...]
    spoiled: FailureForm | None = None


class SimulatedBackend:
    """A seeded simulator of one hosted backend (``sim:<profile>``) over a known set of benchmark cases.

    Answers ``ROUTEBR``, ``B1_DIRECT``, ``B2_DIRECT_GUARD`` and their repair stages.  ``sleep_scale`` > 0 makes
    each call actually wait ``latency × sleep_scale`` (for runner demonstrations); by default nothing sleeps.
    """

    def __init__(self, profile: str | SimProfile, cases: Iterable[Case] | Mapping[str, Case], *, seed: int = 0,
                 direct: DirectBehaviour = DIRECT, sleep_scale: float = 0.0) -> None:
        self.profile = resolve_profile(profile)
        if cases is None:
            raise DataError(ErrorCode.INVALID_VALUE, "the benchmark cases (a simulator starts from their gold "
                            "labels)", got=None, field="cases")
        values = cases.values() if isinstance(cases, Mapping) else cases
        self.cases: Mapping[str, Case] = MappingProxyType({c.case_id: c for c in values})
        if not self.cases:
            raise DataError(ErrorCode.INVALID_VALUE, "at least one benchmark case", got=0, field="cases")
        if type(seed) is not int:
            raise DataError(ErrorCode.WRONG_TYPE, "an integer seed", got=seed, field="seed")
        if not (isinstance(sleep_scale, (int, float)) and sleep_scale >= 0):
            raise DataError(ErrorCode.INVALID_VALUE, "a non-negative sleep scale", got=sleep_scale,
                            field="sleep_scale")
        self.seed, self.direct, self.sleep_scale = seed, direct, float(sleep_scale)
        self.name = f"sim:{self.profile.profile_id}"
        self._engines: dict[str, PolicyEngine] = {}

    def __repr__(self) -> str:
        return f"SimulatedBackend({self.profile.profile_id!r}, {len(self.cases)} cases, seed={self.seed})"

    async def complete(self, call: ModelCall) -> ModelReply:
        case = self.cases.get(call.request_id)
        if case is None:
            return ModelReply.failed(FailureKind.EXCEPTION, f"{self.name} has no case {call.request_id!r} "
                                     "(a simulator only answers the cases it was given)")
        try:
            if call.stage.is_repair:
                content, events = self._repair(case, call)
            else:
                content, events = self._first_pass(case, call.stage, call.payload)
        except _Unsupported as exc:
            return ModelReply.failed(FailureKind.EXCEPTION, str(exc))
        latency = self._latency(case, call.stage)
        if self.sleep_scale:
            await asyncio.sleep(latency / 1000.0 * self.sleep_scale)
        offset = _REPAIR_PROMPT_OFFSET if call.stage.is_repair else _STAGE_PROMPT_OFFSET[call.stage]
        payload_text = json.dumps(call.payload, ensure_ascii=False, separators=(",", ":"), default=str)
        prompt = self.profile.prompt_overhead + offset + estimate_tokens(payload_text)
        completion = self.profile.completion_overhead + estimate_tokens(content)
        return ModelReply(
            content=content, model=self.name, prompt_tokens=max(1, round(prompt)),
            completion_tokens=max(1, round(completion)), latency_ms=round(latency, 3),
            extra={"simulated": {"profile": self.profile.profile_id, "seed": self.seed,
                                 "events": [e.value for e in events]}},
        )

    def manifest(self) -> dict[str, Any]:
        """What a run manifest records: the parameters, the seed and the simulator source, hashed together (so
        resuming a run with another seed, profile or simulator version is refused)."""
        parameters = {"profile": self.profile.as_dict(), "direct": self.direct.as_dict()}
        source = sha256_file(__file__)
        identity = sha256_json({"parameters": parameters, "seed": self.seed, "source_sha256": source})
        return {"name": self.name, "kind": "simulated", "seed": self.seed, "parameters": parameters,
                "profile": {"id": self.profile.profile_id, "sha256": identity}, "source_sha256": source}

    def _uniform(self, case_id: str, stage: Stage, decision: str) -> float:
        """A uniform number in (0, 1) determined by (seed, profile, case, stage, decision) alone."""
        key = "\x1f".join((str(self.seed), self.profile.profile_id, case_id, stage.value, decision))
        bits = int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big") >> 11
        return (bits + 0.5) / 2.0 ** 53

    def _chance(self, case: Case, stage: Stage, decision: str, rate: float) -> bool:
        return rate > 0 and self._uniform(case.case_id, stage, decision) < rate

    def _pick(self, case: Case, stage: Stage, decision: str, options: list[Any]) -> Any:
        return options[int(self._uniform(case.case_id, stage, decision) * len(options))]

    def _latency(self, case: Case, stage: Stage) -> float:
        z = _NORMAL.inv_cdf(self._uniform(case.case_id, stage, "latency"))
        factor = _STAGE_LATENCY_FACTOR.get(stage, 1.0)  # a repair costs one more ROUTEBR-sized call
        return self.profile.latency_median_ms * factor * math.exp(self.profile.latency_sigma * z)

    def _first_pass(self, case: Case, stage: Stage, payload: Mapping[str, Any]) -> tuple[str, tuple[SimEvent, ...]]:
        draft = self._draft(case, stage, payload)
        if draft.spoiled is None:
            return _dump(draft.output), draft.events
        spoiled = _spoil(draft.output, draft.spoiled, _catalog_types(payload))
        return spoiled, draft.events + (SimEvent.FIRST_PASS_SPOILED,)

    def _repair(self, case: Case, call: ModelCall) -> tuple[str, tuple[SimEvent, ...]]:
        payload = call.payload
        original_stage = Stage(call.stage.value.removeprefix("REPAIR_"))
        draft = self._draft(case, original_stage, payload.get("original_payload") or {})
        invalid = payload.get("invalid_output")
        fixable = draft.spoiled is None or draft.spoiled.format_only
        if fixable and self._chance(case, call.stage, "repair", self.profile.repair_fixes):
            return _dump(draft.output), draft.events + (SimEvent.REPAIR_FIXED,)
        unchanged = invalid if isinstance(invalid, str) else _dump(invalid)
        return unchanged, draft.events + (SimEvent.REPAIR_UNCHANGED,)

    def _draft(self, case: Case, stage: Stage, payload: Mapping[str, Any]) -> _Draft:
        if stage not in _STAGE_PROMPT_OFFSET:
            raise _Unsupported(f"{self.name} does not answer stage {stage.value}")
        catalog = _catalog_types(payload)
        events: list[SimEvent] = []
        action = self._action(case, stage, events)
        object_id = self._object(case, stage, action, catalog, payload, events)
        topk = _topk(case, action, catalog)
        if stage is Stage.ROUTEBR:
            output: dict[str, Any] = {"action_id": action, "object_id": object_id, "topk": topk}
        elif stage is Stage.B1_DIRECT:
            output = self._b1(case, payload, action, object_id, topk, catalog, events)
        else:
            output = self._b2(case, payload, action, object_id, topk, catalog, events)
        spoiled = None
        if self._chance(case, stage, "first_pass", self.profile.invalid_first_pass):
            forms = self.profile.failure_forms
            u = self._uniform(case.case_id, stage, "failure_form") * sum(forms.values())
            spoiled = next((f for f, c in zip(forms, itertools.accumulate(forms.values())) if u < c), [*forms][-1])
        return _Draft(output, tuple(events), spoiled)

    def _action(self, case: Case, stage: Stage, events: list[SimEvent]) -> str:
        gold = case.gold.action
        candidates = [c for c in self.profile.confusions if c.source == gold]
        if not candidates:
            return gold
        n = max(1, len(case.gold.cues))
        w = self.profile.cue_weight
        scale = (1 + w * (n - 1)) / (1 + w * (_REFERENCE_CUES - 1))
        u = self._uniform(case.case_id, stage, "action")
        for confusion in candidates:
            p = min(1.0, confusion.rate * scale)
            if u < p:
                events.append(SimEvent.ACTION_CONFUSED)
                return confusion.target
            u -= p
        return gold

    def _object(self, case: Case, stage: Stage, action: str, catalog: Mapping[str, tuple[str, ...]],
                payload: Mapping[str, Any], events: list[SimEvent]) -> str:
        if _is_object_free(action, catalog):
            return NONE
        gold = case.gold.object_id
        if gold == NONE:  # an object-free request read as an object-requiring action: nothing to name
            return UNRESOLVED
        difficulty = case.gold.object_difficulty
        if gold != UNRESOLVED:
            if self._chance(case, stage, "object", self.profile.object_drop.get(difficulty, 0.0)):
                events.append(SimEvent.OBJECT_DROPPED)
                return UNRESOLVED
            return gold
        if self._chance(case, stage, "object", self.profile.object_guess.get(difficulty, 0.0)):
            events.append(SimEvent.OBJECT_GUESSED)
            return self._guess(case, stage, payload)
        return UNRESOLVED

    def _guess(self, case: Case, stage: Stage, payload: Mapping[str, Any]) -> str:
        ids = [e.get("object_id") for e in payload.get("entities", ()) if isinstance(e, Mapping)]
        ids = [i for i in ids if isinstance(i, str)] or [e.object_id for e in case.request.candidates]
        return self._pick(case, stage, "object_pick", ids) if ids else UNRESOLVED

    def _b1(self, case: Case, payload: Mapping[str, Any], action: str, object_id: str, topk: list[str],
            catalog: Mapping[str, tuple[str, ...]], events: list[SimEvent]) -> dict[str, Any]:
        """B1 Direct: no rule program; dispatch unless a visible cue suggests otherwise."""
        stage, behaviour = Stage.B1_DIRECT, self.direct
        terminal = Terminal.DISPATCH
        needs_object = not _is_object_free(action, catalog)
        if needs_object and case.gold.object_difficulty in _UNRESOLVABLE and \
                self._chance(case, stage, "clarify_unresolvable", behaviour.b1_clarify_unresolvable):
            terminal = Terminal.CLARIFY
            events.append(SimEvent.B1_CLARIFY_UNRESOLVABLE)
        elif _ambiguous(case) and self._chance(case, stage, "clarify_ambiguous", behaviour.b1_clarify_ambiguous):
            terminal = Terminal.CLARIFY
            events.append(SimEvent.B1_CLARIFY_AMBIGUOUS)
        else:
            state = payload.get("runtime_context") or {}
            for cue in behaviour.b1_state_cues:
                if cue.field in state and state[cue.field] == cue.value and \
                        self._chance(case, stage, f"state:{cue.field}", cue.rate):
                    terminal = cue.terminal
                    events.append(SimEvent.B1_STATE_NOTICED)
                    break
        if terminal is Terminal.DISPATCH and needs_object and object_id == UNRESOLVED and \
                case.gold.object_difficulty in _UNRESOLVABLE and \
                self._chance(case, stage, "guess_on_dispatch", behaviour.b1_guess_object):
            object_id = self._guess(case, stage, payload)
            events.append(SimEvent.OBJECT_GUESSED)
        return _direct_output(terminal, action, object_id, topk)

    def _b2(self, case: Case, payload: Mapping[str, Any], action: str, object_id: str, topk: list[str],
            catalog: Mapping[str, tuple[str, ...]], events: list[SimEvent]) -> dict[str, Any]:
        """B2 Direct+Guard: the rule table it was sent, first match, with small per-case slips."""
        stage, behaviour = Stage.B2_DIRECT_GUARD, self.direct
        engine = self._engine(payload, catalog)
        state = payload.get("runtime_context") or {}
        winner = engine.evaluate(action, state)
        cited = winner.rule_id
        terminal = Terminal.from_boundary(winner.decision)
        if terminal is Terminal.DISPATCH:
            if not _is_object_free(action, catalog) and object_id == UNRESOLVED:
                terminal = Terminal.CLARIFY
            elif _ambiguous(case) and self._chance(case, stage, "clarify_ambiguous", behaviour.b2_clarify_ambiguous):
                terminal = Terminal.CLARIFY
                events.append(SimEvent.B2_CLARIFY_AMBIGUOUS)
        elif self._chance(case, stage, "slip_dispatch", behaviour.b2_slip_dispatch):
            terminal = Terminal.DISPATCH
            cited = next(r.rule_id for r in engine.rules if r.is_default)
            events.append(SimEvent.B2_SLIP_DISPATCH)
        elif terminal is not Terminal.CLARIFY and \
                self._chance(case, stage, "slip_terminal", behaviour.b2_slip_terminal):
            terminal = Terminal.CLARIFY
            events.append(SimEvent.B2_SLIP_TERMINAL)
        elif terminal is Terminal.HANDOFF:
            support = next((a for a in catalog if _is_object_free(a, catalog)), None)
            if support is not None and support != action and \
                    self._chance(case, stage, "handoff_support", behaviour.b2_handoff_support):
                topk = [support] + [a for a in topk if a != support][:2]
                action, object_id = support, NONE
                events.append(SimEvent.B2_HANDOFF_SUPPORT)
        return {**_direct_output(terminal, action, object_id, topk), "rule_ids": [cited]}

    def _engine(self, payload: Mapping[str, Any], catalog: Mapping[str, tuple[str, ...]]) -> PolicyEngine:
        rules = payload.get("rules")
        if not isinstance(rules, list) or not rules:
            raise _Unsupported(f"{self.name}: a B2_DIRECT_GUARD payload must carry its rule table")
        key = json.dumps(rules, sort_keys=True, ensure_ascii=False, default=str)
        engine = self._engines.get(key)
        if engine is None:
            try:
                engine = PolicyEngine([rule(r["rule_id"], r["priority"], r["applies_to"], r["condition"],
                                            r["decision"], r.get("version", "v1")) for r in rules], catalog)
            except (DataError, KeyError, TypeError) as exc:
                raise _Unsupported(f"{self.name}: unusable rule table in the payload ({exc})") from None
            self._engines[key] = engine
        return engine


class _Unsupported(Exception):
    """A call the simulator cannot answer (becomes a failure reply, never a crash)."""


def _catalog_types(payload: Mapping[str, Any]) -> Mapping[str, tuple[str, ...]]:
    """``action_id → required_object_types`` from the catalog the call was sent (in catalog order)."""
    entries = payload.get("catalog") or ()
    return {e["action_id"]: tuple(e.get("required_object_types") or ())
            for e in entries if isinstance(e, Mapping) and isinstance(e.get("action_id"), str)}


def _is_object_free(action: str, catalog: Mapping[str, tuple[str, ...]]) -> bool:
    types = catalog.get(action, ())
    return not types or OBJECT_FREE_TYPE in types


def _ambiguous(case: Case) -> bool:
    return any(cue.get("family") == _AMBIGUITY_CUE for cue in case.gold.cues)


def _topk(case: Case, action: str, catalog: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The primary action, then the gold action (if confused away from it), then the cue families' actions."""
    ranked = [action, case.gold.action] + [_CUE_ACTIONS.get(cue.get("family"), "") for cue in case.gold.cues]
    return [a for a in dict.fromkeys(ranked) if a and (a in catalog or not catalog)][:3]


def _direct_output(terminal: Terminal, action: str, object_id: str, topk: list[str]) -> dict[str, Any]:
    boundary = Boundary.ALLOW if terminal is Terminal.DISPATCH else Boundary(terminal.value)
    return {"terminal": terminal.value, "action_id": action, "object_id": object_id, "boundary": boundary.value,
            "topk": topk}


def _dump(output: Any) -> str:
    return json.dumps(output, ensure_ascii=False)


def _spoil(output: dict[str, Any], form: FailureForm, catalog: Mapping[str, tuple[str, ...]]) -> str:
    if form is FailureForm.CODE_FENCE:
        return "```json\n" + _dump(output) + "\n```"
    if form is FailureForm.TRUNCATED:
        text = _dump(output)
        return text[: len(text) // 2]
    wrong = UNRESOLVED if _is_object_free(output["action_id"], catalog) else NONE
    return _dump({**output, "object_id": wrong})
