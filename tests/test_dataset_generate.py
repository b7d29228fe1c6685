"""Generated files: byte-identical per seed, published schema, computed gold labels, natural and unique requests."""

from __future__ import annotations

import json

import pytest
from dataset_fixtures import LANGUAGES, VARIANTS, bench, written

import routebr_kit as rk
from routebr_kit.core.records import Boundary
from routebr_kit.dataset import Partition, generate_benchmark, gold_label, write_benchmark
from routebr_kit.dataset.composition import CLEAR_STATE, UNRESOLVABLE
from routebr_kit.dataset.references import code_of, mentioned, mentioned_in_any, normalise
from routebr_kit.store.assets import read_csv
from routebr_kit.store.cases import CASE_COLUMNS, ObjectDifficulty, Split

FILES = {"routebr_600.csv", "routebr_select_160.csv", "routebr_confirm_320.csv", "catalog.csv",
         "boundary_rules.csv", "registry.csv", "manifest.json"}
CANDIDATE_FIELDS = ["object_id", "object_type", "display_name", "aliases", "exchange", "security_code",
                    "asset_group", "source_url", "source_effective_date", "verified_on"]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_same_seed_gives_byte_identical_files(tmp_path, lang: str) -> None:
    first = write_benchmark(generate_benchmark(3, lang), tmp_path / "a")
    second = write_benchmark(generate_benchmark(3, lang), tmp_path / "b")
    assert set(first.files) == FILES
    for name in FILES:
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    assert dict(first.files) == dict(second.files)


def test_manifest_records_seed_options_and_hashes(tmp_path) -> None:
    m = written(tmp_path, 2, "zh", True)
    manifest = json.loads(m.path("manifest.json").read_text(encoding="utf-8"))
    assert (manifest["seed"], manifest["language"], manifest["options"]) == (2, "zh", {"decouple_entity_state": True})
    assert set(manifest["files"]) == FILES - {"manifest.json"}
    assert all(rk.core.hashing.sha256_file(m.path(name)) == digest for name, digest in manifest["files"].items())
    assert b"\r\n" not in m.path("routebr_600.csv").read_bytes()


def test_files_use_the_published_schema_and_load(tmp_path) -> None:
    m = written(tmp_path)
    table = read_csv(m.path("routebr_600.csv"), CASE_COLUMNS)
    assert table.header == CASE_COLUMNS
    row = next(values for _, values in table.rows if values["candidate_entities_json"] != "[]")
    assert list(json.loads(row["candidate_entities_json"])[0]) == CANDIDATE_FIELDS
    assert list(json.loads(row["runtime_context_json"])) == list(CLEAR_STATE)
    cue = json.loads(row["gold_cues_json"])[0]
    assert list(cue) == ["family", "evidence", "source", "confidence"]
    loaded = rk.load_cases(m.path("routebr_600.csv"))
    original = bench(0, "en").cases
    assert [(c.case_id, c.gold, c.request.utterance, c.request.history, c.request.state.values) for c in loaded] == \
           [(c.case_id, c.gold, c.request.utterance, c.request.history, c.request.state.values) for c in original]
    assert [c.case_id for c in rk.load_cases(m.path("routebr_select_160.csv"))] == \
           [c.case_id for c in original if bench(0, "en").partitions.get(c.case_id) is Partition.SELECT]
    registry = rk.load_registry(m.path("registry.csv"))
    assert len(registry) == 40
    assets = rk.load_assets(m.path("catalog.csv"), m.path("boundary_rules.csv"), m.path("registry.csv"))
    assert assets.policy.sha256 == bench(0, "en").assets.policy.sha256


@pytest.mark.parametrize("seed,lang,decouple", VARIANTS[::3])
def test_gold_labels_are_the_controllers(seed: int, lang: str, decouple: bool) -> None:
    b = bench(seed, lang, decouple)
    controller = b.assets.controller()
    for c in b.cases:
        label = gold_label(controller, c.request, c.gold.action, c.gold.object_id)
        assert label.valid, c.case_id
        assert (label.boundary, label.rule_ids, label.final_path) == \
               (c.gold.boundary, c.gold.rule_ids, c.gold.final_path), c.case_id
        assert c.scenario_cell.split("|")[:3] == [c.gold.action, c.gold.boundary.value, c.gold.object_difficulty.value]


