"""Validation at the boundary (issue 20 bullet 5): ``dask:ADDRESS`` parsed and a scheduler's handshake checked before
``distributed`` is trusted with a connection, a cell directory replaced by a file, a symbolic-link loop as the rules
file, ledger rows checked against the ledger schema — each one typed line with exit 2, never a traceback."""

from __future__ import annotations

import csv
import socket
import threading
from pathlib import Path

import pytest

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.scale.executors import ExecutorSpec, check_scheduler, parse_address
from routebr_kit.store.ledger import read_predictions

E = ErrorCode
SWEEP = ["metaroute-sweep", "--seeds", "2", "--samples", "2"]


def one_line(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ------------------------------------------------------------------------------------------- dask addresses


@pytest.mark.parametrize("spec", ["dask:tcp://", "dask:tcp://host:abc", "dask:tcp://:8786", "dask:[::1",
                                  "dask:tcp://host:99999", "dask:host:", "dask:tcp://h:80:90", "dask:ucx://h:1",
                                  "dask:tcp://user@h:1", "dask:tcp://h:1/path", "dask:h:０１", "dask:tcp://h:0",
                                  "dask:tcp://-bad-:1", "dask:[fe80::1", "dask:[1.2.3.4]:1"])
def test_a_malformed_dask_address_is_one_typed_line(tmp_path, capsys, spec):
    with pytest.raises(DataError) as err:
        ExecutorSpec.parse(spec)
    assert err.value.code is E.INVALID_VALUE and err.value.field == "executor"
    assert main([*SWEEP, "--executor", spec, "--out", str(tmp_path / "out")]) == 2
    assert "[INVALID_VALUE]" in one_line(capsys)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("given, canonical", [("127.0.0.1:8786", "tcp://127.0.0.1:8786"),
                                              ("tcp://localhost:8786", "tcp://localhost:8786"),
                                              ("tcp://[::1]:8786", "tcp://[::1]:8786"),
                                              ("sched-1.example.org:08786", "tcp://sched-1.example.org:8786")])
def test_well_formed_addresses_are_canonical(given, canonical):
    assert parse_address(given) == canonical
    assert ExecutorSpec.parse(f"dask:{given}").address == canonical


class Listener:
    """A TCP listener on 127.0.0.1 that is not a Dask scheduler: it answers each connection with ``greeting``
    (``None``: says nothing until the client has spoken, then answers like an HTTP server)."""

    def __init__(self, greeting: bytes | None) -> None:
        self.greeting = greeting
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(2)
                try:
                    if self.greeting is not None:
                        conn.sendall(self.greeting)
                    else:
                        conn.recv(4096)
                        conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    pass

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


@pytest.mark.parametrize("greeting, detail", [
    (b"HTTP/1.1 400 Bad Request\r\n\r\n", "announces"),  # read as a frame size this is 3.5e18 bytes
    (None, "no Dask handshake within"),
    ((40).to_bytes(8, "little") + b"\x01" + b"\0" * 7 + (24).to_bytes(8, "little") + b"x" * 24, "keys"),
    (b"\x10\x00", "closed the connection"),
])
def test_a_listener_that_is_not_a_dask_scheduler_is_refused_before_distributed(tmp_path, capsys, monkeypatch,
                                                                                greeting, detail):
    monkeypatch.setattr("routebr_kit.scale.executors.HANDSHAKE_TIMEOUT_S", 0.5)
    with Listener(greeting) as listener:
        address = f"tcp://127.0.0.1:{listener.port}"
        with pytest.raises(DataError) as err:
            check_scheduler(address)
        assert err.value.code is E.UNKNOWN_REFERENCE and detail in str(err.value), err.value
        assert main([*SWEEP, "--executor", f"dask:{address}", "--out", str(tmp_path / "out")]) == 2
    assert "a Dask scheduler at the address" in one_line(capsys)


def test_a_refused_connection_is_one_typed_line(tmp_path, capsys):
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]  # closed again on exit: nothing listens there
    assert main([*SWEEP, "--executor", f"dask:127.0.0.1:{port}", "--out", str(tmp_path / "out")]) == 2
    assert "[UNKNOWN_REFERENCE]" in one_line(capsys)


def test_a_real_scheduler_passes_the_handshake():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp",
                                  host="127.0.0.1", dashboard_address=None) as cluster:
        check_scheduler(parse_address(cluster.scheduler_address))


# ------------------------------------------------------------------------------------------- files where dirs belong


