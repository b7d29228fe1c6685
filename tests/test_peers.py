"""The published program encoded for Cedar and Rego (``benchmarks/peers_encode.py``) decides as ``Controller.decide``
does — on a subset of the recorded proposals, a slice of the state grid and fail-closed proposals, under each
controller system's options.  The full check and the timing are ``benchmarks/bench_peers.py``."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("cedarpy")
pytest.importorskip("regopy")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))

from bench_peers import fail_closed, grid, recorded  # noqa: E402
from peers_encode import CedarProgram, RegoProgram, agreement, kit_outcome  # noqa: E402

from routebr_kit.store.artifact import Artifact  # noqa: E402


@pytest.fixture(scope="module")
def rows(routebr_artifact):
    return recorded(Artifact(routebr_artifact))


@pytest.fixture(scope="module")
def engines():
    made: dict[int, tuple] = {}

    def of(controller):
        if id(controller) not in made:
            made[id(controller)] = (controller, (CedarProgram(controller), RegoProgram(controller)))
        return made[id(controller)][1]
    return of


def _disagreements(items, engines) -> list:
    out = []
    for controller, request, output in items:
        out += agreement(controller, [(request, output)], engines(controller))
    return out


def test_the_peers_agree_on_recorded_proposals(rows, engines):
    chosen = rows[::7]  # every system's rows, valid and invalid outputs
    assert {c.options for c, _, _ in chosen} == {c.options for c, _, _ in rows} and len(chosen) >= 200
    assert _disagreements(chosen, engines) == []


def test_the_peers_agree_on_fail_closed_proposals(rows, engines):
    chosen = fail_closed(rows[:40])
    assert all(kit_outcome(c.decide(r, o))[4].startswith("FAIL_CLOSED") for c, r, o in chosen)
    assert _disagreements(chosen, engines) == []


def test_the_peers_agree_on_a_slice_of_the_state_grid(rows, routebr_artifact, engines):
    candidates = tuple(list(Artifact(routebr_artifact).assets.registry)[:2])
    controllers = list({id(c): c for c, _, _ in rows}.values())
    for controller in controllers:
        chosen = grid(controller, candidates)
        items = [(controller, r, o) for r, o in chosen[::9] + chosen[-30:]]  # includes the broken states
        assert _disagreements(items, engines) == []
    reasons = {kit_outcome(controllers[0].decide(r, o))[4] for r, o in grid(controllers[0], candidates)}
    assert {"BOUNDARY_TERMINAL", "DISPATCH_OK", "OBJECT_UNRESOLVED", "FAIL_CLOSED_INVALID_STATE",
            "FAIL_CLOSED_INVALID_OUTPUT"} <= reasons
