"""local:lexical: cue selection, closed-list object resolution, the payload it may read, and its scores on the
published benchmark (golden, against ../shared/routebr_artifact)."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.backends.lexical import LexicalBackend, Lexicon, find_cues
from routebr_kit.backends.registry import make_backend
from routebr_kit.core.aio import run_sync
from routebr_kit.core.calls import FailureKind, ModelCall
from routebr_kit.core.records import Stage
from routebr_kit.dataset.composition import Partition
from routebr_kit.dataset.generate import generate_benchmark
from routebr_kit.evaluation.metrics import score
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.artifact import Artifact
from routebr_kit.store.cases import load_cases

A1, A2, A3, A4, A5 = ("A1_ADVISORY", "A2_INFO_LOOKUP", "A3_ACCOUNT_ANALYSIS", "A4_SUPPORT_RESPONSE",
                      "A5_PROTECTED_ACTION")
ZH = [
    {"object_id": "SSE:512010", "object_type": "ETF", "display_name": "医药ETF", "aliases": ["512010"]},
    {"object_id": "SZSE:159938", "object_type": "ETF", "display_name": "医药ETF广发", "aliases": ["159938"]},
    {"object_id": "SSE:510300", "object_type": "ETF", "display_name": "300ETF", "aliases": ["510300"]},
]
EN = [
    {"object_id": "NYSEARCA:SPY", "object_type": "ETF", "display_name": "SPDR S&P 500 ETF Trust",
     "aliases": ["SPY", "SPDR S&P 500"]},
    {"object_id": "NASDAQ:QQQ", "object_type": "ETF", "display_name": "Invesco QQQ Trust",
     "aliases": ["QQQ", "Invesco QQQ"]},
]


@pytest.fixture(scope="module")
def artifact(routebr_artifact) -> Artifact:
    return Artifact(routebr_artifact)


@pytest.fixture(scope="module")
def backend(artifact) -> LexicalBackend:
    return LexicalBackend(artifact.assets.catalog)


def propose(backend, request, entities=ZH, history=()):
    return backend.propose({"request": request, "history": list(history), "entities": entities})


# --------------------------------------------------------------------------------------------- primary action


@pytest.mark.parametrize("request_text, action", [
    ("请在我的账户中为医药ETF提交买入委托，先按受保护操作流程核验权限。我也想知道它是否还适合继续持有。", A5),
    ("帮我看一下我账户里医药ETF的持仓，过去一年的波动有什么变化？", A3),
    ("帮我查一下医药ETF的公开资料，重点是近期表现。最近的波动也让我有点焦虑。", A2),
    ("请查询医药ETF最近两周的收益来源信息，不需要做投资建议。", A2),
    ("正在看医药ETF，计划持有一周。请结合波动说明它是否适合我，别直接替我下单。", A1),
    ("医药ETF适合我吗？如果后续要操作，请先告诉我需要哪些确认条件。", A1),
    ("这个结果迟迟没有更新是什么意思？我担心账户有问题，麻烦先按客服流程解释。", A4),
    ("你好。", A4),  # nothing cued: the lexicon's default family
    ("Please place a buy order for the SPY in my account.", A5),
    ("How are my holdings in QQQ doing this quarter?", A3),
    ("Can you look up the public information on QQQ?", A2),
    ("Is QQQ suitable for me? Don't place an order for me.", A1),
    ("Is QQQ a good fit? If I later decide to trade, tell me the conditions.", A1),
    ("Is QQQ a good fit? I might sell some later, but not now.", A1),
    ("The statement page won't load and I don't know what to do.", A4),
    ("I read that it suits cautious investors. What is the expense ratio of QQQ?", A2),
])
def test_the_primary_action_follows_the_counted_cues(backend, request_text, action):
    entities = EN if request_text.isascii() else ZH
    assert propose(backend, request_text, entities).action_id == action


def test_negated_cues_and_cues_in_side_remarks_do_not_count():
    lexicon = Lexicon.load(language="zh")
    text = "请说明它是否适合我，别直接替我下单。如果后续要操作，请先告诉我。"
    hits = {h.phrase: h.weight for h in find_cues(text, lexicon)}
    assert hits == {"适合": 1.0, "下单": 0.0, "要操作": 0.0}
    # a negator inside a longer word (特别) is not a negation
    assert {h.phrase: h.weight for h in find_cues("特别适合我吗", lexicon)} == {"适合": 1.0}
    english = Lexicon.load(language="en")
    hits = {h.phrase: h.weight for h in find_cues("I'm not placing an order yet. I don't know which team handles "
                                                 "this. A friend said it's a good idea.", english)}
    assert hits == {"placing an order": 0.0, "which team handles": 1.0, "good idea": 0.0}


def test_topk_ranks_the_other_cued_families(backend):
    proposal = propose(backend, "请在我的账户中为医药ETF提交买入委托。我也想知道它是否还适合继续持有。")
    assert proposal.topk[0] == A5 and set(proposal.topk[1:]) == {A3, A1}
    assert len(proposal.topk) == len(set(proposal.topk)) <= 3


# --------------------------------------------------------------------------------------------- object


@pytest.mark.parametrize("request_text, history, expected, rule", [
    ("医药ETF广发适合我吗？", (), "SZSE:159938", "REQUEST_EXACT"),  # longest match: not 医药ETF
    ("医药ETF适合我吗？", (), "SSE:512010", "REQUEST_EXACT"),
    ("512010适合我吗？", (), "SSE:512010", "REQUEST_EXACT"),
    ("5120101适合我吗？", (), "UNRESOLVED", "NOT_FOUND"),  # a code inside a longer digit run is no mention
    ("医药ETF和300ETF中的一个适合我吗？", (), "UNRESOLVED", "AMBIGUOUS"),
    ("它适合我吗？", ("我上一轮问的是300ETF（510300）。",), "SSE:510300", "HISTORY_ANTECEDENT"),
    ("它适合我吗？", ("我问过300ETF。", "也问过医药ETF。"), "UNRESOLVED", "AMBIGUOUS"),
    ("刚才提到的那只ETF适合我吗？", (), "UNRESOLVED", "NOT_FOUND"),
    ("Is the SPDR S&P 500 ETF Trust suitable for me?", (), "NYSEARCA:SPY", "REQUEST_EXACT"),
    ("Is spy suitable for me?", (), "NYSEARCA:SPY", "REQUEST_EXACT"),
    ("Is SPYX suitable for me?", (), "UNRESOLVED", "NOT_FOUND"),
])
def test_objects_resolve_by_exact_closed_list_match_only(backend, request_text, history, expected, rule):
    proposal = propose(backend, request_text, EN if request_text.isascii() else ZH, history)
    assert (proposal.object_id, proposal.object_rule) == (expected, rule)


def test_object_free_actions_get_none_and_wrong_types_stay_unresolved(artifact, backend):
    assert propose(backend, "医药ETF的页面提示是什么意思？该找哪里处理？").object_id == "NONE"
    topic = [{"object_id": "TOPIC:1", "object_type": "TOPIC", "display_name": "医药ETF", "aliases": []}]
    proposal = propose(backend, "医药ETF适合我吗？", topic)  # A1 accepts ETF only
    assert (proposal.action_id, proposal.object_id, proposal.object_rule) == (A1, "UNRESOLVED", "TYPE_MISMATCH")


# --------------------------------------------------------------------------------------------- the seam


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.sampled_from(list("适合查询账户委托下单别如果后续它医药ETF300512010 ,。？abc")),
                    max_size=40),
       extra=st.dictionaries(st.sampled_from(["runtime_context", "rules", "gold_action", "gold_object_id"]),
                             st.text(max_size=5)))
def test_any_request_yields_a_valid_proposal_and_nothing_but_the_payload_matters(artifact, backend, text, extra):
    payload = {"request": text, "history": [], "entities": ZH, "catalog": artifact.assets.catalog.prompt_view()}
    first = backend.propose(payload)
    assert backend.propose({**payload, **extra}) == first  # state, rules and gold fields are never read
    candidates = {e["object_id"]: rk.Entity(e["object_id"], e["object_type"], e["display_name"],
                                            tuple(e["aliases"])) for e in ZH}
    assert rk.check_proposal(first.output(), artifact.assets.catalog, candidates).ok


def test_stages_languages_and_lexicons_are_checked(artifact, backend, tmp_path):
    payload = {"request": "医药ETF适合我吗？", "history": [], "entities": ZH}
    reply = run_sync(backend.complete(ModelCall("X", Stage.REPAIR_ROUTEBR, {"original_payload": payload})))
    assert json.loads(reply.content)["action_id"] == A1 and reply.model == "local:lexical"
    assert reply.prompt_tokens == reply.completion_tokens == 0 and reply.extra["explanation"]["language"] == "zh"
    reply = run_sync(backend.complete(ModelCall("X", Stage.B1_DIRECT, payload)))
    assert reply.failure.kind is FailureKind.EXCEPTION
    with pytest.raises(rk.DataError) as raised:
        LexicalBackend(artifact.assets.catalog, language="fr")
    assert raised.value.code is rk.ErrorCode.UNKNOWN_ENUM
    broken = tmp_path / "lexicon.json"
    broken.write_text("{not json", encoding="utf-8")
    with pytest.raises(rk.DataError) as raised:
        Lexicon.load(broken)
    assert raised.value.code is rk.ErrorCode.INVALID_JSON and raised.value.file == str(broken)
    with pytest.raises(rk.DataError) as raised:
        Lexicon.from_dict({}, file="x.json")
    assert raised.value.file == "x.json" and raised.value.field == "families"
    foreign = Lexicon.from_dict({**json.loads(_packaged("en")), "families": [
        {"family": "X", "action_id": "A9_UNKNOWN", "cues": {"x": 1.0}}], "default_family": "X"})
    with pytest.raises(rk.DataError) as raised:
        LexicalBackend(artifact.assets.catalog, "en", lexicons={"en": foreign})
    assert raised.value.code is rk.ErrorCode.UNKNOWN_REFERENCE


def _packaged(language: str) -> str:
    from importlib import resources

    return (resources.files("routebr_kit") / "resources" / f"lexicon_{language}.json").read_text(encoding="utf-8")


def test_the_registry_builds_the_lexical_backend_and_the_manifest_hashes_its_lexicons(artifact):
    backend = make_backend("local:lexical", catalog=artifact.assets.catalog)
    manifest = backend.manifest()
    assert isinstance(backend, LexicalBackend) and manifest["kind"] == "local"
    assert set(manifest["lexicons"]) == {"zh", "en"} and len(manifest["profile"]["sha256"]) == 64


# --------------------------------------------------------------------------------------------- golden


def test_tuned_on_dev_then_scored_on_select_160_and_confirm_main(artifact, backend, tmp_path):
    """The measured scores (DEV is where the Chinese lexicon was tuned; SELECT and CONFIRM were held out)."""
    dev = tuple(c for c in load_cases(artifact.data("routebr_600.csv")) if c.split is rk.Split.DEV)
    select = tuple(artifact.cases("select").values())
    confirm_main = tuple(c for c in artifact.cases("confirm").values() if c.split is rk.Split.MAIN)
    measured = {}
    for name, cases in (("dev", dev), ("select", select), ("confirm_main", confirm_main)):
        result = run_cases(cases, backend, system="routebr", assets=artifact.assets, out_dir=tmp_path / name,
                           progress=False)
        s = score(result.rows, cases)
        measured[name] = (s.contract_exact.hits, s.n, s.action.hits, s.object.hits, s.false_dispatch.hits,
                          s.false_block.hits)
        assert s.path_macro_f1 == 1.0 and s.valid_json.hits == s.n
    assert measured == {"dev": (120, 120, 120, 120, 0, 0), "select": (160, 160, 160, 160, 0, 0),
                        "confirm_main": (200, 200, 200, 200, 0, 0)}


def test_tuned_on_generated_dev_then_scored_on_the_generated_english_benchmark(tmp_path):
    """The kit's English benchmark (seed 0): DEV was the tuning set; SELECT and CONFIRM MAIN are held out."""
    bench = generate_benchmark(seed=0, language="en")
    backend = LexicalBackend(bench.assets.catalog, language="en")
    sets = {"dev": tuple(c for c in bench.cases if c.split is rk.Split.DEV),
            "select": bench.partition(Partition.SELECT),
            "confirm_main": tuple(c for c in bench.partition(Partition.CONFIRM) if c.split is rk.Split.MAIN)}
    rates = {}
    for name, cases in sets.items():
        result = run_cases(cases, backend, system="routebr", assets=bench.assets, out_dir=tmp_path / name,
                           progress=False)
        rates[name] = score(result.rows, cases).contract_exact.rate
    assert rates["dev"] == 1.0
    assert rates["select"] >= 0.95 and rates["confirm_main"] >= 0.95  # measured: 1.0 and 1.0
