"""The one strict file reader (issue 19 bullet 2), bounded work for every input (issue 20 bullet 4) and the strict
published-prompt loader (issue 20 bullet 6).

What is established: every rule of :mod:`routebr_kit.store.files` gives its code, line and field; each file the kit
reads (gates, kit and published prompts, params, profiles, lexicons, sweep spaces, MetaRoute configs, state schemas,
receipts, manifests, cache entries, cell results, notebook JSON) rejects a repeated key through it; the gate that
passed a 41-point exact-match drop because its second ``"gate"`` key won now exits 2 with a located error; an alias
bomb and 100,000-deep nesting end at once; a sweep design is capped; a published prompt file with a repeated
``ROUTEBR``, ``NaN`` or a lone surrogate is refused before any request reaches a server.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROUTEBR_ARTIFACT
from openai_server import OpenAIServer

import routebr_kit as rk
from routebr_kit.backends.cache import ResponseCache
from routebr_kit.backends.lexical import Lexicon
from routebr_kit.backends.profiles import load_profiles
from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.metaroute.config import MetaRouteConfig
from routebr_kit.metaroute.sweep import MAX_CONFIGURATIONS, SweepSpace, design
from routebr_kit.notebook.pipeline import RunPlan, declared_parameters
from routebr_kit.prompts import load_prompts, prompt_path
from routebr_kit.prompts.published import load_published_prompts
from routebr_kit.review.gate import Gate
from routebr_kit.scale.cells import Cell, CellStore
from routebr_kit.store.assets import load_state_schema
from routebr_kit.store.files import MAX_YAML_ALIASES, parse_json, parse_yaml, read_document, read_json, read_yaml
from routebr_kit.store.ledger import RunLedger

REPO = Path(__file__).resolve().parents[1]
ARTIFACT = ROUTEBR_ARTIFACT  # found like the CLI finds it (tests/conftest.py)
E = ErrorCode
BOMB = "gate:\n  - &a [x, x, x, x, x, x, x, x, x]\n" + "".join(  # 9**9 leaves once expanded
    f"  - &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8", newline="")
    return path


def raised(fn, *args, **kwargs) -> DataError:
    with pytest.raises(DataError) as caught:
        fn(*args, **kwargs)
    return caught.value


# ------------------------------------------------------------------------------------------- the reader's rules


@pytest.mark.parametrize("name, text, code, line, field", [
    ("dup.json", '{\n "gate": ["a"],\n "x": {"y": 1,\n  "y": 2}\n}', E.DUPLICATE_ID, 4, "x.y"),
    ("nan.json", '{"a": [1,\n 2, NaN]}', E.INVALID_JSON, 2, "a[2]"),
    ("inf.json", '{"a": 1e999}', E.INVALID_JSON, 1, "a"),
    ("deep.json", '{"a":\n' + "[" * 100_000 + "]" * 100_000 + "}", E.LIMIT_EXCEEDED, 2, None),
    ("surrogate.json", '{"ok": "x",\n "B1": "x\\ud800y"}', E.INVALID_ENCODING, 2, "B1"),
    ("bom.json", b"\xef\xbb\xbf{}", E.INVALID_ENCODING, 1, None),
    ("binary.json", b"{\xff}", E.FILE_UNREADABLE, 1, None),
    ("empty.json", "", E.EMPTY_FILE, 1, None),
    ("trunc.json", '{"a": [1,\n 2', E.INVALID_JSON, 2, None),
    ("dup.yaml", "a: 1\nb:\n  c: 2\n  c: 3\n", E.DUPLICATE_ID, 4, None),
    ("nan.yaml", "a: 1\nb: [.nan]\n", E.INVALID_VALUE, None, "b[0]"),
    ("bomb.yaml", BOMB, E.LIMIT_EXCEEDED, 3, None),
    ("self.yaml", "a: &a [*a]\n", E.LIMIT_EXCEEDED, None, None),
    ("deep.yaml", "a: " + "[" * 100_000 + "]" * 100_000 + "\n", E.LIMIT_EXCEEDED, 1, None),
    ("bom.yaml", b"\xef\xbb\xbfa: 1\n", E.INVALID_ENCODING, 1, None),
    ("bigint.yaml", "a: " + "1" * 5000 + "\n", E.INVALID_VALUE, None, None),
    ("syntax.yaml", "a: [1\n", E.INVALID_VALUE, 2, None),
])
def test_each_rule_is_a_located_typed_error(tmp_path, name, text, code, line, field):
    err = raised(read_document, write(tmp_path / name, text))
    assert (err.code, err.file, err.line) == (code, str(tmp_path / name), line), err
    if field is not None:
        assert err.field == field, err
    assert "\n" not in str(err)


def test_what_a_path_is_decides_before_any_byte_is_read(tmp_path):
    (tmp_path / "dir.json").mkdir()
    (tmp_path / "loop.json").symlink_to("loop.json")
    os.mkfifo(tmp_path / "fifo.json")  # opening a FIFO would block until a writer came
    assert raised(read_json, tmp_path / "missing.json").code is E.FILE_NOT_FOUND
    assert raised(read_json, tmp_path / "dir.json").code is E.WRONG_TYPE
    assert raised(read_json, tmp_path / "fifo.json").code is E.WRONG_TYPE
    loop = raised(read_json, tmp_path / "loop.json")
    assert loop.code is E.FILE_UNREADABLE and "symbolic-link loop" in str(loop)
    big = raised(read_yaml, write(tmp_path / "big.yaml", "a: '" + "x" * (5 * 2**20) + "'\n"))
    assert big.code is E.LIMIT_EXCEEDED


def test_valid_documents_load_as_before(tmp_path):
    assert read_json(write(tmp_path / "a.json", '{"e": "\\ud83d\\ude00", "n": [1, 2.5, null]}')) == {
        "e": "😀", "n": [1, 2.5, None]}
    anchors = "base: &b {k: 1}\ncopy: *b\nmerged: {<<: *b, z: 2}\n"
    assert read_yaml(write(tmp_path / "a.yaml", anchors)) == {"base": {"k": 1}, "copy": {"k": 1},
                                                               "merged": {"k": 1, "z": 2}}
    uses = "a: &a 1\n" + "".join(f"k{i}: *a\n" for i in range(MAX_YAML_ALIASES))
    assert len(parse_yaml(uses)) == MAX_YAML_ALIASES + 1
    assert raised(parse_yaml, uses + "k_over: *a\n").code is E.LIMIT_EXCEEDED


def test_the_kits_own_records_keep_a_lone_surrogate_a_server_sent(tmp_path):
    # receipts, ledgers and manifests hold the writer's escape of any reply; an input file may not hold one
    path = write(tmp_path / "receipt.json", '{"responses": [{"content": "\\ud800{"}]}')
    assert read_json(path, record=True)["responses"][0]["content"] == "\ud800{"
    assert raised(read_json, path).code is E.INVALID_ENCODING


def test_text_held_in_a_record_keeps_the_records_location():
    err = raised(parse_json, '{"a": 1, "a": 2}', file="rules.csv", line=7, field="condition_json")
    assert (err.code, err.file, err.line, err.field, err.got) == (E.DUPLICATE_ID, "rules.csv", 7, "condition_json",
                                                                   "a")


# ------------------------------------------------------------------------------------------- every file kind

DUPLICATED = {
    "gate (JSON)": ("gate.json", '{"gate": ["changed <= 0"],\n "gate": ["changed <= 99"]}', Gate.load),
    "gate (YAML)": ("gate.yaml", "gate: [changed <= 0]\ngate: [changed <= 99]\n", Gate.load),
    "state schema": ("state_schema.json", '{"fields": {},\n "fields": {}}', load_state_schema),
    "profiles (JSON)": ("profiles.json", '{"p": {"model": "a"},\n "p": {"model": "b"}}', load_profiles),
    "profiles (YAML)": ("profiles.yaml", "p: {model: a}\np: {model: b}\n", load_profiles),
    "lexicon": ("lexicon.json", '{"families": [],\n "families": []}', Lexicon.load),
    "sweep space": ("space.yaml", "constants: {}\nconstants: {}\n", SweepSpace.load),
    "MetaRoute config": ("config.yaml", "executor: {}\nexecutor: {}\n", MetaRouteConfig.load),
    "params": ("params.yaml", "name: a\nname: b\nnotebooks: []\n", RunPlan.load),
    "kit prompts": ("prompts.json", '{"metadata": {},\n "metadata": {}}', lambda p: load_prompts(path=p)),
    "published prompts": ("prompts.json", '{"ROUTEBR": "a",\n "ROUTEBR": "b"}', load_published_prompts),
    "notebook": ("nb.ipynb", '{"cells": [],\n "cells": []}', declared_parameters),
    "receipt": ("raw/C1.json", '{"case_id": "C1",\n "case_id": "C2"}', lambda p: RunLedger(p.parents[1]).receipt("C1")),
    "run manifest": ("run_manifest.json", '{"system": "routebr",\n "system": "b1"}',
                     lambda p: RunLedger(p.parent).manifest()),
}


@pytest.mark.parametrize("kind", list(DUPLICATED))
def test_every_file_the_kit_reads_refuses_a_repeated_key(tmp_path, kind):
    name, text, load = DUPLICATED[kind]
    path = write(tmp_path / name, text)
    err = raised(load, path)
    assert err.code is E.DUPLICATE_ID and err.file == str(path) and err.line == 2, err


def test_a_repeated_key_in_a_cache_entry_or_a_cell_result_is_never_used(tmp_path):
    cache = ResponseCache(tmp_path / "cache")
    key = "ab" + "0" * 62
    write(cache.path(key), '{"response": {"x": 1}, "latency_ms": 1,\n "response": {"x": 2}}')
    assert cache.get(key) is None and cache.misses == 1  # a miss (re-recorded), never the second value
    store = CellStore(tmp_path / "cells")
    cell = Cell.of("routebr_kit.metaroute.sweep:sweep_cell", {"x": 1})
    store.save(cell, '{"a": 1}')
    write(store.path(cell) / "done.json", '{"result_sha256": "x",\n "result_sha256": "y"}')
    assert raised(store.load, cell).code is E.DUPLICATE_ID


# ------------------------------------------------------------------------------------------- the gate of the issue


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("gate")
    bench = root / "bench"
    assert main(["generate", "--seed", "0", "--out", str(bench)]) == 0
    base = root / "base"
    cases = bench / "routebr_confirm_320.csv"
    assert main(["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN",
                 "--cases", str(cases), "--out", str(base), "--no-progress"]) == 0
    candidate = root / "candidate"
    candidate.mkdir()
    for item in base.iterdir():
        if item.is_file():
            write(candidate / item.name, item.read_bytes())
    (candidate / "raw").symlink_to(base / "raw")
    with open(base / "predictions.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    for row in rows:  # the candidate hands off every dispatch: a large exact-match drop
        if row["pred_boundary"] == "ALLOW":
            row["pred_boundary"], row["pred_final_path"] = "HANDOFF", "T_HANDOFF"
    with open(candidate / "predictions.csv", "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return {"base": base, "candidate": candidate, "cases": cases}


@pytest.mark.parametrize("name, text", [
    ("gate.json", '{"gate": ["path_exact_drop <= 1.0pp"],\n "gate": ["path_exact_drop <= 100pp"]}\n'),
    ("gate.yaml", "gate: [path_exact_drop <= 1.0pp]\ngate: [path_exact_drop <= 100pp]\n"),
])
def test_a_duplicate_key_gate_file_exits_2_with_a_located_error(ledgers, tmp_path, capsys, name, text):
    gate = write(tmp_path / name, text)
    argv = ["diff", str(ledgers["base"]), str(ledgers["candidate"]), "--cases", str(ledgers["cases"])]
    assert main([*argv, "--gate", "path_exact_drop <= 1.0pp"]) == 1  # the first criterion alone fails the drop
    capsys.readouterr()
    assert main([*argv, "--gate", str(gate)]) == 2
    captured = capsys.readouterr()
    assert "gate PASSED" not in captured.out
    assert captured.err.count("\n") == 1 and f"[DUPLICATE_ID] {gate}:2, field 'gate'" in captured.err, captured.err


def test_deep_nesting_in_gate_and_prompt_files_is_a_typed_error(tmp_path):
    deep = "[" * 100_000 + "]" * 100_000
    assert raised(Gate.load, write(tmp_path / "gate.json", deep)).code is E.LIMIT_EXCEEDED
    assert raised(load_published_prompts, write(tmp_path / "p.json", '{"ROUTEBR": ' + deep + "}")).code \
        is E.LIMIT_EXCEEDED
    assert raised(load_prompts, path=write(tmp_path / "k.json", deep)).code is E.LIMIT_EXCEEDED


# ------------------------------------------------------------------------------------------- bounded work


def _cli(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    # a subprocess with a timeout: before the bounds, these inputs ran for minutes
    return subprocess.run([sys.executable, "-m", "routebr_kit", *argv], capture_output=True, text=True, timeout=60,
                          cwd=cwd, env={**os.environ, "TQDM_DISABLE": "1"})


@pytest.mark.artifact
def test_an_alias_bomb_as_gate_or_space_ends_at_once_with_one_line(tmp_path):
    bomb = write(tmp_path / "bomb.yaml", BOMB)
    assert len(BOMB.encode()) < 420
    for argv in (["diff", str(ARTIFACT), str(ARTIFACT), "--gate", str(bomb)],
                 ["metaroute-sweep", "--space", str(bomb), "--seeds", "2", "--out", str(tmp_path / "out")]):
        done = _cli(*argv, cwd=tmp_path)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert "[LIMIT_EXCEEDED]" in done.stderr and f"at most {MAX_YAML_ALIASES} uses" in done.stderr


GRID = "constants:\n" + "".join(f"  {k}: {{low: 0.1, high: 0.3, levels: 1000}}\n" for k in (
    "executor.difficulty_penalty", "executor.ambiguity_penalty", "executor.mismatch_penalty"))


def test_a_grid_beyond_the_cap_names_the_cap_and_how_to_raise_it(tmp_path):
    space = SweepSpace.from_mapping(parse_yaml(GRID))
    err = raised(design, space, grid=True)
    assert err.code is E.LIMIT_EXCEEDED and f"at most {MAX_CONFIGURATIONS:,}" in str(err)
    assert "--max-configurations" in str(err) and "1,000,000,000" in str(err)
    assert raised(design, space, samples=MAX_CONFIGURATIONS + 1).code is E.LIMIT_EXCEEDED
    small = SweepSpace.from_mapping(parse_yaml("constants:\n  executor.base_success: {low: 0.5, high: 0.9, "
                                               "levels: 3}\n  executor.difficulty_penalty: [0.1, 0.3]\n"))
    assert raised(design, small, grid=True, max_configurations=8).code is E.LIMIT_EXCEEDED
    assert len(design(small, grid=True, max_configurations=9).configurations) == 9
    done = _cli("metaroute-sweep", "--space", str(write(tmp_path / "grid.yaml", GRID)), "--grid", "--seeds", "2",
                "--out", str(tmp_path / "out"), cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--max-configurations" in done.stderr
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------------------------------- published prompts


def _published(tmp_path: Path, transform) -> Path:
    text = (ARTIFACT / "experiments" / "prompts.json").read_text(encoding="utf-8")
    return write(tmp_path / "prompts.json", transform(text))


@pytest.mark.artifact
@pytest.mark.parametrize("defect, transform, code, field", [
    ("a second ROUTEBR text", lambda t: t.rstrip().rstrip("}") + ',\n  "ROUTEBR": "a different text"\n}\n',
     E.DUPLICATE_ID, "ROUTEBR"),
    ("NaN", lambda t: '{"temperature": NaN, ' + t.lstrip()[1:], E.INVALID_JSON, "temperature"),
    ("a lone surrogate", lambda t: t.replace('"ROUTEBR": "', '"ROUTEBR": "\\ud800', 1), E.INVALID_ENCODING,
     "ROUTEBR"),
    ("a BOM", lambda t: "\ufeff" + t, E.INVALID_ENCODING, None),
])
def test_the_published_prompt_file_is_strict_and_refused_before_any_request(tmp_path, capsys, defect, transform,
                                                                            code, field):
    path = _published(tmp_path, transform)
    err = raised(load_published_prompts, path)
    assert err.code is code and err.file == str(path) and err.line is not None, err
    assert err.field == field
    bench = ARTIFACT / "data"
    profiles = write(tmp_path / "profiles.json", "")
    with OpenAIServer() as server:
        profiles.write_text(json.dumps({"local": {"base_url": server.base_url, "api_key_env": "STRICT_PROMPTS_KEY",
                                                  "model": "test-model"}}), encoding="utf-8")
        os.environ["STRICT_PROMPTS_KEY"] = "sk-test"
        try:
            status = main(["run", "--profile", "local", "--profiles", str(profiles), "--system", "routebr",
                           "--split", "MAIN", "--cases", str(bench / "routebr_select_160.csv"), "--protocol",
                           "published", "--prompts", str(path), "--out", str(tmp_path / "run"), "--no-progress"])
        finally:
            del os.environ["STRICT_PROMPTS_KEY"]
        assert server.count == 0  # no request was sent
    assert status == 2 and capsys.readouterr().err.count("\n") == 1
    assert not (tmp_path / "run").exists()


@pytest.mark.artifact
def test_the_published_and_kit_prompt_files_still_load():
    assert load_published_prompts(ARTIFACT / "experiments" / "prompts.json").texts["ROUTEBR"]
    for language in ("en", "zh"):
        assert load_prompts(language, path=prompt_path(language)).texts["ROUTEBR"]
    assert rk.load_assets  # the package still imports its public API