def test_a_cell_directory_replaced_by_a_file_is_one_typed_line(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main([*SWEEP, "--out", str(out)]) == 0
    capsys.readouterr()
    victim = sorted((out / "cells").iterdir())[0]
    for item in victim.iterdir():
        item.unlink()
    victim.rmdir()
    victim.write_text("not a cell\n", encoding="utf-8")
    assert main([*SWEEP, "--out", str(out)]) == 2
    assert "[WRONG_TYPE]" in one_line(capsys)
    (out / "cells").rename(out / "moved")
    (out / "cells").write_text("not a folder\n", encoding="utf-8")
    assert main([*SWEEP, "--out", str(out)]) == 2
    assert "[WRONG_TYPE]" in one_line(capsys)


@pytest.fixture(scope="module")
def bench(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("boundary") / "bench"
    assert main(["generate", "--seed", "0", "--out", str(out)]) == 0
    return out


@pytest.fixture(scope="module")
def ledger(bench, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("boundary-ledger") / "run"
    assert main(["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN",
                 "--cases", str(bench / "routebr_confirm_320.csv"), "--out", str(out), "--no-progress"]) == 0
    return out


def test_a_symlink_loop_as_the_rules_file_is_one_typed_line(bench, ledger, tmp_path, capsys):
    loop = tmp_path / "rules.csv"
    loop.symlink_to(loop.name)
    cases = str(bench / "routebr_confirm_320.csv")
    for argv in (["shadow", "--ledger", str(ledger), "--cases", cases, "--rules", str(loop), "--out",
                  str(tmp_path / "out")],
                 ["run", "--profile", "sim:deepseek_v4_primary", "--system", "routebr", "--split", "MAIN",
                  "--cases", cases, "--rules", str(loop), "--out", str(tmp_path / "run"), "--no-progress"]):
        assert main(argv) == 2
        err = one_line(capsys)
        assert "symbolic-link loop" in err or "[FILE_NOT_FOUND]" in err, err  # run checks the path is a file first


# ------------------------------------------------------------------------------------------- the ledger schema


def _edited(ledger: Path, tmp_path: Path, edit) -> Path:
    with open(ledger / "predictions.csv", encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    header = list(rows[0])
    header, rows = edit(header, rows)
    path = tmp_path / "predictions.csv"
    with open(path, "w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=header, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
    return path


def _set(column: str, value: str):
    def edit(header, rows):
        rows[3][column] = value
        return header, rows
    return edit


def _drop_column(column: str):
    return lambda header, rows: ([h for h in header if h != column], rows)


@pytest.mark.parametrize("edit, code, field", [
    (_set("case_id", ""), E.EMPTY_VALUE, "case_id"),
    (_drop_column("case_id"), E.MISSING_COLUMN, "case_id"),
    (_drop_column("pred_final_path"), E.MISSING_COLUMN, "pred_final_path"),
    (_set("valid_json", "yes"), E.WRONG_TYPE, "valid_json"),
    (_set("retry_count", "１"), E.INVALID_INTEGER, "retry_count"),
    (_set("input_tokens", "+7"), E.INVALID_INTEGER, "input_tokens"),
    (_set("output_tokens", "1_000"), E.INVALID_INTEGER, "output_tokens"),
    (_set("latency_ms", "nan"), E.WRONG_TYPE, "latency_ms"),
    (_set("latency_ms", "-3"), E.WRONG_TYPE, "latency_ms"),
    (_set("estimated_cost_usd", "inf"), E.WRONG_TYPE, "estimated_cost_usd"),
    (_set("topk_json", '["A1", NaN]'), E.INVALID_JSON, "topk_json"),
    (_set("topk_json", '{"0": "A1"}'), E.WRONG_TYPE, "topk_json"),
    (_set("pred_boundary", "MAYBE"), E.UNKNOWN_ENUM, "pred_boundary"),
])
def test_ledger_rows_are_checked_against_the_ledger_schema(ledger, tmp_path, edit, code, field):
    path = _edited(ledger, tmp_path, edit)
    with pytest.raises(DataError) as err:
        read_predictions(path)
    assert (err.value.code, err.value.field, err.value.file) == (code, field, str(path)), err.value
    assert err.value.line == (1 if code is E.MISSING_COLUMN else 5)


def test_a_ledger_without_its_last_newline_is_truncated(ledger, tmp_path):
    path = tmp_path / "predictions.csv"
    path.write_bytes((ledger / "predictions.csv").read_bytes().removesuffix(b"\r\n"))  # every field, no newline
    with pytest.raises(DataError) as err:
        read_predictions(path)
    assert err.value.code is E.ROW_SHAPE and "truncated" in str(err.value)


def test_a_hostile_ledger_row_is_one_line_on_diff_and_score(bench, ledger, tmp_path, capsys):
    candidate = tmp_path / "candidate"
    candidate.mkdir()
    for name in ("run_manifest.json",):
        (candidate / name).write_bytes((ledger / name).read_bytes())
    _edited(ledger, candidate, _drop_column("case_id"))
    cases = str(bench / "routebr_confirm_320.csv")
    assert main(["diff", str(ledger), str(candidate), "--cases", cases]) == 2
    assert "[MISSING_COLUMN]" in one_line(capsys)
    assert main(["score", str(candidate), "--cases", cases]) == 2
    assert "[MISSING_COLUMN]" in one_line(capsys)


@pytest.mark.artifact
def test_a_published_ledger_must_hold_every_case_its_manifest_lists(tmp_path, capsys):
    import shutil

    from conftest import ROUTEBR_ARTIFACT as artifact
    copy = shutil.copytree(artifact, tmp_path / "artifact")
    ledger_path = copy / "experiments" / "results" / "select" / "deepseek_v4_primary" / "main" / "predictions.csv"
    lines = ledger_path.read_text(encoding="utf-8").splitlines(keepends=True)
    ledger_path.write_text("".join(lines[:-10]), encoding="utf-8")  # ten rows gone, at a row boundary
    assert main(["replay", "--artifact", str(copy)]) == 2
    assert "[INCONSISTENT_ASSETS]" in one_line(capsys)
