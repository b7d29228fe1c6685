"""Exhaustive policy analysis of a release — every state, every proposal — with witnesses replayed through the
real controller (issue 21): :func:`verify_release` (regions, dispatch formulas, findings, properties),
:func:`semantic_diff` (base vs candidate: equivalent / narrowing / widening / incomparable per action) and
:func:`coverage` (what the recorded traffic exercises).  Imports :mod:`routebr_kit.core` and
:mod:`routebr_kit.store` only."""

from .analysis import VerifyReport, verify_release
from .coverage import CoverageReport, Observation, coverage, coverage_gate, observations_from_ledgers
from .program import VerifierMismatch
from .properties import Property, load_properties, parse_properties
from .semdiff import Relation, SemanticDiff, semantic_diff

__all__ = ["CoverageReport", "Observation", "Property", "Relation", "SemanticDiff", "VerifierMismatch",
           "VerifyReport", "coverage", "coverage_gate", "load_properties", "observations_from_ledgers",
           "parse_properties", "semantic_diff", "verify_release"]
