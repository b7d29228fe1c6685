"""The published request protocol against the three published receipts, through a real HTTP server on 127.0.0.1.

``--protocol published`` must send, for every stage including repair, the request body the published runner sent
(verified three ways per receipt: the parsed body equals ``request_body``, the key order at every level is the
same, and the raw bytes on the wire equal the published transport's serialisation of ``request_body``), and apply
the published B1/B2 acceptance rules, so a receipt's recorded reply yields the published ledger row.  The kit
protocol stays the default and differs where it should (FLIP-0048).
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai_server import OpenAIServer, _Handler, completion

import routebr_kit as rk
from routebr_kit.backends.openai_compat import OpenAICompatBackend
from routebr_kit.backends.profiles import load_profile
from routebr_kit.backends.registry import make_backend, published_prompts_path
from routebr_kit.backends.replay import ReplayBackend
from routebr_kit.cli.app import main
from routebr_kit.core.contract import check_proposal
from routebr_kit.core.hashing import sha256_bytes
from routebr_kit.experiments.screening import ScreeningConfig, run_backend
from routebr_kit.experiments.study import StudyConfig
from routebr_kit.prompts import Protocol, load_prompts, load_published_prompts
from routebr_kit.prompts.published import (
    DIRECT_REPAIR_CONSTRAINT,
    ROUTEBR_REPAIR_CONSTRAINT,
    route_errors,
    stage_errors,
    wire_bytes,
)
from routebr_kit.runs.replay import replay_rows
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.ledger import read_predictions
from routebr_kit.systems.baselines import (
    DirectBaseline,
    check_direct,
    check_direct_published,
    direct_payload,
    prediction_from_direct,
)

KEY = "sk-test-protocol-5e2d"
PROFILE = "deepseek_v4_primary"
S = rk.Stage
E = rk.ErrorCode
ROW_FIELDS = ("pred_action", "pred_object_id", "pred_boundary", "pred_final_path", "topk", "valid_json",
              "fallback_used", "error_code")
# FLIP-0048's published B2 route: an object on the object-free A4 (the published validator has no such check)
FLIP_0048_B2 = json.dumps({"terminal": "HANDOFF", "action_id": "A4_SUPPORT_RESPONSE", "object_id": "SSE:510880",
                           "boundary": "HANDOFF", "topk": ["A4_SUPPORT_RESPONSE"], "rule_ids": ["R001"]})


# --------------------------------------------------------------------------------------------- fixtures


class RawServer(OpenAIServer):
    """The test server, also keeping each request's raw bytes (what the published transport's bytes are checked
    against)."""

    def __init__(self, responder) -> None:
        super().__init__(responder)
        self.raw: list[bytes] = []
        owner = self

        class Handler(_Handler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                data = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.raw.append(data)
                self.rfile = io.BytesIO(data)
                super().do_POST()

        self._httpd.RequestHandlerClass = Handler


def replier(replies: dict[str, list[str]], model: str = "deepseek-v4-pro"):
    """Answer each stage with its next scripted content (stage read from the system text is unreliable, so the
    stage is recognised from the payload)."""
    served: dict[str, int] = {}

    def respond(request: dict, number: int) -> dict:
        payload = json.loads(request["messages"][1]["content"])
        stage = "REPAIR" if "invalid_output" in payload else "ANSWER"
        index = served.get(stage, 0)
        served[stage] = index + 1
        return completion(replies[stage][index], model=model)

    return respond


@pytest.fixture(autouse=True)
def api_key(monkeypatch):
    monkeypatch.setenv("DEEPSEEK_API_KEY", KEY)


@pytest.fixture(scope="module")
def art(routebr_artifact) -> Path:
    return routebr_artifact


@pytest.fixture(scope="module")
def assets(art):
    data = art / "data"
    return rk.load_assets(data / "catalog.csv", data / "boundary_rules.csv", data / "entity_catalog.csv")


@pytest.fixture(scope="module")
def cases(art):
    return {c.case_id: c for c in rk.load_cases(art / "data" / "routebr_600.csv")}


@pytest.fixture(scope="module")
def receipts(art) -> list[Path]:
    found = sorted(p for p in art.glob("experiments/results/**/raw/*.json"))
    assert len(found) == 3, found  # the three shared receipts
    return found


def published_row(receipt_path: Path, case_id: str):
    rows = read_predictions(receipt_path.parent.parent / "predictions.csv")
    return next(r for r in rows if r.case_id == case_id)


def profiles_file(art: Path, tmp: Path, base_url: str) -> Path:
    """The published profiles file with the endpoint pointed at the local server (nothing else changed)."""
    doc = json.loads((art / "experiments" / "api_profiles.json").read_text(encoding="utf-8"))
    doc[PROFILE]["base_url"] = base_url
    path = tmp / "profiles.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def published_backend(art: Path, tmp: Path, base_url: str):
    return make_backend(PROFILE, profiles_path=profiles_file(art, tmp, base_url), protocol="published",
                        prompts_path=art / "experiments" / "prompts.json")


def receipt_of(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def key_order(value):
    """Every mapping's key order, recursively (parsed equality ignores it; the serialisation does not)."""
    if isinstance(value, dict):
        return [(k, key_order(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [key_order(v) for v in value]
    return None


# --------------------------------------------------------------------------------------------- the three receipts


def test_published_protocol_sends_the_three_receipts_request_bodies_byte_for_byte(art, assets, cases, receipts,
                                                                                 tmp_path):
    for number, path in enumerate(receipts):
        receipt = receipt_of(path)
        contents = [r["content"] for r in receipt["responses"]]
        with RawServer(replier({"ANSWER": contents})) as server:
            backend = published_backend(art, tmp_path, server.base_url)
            result = run_cases([cases[receipt["case_id"]]], backend, system=receipt["system"], assets=assets,
                               out_dir=tmp_path / f"run{number}", progress=False)
        expected = [call["request_body"] for call in receipt["calls"]]
        assert server.requests == expected, path  # parsed: equal to the receipt's request_body
        assert [key_order(b) for b in server.requests] == [key_order(b) for b in expected]  # same key order
        assert server.raw == [json.dumps(b, ensure_ascii=False).encode("utf-8") for b in expected]  # same bytes
        assert server.headers[0]["content-type"] == "application/json"
        assert server.headers[0]["authorization"] == f"Bearer {KEY}"
        written = receipt_of(result.out_dir / "raw" / f"{receipt['case_id']}.json")
        assert [c["request_body"] for c in written["calls"]] == expected  # the kit's receipt records it exactly
        row, want = result.rows[0], published_row(path, receipt["case_id"])
        assert {f: getattr(row, f) for f in ROW_FIELDS} == {f: getattr(want, f) for f in ROW_FIELDS}
        assert row.pred_final_path == receipt["summary"]["pred_final_path"]
        prompts = art / "experiments" / "prompts.json"
        assert result.manifest["protocol"] == "published"
        assert result.manifest["hashes"]["prompts"] == sha256_bytes(prompts.read_bytes())
        assert result.manifest["backend_detail"]["prompts"]["path"] == str(prompts)
        assert result.manifest["backend"] == f"openai:{PROFILE}@published"


def test_each_receipts_recorded_reply_replayed_gives_the_published_row(assets, cases, receipts):
    for path in receipts:
        receipt = receipt_of(path)
        want = published_row(path, receipt["case_id"])
        if receipt["system"] == "routebr":
            row = replay_rows(assets.controller(), [want], cases, receipts=[path]).rows[0]
        else:
            baseline = DirectBaseline.for_system(receipt["system"], assets.catalog, assets.policy,
                                                 protocol=Protocol.PUBLISHED)
            decision = baseline.route(cases[receipt["case_id"]].request, ReplayBackend.from_receipts([path]))
            row = prediction_from_direct(decision)
        assert {f: getattr(row, f) for f in ROW_FIELDS} == {f: getattr(want, f) for f in ROW_FIELDS}, path
        assert (row.repair_count, row.calls) == (receipt["summary"]["repair_count"], len(receipt["calls"]))


def test_kit_protocol_stays_the_default_and_sends_its_own_texts(art, assets, cases, receipts, tmp_path):
    receipt = receipt_of(receipts[0])
    with RawServer(replier({"ANSWER": [r["content"] for r in receipt["responses"]]})) as server:
        backend = make_backend(PROFILE, profiles_path=profiles_file(art, tmp_path, server.base_url), language="zh")
        result = run_cases([cases[receipt["case_id"]]], backend, system=receipt["system"], assets=assets,
                           out_dir=tmp_path / "kit", progress=False)
    sent, published = server.requests[0], receipt["calls"][0]["request_body"]
    assert backend.protocol is Protocol.KIT and result.manifest["protocol"] == "kit"
    assert sent["messages"][0]["content"] == load_prompts("zh").instruction(S(receipt["calls"][0]["stage"]))
    assert sent["messages"][0]["content"] != published["messages"][0]["content"]
    assert sent["messages"][1] == published["messages"][1]  # the same payload: only the texts differ
    assert server.raw[0] != json.dumps(sent, ensure_ascii=False).encode()  # the SDK's compact serialisation


# --------------------------------------------------------------------------------------------- acceptance


def test_flip_0048_published_b2_accepts_the_object_on_an_object_free_action_and_the_kit_repairs(
        art, assets, cases, tmp_path):
    case = cases["FLIP-0048"]
    want = next(r for r in read_predictions(art / "experiments/results/confirm/b2_direct_guard/flip/predictions.csv")
                if r.case_id == "FLIP-0048")
    published = check_direct_published(FLIP_0048_B2, assets.catalog, case.request.candidate_index, assets.policy)
    kit = check_direct(FLIP_0048_B2, assets.catalog, case.request.candidate_index, assets.policy)
    assert published.ok and published.route.object_id == "SSE:510880"
    assert not kit.ok and kit.codes == (rk.ContractErrorCode.OBJECT_FREE_REQUIRES_NONE,)

    with RawServer(replier({"ANSWER": [FLIP_0048_B2] * 2, "REPAIR": [FLIP_0048_B2]})) as server:
        pub = run_cases([case], published_backend(art, tmp_path, server.base_url), system="b2", assets=assets,
                        out_dir=tmp_path / "published", progress=False)
        assert server.count == 1  # accepted as published: no repair call
        kit_backend = make_backend(PROFILE, profiles_path=profiles_file(art, tmp_path, server.base_url),
                                   language="zh")
        kit_run = run_cases([case], kit_backend, system="b2", assets=assets, out_dir=tmp_path / "kit",
                            progress=False)
    row = pub.rows[0]
    assert {f: getattr(row, f) for f in ROW_FIELDS} == {f: getattr(want, f) for f in ROW_FIELDS}
    assert (row.pred_action, row.pred_object_id, row.pred_final_path) == ("A4_SUPPORT_RESPONSE", "SSE:510880",
                                                                          "T_HANDOFF")
    assert server.count == 3  # the kit's stricter validator made the repair call the published run never made
    repair = json.loads(server.requests[2]["messages"][1]["content"])
    assert "target_schema" in repair and repair["original_stage"] == "B2_DIRECT_GUARD"
    assert kit_run.rows[0].repair_count == 1 and kit_run.rows[0].fallback_used  # unchanged repair: fail-closed


def test_published_repair_requests_carry_the_published_payload_keys_wording_and_errors(art, assets, cases,
                                                                                     receipts, tmp_path):
    prompts = json.loads((art / "experiments" / "prompts.json").read_text(encoding="utf-8"))
    b2 = receipt_of(next(p for p in receipts if "b2_direct_guard" in str(p)))
    bad = json.dumps({"terminal": "DISPATCH", "action_id": "A1_ADVISORY", "object_id": "SSE:999999",
                      "boundary": "DEFER", "topk": ["A1_ADVISORY", "A1_ADVISORY"], "rule_ids": ["R777"]})
    with RawServer(replier({"ANSWER": [bad], "REPAIR": [b2["responses"][0]["content"]]})) as server:
        result = run_cases([cases["MAIN-0004"]], published_backend(art, tmp_path, server.base_url), system="b2",
                           assets=assets, out_dir=tmp_path / "b2", progress=False)
    first, repair = server.requests
    assert first == b2["calls"][0]["request_body"]
    assert repair["messages"][0] == {"role": "system", "content": prompts["REPAIR"]}
    assert {k: v for k, v in repair.items() if k != "messages"} == {k: v for k, v in first.items() if k != "messages"}
    payload = json.loads(repair["messages"][1]["content"])
    assert list(payload) == ["invalid_output", "validation_errors", "constraint", "original_payload"]
    assert payload["invalid_output"] == bad and payload["constraint"] == DIRECT_REPAIR_CONSTRAINT
    assert payload["validation_errors"] == ["object_id is outside the entity list",
                                            "topk contains duplicate or unknown IDs", "DISPATCH requires ALLOW",
                                            "non-ALLOW terminal must equal boundary", "rule_ids must cite known rules"]
    assert payload["original_payload"] == json.loads(first["messages"][1]["content"])
    assert server.raw[1] == wire_bytes(repair)
    assert result.rows[0].pred_final_path == "T_DEFER" and result.rows[0].repair_count == 1

    with RawServer(replier({"ANSWER": ["not json"], "REPAIR": [b2["responses"][0]["content"]]})) as server:
        result = run_cases([cases["MAIN-0004"]], published_backend(art, tmp_path, server.base_url), system="b2",
                           assets=assets, out_dir=tmp_path / "b2-json", progress=False)
    payload = json.loads(server.requests[1]["messages"][1]["content"])
    assert payload["invalid_output"] == "not json"  # published: even an unreadable reply gets its repair call
    assert payload["validation_errors"] == ["invalid JSON: Expecting value"]  # the parser's message only
    assert result.rows[0].pred_final_path == "T_DEFER"

    routebr = receipt_of(next(p for p in receipts if "confirm/routebr" in str(p)))
    bad = json.dumps({"action_id": "A1_ADVISORY", "object_id": "SSE:510880", "topk": ["A1_ADVISORY"] * 2})
    with RawServer(replier({"ANSWER": [bad], "REPAIR": [routebr["responses"][0]["content"]]})) as server:
        result = run_cases([cases["MAIN-0004"]], published_backend(art, tmp_path, server.base_url),
                           system="routebr", assets=assets, out_dir=tmp_path / "routebr", progress=False)
    first, repair = server.requests
    assert first == routebr["calls"][0]["request_body"]
    payload = json.loads(repair["messages"][1]["content"])
    assert list(payload) == ["invalid_output", "validation_errors", "constraint", "original_stage",
                             "original_payload"]
    assert payload["validation_errors"] == ["topk must be unique, closed-list, and primary-first"]
    assert (payload["constraint"], payload["original_stage"]) == (ROUTEBR_REPAIR_CONSTRAINT, "ROUTEBR")
    assert payload["invalid_output"] == bad and payload["original_payload"] == json.loads(
        first["messages"][1]["content"])
    assert repair["messages"][0]["content"] == prompts["REPAIR"]
    assert server.raw[1] == wire_bytes(repair)
    assert result.rows[0].pred_final_path == "T_DEFER" and result.rows[0].repair_count == 1


def test_published_routebr_errors_follow_the_published_order_and_conditions(assets, cases):
    payload = assets.controller().proposal_payload(cases["MAIN-0004"].request)

    def errors(output):
        return [e.message for e in stage_errors(S.ROUTEBR, json.dumps(output), payload)]

    assert errors({"action_id": "A9", "object_id": "X", "topk": ["A9"]}) == [
        "action_id is outside the closed catalog", "topk must be unique, closed-list, and primary-first"]
    assert errors({"action_id": "A4_SUPPORT_RESPONSE", "object_id": "SSE:510880",
                   "topk": ["A4_SUPPORT_RESPONSE", "A4_SUPPORT_RESPONSE", "A9"]}) == [
        "topk must be unique, closed-list, and primary-first", "object-free primary action must use NONE"]
    assert errors({"action_id": "A1_ADVISORY", "object_id": "NONE", "topk": []}) == [
        "topk must contain one to three action IDs", "object_id is outside the closed entity list"]
    assert [e.message for e in stage_errors(S.ROUTEBR, "[1]", payload)] == ["output must be one JSON object"]


def test_a_repair_of_an_output_the_published_validator_accepts_is_refused(art, assets, cases):
    payload = direct_payload(cases["FLIP-0048"].request, assets.catalog, assets.policy)
    kit_repair = rk.ModelCall("FLIP-0048", S.REPAIR_B2_DIRECT_GUARD,
                              {"invalid_output": FLIP_0048_B2, "validation_errors": ["x"], "original_payload": payload})
    backend = OpenAICompatBackend(load_profile(art / "experiments" / "api_profiles.json", PROFILE),
                                  load_published_prompts(published_prompts_path(art)))
    with pytest.raises(rk.DataError) as err:
        backend.request_body(kit_repair)  # a kit validator with the published protocol would send such a call
    assert err.value.code is E.INCONSISTENT_ASSETS


# --------------------------------------------------------------------------------------------- configuration


def test_the_published_prompt_file_is_validated_with_located_errors(art, tmp_path):
    source = (art / "experiments" / "prompts.json").read_text(encoding="utf-8")
    good = load_published_prompts(art / "experiments" / "prompts.json")
    assert good.language is rk.store.Language.ZH and good.protocol is Protocol.PUBLISHED
    assert good.instruction(S.REPAIR_ROUTEBR) == good.instruction(S.REPAIR_B1_DIRECT) == good.texts["REPAIR"]

    def broken(change) -> rk.DataError:
        doc = json.loads(source)
        change(doc)
        path = tmp_path / "prompts.json"
        path.write_text(json.dumps(doc, ensure_ascii=False, indent=2), encoding="utf-8")
        with pytest.raises(rk.DataError) as err:
            load_published_prompts(path)
        assert err.value.file == str(path)
        return err.value

    missing = broken(lambda d: d.pop("REPAIR"))
    assert (missing.code, missing.field) == (E.EMPTY_VALUE, "REPAIR")
    wrong = broken(lambda d: d.update(B1_DIRECT=["a", "b"]))
    assert (wrong.code, wrong.field) == (E.WRONG_TYPE, "B1_DIRECT") and wrong.line is not None
    no_language = broken(lambda d: d["metadata"].pop("language"))
    assert (no_language.code, no_language.field) == (E.EMPTY_VALUE, "metadata.language")
    french = broken(lambda d: d["metadata"].update(language="fr-FR"))
    assert (french.code, french.field, french.got) == (E.UNKNOWN_ENUM, "metadata.language", "fr-FR")
    assert french.line == 5
    with pytest.raises(rk.DataError) as err:
        load_published_prompts(tmp_path / "absent.json")
    assert err.value.code is E.FILE_NOT_FOUND


def test_make_backend_refuses_inconsistent_protocol_choices(art, tmp_path):
    path = profiles_file(art, tmp_path, "http://127.0.0.1:9/v1")
    prompts = art / "experiments" / "prompts.json"
    cases_ = ()
    with pytest.raises(rk.DataError) as err:
        make_backend(PROFILE, profiles_path=path, protocol="published")
    assert (err.value.code, err.value.field) == (E.EMPTY_VALUE, "prompts_path")
    with pytest.raises(rk.DataError) as err:
        make_backend("sim:deepseek_v4_primary", cases=cases_, protocol="published", prompts_path=prompts)
    assert (err.value.code, err.value.field) == (E.INVALID_VALUE, "protocol")
    with pytest.raises(rk.DataError) as err:
        make_backend(PROFILE, profiles_path=path, protocol="published", prompts_path=prompts, language="en")
    assert err.value.field == "language"
    with pytest.raises(rk.DataError) as err:
        make_backend(PROFILE, profiles_path=path, prompts=load_published_prompts(prompts))  # protocol says kit
    assert err.value.field == "prompts"
    with pytest.raises(rk.DataError) as err:
        make_backend(PROFILE, profiles_path=path, protocol="publish")
    assert (err.value.code, err.value.field) == (E.UNKNOWN_ENUM, "protocol")


def test_resume_refuses_a_protocol_change(art, assets, cases, receipts, tmp_path):
    receipt = receipt_of(receipts[0])
    case = cases[receipt["case_id"]]
    with RawServer(replier({"ANSWER": [receipt["responses"][0]["content"]] * 2})) as server:
        out = tmp_path / "run"
        run_cases([case], published_backend(art, tmp_path, server.base_url), system="routebr", assets=assets,
                  out_dir=out, progress=False)
        kit = make_backend(PROFILE, profiles_path=profiles_file(art, tmp_path, server.base_url), language="zh")
        with pytest.raises(rk.DataError) as err:
            run_cases([case], kit, system="routebr", assets=assets, out_dir=out, resume=True, progress=False)
        assert err.value.code is E.INCONSISTENT_ASSETS and "protocol" in err.value.got
        again = run_cases([case], published_backend(art, tmp_path, server.base_url), system="routebr",
                          assets=assets, out_dir=out, resume=True, progress=False)
    assert (again.executed, again.resumed, server.count) == (0, 1, 1)


def test_cli_run_with_the_published_protocol_sends_the_receipts_body(art, receipts, tmp_path):
    receipt = receipt_of(next(p for p in receipts if "b2_direct_guard" in str(p)))
    source = art / "data" / "routebr_confirm_320.csv"
    with source.open(encoding="utf-8-sig", newline="") as stream:
        reader = csv.DictReader(stream)
        rows = [r for r in reader if r["case_id"] == receipt["case_id"]]
        fields = reader.fieldnames
    cases_csv = tmp_path / "one.csv"
    with cases_csv.open("w", encoding="utf-8", newline="") as stream:
        writer = csv.DictWriter(stream, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    data = art / "data"
    with RawServer(replier({"ANSWER": [receipt["responses"][0]["content"]]})) as server:
        code = main(["run", "--protocol", "published", "--prompts", str(art / "experiments" / "prompts.json"),
                     "--profiles", str(profiles_file(art, tmp_path, server.base_url)), "--profile", PROFILE,
                     "--system", "b2", "--cases", str(cases_csv), "--split", "MAIN", "--catalog",
                     str(data / "catalog.csv"), "--rules", str(data / "boundary_rules.csv"), "--registry",
                     str(data / "entity_catalog.csv"), "--out", str(tmp_path / "out"), "--no-progress"])
    assert code == 0
    assert server.requests == [receipt["calls"][0]["request_body"]]
    assert server.raw == [wire_bytes(receipt["calls"][0]["request_body"])]
    manifest = json.loads((tmp_path / "out" / "run_manifest.json").read_text(encoding="utf-8"))
    assert manifest["protocol"] == "published" and manifest["options"]["fallback"] == "CLARIFY"


def test_cli_published_protocol_without_prompts_is_a_one_line_error(art, tmp_path, capsys):
    data = art / "data"
    code = main(["run", "--protocol", "published", "--profiles", str(profiles_file(art, tmp_path, "http://x/v1")),
                 "--profile", PROFILE, "--system", "b2", "--cases", str(data / "routebr_confirm_320.csv"),
                 "--split", "MAIN", "--registry", str(data / "entity_catalog.csv"), "--out", str(tmp_path / "o")])
    assert code == 2 and "prompts_path" in capsys.readouterr().err


def test_notebook_parameters_carry_the_protocol(art, tmp_path):
    prompts = art / "experiments" / "prompts.json"
    study = StudyConfig.from_parameters(source="live", artifact_dir=str(art), profile=PROFILE, out_dir=str(tmp_path),
                                        protocol="published")
    assert (study.protocol, Path(study.prompts_path).resolve()) == (Protocol.PUBLISHED, prompts.resolve())
    assert StudyConfig.from_parameters(source="simulated", out_dir=str(tmp_path)).protocol is Protocol.KIT
    screening = ScreeningConfig.from_parameters(source="live", profiles=[PROFILE], split="MAIN",
                                                artifact_dir=str(art), out_dir=tmp_path, protocol="published")
    assert (screening.protocol, Path(screening.prompts_path).resolve()) == (Protocol.PUBLISHED, prompts.resolve())
    for build in (lambda p: StudyConfig.from_parameters(source="simulated", out_dir=str(tmp_path), protocol=p),
                  lambda p: ScreeningConfig.from_parameters(source="simulated", profiles=[PROFILE], split="MAIN",
                                                            artifact_dir=str(art), out_dir=tmp_path, protocol=p)):
        with pytest.raises(rk.DataError) as err:
            build("published")
        assert err.value.field == "protocol"
        with pytest.raises(rk.DataError) as err:
            build("pub")
        assert err.value.code is E.UNKNOWN_ENUM


def test_a_live_screening_run_sends_the_published_texts(art, assets, cases, tmp_path):
    prompts = json.loads((art / "experiments" / "prompts.json").read_text(encoding="utf-8"))
    chosen = [cases["MAIN-0001"], cases["MAIN-0004"]]
    with RawServer(replier({"ANSWER": [json.dumps({"action_id": "A1_ADVISORY", "object_id": "UNRESOLVED",
                                                    "topk": ["A1_ADVISORY"]})] * 2})) as server:
        rows = run_backend(PROFILE, chosen, assets, tmp_path / "run", profiles_path=profiles_file(
            art, tmp_path, server.base_url), protocol="published", prompts_path=art / "experiments" / "prompts.json",
            concurrency=1)
    assert len(rows) == 2 and {r["messages"][0]["content"] for r in server.requests} == {prompts["ROUTEBR"]}


# --------------------------------------------------------------------------------------------- properties

ACTIONS = ["A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE", "A5_PROTECTED_ACTION"]
IDS = ["SSE:510880", "SSE:512480", "SZSE:159919", "SSE:510050", "NONE", "UNRESOLVED"]
JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner,
                                                                                 max_size=3), max_leaves=8)
NEAR = {
    "terminal": st.sampled_from(["DISPATCH", "CLARIFY", "DEFER", "HANDOFF", "REJECT", "ALLOW", None]),
    "boundary": st.sampled_from(["ALLOW", "CLARIFY", "DEFER", "HANDOFF", "REJECT", "DISPATCH", None]),
    "action_id": st.sampled_from([*ACTIONS, "A9", None]) | JSON,
    "object_id": st.sampled_from([*IDS, "X"]) | JSON,
    "topk": st.lists(st.sampled_from([*ACTIONS, "A9"]), max_size=4) | JSON,
    "rule_ids": st.lists(st.sampled_from(["R001", "R020", "R999", "R777"]), max_size=2) | JSON,
}
OUTPUTS = st.fixed_dictionaries({}, optional=NEAR)
PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@PROPERTY
@given(output=OUTPUTS, guard=st.booleans())
def test_whatever_the_kit_accepts_the_published_rules_accept_with_the_same_route(assets, cases, output, guard):
    request = cases["MAIN-0004"].request
    policy = assets.policy if guard else None
    kit = check_direct(output, assets.catalog, request.candidate_index, policy)
    published = check_direct_published(output, assets.catalog, request.candidate_index, policy)
    assert published.ok is not bool(published.errors)
    if kit.ok:
        assert published.ok and published.route == kit.route


@PROPERTY
@given(output=OUTPUTS)
def test_the_published_routebr_acceptance_equals_the_kits(assets, cases, output):
    """Why the kit's controller serves both protocols: it accepts exactly the proposals the published one does."""
    request = cases["MAIN-0004"].request
    payload = assets.controller().proposal_payload(request)
    published_ok = not route_errors(output, payload["catalog"], payload["entities"])
    assert check_proposal(output, assets.catalog, request.candidate_index).ok is published_ok


@PROPERTY
@given(raw=JSON | st.text(max_size=12) | JSON.map(json.dumps), stage=st.sampled_from(
    [S.ROUTEBR, S.B1_DIRECT, S.B2_DIRECT_GUARD]))
def test_published_validators_answer_any_json_value_without_raising(assets, cases, raw, stage):
    request = cases["MAIN-0004"].request
    payload = (assets.controller().proposal_payload(request) if stage is S.ROUTEBR
               else direct_payload(request, assets.catalog, assets.policy if stage is S.B2_DIRECT_GUARD else None))
    errors = stage_errors(stage, raw, payload)
    assert all(isinstance(e.message, str) and e.message for e in errors)
    if not isinstance(raw, (str, dict)):
        assert [e.message for e in errors] == ["output must be one JSON object"]


@PROPERTY
@given(body=st.dictionaries(st.text(max_size=5), JSON, max_size=5))
def test_wire_bytes_are_the_published_serialisation(body):
    data = wire_bytes(body)
    assert json.loads(data.decode("utf-8")) == body and data == json.dumps(body, ensure_ascii=False).encode()


def test_no_published_request_body_carries_gold_annotator_or_adjudication_fields(art, assets, cases):
    backend = OpenAICompatBackend(load_profile(art / "experiments" / "api_profiles.json", PROFILE),
                                  load_published_prompts(published_prompts_path(art)))
    controller, checked = assets.controller(), 0
    for case in cases.values():
        payloads = {S.ROUTEBR: controller.proposal_payload(case.request),
                    S.B1_DIRECT: direct_payload(case.request, assets.catalog),
                    S.B2_DIRECT_GUARD: direct_payload(case.request, assets.catalog, assets.policy)}
        for stage, payload in payloads.items():
            text = wire_bytes(backend.request_body(rk.ModelCall(case.case_id, stage, payload))).decode()
            assert '"gold_' not in text and "annotator_" not in text and "adjudicated_by" not in text
            checked += 1
    assert checked == 3 * len(cases) == 1800


def test_published_b2_repairs_are_re_validated_only_and_the_kit_guards_them(assets, cases):
    from routebr_kit.backends import ScriptedBackend

    request = cases["MAIN-0004"].request
    first = json.dumps({"terminal": "DEFER", "action_id": "A1_ADVISORY", "object_id": "UNRESOLVED",
                        "boundary": "DEFER", "topk": ["A1_ADVISORY", "A1_ADVISORY"], "rule_ids": ["R020"]})
    changed = json.dumps({"terminal": "DEFER", "action_id": "A2_INFO_LOOKUP", "object_id": "UNRESOLVED",
                          "boundary": "DEFER", "topk": ["A2_INFO_LOOKUP"], "rule_ids": ["R020"]})
    decisions = {}
    for protocol in Protocol:
        baseline = DirectBaseline.for_system("b2_direct_guard", assets.catalog, assets.policy, protocol=protocol)
        live = baseline.route(request, ScriptedBackend({S.B2_DIRECT_GUARD: [first],
                                                        S.REPAIR_B2_DIRECT_GUARD: [changed]}))
        assert baseline.decide(request, first, changed) == live  # stored outputs reach the same decision
        decisions[protocol] = live
    assert decisions[Protocol.PUBLISHED].action_id == "A2_INFO_LOOKUP" and decisions[Protocol.PUBLISHED].valid
    assert decisions[Protocol.KIT].reason is rk.ReasonCode.FAIL_CLOSED_REPAIR_CHANGED_PROPOSAL
