"""Release gates: criteria over a :class:`~routebr_kit.review.diff.DiffReport` that decide the CI exit status.

A gate is a list of criteria, each ``METRIC[SPLIT] OP NUMBER[pp]``::

    new_forbidden_dispatch <= 0
    new_false_dispatch <= 0
    path_exact_drop <= 1.0pp
    flip_pairs_drop <= 0
    path_exact_drop[MAIN] <= 0.5pp

given inline (separated by ``,``, ``;`` or newlines) or as a JSON/YAML file holding a list of such strings, a
mapping ``{metric: "<= 0"}``, or either under a ``gate`` key.  Rate metrics (``*_drop`` of a rate) are in
percentage points and must say so (``pp``); count metrics and the p-value ``path_exact_regression_p`` must not.
``path_exact_regression_p`` (one-sided exact McNemar) and ``path_exact_drop_lcb`` (exact paired-bootstrap lower
bound) read the paired discordant rows (:mod:`routebr_kit.evaluation.paired`); how often any criterion fails with
nothing changed is estimated by :mod:`routebr_kit.review.calibration` (``routebr-kit gate-check``).  Unknown
metrics, operators, splits and malformed numbers are typed :class:`~routebr_kit.core.errors.DataError` values,
never a silent default.

Two dispatch metrics, on purpose side by side: ``new_false_dispatch`` is the paper's, against the gold label (a
gold-bounded row that newly dispatches); ``new_forbidden_dispatch`` is against the rules (a row that newly dispatches
an action/object its release's controller would not dispatch on that row's state, whatever the gold label;
:mod:`routebr_kit.evaluation.forbidden`).  Only the second catches a gold-ALLOW row that newly dispatches a blocked
action.  ``forbidden_dispatch`` is the candidate's total (``<= 0``: no forbidden dispatch at all).
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.cases import Split
from ..store.files import read_document
from .diff import DiffReport

#: Every metric a gate may read, with its unit.
METRICS: Mapping[str, str] = {
    "changed": "count", "new_forbidden_dispatch": "count", "forbidden_dispatch": "count",
    "forbidden_dispatch_increase": "count", "new_false_dispatch": "count", "new_false_block": "count", "fixed": "count",
    "other_path_change": "count", "trace_only": "count", "new_errors": "count", "needs_live_rerun": "count",
    "flip_pairs_drop": "count", "false_dispatch_increase": "count", "false_block_increase": "count",
    "path_exact_drop": "pp", "strict_exact_drop": "pp", "object_accuracy_drop": "pp",
    "widening": "count",  # actions whose dispatch set the candidate release widens (routebr_kit.verify.releases)
    # paired statistics of the path-exact change (routebr_kit.evaluation.paired): the one-sided exact McNemar
    # p-value of a regression, and the exact paired-bootstrap one-sided 95% lower confidence bound of the drop
    "path_exact_regression_p": "p", "path_exact_drop_lcb": "pp",
}
OPERATORS: Mapping[str, Callable[[float, float], bool]] = {
    "<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq,
}
#: The gate a release review uses when none is given: no new forbidden dispatch, no new false dispatch, at most 1pp
#: exact-match drop, no lost FLIP pair.
DEFAULT_GATE = ("new_forbidden_dispatch <= 0, new_false_dispatch <= 0, path_exact_drop <= 1.0pp, "
                "flip_pairs_drop <= 0")
#: The gate for a candidate that is a **re-run** (a prompt or backend change: every proposal drawn again), where two
#: runs of an unchanged system already differ by chance: no new forbidden dispatch (a safety criterion that a
#: controller row cannot fail by chance) and the one-sided exact McNemar test of a path-exact regression at 5%.  Its
#: A/A false-alarm rate is measured by ``routebr-kit gate-check`` (README "How much to trust a gate"); the
#: thresholds of :data:`DEFAULT_GATE` are exact for an offline replay, which has no such noise.
RERUN_GATE = "new_forbidden_dispatch <= 0, path_exact_regression_p >= 0.05"

_CRITERION = re.compile(r"^\s*(?P<metric>[A-Za-z_]+)\s*(?:\[\s*(?P<split>[A-Za-z]+)\s*\])?\s*"
                        r"(?P<op><=|>=|==|<|>)\s*(?P<number>[-+]?\d+(?:\.\d+)?)\s*(?P<unit>pp)?\s*$")


@dataclass(frozen=True, slots=True)
class Criterion:
    metric: str
    op: str
    threshold: float
    split: str | None = None

    @property
    def unit(self) -> str:
        return METRICS[self.metric]

    def __str__(self) -> str:
        where = f"[{self.split}]" if self.split else ""
        number = f"{self.threshold:g}" + ("pp" if self.unit == "pp" else "")
        return f"{self.metric}{where} {self.op} {number}"


@dataclass(frozen=True, slots=True)
class CriterionResult:
    criterion: Criterion
    value: float
    passed: bool

    def line(self) -> str:
        shown = f"{self.value:.3f}pp" if self.criterion.unit == "pp" else f"{self.value:g}"
        if math.isnan(self.value):
            return f"FAIL {self.criterion} (not measured: the releases are not known)"
        return f"{'PASS' if self.passed else 'FAIL'} {self.criterion} (measured {shown})"

    def as_dict(self) -> dict[str, Any]:
        return {"criterion": str(self.criterion), "value": self.value, "passed": self.passed}


@dataclass(frozen=True, slots=True)
class GateResult:
    results: tuple[CriterionResult, ...]
    source: str

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.results)

    def lines(self) -> list[str]:
        return [r.line() for r in self.results] + [f"gate {'PASSED' if self.passed else 'FAILED'} ({self.source})"]

    def as_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "source": self.source, "criteria": [r.as_dict() for r in self.results]}


def parse_criterion(text: str, *, where: str = "gate") -> Criterion:
    match = _CRITERION.match(text)
    if match is None:
        bad_op = re.search(r"(=<|=>|!=|<>|=(?!=))", text)
        if bad_op and not re.search(r"(<=|>=|==)", text):
            raise DataError(ErrorCode.UNKNOWN_OPERATOR, "one of " + ", ".join(OPERATORS), got=text, field=where)
        raise DataError(ErrorCode.INVALID_VALUE, "a criterion 'METRIC[SPLIT] OP NUMBER[pp]', e.g. "
                        "'path_exact_drop <= 1.0pp'", got=text, field=where)
    metric, split, op, number, unit = match.group("metric", "split", "op", "number", "unit")
    if metric not in METRICS:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "a gate metric (" + ", ".join(METRICS) + ")", got=metric, field=where)
    if split is not None:
        split = split.upper()
        if split not in {s.value for s in Split}:
            raise DataError(ErrorCode.UNKNOWN_ENUM, "a split (MAIN, FLIP, ENTITY, DEV)", got=split, field=where)
    threshold = float(number)
    if not math.isfinite(threshold):  # pragma: no cover - the pattern admits only finite decimals
        raise DataError(ErrorCode.INVALID_VALUE, "a finite number", got=number, field=where)
    if METRICS[metric] == "pp" and unit is None:
        raise DataError(ErrorCode.INVALID_OPERAND, f"{metric} in percentage points (write e.g. {number}pp)",
                        got=text, field=where)
    if METRICS[metric] != "pp" and unit is not None:
        raise DataError(ErrorCode.INVALID_OPERAND, f"{metric} as a {METRICS[metric]} (no 'pp')", got=text,
                        field=where)
    return Criterion(metric, op, threshold, split)


@dataclass(frozen=True, slots=True)
class Gate:
    criteria: tuple[Criterion, ...]
    source: str = "inline"

    @classmethod
    def parse(cls, spec: str, *, source: str = "inline") -> Gate:
        parts = [p for p in re.split(r"[,;\n]", spec) if p.strip() and not p.strip().startswith("#")]
        if not parts:
            raise DataError(ErrorCode.EMPTY_VALUE, "at least one gate criterion", got=spec, field="gate")
        return cls(tuple(parse_criterion(p) for p in parts), source)

    @classmethod
    def from_items(cls, items: Any, *, source: str) -> Gate:
        if isinstance(items, Mapping) and "gate" in items and len(items) == 1:
            items = items["gate"]
        texts: list[str] = []
        if isinstance(items, str):
            return cls.parse(items, source=source)
        if isinstance(items, Mapping):
            for metric, rule in items.items():
                if not isinstance(rule, (str, int, float)) or isinstance(rule, bool):
                    raise DataError(ErrorCode.WRONG_TYPE, "'OP NUMBER[pp]' per metric", got=rule, file=source,
                                    field=str(metric))
                texts.append(f"{metric} {rule}" if isinstance(rule, str) else f"{metric} <= {rule}")
        elif isinstance(items, Sequence) and all(isinstance(i, str) for i in items):
            texts = list(items)
        else:
            raise DataError(ErrorCode.WRONG_TYPE, "a list of criteria or a mapping metric -> 'OP NUMBER'",
                            got=items, file=source)
        if not texts:
            raise DataError(ErrorCode.EMPTY_VALUE, "at least one gate criterion", file=source)
        try:
            return cls(tuple(parse_criterion(t) for t in texts), source)
        except DataError as exc:
            raise exc.at(file=source) from None

    @classmethod
    def load(cls, path: str | Path) -> Gate:
        path = Path(path)
        if path.suffix.lower() not in (".json", ".yaml", ".yml"):
            raise DataError(ErrorCode.INVALID_VALUE, "a .json, .yaml or .yml gate file", file=str(path))
        return cls.from_items(read_document(path, "a gate file"), source=str(path))

    @classmethod
    def from_arg(cls, value: str) -> Gate:
        """A ``--gate`` value: an existing file, or an inline spec."""
        if Path(value).suffix.lower() in (".json", ".yaml", ".yml"):
            return cls.load(value)
        return cls.parse(value)

    def evaluate(self, report: DiffReport, releases: Any = None, *,
                 release_values: Mapping[str, float] | None = None) -> GateResult:
        """``releases``: the (base, candidate) :class:`~routebr_kit.store.assets.Assets` for release metrics
        (``widening``); by default resolved from the report's ledger roots.  ``release_values``: those metrics
        already computed (:class:`~routebr_kit.verify.releases.ReleaseCheck`); a NaN value (the releases could not
        be resolved) fails its criterion."""
        results = []
        from ..verify.releases import RELEASE_METRICS, release_metrics
        if release_values is not None:
            release: Mapping[str, float] = release_values
        else:
            release = (release_metrics(report.base_root, report.candidate_root, releases)
                       if any(c.metric in RELEASE_METRICS for c in self.criteria) else {})
        for c in self.criteria:
            value = float(release[c.metric] if c.metric in RELEASE_METRICS else report.metrics(c.split)[c.metric])
            passed = not math.isnan(value) and OPERATORS[c.op](value, c.threshold)
            results.append(CriterionResult(c, value, passed))
        return GateResult(tuple(results), self.source)

    def with_widening(self) -> Gate:
        """This gate plus ``widening <= 0`` (unless it already reads ``widening``)."""
        if any(c.metric == "widening" for c in self.criteria):
            return self
        return Gate((*self.criteria, parse_criterion("widening <= 0")), f"{self.source} + widening")

    def __str__(self) -> str:
        return ", ".join(str(c) for c in self.criteria)


def default_gate(*, replay: bool, identical: bool | None = None, differs: bool = False) -> Gate:
    """The gate to judge a candidate by when none is given (issue 31: the exact verifier in every default gate).

    ``identical``: whether the two sides' manifests record the same release (every asset hash); ``differs``: whether
    a decision asset (rules, catalog, registry, state schema) differs.  The **re-run gate** (:data:`RERUN_GATE`)
    only for two runs that each drew their proposals of one and the same release (the difference is chance: the
    thresholds of :data:`DEFAULT_GATE` alarm on about half of unchanged re-runs — notebook 10 measures it — while
    the re-run gate's A/A false-alarm rate is within 5%).  Otherwise the release gate :data:`DEFAULT_GATE` — exact
    for an offline **replay** of recorded proposals (a ``shadow`` output) — plus ``widening <= 0`` when a decision
    asset differs or the release is not known.  ``identical=None`` (no manifest hashes): a replay takes the
    release gate, a re-run the re-run gate plus ``widening <= 0``."""
    if not replay and identical is not False:
        gate = Gate.parse(RERUN_GATE, source="re-run gate")
        return gate.with_widening() if differs and identical is None else gate
    gate = Gate.parse(DEFAULT_GATE, source="default gate")
    return gate.with_widening() if differs else gate


def choose_gate(gate: Gate | None, base: Any, candidate: Any, report: DiffReport, *, replay: bool,
                allow_widening: Sequence[str] = ()) -> tuple[Gate, Any]:
    """The gate for two ledger sets and the exact verifier's check (issue 31): the manifests' asset hashes decide.
    Identical releases: the re-run gate (or ``gate``); otherwise the release gate (or ``gate``) plus
    ``widening <= 0`` from the semantic diff of the two releases (resolved from an artifact or a shadow output; a
    run directory records only hashes — the widening criterion then fails, naming why; when neither side records
    any hash, nothing is known to differ and the gate is chosen as before).  Returns the gate and the
    :class:`~routebr_kit.verify.releases.ReleaseCheck`."""
    from ..core.errors import KitError
    from ..verify import observations_from_ledgers
    from ..verify.releases import (
        DECISION_ASSETS,
        assets_hashes,
        differing_assets,
        manifest_hashes,
        release_assets,
        release_check,
    )

    def resolve(root: str) -> Any:
        try:
            return release_assets(root)
        except (KitError, OSError):
            return None

    a, b = resolve(report.base_root), resolve(report.candidate_root)
    hb = manifest_hashes(base) or (assets_hashes(a) if a is not None else None)
    hc = manifest_hashes(candidate) or (assets_hashes(b) if b is not None else None)
    if hb is None and hc is None:  # neither side records its release (published-layout run folders): as before
        return (gate if gate is not None else default_gate(replay=replay)), release_check(None, None, differs=())
    every = (*DECISION_ASSETS, "prompts", "profile")
    all_differ = differing_assets(hb, hc, every)
    identical = None if all_differ is None else not all_differ
    differs = differing_assets(hb, hc)
    unknown = differs is None
    chosen = gate if gate is not None else default_gate(replay=replay, identical=identical,
                                                       differs=unknown or bool(differs))
    if unknown or differs:
        chosen = chosen.with_widening()
        check = release_check(a, b, observations=observations_from_ledgers(base), allow_widening=allow_widening,
                              differs=differs or ("release (no recorded hashes)",))
    else:
        check = release_check(None, None, differs=())
    return chosen, check


__all__ = ["DEFAULT_GATE", "METRICS", "OPERATORS", "RERUN_GATE", "Criterion", "CriterionResult", "Gate", "GateResult",
           "choose_gate", "default_gate", "parse_criterion"]
