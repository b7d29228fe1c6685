"""Exhaustive policy analysis of a release — every state, every proposal — with witnesses replayed through the
real controller (issue 21): :func:`verify_release` (regions, dispatch formulas, findings, properties),
:func:`semantic_diff` (base vs candidate: equivalent / narrowing / widening / incomparable per action) and
:func:`coverage` (what the recorded traffic exercises).  Imports :mod:`routebr_kit.core` and
:mod:`routebr_kit.store` only."""

from .. import lazy_exports

#: Every public name → the module that defines it, imported on first use.
_EXPORTS: dict[str, str] = {name: module for module, names in {
    "analysis": "VerifyReport verify_release",
    "horizon_replay": "replay_counterexample",
    "program": "VerifierMismatch",
    "properties": "Property load_properties parse_properties",
    "semdiff": "Relation SemanticDiff semantic_diff",
    "traffic_coverage": "CoverageReport Observation coverage coverage_gate observations_from_ledgers",
}.items() for name in names.split()}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
