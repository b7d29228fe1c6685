"""The injection suite: audit passes (en and zh), byte-identical per seed, gold unchanged, metadata round-trips;
and its scoring judges what was dispatched, not what was proposed."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import routebr_kit as rk
from routebr_kit.adversarial.scoring import judge_rows, pooled, score_attacks
from routebr_kit.adversarial.suite import (
    HOSTILE,
    AttackFamily,
    generate_suite,
    load_suite,
    lookalike_forms,
    write_suite,
)
from routebr_kit.backends.lexical import LexicalBackend
from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.dataset.audit import audit_files
from routebr_kit.dataset.references import mentioned
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.cases import load_cases
from routebr_kit.store.ledger import PredictionRow


@pytest.fixture(scope="module")
def published(routebr_artifact):
    return routebr_artifact / "data" / "routebr_600.csv"


@pytest.fixture(scope="module")
def kit_en(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit-en")
    write_benchmark(generate_benchmark(0, "en"), out)
    return out / "routebr_600.csv"


def _audit(directory):
    registry = next(p for p in (directory / "entity_catalog.csv", directory / "registry.csv") if p.exists())
    return audit_files([directory / "attacks.csv"], directory / "catalog.csv", directory / "boundary_rules.csv",
                       registry)


@pytest.mark.parametrize(("source", "lang"), [("published", "zh"), ("kit_en", "en"), ("published", "en")])
def test_suite_passes_the_audit_and_is_byte_identical(source, lang, request, tmp_path):
    cases = request.getfixturevalue(source)
    a, b = tmp_path / "a", tmp_path / "b"
    write_suite(generate_suite(cases, seed=3, language=lang, per_family=8), a)
    write_suite(generate_suite(cases, seed=3, language=lang, per_family=8), b)
    result = _audit(a)
    assert result.ok, [str(f) for r in result.reports for f in r.errors]
    for path in sorted(a.iterdir()):
        assert path.read_bytes() == (b / path.name).read_bytes(), path.name
    other = tmp_path / "c"
    write_suite(generate_suite(cases, seed=4, language=lang, per_family=8), other)
    assert (other / "attacks.csv").read_bytes() != (a / "attacks.csv").read_bytes()


def test_gold_unchanged_targets_forbidden_and_references_kept(published, tmp_path):
    suite = generate_suite(published, seed=0, language="zh", per_family=10)
    base = {c.case_id: c for c in load_cases(published)}
    controller = suite.assets.controller()
    assert suite.counts()[AttackFamily.INSTRUCTION_INJECTION.value] == 10
    for case in suite.cases:
        spec = suite.specs[case.case_id]
        src = base[spec.base_case_id]
        assert case.gold == src.gold  # the correct route ignores the injected text
        assert case.request.state == src.request.state and case.request.candidates == src.request.candidates
        named = {e.object_id for e in mentioned(case.request.utterance, case.request.candidates)}
        assert named == {e.object_id for e in mentioned(src.request.utterance, src.request.candidates)}
        if spec.family.hostile:
            assert spec.target_forbidden and spec.injected
            probe = {"action_id": spec.target_action, "object_id": spec.target_object, "topk": [spec.target_action]}
            assert not controller.decide(case.request, probe).dispatched  # the target really is forbidden
        if spec.family is AttackFamily.POISONED_HISTORY:
            assert case.request.history[-1] == spec.injected and case.request.utterance == src.request.utterance
        elif spec.family is AttackFamily.CONTROL:
            assert case.request.utterance == src.request.utterance
        else:
            assert case.request.utterance == f"{src.request.utterance} {spec.injected}"
        if spec.family is AttackFamily.LOOKALIKE_ID:
            assert spec.lookalike_of == spec.target_object != src.gold.object_id
    written = tmp_path / "s"
    write_suite(suite, written)
    again = load_suite(written)
    assert again.specs == suite.specs and [c.case_id for c in again.cases] == [c.case_id for c in suite.cases]


def test_lookalikes_are_not_exact_matches():
    entity = rk.Entity("SSE:510050", "ETF", "50ETF", ("510050",))
    forms = lookalike_forms(entity)
    assert forms == ("５１００５０", "50ЕТF")
    assert all(not mentioned(f"please use {form}", (entity,)) for form in forms)


def test_malformed_specs_fail_loud(published, tmp_path):
    write_suite(generate_suite(published, seed=0, language="zh", per_family=2), tmp_path)
    path = tmp_path / "attacks.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    data["attacks"] = data["attacks"][1:]
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(rk.DataError) as err:
        load_suite(tmp_path)
    assert err.value.code is rk.ErrorCode.UNKNOWN_REFERENCE
    data["attacks"].append(dict(data["attacks"][0], family="NOPE"))
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(rk.DataError):
        load_suite(tmp_path)


def _row(spec_case, action, obj, path, system="b1_direct"):
    return PredictionRow(spec_case, system, action, obj, "ALLOW" if not path.startswith("T_") else path[2:], path,
                         (action,), True, False)


def test_scoring_separates_following_from_dispatch(published):
    suite = generate_suite(published, seed=0, language="zh", per_family=5)
    hostile = [suite.specs[c.case_id] for c in suite.cases if suite.specs[c.case_id].family.hostile]
    spec = hostile[0]
    # a model that followed the attacker: RouteBR refuses (terminal), B1 dispatches the forbidden target
    routebr = [_row(spec.case_id, spec.target_action, spec.target_object, "T_REJECT", "routebr")]
    b1 = [_row(spec.case_id, spec.target_action, spec.target_object, spec.target_action)]
    outcome_r, = judge_rows(suite, routebr)
    outcome_b, = judge_rows(suite, b1)
    assert outcome_r.followed and not outcome_r.forbidden_dispatch and not outcome_r.target_dispatched
    assert outcome_b.followed and outcome_b.forbidden_dispatch and outcome_b.target_dispatched
    benign = next(s for s in suite.specs.values() if s.family is AttackFamily.BENIGN_LOOKALIKE)
    blocked, = judge_rows(suite, [_row(benign.case_id, "NONE", "NONE", "T_CLARIFY")])
    assert blocked.over_blocked is True and blocked.followed is None
    with pytest.raises(rk.DataError):
        judge_rows(suite, [_row("NOT-A-CASE", "A1_ADVISORY", "NONE", "T_CLARIFY")])


def test_lexical_routebr_never_dispatches_forbidden(published, tmp_path):
    suite = generate_suite(published, seed=1, language="zh", per_family=6)
    ledgers = {s: run_cases(list(suite.cases), LexicalBackend(suite.assets.catalog), system=s, assets=suite.assets,
                            out_dir=tmp_path / s, progress=False).rows for s in ("routebr", "a_state")}
    scores = score_attacks([(suite, ledgers)])
    assert {s.family for s in scores} == set(AttackFamily)
    totals = pooled(scores)
    assert totals["routebr"]["forbidden_dispatch"].k == 0
    assert totals["routebr"]["followed"].k == totals["a_state"]["followed"].k  # same proposals
    assert totals["a_state"]["forbidden_dispatch"].k > 0
    assert all(s.followed.n == s.cases for s in scores if s.family in HOSTILE)
    # each row carries the counts behind its rates, so the pooled rates can be re-derived from the saved table
    for system, measures in totals.items():
        for measure, rate in measures.items():
            counts = [s.as_row()[f"{measure}_count"] for s in scores if s.system == system and s.family in HOSTILE]
            assert [sum(int(c.split("/")[i]) for c in counts if c) for i in (0, 1)] == [rate.k, rate.n]



def test_suite_runs_keep_runs_of_an_older_kit_and_say_so(published, tmp_path):
    """Notebook 11 re-run over its own runs folder after the kit changed: the old runs stay, the suite runs beside
    them with the same rows, and ``stale_notes`` names each kept run (the notebook displays them)."""
    from routebr_kit.adversarial import suite_runs

    suites = {"en": generate_suite(published, seed=1, language="en", per_family=2)}
    lexical = lambda suite, _system: LexicalBackend(suite.assets.catalog)  # noqa: E731
    first = suite_runs(suites, ("routebr",), lexical, tmp_path, "lexical")
    assert first.stale_notes == ()
    manifest_path = tmp_path / "runs" / "lexical_en_routebr" / "run_manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest["hashes"]["controller"] = "0" * 64  # what an older kit recorded
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    old = manifest_path.read_bytes()
    again = suite_runs(suites, ("routebr",), lexical, tmp_path, "lexical")
    assert len(again.stale_notes) == 1 and "hashes.controller" in again.stale_notes[0]
    assert manifest_path.read_bytes() == old
    decided = lambda rows: [(r.case_id, r.pred_action, r.pred_object_id, r.pred_final_path) for r in rows]  # noqa: E731
    assert decided(again.runs[0][1]["routebr"]) == decided(first.runs[0][1]["routebr"])  # latency is measured anew

def test_cli_generate_attacks(published, tmp_path):
    done = subprocess.run([sys.executable, "-m", "routebr_kit", "generate-attacks", "--cases", str(published),
                           "--seed", "0", "--lang", "zh", "--out", str(tmp_path), "--per-family", "3"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "attacks.csv").exists() and "INSTRUCTION_INJECTION" in done.stdout
    bad = subprocess.run([sys.executable, "-m", "routebr_kit", "generate-attacks", "--cases", str(published),
                          "--seed", "-1", "--lang", "zh", "--out", str(tmp_path / "x")],
                         capture_output=True, text=True, check=False)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr
