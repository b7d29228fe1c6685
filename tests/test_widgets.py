"""The notebook-00 and notebook-08 explorers, driven by setting widget values in Python (no browser)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute import MetaRouteConfig, Mode, run_benchmark
from routebr_kit.metaroute.analysis import ranking_agreement, summary_frame
from routebr_kit.notebook.widgets import (
    Figure1Explorer,
    MetaRouteExplorer,
    decision_paths_figure,
    parse_topk,
    policy_outcomes_figure,
)

STATE = {"identity_verified": True, "entity_resolved": True, "action_permission": True, "service_available": True,
         "context_fresh": True, "safety_escalation_required": False, "request_supported": True,
         "request_scope_clear": True, "policy_version": "v1"}
BOOLEAN = [k for k, v in STATE.items() if isinstance(v, bool)]
ACTIONS = ["A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE", "A5_PROTECTED_ACTION"]


@pytest.fixture(scope="module")
def controller(kit_data):
    return rk.load_assets(kit_data / "catalog.csv", kit_data / "boundary_rules.csv").controller()


@pytest.fixture(scope="module")
def request_and_proposal():
    etf = rk.Entity("SSE:510300", "ETF", "CSI 300 ETF", ("510300",))
    request = rk.RouteRequest("FIG1", "Please buy 1,000 units of the CSI 300 ETF.", (), rk.RuntimeState(STATE), (etf,))
    proposal = {"action_id": "A5_PROTECTED_ACTION", "object_id": etf.object_id,
                "topk": ["A5_PROTECTED_ACTION", "A3_ACCOUNT_ANALYSIS"]}
    return request, proposal


def explorer(controller, request_and_proposal, **kwargs) -> Figure1Explorer:
    request, proposal = request_and_proposal
    return Figure1Explorer(controller, request, proposal, **kwargs)


# ------------------------------------------------------------------------------------------ Figure 1 explorer


def test_flipping_action_permission_turns_dispatch_into_reject(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal)
    assert ex.decision.terminal is rk.Terminal.DISPATCH
    assert 'data-terminal="DISPATCH"' in ex.terminal.value and "DISPATCH(A5_PROTECTED_ACTION, SSE:510300)" in \
        ex.terminal.value
    before_image, before_trace = ex.image.value, ex.trace_html.value
    ex.states["action_permission"].value = False  # what a click on the toggle does
    assert ex.decision.terminal is rk.Terminal.REJECT and ex.decision.rule_id == "R060"
    assert 'data-terminal="REJECT"' in ex.terminal.value
    assert "R060 -&gt; REJECT" in ex.trace_html.value and ex.trace_html.value != before_trace
    assert ex.image.value[:4] == b"\x89PNG" and ex.image.value != before_image
    assert ex.redraws == 2
    assert "terminal REJECT" in ex.summary() and "state changed: action_permission=False" in ex.summary()
    ex.states["action_permission"].value = True
    assert ex.decision.terminal is rk.Terminal.DISPATCH and ex.redraws == 3


def test_controls_carry_stable_css_classes_for_the_browser(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    assert "routebr-state-action_permission" in ex.states["action_permission"]._dom_classes
    assert set(ex.states) == set(STATE)
    assert "routebr-terminal-box" in ex.terminal._dom_classes
    assert 'class="routebr-terminal"' in ex.terminal.value
    assert "routebr-figure1-explorer" in ex.widget._dom_classes


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flips=st.sets(st.sampled_from(BOOLEAN)), action=st.sampled_from(ACTIONS),
       obj=st.sampled_from(["SSE:510300", "UNRESOLVED", "NONE"]), enforce=st.booleans())
def test_the_explorer_decides_exactly_what_the_controller_decides(controller, request_and_proposal, flips, action,
                                                                  obj, enforce):
    request, _ = request_and_proposal
    assert action in controller.catalog
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    for name in flips:
        ex.states[name].value = not STATE[name]
    ex.action.value, ex.object.value, ex.topk.value = action, obj, action
    ex.enforce_state.value = enforce
    state = rk.RuntimeState({k: (not v if k in flips else v) for k, v in STATE.items()})
    expected = controller.with_options(enforce_state=enforce).decide(
        request.with_state(state), {"action_id": action, "object_id": obj, "topk": [action]})
    assert ex.decision == expected
    assert f'data-terminal="{expected.terminal.value}"' in ex.terminal.value
    assert [e.outcome for e in ex.decision.trace()] == [e.outcome for e in expected.trace()]


def test_the_primary_is_committed_even_when_a_lower_candidate_would_be_allowed(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    ex.states["action_permission"].value = False
    ex.topk.value = "A5_PROTECTED_ACTION, A1_ADVISORY"
    assert ex.decision.terminal is rk.Terminal.REJECT and ex.decision.topk[1] == "A1_ADVISORY"


def test_unresolved_object_clarifies_and_state_off_dispatches_anyway(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    ex.object.value = "UNRESOLVED"
    assert ex.decision.terminal is rk.Terminal.CLARIFY and ex.decision.reason is rk.ReasonCode.OBJECT_UNRESOLVED
    ex.object.value = "SSE:510300"
    ex.states["action_permission"].value = False
    ex.enforce_state.value = False  # A-state: the rule still matches but is not enforced
    assert ex.decision.terminal is rk.Terminal.DISPATCH
    assert ex.decision.reason is rk.ReasonCode.DISPATCH_STATE_NOT_ENFORCED


def test_a_malformed_topk_fails_closed_and_is_shown_not_raised(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    ex.topk.value = "A3_ACCOUNT_ANALYSIS, NOT_AN_ACTION"  # primary not first, and outside the catalog
    assert ex.decision.reason.fail_closed and ex.decision.terminal is controller.options.fallback
    assert "FAIL_CLOSED" in ex.terminal.value


def test_a_state_that_breaks_its_schema_fails_closed(controller, request_and_proposal):
    ex = explorer(controller, request_and_proposal, draw_figure=False)
    request, proposal = request_and_proposal
    broken = rk.RouteRequest("X", request.utterance, (), rk.RuntimeState({**STATE, "action_permission": "yes"}),
                             request.candidates)
    ex2 = Figure1Explorer(controller, broken, proposal, draw_figure=False)
    assert ex2.decision.reason is rk.ReasonCode.FAIL_CLOSED_INVALID_STATE
    assert ex.decision.reason is rk.ReasonCode.DISPATCH_OK


def test_bad_construction_is_a_typed_error(controller, request_and_proposal):
    request, _ = request_and_proposal
    with pytest.raises(DataError) as exc:
        Figure1Explorer(controller, request, {"action_id": "A5_PROTECTED_ACTION"})
    assert exc.value.code is ErrorCode.MISSING_COLUMN
    with pytest.raises(DataError) as exc:
        Figure1Explorer("controller", request, {})
    assert exc.value.code is ErrorCode.WRONG_TYPE


def test_parse_topk():
    assert parse_topk(" A5, A3  A1 ,") == ["A5", "A3", "A1"]
    assert parse_topk("") == []


def test_decision_paths_figure_shows_both_paths(controller, request_and_proposal):
    request, proposal = request_and_proposal
    allowed = controller.decide(request, proposal)
    blocked = controller.decide(request.with_state(request.state.replace(action_permission=False)), proposal)
    fig = decision_paths_figure([allowed, blocked], ["permitted", "forbidden"])
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["permitted\n→ DISPATCH", "forbidden\n→ REJECT"]
    texts = {t.get_text() for t in fig.axes[1].texts}
    assert "not reached" in texts  # the rejected request never reaches the object gate
    assert "not reached" not in {t.get_text() for t in fig.axes[0].texts}


# ------------------------------------------------------------------------------------------ MetaRoute explorer


def test_metaroute_explorer_runs_the_fast_executor_with_the_slider_values():
    ex = MetaRouteExplorer(seeds=3)
    assert ex.run.mode is Mode.FAST and ex.run.config == MetaRouteConfig()
    first_image, first_table = ex.image.value, ex.table.value
    ex.sliders["executor.recovery_success"].value = 0.9
    assert ex.run.config.executor.recovery_success == 0.9 and ex.redraws == 2
    expected = run_benchmark(3, mode=Mode.FAST, config=MetaRouteConfig().with_overrides(
        {"executor.recovery_success": 0.9}))
    assert ex.run.evaluation.summaries == expected.evaluation.summaries
    assert ex.table.value != first_table and ex.image.value != first_image and ex.image.value[:4] == b"\x89PNG"
    ex.seeds.value = 4
    assert ex.run.traces.seeds == (0, 1, 2, 3) and "4 seeds" in ex.summary()


def test_metaroute_explorer_is_deterministic():
    a, b = MetaRouteExplorer(seeds=2), MetaRouteExplorer(seeds=2)
    for ex in (a, b):
        ex.sliders["executor.failure_penalty"].value = 0.5
    assert a.table.value == b.table.value and a.image.value == b.image.value


@settings(max_examples=5, deadline=None)
@given(low=st.floats(0.3, 0.94), delta=st.floats(0.01, 0.3))
def test_lowering_base_success_never_raises_any_policy_success(low, delta):
    """The fast executor's uniforms are keyed by (seed, task, policy): a lower base probability can only turn
    successes into failures, trace by trace."""
    ex = MetaRouteExplorer(seeds=2, draw_figure=False)
    high = min(0.95, low + delta)
    ex.sliders["executor.base_success"].value = high
    at_high = {s.policy: s.success_rate for s in ex.run.evaluation.summaries}
    ex.sliders["executor.base_success"].value = low
    at_low = {s.policy: s.success_rate for s in ex.run.evaluation.summaries}
    assert all(at_low[p] <= at_high[p] for p in at_high)


def test_an_invalid_configuration_is_shown_as_its_typed_error():
    ex = MetaRouteExplorer(seeds=2, draw_figure=False, sliders={"executor.min_success": (0.0, 1.0, 0.01)})
    ex.sliders["executor.min_success"].value = 0.99  # above max_success 0.98
    assert ex.run is None and "min_success" in ex.error and "not run" in ex.table.value
    assert "not run" in ex.summary() and list(ex.frame().columns)[0] == "policy"


def test_metaroute_explorer_rejects_bad_arguments():
    with pytest.raises(DataError):
        MetaRouteExplorer(seeds=0)
    with pytest.raises(DataError):
        MetaRouteExplorer(config={"executor": {}})
    with pytest.raises(DataError) as exc:
        MetaRouteExplorer(sliders={"executor.no_such_constant": (0.0, 1.0, 0.1)})
    assert exc.value.code is ErrorCode.UNKNOWN_REFERENCE
    with pytest.raises(DataError) as exc:
        MetaRouteExplorer(sliders={"executor.operations": (0.0, 1.0, 0.1)})
    assert exc.value.code is ErrorCode.WRONG_TYPE


def test_policy_outcomes_figure_and_ranking_agreement():
    run = run_benchmark(3, mode=Mode.FAST)
    fig = policy_outcomes_figure(run.evaluation)
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == list(summary_frame(run.evaluation)["policy"])  # utility order, best on top
    same = ranking_agreement(run.evaluation, run.evaluation)  # notebook 08's explorer against the headline
    assert same["same_top"] and same["largest_gap"] == 0 and same["gap_within"]
    assert same["top_success"] == run.evaluation.summaries[0].success_rate
    exact = run_benchmark(3, mode=Mode.EXACT)
    other = ranking_agreement(run.evaluation, exact.evaluation)
    gaps = {s.policy: abs(s.success_rate - exact.evaluation.summary(s.policy).success_rate)
            for s in run.evaluation.summaries}
    assert other["largest_gap"] == max(gaps.values()) and gaps[other["largest_gap_policy"]] == other["largest_gap"]
    assert other["gap_within"] == (other["largest_gap"] <= other["largest_gap_ci95"])
