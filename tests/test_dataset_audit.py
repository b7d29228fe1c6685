"""The audit: the published files pass the published checks (golden), generated files pass everything, and every
kind of corruption is reported with its code and case ID — without the audit ever writing."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from dataset_fixtures import VARIANTS, written

from routebr_kit.dataset.audit import AuditCode as A
from routebr_kit.dataset.audit import CheckClass, FileKind, Severity, audit_cases, audit_files
from routebr_kit.store.cases import CASE_COLUMNS

#: Published rows whose cue evidence ('适合') is a lemma, not a span of the request ('合不合适').
PUBLISHED_CUE_WARNINGS = (
    [f"DEV-{i:04d}" for i in (3, 7, 11, 15, 19, 23)]
    + [f"MAIN-{i:04d}" for i in range(3, 60, 4)]
    + [f"FLIP-{i:04d}" for i in (5, 6, 13, 14, 21, 22)]
    + [f"ENTITY-{i:04d}" for i in (3, 7, 11, 15)]
)
#: Published registry names that occur inside another entity's display name (e.g. '300ETF' in '沪深300ETF嘉实').
PUBLISHED_OVERLAPS = ("SSE:510050", "SSE:510300", "SSE:510500", "SSE:512010", "SSE:513100", "SSE:518880")
#: Spec §5.4: the published manifest's hash prefixes.
PUBLISHED_HASHES = {"routebr_600.csv": "f7911a54", "routebr_select_160.csv": "0274f632",
                    "routebr_confirm_320.csv": "f3e04548"}


def _published(artifact: Path, *names: str):
    data = artifact / "data"
    return audit_files([data / n for n in names], data / "catalog.csv", data / "boundary_rules.csv",
                       data / "entity_catalog.csv")


def test_published_600_passes_and_its_inconsistencies_are_listed(routebr_artifact) -> None:
    report = _published(routebr_artifact, "routebr_600.csv").reports[0]
    assert report.kind is FileKind.FULL
    assert report.published_ok and report.ok
    assert report.codes() == {A.CUE_EVIDENCE_NOT_FOUND: 31, A.REGISTRY_NAME_OVERLAP: 6}
    assert report.subjects(A.CUE_EVIDENCE_NOT_FOUND) == tuple(PUBLISHED_CUE_WARNINGS)
    assert report.subjects(A.REGISTRY_NAME_OVERLAP) == PUBLISHED_OVERLAPS
    assert all(f.severity is Severity.WARNING and f.check_class is CheckClass.KIT for f in report.findings)
    stats = report.stats
    assert dict(stats.dispatchable) == {"DEV": 50, "MAIN": 120, "FLIP": 60, "ENTITY": 32}
    assert (stats.unresolvable, stats.unresolvable_coupled) == (148, 148)  # spec §9 item 10: always coupled
    assert sum(stats.object_gate.values()) == 0
    assert report.hashes["cases"].startswith("f7911a54") and report.hashes["catalog"].startswith("f82606a3")
    assert report.hashes["rules"].startswith("3613d23a")


def test_published_subsets_pass_as_their_kind(routebr_artifact) -> None:
    result = _published(routebr_artifact, *PUBLISHED_HASHES)
    assert result.ok and result.cross == ()
    kinds = {Path(r.path).name: r for r in result.reports}
    assert kinds["routebr_select_160.csv"].kind is FileKind.SELECT
    assert kinds["routebr_confirm_320.csv"].kind is FileKind.CONFIRM
    for name, prefix in PUBLISHED_HASHES.items():
        assert kinds[name].hashes["cases"].startswith(prefix)
    assert sum(kinds["routebr_confirm_320.csv"].stats.priority_decided.values()) == 23


@pytest.mark.parametrize("seed,lang,decouple", VARIANTS)
def test_generated_benchmarks_pass_everything(tmp_path, seed: int, lang: str, decouple: bool) -> None:
    m = written(tmp_path, seed, lang, decouple)
    result = audit_files([m.path(n) for n in ("routebr_600.csv", *PUBLISHED_HASHES.keys() - {"routebr_600.csv"})],
                         m.path("catalog.csv"), m.path("boundary_rules.csv"), m.path("registry.csv"))
    assert result.ok and result.cross == ()
    assert all(r.findings == () for r in result.reports), [str(f) for r in result.reports for f in r.findings]
    full = result.reports[0]
    assert (sum(full.stats.object_gate.values()) > 0) is decouple


# --------------------------------------------------------------------------------------------- corruptions


def _rows(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle))


def _write(path: Path, rows: list[dict[str, str]]) -> Path:
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CASE_COLUMNS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return path


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    return written(tmp_path_factory.mktemp("clean"))


def _audit(clean, rows, name="routebr_600.csv", tmp=None, **kw):
    path = _write(Path(tmp) / name, rows)
    return audit_cases(path, clean.path("catalog.csv"), clean.path("boundary_rules.csv"), clean.path("registry.csv"),
                       **kw)


def _pick(rows, **where) -> dict[str, str]:
    return next(r for r in rows if all(r[k] == v if isinstance(v, str) else v(r[k]) for k, v in where.items()))


def test_wrong_gold_boundary_is_caught_by_every_stricter_check(clean, tmp_path) -> None:
    rows = _rows(clean.path("routebr_600.csv"))
    row = _pick(rows, split="MAIN", gold_boundary="ALLOW")
    row["gold_boundary"] = "CLARIFY"
    report = _audit(clean, rows, tmp=tmp_path)
    assert report.published_ok and not report.ok  # the published validator would have passed this file
    for code in (A.GOLD_PATH_MISMATCH, A.GOLD_BOUNDARY_MISMATCH, A.SCENARIO_CELL_MISMATCH):
        assert report.subjects(code) == (row["case_id"],)
    assert A.COMPOSITION_COUNT in report.codes()


def test_wrong_rule_and_object(clean, tmp_path) -> None:
    rows = _rows(clean.path("routebr_600.csv"))
    allow = _pick(rows, gold_rule_ids_json='["R999"]', gold_object_difficulty="EXPLICIT_NAME")
    allow["gold_rule_ids_json"] = '["R001"]'
    named = _pick(rows, gold_object_difficulty="CODE_ONLY", gold_boundary="ALLOW")
    candidates = {c["object_id"] for c in json.loads(named["candidate_entities_json"])}
    outsider = next(r["gold_object_id"] for r in rows if r["gold_object_id"].count(":") and
                    r["gold_object_id"] not in candidates)
    named["gold_object_id"] = outsider
    report = _audit(clean, rows, tmp=tmp_path)
    assert report.subjects(A.GOLD_RULE_MISMATCH) == (allow["case_id"],)
    assert report.subjects(A.GOLD_OBJECT_NOT_CANDIDATE) == (named["case_id"],)
    assert report.subjects(A.CODE_ONLY_WITHOUT_CODE) == (named["case_id"],)  # its code is not in the request


def test_reference_and_duplicate_problems(clean, tmp_path) -> None:
    rows = _rows(clean.path("routebr_600.csv"))
    anaphora = _pick(rows, gold_object_difficulty="ANAPHORA", split="MAIN")
    anaphora["history_json"] = "[]"
    a, b = [r for r in rows if r["split"] == "MAIN" and r["gold_action"] == "A4_SUPPORT_RESPONSE"][:2]
    b["utterance"] = a["utterance"].upper()  # equal after case folding
    report = _audit(clean, rows, tmp=tmp_path)
    assert report.subjects(A.ANAPHORA_WITHOUT_HISTORY) == (anaphora["case_id"],)
    assert report.subjects(A.REFERENCE_MISMATCH) == (anaphora["case_id"],)
    assert report.subjects(A.DUPLICATE_REQUEST) == (b["case_id"],)
    assert b["case_id"] in report.subjects(A.CUE_EVIDENCE_NOT_FOUND)  # evidence is case-sensitive: a warning


def test_flip_pair_with_two_changed_predicates(clean, tmp_path) -> None:
    rows = _rows(clean.path("routebr_600.csv"))
    member = _pick(rows, split="FLIP", gold_rule_ids_json='["R001"]')
    state = json.loads(member["runtime_context_json"])
    state["context_fresh"] = False  # matches too, but R001 still wins
    member["runtime_context_json"] = json.dumps(state, separators=(",", ":"))
    report = _audit(clean, rows, tmp=tmp_path)
    assert report.subjects(A.FLIP_PREDICATE_COUNT) == (member["pair_id"],)
    assert report.codes().keys() == {A.FLIP_PREDICATE_COUNT}


def test_unloadable_rows_still_get_every_published_check(clean, tmp_path) -> None:
    rows = _rows(clean.path("routebr_600.csv"))
    rows[0]["split"] = "TRAIN"
    rows[1]["gold_cues_json"] = "[{"
    listed = _pick(rows, gold_object_difficulty="EXPLICIT_NAME")
    candidates = json.loads(listed["candidate_entities_json"])
    stranger = next(c for c in candidates if c["object_id"] != listed["gold_object_id"])
    stranger["object_id"] = "NYSEARCA:ZZZZ"
    listed["candidate_entities_json"] = json.dumps(candidates)
    report = _audit(clean, rows, tmp=tmp_path)
    codes = report.codes()
    assert report.subjects(A.UNKNOWN_SPLIT) == (rows[0]["case_id"],)
    assert report.subjects(A.INVALID_JSON) == (rows[1]["case_id"],)
    assert report.subjects(A.CANDIDATE_NOT_REGISTERED) == (listed["case_id"],)
    assert A.SPLIT_COUNT in codes and A.CASES_UNLOADABLE in codes
    assert not report.published_ok


def test_kinds_and_cross_file_checks(clean, tmp_path) -> None:
    select, confirm = _rows(clean.path("routebr_select_160.csv")), _rows(clean.path("routebr_confirm_320.csv"))
    subset = _audit(clean, select[:50], name="part.csv", tmp=tmp_path)
    assert subset.kind is FileKind.SUBSET and A.SPLIT_COUNT not in subset.codes()
    forced = _audit(clean, select, name="sel.csv", tmp=tmp_path, kind="full")
    assert forced.kind is FileKind.FULL and set(forced.subjects(A.SPLIT_COUNT)) == {"DEV", "MAIN", "FLIP", "ENTITY"}
    select[5]["utterance"] += " Thanks."
    _write(tmp_path / "sel.csv", select + confirm[:1])
    _write(tmp_path / "con.csv", confirm)
    result = audit_files([clean.path("routebr_600.csv"), tmp_path / "sel.csv", tmp_path / "con.csv"],
                         clean.path("catalog.csv"), clean.path("boundary_rules.csv"), clean.path("registry.csv"))
    assert not result.ok
    assert {(f.code, f.subject) for f in result.cross} == {
        (A.SUBSET_OVERLAP, confirm[0]["case_id"]), (A.SUBSET_ROW_MISMATCH, select[5]["case_id"])}


def test_registry_checks(clean, tmp_path) -> None:
    lines = clean.path("registry.csv").read_text(encoding="utf-8").splitlines()
    lines[1] = lines[1].replace("NYSEARCA:", "NYSE:", 1) if "NYSEARCA:" in lines[1] else lines[1]
    (tmp_path / "reg.csv").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    report = audit_cases(clean.path("routebr_select_160.csv"), clean.path("catalog.csv"),
                         clean.path("boundary_rules.csv"), tmp_path / "reg.csv")
    assert A.REGISTRY_SIZE in report.codes() and A.REGISTRY_ID_FORMAT in report.codes()


def test_the_audit_never_writes(clean) -> None:
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in clean.out_dir.iterdir()}
    audit_files([clean.path("routebr_600.csv")], clean.path("catalog.csv"), clean.path("boundary_rules.csv"),
                clean.path("registry.csv"))
    assert {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in clean.out_dir.iterdir()} == before
