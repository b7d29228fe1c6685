"""``local:learned`` (issue 33): a learned proposer trained offline on kit-generated data only — deterministic for a
seed, valid by construction for RouteBR/B1/B2, a model directory whose card and pickle hash are checked."""

from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("sklearn", reason="extra [learned] not installed: pip install 'routebr-kit[learned]'")

from routebr_kit.backends.learned import LearnedBackend, load, save, train  # noqa: E402
from routebr_kit.backends.registry import make_backend  # noqa: E402
from routebr_kit.cli.app import main  # noqa: E402
from routebr_kit.core.calls import ModelCall  # noqa: E402
from routebr_kit.core.contract import check_proposal  # noqa: E402
from routebr_kit.core.errors import DataError  # noqa: E402
from routebr_kit.core.records import Stage  # noqa: E402
from routebr_kit.dataset import generate_benchmark, write_benchmark  # noqa: E402
from routebr_kit.systems.baselines import check_direct, direct_payload  # noqa: E402

BENCH = generate_benchmark(seed=3, language="en")
ASSETS = BENCH.assets
CASES = [c for c in BENCH.cases if c.split.value != "DEV"][:60]


@pytest.fixture(scope="module")
def model():
    return train(seeds=(0,), languages=("en",), held_out_seed=1000)


def test_the_card_records_data_hashes_seeds_and_held_out_accuracy(model):
    card = model.card
    assert card["seeds"] == [0] and card["training_data"][0]["kind"] == "generated"
    assert len(card["training_sha256"]) == 64 and card["held_out"]["en"]["cases"] == 480
    assert 0.5 < card["held_out"]["en"]["action_accuracy"] <= 1.0


def test_training_is_deterministic_for_a_seed(model):
    again = train(seeds=(0,), languages=("en",), held_out_seed=1000)
    texts = [c.request.utterance for c in CASES]
    assert [model.action_ranking(t) for t in texts[:20]] == [again.action_ranking(t) for t in texts[:20]]
    assert again.card["training_sha256"] == model.card["training_sha256"]


def test_every_answer_passes_the_contract_for_routebr_b1_and_b2(model):
    backend = LearnedBackend(model)
    controller = ASSETS.controller()
    for case in CASES:
        raw = backend.propose(controller.proposal_payload(case.request))
        assert check_proposal(json.dumps(raw), ASSETS.catalog, case.request.candidate_index).ok
        for stage, policy in ((Stage.B1_DIRECT, None), (Stage.B2_DIRECT_GUARD, ASSETS.policy)):
            raw = backend.propose(direct_payload(case.request, ASSETS.catalog, policy), stage)
            assert check_direct(json.dumps(raw), ASSETS.catalog, case.request.candidate_index, policy).ok, raw
    reply = asyncio.run(backend.complete(ModelCall(CASES[0].case_id, Stage.ROUTEBR,
                                                   controller.proposal_payload(CASES[0].request))))
    assert reply.ok and reply.model == "local:learned"


def test_a_model_dir_round_trips_and_a_tampered_pickle_is_refused(model, tmp_path):
    save(model, tmp_path / "m")
    loaded = load(tmp_path / "m")
    assert loaded.action_ranking("Buy 10 shares") == model.action_ranking("Buy 10 shares")
    backend = make_backend(f"local:learned:{tmp_path / 'm'}")
    assert backend.manifest()["profile"]["sha256"] == loaded.card["model_sha256"]
    (tmp_path / "m" / "model.pkl").write_bytes(b"x" + (tmp_path / "m" / "model.pkl").read_bytes())
    with pytest.raises(DataError):
        load(tmp_path / "m")


def test_train_proposer_refuses_a_case_file_the_generator_did_not_write(tmp_path):
    write_benchmark(generate_benchmark(seed=5, language="en"), tmp_path / "bench")
    foreign = tmp_path / "foreign" / "routebr_confirm_320.csv"
    foreign.parent.mkdir()
    foreign.write_bytes((tmp_path / "bench" / "routebr_confirm_320.csv").read_bytes())
    assert main(["train-proposer", "--out", str(tmp_path / "m"), "--cases", str(foreign), "--seeds", "0",
                 "--languages", "en"]) != 0
    assert main(["train-proposer", "--out", str(tmp_path / "m"), "--cases",
                 str(tmp_path / "bench" / "routebr_confirm_320.csv"), "--seeds", "0", "--languages", "en"]) == 0
    card = json.loads((tmp_path / "m" / "model_card.json").read_text(encoding="utf-8"))
    assert [s["kind"] for s in card["training_data"]] == ["generated", "cases"]