@pytest.mark.parametrize("lang", LANGUAGES)
def test_decoupling_hands_unresolvable_references_to_the_object_gate(lang: str) -> None:
    coupled, decoupled = bench(1, lang), bench(1, lang, True)
    unresolvable = [c for c in coupled.cases if c.gold.object_difficulty in UNRESOLVABLE]
    assert all(c.request.state.get("entity_resolved") is False for c in unresolvable)  # the published coupling
    gate = [c for c in decoupled.cases if c.gold.rule_ids == ("R999",) and c.gold.boundary is Boundary.CLARIFY]
    assert gate, "decoupling must produce object-gate CLARIFY cases"
    for c in gate:
        assert c.gold.object_id == "UNRESOLVED" and c.request.state.get("entity_resolved") is True
        assert c.gold.final_path == "T_CLARIFY"
        twin = coupled.case(c.case_id)
        assert (twin.gold.rule_ids, twin.gold.boundary) == (("R040",), Boundary.CLARIFY)
    resolved = sum(c.request.state.get("entity_resolved") for c in decoupled.cases
                   if c.gold.object_difficulty in UNRESOLVABLE)
    assert 0 < resolved < len(unresolvable)  # only part of them
    assert [c.request.utterance for c in coupled.cases] == [c.request.utterance for c in decoupled.cases]


@pytest.mark.parametrize("seed,lang", [(s, lang) for s, lang, d in VARIANTS if not d])
def test_requests_are_unique_and_fit_their_difficulty(seed: int, lang: str) -> None:
    b = bench(seed, lang)
    keys = [normalise(c.request.utterance) for c in b.cases if c.split is not Split.FLIP]
    assert len(keys) == len(set(keys))
    for c in b.cases:
        g, r = c.gold, c.request
        named = {e.object_id for e in mentioned(r.utterance, r.candidates)}
        earlier = {e.object_id for e in mentioned_in_any(r.history, r.candidates)}
        d = g.object_difficulty
        if d is ObjectDifficulty.ANAPHORA:
            assert not named and earlier == {g.object_id}, c.case_id  # the history is needed
        elif d is ObjectDifficulty.CODE_ONLY:
            assert code_of(g.object_id) in r.utterance and named == {g.object_id}, c.case_id
        elif d is ObjectDifficulty.EXPLICIT_NAME:
            assert named == {g.object_id} and not r.history, c.case_id
        elif d is ObjectDifficulty.CONFLICTING:
            assert len(named) == 2 and g.object_id == "UNRESOLVED", c.case_id
        elif d is ObjectDifficulty.UNDERSPECIFIED:
            assert not named and not earlier and g.object_id == "UNRESOLVED", c.case_id
        else:
            assert not r.candidates and g.object_id == "NONE", c.case_id
        if d is not ObjectDifficulty.NONE:
            assert len(r.candidates) == 3 and len({e.object_id for e in r.candidates}) == 3
        assert all(cue["evidence"] in r.utterance for cue in g.cues), c.case_id
        assert [cue["confidence"] for cue in g.cues].count("HIGH") == 1


def test_cue_families_follow_the_action() -> None:
    primary = {"A1_ADVISORY": "ADVISORY", "A2_INFO_LOOKUP": "INFORMATION", "A3_ACCOUNT_ANALYSIS": "ACCOUNT_CONTEXT",
               "A4_SUPPORT_RESPONSE": "SUPPORT_SENSITIVE", "A5_PROTECTED_ACTION": "ACTION_SENSITIVE"}
    for c in bench(0, "zh").cases:
        high = [cue["family"] for cue in c.gold.cues if cue["confidence"] == "HIGH"]
        assert high == [primary[c.gold.action]], c.case_id
        assert len({cue["family"] for cue in c.gold.cues}) == len(c.gold.cues)


def test_entities_are_used_across_the_registry() -> None:
    for lang in LANGUAGES:
        used = {e.object_id for c in bench(0, lang).cases for e in c.request.candidates}
        assert len(used) == 40


@pytest.mark.parametrize("seed,language,code", [(-1, "en", rk.ErrorCode.INVALID_INTEGER),
                                                ("0", "en", rk.ErrorCode.INVALID_INTEGER),
                                                (0, "fr", rk.ErrorCode.UNKNOWN_ENUM)])
def test_bad_arguments_are_typed_errors(seed, language, code) -> None:
    with pytest.raises(rk.DataError) as err:
        generate_benchmark(seed, language)
    assert err.value.code is code


def test_missing_registry_is_a_located_error(tmp_path, kit_data) -> None:
    for name in ("catalog.csv", "boundary_rules.csv"):
        (tmp_path / name).write_bytes((kit_data / name).read_bytes())
    with pytest.raises(rk.DataError) as err:
        generate_benchmark(0, "zh", data_dir=tmp_path)
    assert err.value.code is rk.ErrorCode.FILE_NOT_FOUND and err.value.file.endswith("registry_zh.csv")
