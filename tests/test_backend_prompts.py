"""Prompt data files (en, zh) and the request bodies built from them: structure, schemas restated to the repair
model, the kit's own wording, and no gold, annotator or adjudication field in any request of any stage."""

from __future__ import annotations

import difflib
import json
import re

import pytest

import routebr_kit as rk
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import Profile
from routebr_kit.core.contract import PROPOSAL_SCHEMA, repair_payload
from routebr_kit.prompts import ANSWERING_STAGES, Language, detect_language, load_prompts, prompt_path
from routebr_kit.systems.baselines import DIRECT_SCHEMA, GUARD_SCHEMA, direct_payload

S = rk.Stage
FORBIDDEN = ("gold", "annotator", "adjudicat")


@pytest.mark.parametrize("language", list(Language))
def test_every_stage_has_an_instruction_and_repairs_restate_their_schema(language):
    prompts = load_prompts(language)
    assert prompts.language is language and prompts.version == "1"
    for stage in S:
        text = prompts.instruction(stage)
        assert "JSON" in text and "{output_schema}" not in text  # json_object mode needs the word JSON
        target = stage.value.removeprefix("REPAIR_")
        assert prompts.output_schemas[target] in text
        if stage.is_repair:
            assert text.startswith(prompts.texts["REPAIR"]) and target in text


def test_languages_share_the_schemas_and_differ_in_text():
    en, zh = load_prompts("en"), load_prompts("zh")
    assert en.output_schemas == zh.output_schemas and en.sha256 != zh.sha256
    assert all(en.texts[k] != zh.texts[k] for k in en.texts)
    # the schema strings parse as JSON templates
    assert all(isinstance(json.loads(en.output_schemas[k]), dict) for k in ANSWERING_STAGES)


def test_stage_texts_describe_what_each_stage_sees():
    en = load_prompts("en").texts
    assert "runtime_context" not in en["ROUTEBR"] and "rules" not in en["ROUTEBR"].replace("policy rules", "")
    assert "runtime_context" in en["B1_DIRECT"] and "No separate rule table" in en["B1_DIRECT"]
    assert "rules table" in en["B2_DIRECT_GUARD"] and "rule_ids" in en["B2_DIRECT_GUARD"]


def test_the_chinese_texts_are_our_own_not_the_published_ones(routebr_artifact):
    """The kit's zh prompt is written from the kit's English prompt, not paraphrased from the published texts.

    Against every published stage text: no run of 20 identical characters (identifiers included) and a difflib
    ratio under 0.4; the prose alone (the non-ASCII text) shares no run of ten characters."""
    published = json.loads((routebr_artifact / "experiments/prompts.json").read_text(encoding="utf-8"))
    ours = load_prompts("zh").texts
    stages = ("ROUTEBR", "B1_DIRECT", "B2_DIRECT_GUARD", "REPAIR")
    for key in stages:
        mine = ours[key].replace("{output_schema}", "")
        for other in stages:
            theirs = published[other]
            matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
            longest = matcher.find_longest_match(0, len(mine), 0, len(theirs))
            assert longest.size < 20, (key, other, mine[longest.a:longest.a + longest.size])
            assert matcher.ratio() < 0.4, (key, other, matcher.ratio())
            a, b = re.sub(r"[\x00-\x7f]", "", mine), re.sub(r"[\x00-\x7f]", "", theirs)
            assert difflib.SequenceMatcher(None, a, b, autojunk=False).find_longest_match(
                0, len(a), 0, len(b)).size < 10, (key, other)


def test_language_detection_and_bad_files(tmp_path):
    assert detect_language(["买入沪深300ETF", "hello"]) is Language.ZH
    assert detect_language(["Buy the CSI 300 ETF"]) is Language.EN and detect_language([]) is Language.EN
    broken = json.loads(prompt_path("en").read_text(encoding="utf-8"))
    del broken["stages"]["REPAIR"]
    path = tmp_path / "p.en.json"
    path.write_text(json.dumps(broken), encoding="utf-8")
    with pytest.raises(rk.DataError) as err:
        load_prompts("en", path=path)
    assert (err.value.code, err.value.field) == (rk.ErrorCode.WRONG_TYPE, "stages.REPAIR")
    with pytest.raises(rk.DataError) as err:
        load_prompts("zh", path=prompt_path("en"))
    assert err.value.field == "metadata.language"


def _keys(value, found):
    if isinstance(value, dict):
        for key, item in value.items():
            found.add(str(key))
            _keys(item, found)
    elif isinstance(value, list):
        for item in value:
            _keys(item, found)
    return found


def test_no_request_body_of_any_stage_carries_gold_annotator_or_adjudication_fields(routebr_artifact, monkeypatch):
    monkeypatch.setenv("ROUTEBR_TEST_API_KEY", "sk-not-used")
    data = routebr_artifact / "data"
    assets = rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")
    cases = rk.load_cases(data / "routebr_600.csv")
    controller = assets.controller()
    backend = OpenAICompatBackend(Profile("p", "http://127.0.0.1:9/v1", "ROUTEBR_TEST_API_KEY", "m"),
                                  load_prompts("zh"))
    bad = rk.ContractError(rk.ContractErrorCode.INVALID_JSON, "output", "x")
    checked = 0
    for case in cases:
        routebr = controller.proposal_payload(case.request)
        b1 = direct_payload(case.request, assets.catalog)
        b2 = direct_payload(case.request, assets.catalog, assets.policy)
        assert set(routebr) == {"request", "history", "catalog", "entities", "contract"}
        assert set(b1) == {"request", "history", "runtime_context", "catalog", "entities"}
        assert set(b2) == set(b1) | {"rules"}
        payloads = {S.ROUTEBR: routebr, S.B1_DIRECT: b1, S.B2_DIRECT_GUARD: b2,
                    S.REPAIR_ROUTEBR: repair_payload(S.ROUTEBR, "x", (bad,), routebr, PROPOSAL_SCHEMA),
                    S.REPAIR_B1_DIRECT: repair_payload(S.B1_DIRECT, "x", (bad,), b1, DIRECT_SCHEMA),
                    S.REPAIR_B2_DIRECT_GUARD: repair_payload(S.B2_DIRECT_GUARD, "x", (bad,), b2, GUARD_SCHEMA)}
        for stage, payload in payloads.items():
            body = backend.request_body(rk.ModelCall(case.case_id, stage, payload))
            text = json.dumps(body, ensure_ascii=False)
            keys = _keys(json.loads(body["messages"][1]["content"]), _keys(body, set()))
            assert not any(k.lower().startswith(FORBIDDEN) for k in keys), (case.case_id, stage)
            assert '"gold_' not in text and "annotator_" not in text and "adjudicated_by" not in text
            checked += 1
    assert checked == 6 * len(cases) == 3600
    rules = direct_payload(cases[0].request, assets.catalog, assets.policy)["rules"]
    assert [r["rule_id"] for r in rules] == [r.rule_id for r in sorted(assets.policy.rules,
                                                                         key=lambda r: (r.priority, r.rule_id))]
    assert set(rules[0]) == {"rule_id", "priority", "applies_to", "condition", "decision", "version"}
