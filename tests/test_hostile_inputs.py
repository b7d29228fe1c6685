"""Every subcommand against a corpus of hostile inputs: exit 2, exactly one line on stderr, no traceback, nothing
written outside ``--out`` (issue 20, "every bad input is one typed line on every command").

Each subcommand has one or more *slots* — an input file it reads (a gate, a prompt file, a cases CSV, a run's
ledger, a sweep space, …) — and each slot is filled, in turn, with every hostile input of its format: empty,
truncated, a repeated key or column, nesting 100,000 deep, megabytes, binary bytes, a symbolic link to itself, the
wrong type, a directory where a file belongs, and per format NaN, a BOM, a lone surrogate and a YAML alias bomb.
The commands run in this process (``routebr_kit.cli.app``), so an uncaught exception fails the test with its
traceback; :func:`test_a_hostile_input_in_a_fresh_interpreter_is_one_line` repeats a few in a subprocess.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import ROUTEBR_ARTIFACT

from routebr_kit.cli.app import COMMANDS, main

REPO = Path(__file__).resolve().parents[1]
ARTIFACT = ROUTEBR_ARTIFACT  # found like the CLI finds it (tests/conftest.py)
RUN_DIR = ("experiments", "results", "select", "deepseek_v4_primary", "main")

# ------------------------------------------------------------------------------------------- the corpus

VALID_GATE = '{"gate": ["new_false_dispatch <= 0", "path_exact_drop <= 1.0pp"]}'
VALID_YAML_GATE = "gate:\n  - new_false_dispatch <= 0\n  - path_exact_drop <= 1.0pp\n"
ALIAS_BOMB = "gate:\n  - &a [x, x, x, x, x, x, x, x, x]\n" + "".join(  # 9**9 leaves once expanded
    f"  - &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi"))
HUGE = 5 * 2**20
VALID_YAML_PROPERTIES = ("properties:\n  - name: no A5 without permission\n"
                         "    never: {terminal: DISPATCH, action: A5_PROTECTED_ACTION}\n"
                         "    when: {action_permission: false}\n")
VALID_JSON_PROPERTIES = json.dumps({"properties": [{"name": "no A5 without permission",
                                                    "never": {"terminal": "DISPATCH", "action": "A5_PROTECTED_ACTION"},
                                                    "when": {"action_permission": False}}]})


def _dup_json(valid: str) -> str:
    doc = json.loads(valid)
    key = next(iter(doc))
    return "{" + json.dumps(key) + ": " + json.dumps(doc[key]) + ", " + json.dumps(doc)[1:]


def _dup_yaml(valid: str) -> str:
    """The first top-level ``key: value`` line repeated at the start (a mapping key given twice)."""
    first = next(line for line in valid.splitlines() if line[:1].isalpha() and ":" in line)
    key = first.split(":")[0]
    return f"{key}: 1\n" + valid


def _dup_csv(valid: str) -> str:
    lines = valid.splitlines()
    first = lines[0].split(",")[0]
    return "\n".join([lines[0] + "," + first] + [line + ",x" for line in lines[1:]]) + "\n"


#: kind -> {format -> content builder(valid text) -> bytes}; a missing format: the kind does not apply to it.
CONTENT: dict[str, dict[str, Callable[[str], bytes]]] = {
    "empty": {f: (lambda v: b"") for f in ("json", "yaml", "csv", "blob")},
    "truncated": {f: (lambda v: v[: len(v) // 2].encode()) for f in ("json", "yaml", "csv", "blob")},
    "duplicated": {"json": lambda v: _dup_json(v).encode(), "yaml": lambda v: _dup_yaml(v).encode(),
                   "csv": lambda v: _dup_csv(v).encode()},
    "deep": {"json": lambda v: ("[" * 100_000 + "]" * 100_000).encode(),
             "yaml": lambda v: ("gate: " + "[" * 100_000 + "]" * 100_000 + "\n").encode()},
    "huge": {"json": lambda v: ("[" + "0," * (HUGE // 2) + "0]").encode(),
             "yaml": lambda v: ("gate: '" + "x" * HUGE + "'\n").encode(),
             "csv": lambda v: (v.splitlines()[0] + "\n" + "x" * HUGE + "\n").encode(),
             "blob": lambda v: b"\0" * HUGE},
    "binary": {f: (lambda v: bytes(range(256)) * 8) for f in ("json", "yaml", "csv", "blob")},
    "wrong_type": {"json": lambda v: b"42", "yaml": lambda v: b"42\n", "csv": lambda v: b"x,y\n1,2\n"},
    "nan": {"json": lambda v: ('{"not_a_number": NaN, ' + v.lstrip()[1:]).encode()},
    "bom": {"json": lambda v: b"\xef\xbb\xbf" + v.encode(), "yaml": lambda v: b"\xef\xbb\xbf" + v.encode()},
    "surrogate": {"json": lambda v: ('{"\\ud800x": "\\udc00", ' + v.lstrip()[1:]).encode()},
    "alias_bomb": {"yaml": lambda v: ALIAS_BOMB.encode()},
}
#: kinds that are not file contents but what stands at the path: a link loop, a directory, and (issue 31) special
#: files — a FIFO (an open would block forever), a link to a device (``/dev/zero``: endless bytes), a dangling link
#: and a link out of the folder to a FIFO elsewhere; each must be one typed line, never a hang or a MemoryError
PATH_KINDS = ("symlink_loop", "directory", "fifo", "device", "dangling", "outside_fifo")
SPECIAL_KINDS = ("fifo", "device", "dangling", "outside_fifo")
FORMATS = ("json", "yaml", "csv", "blob", "path")  # "path": only what stands at the path


def kinds(fmt: str) -> list[str]:
    return [k for k, by in CONTENT.items() if fmt in by] + [*PATH_KINDS]


def place(kind: str, fmt: str, valid: str, target: Path) -> None:
    """Put the hostile input ``kind`` at ``target`` (replacing whatever is there)."""
    if target.is_symlink() or target.is_file():
        target.unlink()
    elif target.is_dir():
        shutil.rmtree(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    if kind == "symlink_loop":
        target.symlink_to(target.name)
    elif kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        target.symlink_to("/dev/zero")
    elif kind == "dangling":
        target.symlink_to(target.parent / f"no-such-{target.name}")
    elif kind == "outside_fifo":
        outside = Path(tempfile.mkdtemp(prefix="hostile-outside-"))
        os.mkfifo(outside / target.name)
        target.symlink_to(outside / target.name)
    elif kind == "directory":
        target.mkdir()
        (target / "x").write_text("not the file\n", encoding="utf-8")
    else:
        target.write_bytes(CONTENT[kind][fmt](valid))


# ------------------------------------------------------------------------------------------- the slots


@dataclass(frozen=True)
class Slot:
    """One input of one command; ``build`` returns the command line with the hostile input in place (``--out``,
    when the command has one, is ``work/out``)."""

    command: str
    name: str
    fmt: str
    valid: Callable[[dict], str]  # a valid content for the slot (truncated, duplicated, … are made from it)
    build: Callable[[Build], list[str]]
    #: kinds that are not hostile here: a lone surrogate in the kit's own record of a reply is the writer's escape
    #: of what a server sent (store.files ``record=True``), so receipts and run manifests keep it
    skip: tuple[str, ...] = ()


def _copy(src: Path, dst: Path) -> Path:
    shutil.copytree(src, dst, symlinks=True)
    return dst


def _text(*parts: str) -> Callable[[dict], str]:
    """The text of a file of the fixture (``bench/…``, ``ledger/…``) or of the artifact (``artifact/…``)."""
    def read(ctx: dict) -> str:
        root = {"bench": ctx["bench"], "ledger": ctx["ledger"], "artifact": ARTIFACT}[parts[0]]
        return root.joinpath(*parts[1:]).read_text(encoding="utf-8")
    return read


def _const(text: str) -> Callable[[dict], str]:
    return lambda ctx: text


CASES = "routebr_confirm_320.csv"
RUN = ["--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN", "--no-progress"]
PROFILES_JSON = json.dumps({"local": {"base_url": "http://127.0.0.1:9/v1", "api_key_env": "NO_SUCH_KEY_ENV",
                                      "model": "m"}})
PROFILES_YAML = "local:\n  base_url: http://127.0.0.1:9/v1\n  api_key_env: NO_SUCH_KEY_ENV\n  model: m\n"
#: The 24-byte header of a GGUF file (magic, version 3, one tensor, no keys): what serve-model checks before starting
VALID_GGUF = "GGUF\x03\x00\x00\x00\x01" + "\x00" * 15
STATE_SCHEMA = json.dumps({"fields": {"action_permission": {"type": "boolean"}}, "additional_fields": True})


class Build:
    """What a slot's ``build`` gets: the fixture's paths, a work folder, and ``put(target)`` for the hostile
    input; each helper returns a path as a string for the argv."""

    def __init__(self, ctx: dict, work: Path, put: Callable[[Path], None]) -> None:
        self.bench, self.ledger, self.work, self.put = ctx["bench"], ctx["ledger"], work, put
        self.cases, self.out = str(ctx["bench"] / CASES), str(work / "out")

    def file(self, name: str) -> str:
        """The hostile input as a file of its own."""
        self.put(self.work / name)
        return str(self.work / name)

    def inside(self, source: Path, name: str, *, keep: str | None = None) -> str:
        """A copy of the folder ``source`` with ``name`` in it replaced; returns the folder (or ``keep`` in it)."""
        folder = _copy(source, self.work / source.name)
        self.put(folder / name)
        return str(folder / keep) if keep else str(folder)

    def artifact(self, *parts: str) -> str:
        return self.inside(ARTIFACT, str(Path(*parts)))


def _receipt_name() -> str:
    return sorted(p.name for p in ARTIFACT.joinpath(*RUN_DIR, "raw").glob("*.json"))[0]


SESSION_RULES = (REPO / "data" / "sessions" / "rules.csv").read_text(encoding="utf-8")
SLOTS: tuple[Slot, ...] = (
    Slot("generate", "data/catalog.csv", "csv", _text("bench", "catalog.csv"),
         lambda b: ["generate", "--data", b.inside(REPO / "routebr_kit" / "resources", "catalog.csv"),
                    "--out", b.out]),
    Slot("audit", "CASES", "csv", _text("bench", CASES),
         lambda b: ["audit", b.inside(b.bench, CASES, keep=CASES), "--catalog", str(b.bench / "catalog.csv"),
                    "--rules", str(b.bench / "boundary_rules.csv")]),
    Slot("audit", "--state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["audit", b.cases, "--catalog", str(b.bench / "catalog.csv"), "--rules",
                    str(b.bench / "boundary_rules.csv"), "--state-schema", b.file("schema.json")]),
    Slot("run", "--cases", "csv", _text("bench", CASES),
         lambda b: ["run", *RUN, "--cases", b.inside(b.bench, CASES, keep=CASES), "--out", b.out]),
    Slot("run", "--rules", "csv", _text("bench", "boundary_rules.csv"),
         lambda b: ["run", *RUN, "--cases", b.cases, "--rules", b.file("rules.csv"), "--out", b.out]),
    Slot("run", "--profiles (JSON)", "json", _const(PROFILES_JSON),
         lambda b: ["run", "--profile", "local", "--profiles", b.file("profiles.json"), "--system", "routebr",
                    "--split", "MAIN", "--cases", b.cases, "--out", b.out, "--no-progress"]),
    Slot("run", "--profiles (YAML)", "yaml", _const(PROFILES_YAML),
         lambda b: ["run", "--profile", "local", "--profiles", b.file("profiles.yaml"), "--system", "routebr",
                    "--split", "MAIN", "--cases", b.cases, "--out", b.out, "--no-progress"]),
    Slot("run", "--prompts (published protocol)", "json", _text("artifact", "experiments", "prompts.json"),
         lambda b: ["run", *RUN, "--cases", b.cases, "--protocol", "published", "--prompts", b.file("prompts.json"),
                    "--out", b.out]),
    Slot("run", "--state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["run", *RUN, "--cases", b.cases, "--state-schema", b.file("schema.json"), "--out", b.out]),
    Slot("score", "RUN_DIR/predictions.csv", "csv", _text("ledger", "predictions.csv"),
         lambda b: ["score", b.inside(b.ledger, "predictions.csv"), "--cases", b.cases]),
    Slot("score", "--cases", "csv", _text("bench", CASES),
         lambda b: ["score", str(b.ledger), "--cases", b.inside(b.bench, CASES, keep=CASES)]),
    Slot("replay", "a run's predictions.csv", "csv", _text("artifact", *RUN_DIR, "predictions.csv"),
         lambda b: ["replay", "--artifact", b.artifact(*RUN_DIR, "predictions.csv")]),
    Slot("replay", "a run's receipt", "json", _const('{"case_id": "MAIN-0001", "responses": []}'),
         lambda b: ["replay", "--artifact", b.artifact(*RUN_DIR, "raw", _receipt_name())], skip=("surrogate",)),
    Slot("tables", "FINAL_RESULTS.json", "json", _text("artifact", "analysis", "results", "FINAL_RESULTS.json"),
         lambda b: ["tables", "--artifact", b.artifact("analysis", "results", "FINAL_RESULTS.json"), "--out", b.out]),
    Slot("metaroute", "--config", "yaml", _const("executor:\n  base_success: 0.8\n"),
         lambda b: ["metaroute", "--config", b.file("config.yaml"), "--seeds", "2", "--no-traces", "--out", b.out]),
    Slot("metaroute-sweep", "--space", "yaml", _const("constants:\n  executor.base_success: [0.5, 0.9]\n"),
         lambda b: ["metaroute-sweep", "--space", b.file("space.yaml"), "--seeds", "2", "--samples", "2",
                    "--out", b.out]),
    Slot("reproduce", "--params", "yaml", _const((REPO / "params" / "ci.yaml").read_text(encoding="utf-8")),
         lambda b: ["reproduce", "--params", b.file("params.yaml"), "--no-artifact", "--no-progress",
                    "--out", b.out]),
    Slot("fetch-artifact", "--archive", "blob", _const("\x1f\x8b\x08\x00 a gzip header and then no tar"),
         lambda b: ["fetch-artifact", "--archive", b.file("artifact.tar.gz"), "--dest", b.out, "--no-progress"]),
    Slot("attack-surface", "--cases", "csv", _text("bench", CASES),
         lambda b: ["attack-surface", "--cases", b.inside(b.bench, CASES, keep=CASES)]),
    Slot("attack-surface", "--registry", "csv", _text("bench", "registry.csv"),
         lambda b: ["attack-surface", "--cases", b.cases, "--registry", b.file("registry.csv")]),
    Slot("generate-attacks", "--cases", "csv", _text("bench", CASES),
         lambda b: ["generate-attacks", "--lang", "en", "--out", b.out, "--cases",
                    b.inside(b.bench, CASES, keep=CASES)]),
    Slot("adaptive-attack", "--cases", "csv", _text("bench", CASES),
         lambda b: ["adaptive-attack", "--lang", "en", "--backend", "local:lexical", "--budget", "2",
                    "--attack-cases", "3", "--cases", b.inside(b.bench, CASES, keep=CASES)]),
    Slot("adaptive-attack", "--profiles (JSON)", "json", _const(PROFILES_JSON),
         lambda b: ["adaptive-attack", "--lang", "en", "--backend", "local", "--profiles", b.file("profiles.json"),
                    "--budget", "2", "--attack-cases", "3", "--cases", b.cases]),
    Slot("shadow", "--prompts", "json", _text("artifact", "experiments", "prompts.json"),
         lambda b: ["shadow", "--ledger", str(b.ledger), "--cases", b.cases, "--prompts", b.file("prompts.json"),
                    "--out", b.out]),
    Slot("shadow", "--rules", "csv", _text("bench", "boundary_rules.csv"),
         lambda b: ["shadow", "--ledger", str(b.ledger), "--cases", b.cases, "--rules", b.file("rules.csv"),
                    "--out", b.out]),
    Slot("shadow", "a ledger's run_manifest.json", "json", _text("ledger", "run_manifest.json"),
         lambda b: ["shadow", "--ledger", b.inside(b.ledger, "run_manifest.json"), "--cases", b.cases,
                    "--out", b.out], skip=("surrogate",)),
    Slot("shadow", "--state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["shadow", "--ledger", str(b.ledger), "--cases", b.cases, "--state-schema",
                    b.file("state_schema.json"), "--out", b.out]),
    Slot("shadow", "--base-state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["shadow", "--ledger", str(b.ledger), "--cases", b.cases, "--base-state-schema",
                    b.file("state_schema.json"), "--out", b.out]),
    Slot("diff", "--state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["diff", str(b.ledger), str(b.ledger), "--cases", b.cases, "--state-schema",
                    b.file("state_schema.json")]),
    Slot("impact", "--base-state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["impact", "--base-assets", str(b.bench), "--candidate-assets", str(b.bench), "--ledger",
                    str(b.ledger), "--cases", b.cases, "--base-state-schema", b.file("state_schema.json")]),
    Slot("review", "--base-state-schema", "json", _const(STATE_SCHEMA),
         lambda b: ["review", "--ledger", str(b.ledger), "--cases", b.cases, "--candidate-assets", str(b.bench),
                    "--base-state-schema", b.file("state_schema.json"), "--out", b.out]),
    Slot("diff", "--gate (JSON)", "json", _const(VALID_GATE),
         lambda b: ["diff", str(b.ledger), str(b.ledger), "--cases", b.cases, "--gate", b.file("gate.json")]),
    Slot("diff", "--gate (YAML)", "yaml", _const(VALID_YAML_GATE),
         lambda b: ["diff", str(b.ledger), str(b.ledger), "--cases", b.cases, "--gate", b.file("gate.yaml")]),
    Slot("diff", "the candidate's predictions.csv", "csv", _text("ledger", "predictions.csv"),
         lambda b: ["diff", str(b.ledger), b.inside(b.ledger, "predictions.csv"), "--cases", b.cases]),
    Slot("gate-check", "--gate (JSON)", "json", _const(VALID_GATE),
         lambda b: ["gate-check", "--ledger", str(b.ledger), "--cases", b.cases, "--gate", b.file("gate.json"),
                    "--sims", "10", "--no-search", "--model", "stratum"]),
    Slot("gate-check", "a ledger's predictions.csv", "csv", _text("ledger", "predictions.csv"),
         lambda b: ["gate-check", "--ledger", b.inside(b.ledger, "predictions.csv"), "--cases", b.cases,
                    "--sims", "10", "--no-search", "--model", "stratum"]),
    Slot("impact", "the candidate's boundary_rules.csv", "csv", _text("bench", "boundary_rules.csv"),
         lambda b: ["impact", "--base-assets", str(b.bench), "--candidate-assets",
                    str(Path(b.file("candidate/boundary_rules.csv")).parent), "--ledger", str(b.ledger),
                    "--cases", b.cases]),
    Slot("impact", "a ledger's predictions.csv", "csv", _text("ledger", "predictions.csv"),
         lambda b: ["impact", "--base-assets", str(b.bench), "--candidate-assets", str(b.bench), "--ledger",
                    b.inside(b.ledger, "predictions.csv"), "--cases", b.cases]),
    Slot("review", "the candidate's boundary_rules.csv", "csv", _text("bench", "boundary_rules.csv"),
         lambda b: ["review", "--ledger", str(b.ledger), "--cases", b.cases, "--candidate-assets",
                    str(Path(b.file("candidate/boundary_rules.csv")).parent), "--out", b.out]),
    Slot("review", "--gate (YAML)", "yaml", _const(VALID_YAML_GATE),
         lambda b: ["review", "--ledger", str(b.ledger), "--cases", b.cases, "--candidate-assets", str(b.bench),
                    "--gate", b.file("gate.yaml"), "--out", b.out]),
    Slot("verify", "--assert (YAML)", "yaml", _const(VALID_YAML_PROPERTIES),
         lambda b: ["verify", "--assets", str(b.bench), "--assert", b.file("props.yaml")]),
    Slot("verify", "--assert (JSON)", "json", _const(VALID_JSON_PROPERTIES),
         lambda b: ["verify", "--assets", str(b.bench), "--assert", b.file("props.json")]),
    Slot("verify", "--rules", "csv", _text("bench", "boundary_rules.csv"),
         lambda b: ["verify", "--catalog", str(b.bench / "catalog.csv"), "--rules", b.file("rules.csv")]),
    Slot("report", "RUN_DIR/predictions.csv", "csv", _text("ledger", "predictions.csv"),
         lambda b: ["report", b.inside(b.ledger, "predictions.csv"), "--cases", b.cases,
                    "--out", str(Path(b.out) / "report.html")]),
    Slot("train-proposer", "--cases", "csv", _text("bench", CASES),
         lambda b: ["train-proposer", "--cases", b.inside(b.bench, CASES, keep=CASES), "--seeds", "0",
                    "--languages", "en", "--out", b.out]),
    Slot("generate-sessions", "--rules", "csv", _const(SESSION_RULES),
         lambda b: ["generate-sessions", "--rules", b.file("rules.csv"), "--sessions", "2", "--lang", "en",
                    "--out", b.out]),
    Slot("serve-model", "--model PATH.gguf", "blob", _const(VALID_GGUF),
         lambda b: ["serve-model", "--model", b.file("model.gguf"), "--port", "1"]),
    Slot("review", "a candidate folder's adapter *.py", "path", _const("X = 1\n"),
         lambda b: ["review", "--ledger", str(b.ledger), "--cases", b.cases, "--candidate-assets",
                    str(Path(b.file("candidate/adapter.py")).parent), "--out", b.out]),
    Slot("impact", "a candidate folder's adapter *.py", "path", _const("X = 1\n"),
         lambda b: ["impact", "--base-assets", str(b.bench), "--candidate-assets",
                    str(Path(b.file("candidate/adapter.py")).parent), "--ledger", str(b.ledger), "--cases", b.cases]),
    Slot("shadow", "a candidate folder's adapter *.py", "path", _const("X = 1\n"),
         lambda b: ["shadow", "--ledger", str(b.ledger), "--cases", b.cases, "--candidate-assets",
                    str(Path(b.file("candidate/adapter.py")).parent), "--out", b.out]),
    Slot("report", "a figure RUN_DIR/f.png", "path", _const("\x89PNG\r\n\x1a\n"),
         lambda b: ["report", b.inside(b.ledger, "f.png"), "--cases", b.cases,
                    "--out", str(Path(b.out) / "report.html")]),
    Slot("report", "--gate (JSON)", "json", _const(VALID_GATE),
         lambda b: ["report", str(b.ledger), "--base", str(b.ledger), "--cases", b.cases, "--gate",
                    b.file("gate.json"), "--out", str(Path(b.out) / "report.html")]),
)


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, routebr_artifact) -> dict:
    root = tmp_path_factory.mktemp("hostile")
    bench = root / "bench"
    assert main(["generate", "--seed", "0", "--out", str(bench)]) == 0
    ledger = root / "ledger"
    assert main(["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN",
                 "--cases", str(bench / "routebr_confirm_320.csv"), "--out", str(ledger), "--no-progress"]) == 0
    return {"bench": bench, "ledger": ledger}


def _snapshot(root: Path, skip: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        if here == skip or skip in here.parents:
            dirnames[:] = []
            continue
        for name in filenames + [d for d in dirnames if (here / d).is_symlink()]:
            path = here / name
            info = path.lstat()
            out[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return out


CORPUS = [(i, kind) for i, slot in enumerate(SLOTS) for kind in kinds(slot.fmt) if kind not in slot.skip]


def test_every_subcommand_has_a_hostile_input_slot():
    assert {s.command for s in SLOTS} == set(COMMANDS)


def _run(ctx: dict, tmp_path: Path, index: int, kind: str) -> tuple[Slot, list[str], Path]:
    slot = SLOTS[index]
    work = tmp_path / "work"
    work.mkdir()
    valid = slot.valid(ctx)
    argv = slot.build(Build(ctx, work, lambda target: place(kind, slot.fmt, valid, target)))
    return slot, argv, work


@pytest.mark.parametrize("index, kind", CORPUS, ids=[f"{SLOTS[i].command}:{SLOTS[i].name}:{k}" for i, k in CORPUS])
def test_a_hostile_input_is_one_typed_line(ctx, tmp_path, monkeypatch, capsys, index, kind):
    slot, argv, work = _run(ctx, tmp_path, index, kind)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = _snapshot(tmp_path, work / "out")
    outputs = _listing(REPO / "outputs")
    capsys.readouterr()
    status = _bounded(main, argv)
    err = capsys.readouterr().err
    assert status == 2, f"{slot.command} {slot.name} with {kind}: exit {status}, stderr {err!r}"
    assert err.count("\n") == 1 and err.endswith("\n"), err
    assert err.startswith(f"routebr-kit {slot.command}: ") and "Traceback" not in err, err
    assert _snapshot(tmp_path, work / "out") == before, "wrote outside --out"
    assert not any(cwd.iterdir()), "wrote into the working directory"
    assert _listing(REPO / "outputs") == outputs


def _bounded(run: Callable[[list[str]], int], argv: list[str], seconds: int = 120) -> int:
    """``run(argv)``, failing (not hanging) if it blocks longer than ``seconds`` (a FIFO opened for reading)."""
    def fire(*_: object) -> None:
        raise TimeoutError(f"blocked for {seconds} s: {argv}")
    old = signal.signal(signal.SIGALRM, fire)
    signal.alarm(seconds)
    try:
        return run(argv)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


SUBPROCESS = [(i, k) for i, k in CORPUS if (SLOTS[i].command, SLOTS[i].name, k) in {
    ("diff", "--gate (JSON)", "duplicated"), ("metaroute-sweep", "--space", "alias_bomb"),
    ("run", "--prompts (published protocol)", "surrogate"), ("reproduce", "--params", "deep")}]


@pytest.mark.parametrize("index, kind", SUBPROCESS, ids=[f"{SLOTS[i].command}:{k}" for i, k in SUBPROCESS])
def test_a_hostile_input_in_a_fresh_interpreter_is_one_line(ctx, tmp_path, index, kind):
    _, argv, _ = _run(ctx, tmp_path, index, kind)
    done = subprocess.run([sys.executable, "-m", "routebr_kit", *argv], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "TQDM_DISABLE": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
