"""``routebr-kit fetch-artifact`` against a real HTTP server on 127.0.0.1 serving archives built from the artifact.

The archives are GitHub-shaped (one top-level ``RouteBR-<commit>/`` folder, extra files the kit does not read);
the corrupted, incomplete and malicious variants must be refused with a typed error naming the file, leaving no
destination and no temporary folder behind.
"""

from __future__ import annotations

import io
import json
import os
import posixpath
import tarfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import routebr_kit as rk
from routebr_kit.cli import main
from routebr_kit.store.artifact import PUBLISHED_COMMIT, Artifact, is_artifact_dir
from routebr_kit.store.fetch import (
    FETCHED_FILE,
    MANIFEST_PATH,
    _unsafe_relative,
    build_manifest,
    download,
    fetch_artifact,
    load_shipped_manifest,
    verify_tree,
)

TOP = f"RouteBR-{PUBLISHED_COMMIT}"
Mutate = Callable[[dict[str, bytes]], None]


# --------------------------------------------------------------------------------------------- a real server


class _Server:
    def __init__(self) -> None:
        self.files: dict[str, bytes] = {}
        self.requests: list[str] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                owner.requests.append(self.path)
                body = owner.files.get(self.path)
                if body is None:
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-gzip")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def serve(self, path: str, body: bytes) -> str:
        self.files[path] = body
        return self.base + path

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture()
def server() -> Iterator[_Server]:
    s = _Server()
    yield s
    s.close()


def _tree(artifact: Path) -> dict[str, bytes]:
    """Every listed file of the artifact, plus what a repository also holds (licence, code, an extra receipt)."""
    files = {rel: (artifact / rel).read_bytes() for rel in load_shipped_manifest().files}
    files["LICENSE"] = b"MIT License\n"
    files["src/routebr/__init__.py"] = b"print('not installed')\n"
    files["experiments/results/select/deepseek_v4_primary/main/raw/MAIN-0099.json"] = b"{}"
    return files


def _archive(files: dict[str, bytes], extra: Callable[[tarfile.TarFile], None] | None = None) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", format=tarfile.PAX_FORMAT) as tar:
        tar.pax_headers = {"comment": PUBLISHED_COMMIT}  # git archive writes one global header like this
        top = tarfile.TarInfo(TOP)
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tar.addfile(top)
        for rel, data in sorted(files.items()):
            info = tarfile.TarInfo(f"{TOP}/{rel}")
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        if extra is not None:
            extra(tar)
    return buffer.getvalue()


def _fetch(url: str, dest: Path, *extra: str) -> int:
    return main(["fetch-artifact", "--url", url, "--dest", str(dest), "--no-progress", *extra])


def _leftovers(parent: Path) -> list[str]:
    return sorted(p.name for p in parent.iterdir()) if parent.exists() else []


# --------------------------------------------------------------------------------------------- the shipped hashes


def test_shipped_hashes_are_those_of_the_published_artifact(routebr_artifact: Path) -> None:
    shipped = load_shipped_manifest()
    assert shipped.repository == "YgcCoder/RouteBR" and shipped.commit == PUBLISHED_COMMIT
    assert dict(shipped.files) == build_manifest(routebr_artifact)["files"]
    assert verify_tree(routebr_artifact) == ()


def test_shipped_hashes_cover_every_file_the_kit_reads(routebr_artifact: Path) -> None:
    listed = set(load_shipped_manifest().files)
    artifact = Artifact(routebr_artifact)
    read = {f"data/{name}" for name in artifact.input_hashes()}
    read |= {"experiments/prompts.json", "experiments/api_profiles.json", "analysis/results/FINAL_RESULTS.md",
             "analysis/results/FINAL_RESULTS.json", "analysis/results/RESULT_FREEZE_MANIFEST.json"}
    for task in artifact.tasks():
        rel = task.path.relative_to(routebr_artifact).as_posix()
        read |= {f"{rel}/predictions.csv", f"{rel}/run_manifest.json"}
        read |= {p.relative_to(routebr_artifact).as_posix() for p in task.receipts()}
    assert read <= listed
    assert len([r for r in listed if r.endswith("/predictions.csv")]) == 27
    assert not any(name.endswith("ABOUT.md") for name in listed)  # the copy's own note, not the repository's


def test_shipped_manifest_is_hashes_only() -> None:
    text = MANIFEST_PATH.read_text(encoding="utf-8")
    record = json.loads(text)
    assert set(record) == {"repository", "commit", "about", "files"}
    assert all(len(v) == 64 for v in record["files"].values())


# --------------------------------------------------------------------------------------------- download + install


def test_fetch_installs_exactly_the_verified_files(routebr_artifact: Path, server: _Server, tmp_path: Path,
                                                   capsys) -> None:
    url = server.serve(f"/YgcCoder/RouteBR/tar.gz/{PUBLISHED_COMMIT}", _archive(_tree(routebr_artifact)))
    dest = tmp_path / "artifacts" / "routebr"
    assert _fetch(url, dest) == 0
    out = capsys.readouterr().out
    assert "verified 72/72 files" in out and "not installed: 2 archive files" in out
    shipped = load_shipped_manifest()
    installed = sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file())
    assert installed == sorted([*shipped.files, "LICENSE", FETCHED_FILE])
    for rel in shipped.files:
        assert (dest / rel).read_bytes() == (routebr_artifact / rel).read_bytes()
    record = json.loads((dest / FETCHED_FILE).read_text(encoding="utf-8"))
    assert record["commit"] == PUBLISHED_COMMIT and record["source"] == url
    assert record["unverified_notices"] == ["LICENSE"] and record["archive_files_not_installed"] == 2
    assert _leftovers(dest.parent) == ["routebr"]  # no temporary folder left
    assert is_artifact_dir(dest) and len(Artifact(dest).tasks()) == 27
    assert server.requests == [f"/YgcCoder/RouteBR/tar.gz/{PUBLISHED_COMMIT}"]

    assert _fetch(url, dest) == 0  # already there and verified: nothing downloaded again
    assert "already present" in capsys.readouterr().out and len(server.requests) == 1


def test_the_default_url_is_the_pinned_codeload_tarball() -> None:
    assert load_shipped_manifest().url == f"https://codeload.github.com/YgcCoder/RouteBR/tar.gz/{PUBLISHED_COMMIT}"


def _corrupt(files: dict[str, bytes]) -> None:
    files["data/catalog.csv"] = files["data/catalog.csv"].replace(b"A1", b"A9", 1)


def _drop(files: dict[str, bytes]) -> None:
    del files["analysis/results/FINAL_RESULTS.json"]


@pytest.mark.parametrize("mutate, code, named", [
    (_corrupt, rk.ErrorCode.CHECKSUM_MISMATCH, "data/catalog.csv"),
    (_drop, rk.ErrorCode.FILE_NOT_FOUND, "analysis/results/FINAL_RESULTS.json"),
])
def test_a_corrupted_or_missing_file_refuses_the_archive(routebr_artifact: Path, server: _Server, tmp_path: Path,
                                                         capsys, mutate: Mutate, code, named: str) -> None:
    files = _tree(routebr_artifact)
    mutate(files)
    url = server.serve("/bad.tar.gz", _archive(files))
    dest = tmp_path / "artifacts" / "routebr"
    assert _fetch(url, dest) == 2
    err = capsys.readouterr().err
    assert f"[{code.value}] {named}" in err and err.count("\n") == 1
    assert not dest.exists() and _leftovers(dest.parent) == []
    with pytest.raises(rk.DataError) as caught:
        fetch_artifact(dest, url=url)
    assert caught.value.code is code and caught.value.file == named


def _member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "", data: bytes = b"x"):
    def add(tar: tarfile.TarFile) -> None:
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
    return add


@pytest.mark.parametrize("extra, got", [
    (_member(f"{TOP}/../escaped.txt"), "escaped.txt"),
    (_member("/tmp/absolute.txt"), "/tmp/absolute.txt"),
    (_member("Other-folder/x.txt"), "Other-folder/x.txt"),
    (_member(f"{TOP}/docs/link", tarfile.SYMTYPE, "../../../outside"), "outside"),
    (_member(f"{TOP}/docs/abs", tarfile.SYMTYPE, "/etc/passwd"), "/etc/passwd"),
    (_member(f"{TOP}/docs/hard", tarfile.LNKTYPE, "/etc/passwd"), "/etc/passwd"),
    (_member(f"{TOP}/dev/null", tarfile.CHRTYPE), "dev/null"),
    (_member(f"{TOP}/data/catalog.csv", data=b"a second copy"), "data/catalog.csv"),
])
def test_unsafe_members_refuse_the_archive(routebr_artifact: Path, tmp_path: Path, extra, got: str) -> None:
    archive = tmp_path / "evil.tar.gz"
    archive.write_bytes(_archive(_tree(routebr_artifact), extra))
    dest = tmp_path / "artifacts" / "routebr"
    with pytest.raises(rk.DataError) as caught:
        fetch_artifact(dest, archive=archive)
    assert caught.value.code is rk.ErrorCode.UNSAFE_ARCHIVE and got in str(caught.value.got)
    assert not dest.exists() and _leftovers(dest.parent) == []
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute.txt").exists()


def test_a_listed_file_that_is_a_link_is_refused(routebr_artifact: Path, tmp_path: Path) -> None:
    files = _tree(routebr_artifact)
    del files["data/catalog.csv"]
    archive = tmp_path / "link.tar.gz"
    archive.write_bytes(_archive(files, _member(f"{TOP}/data/catalog.csv", tarfile.SYMTYPE, "boundary_rules.csv")))
    with pytest.raises(rk.DataError) as caught:
        fetch_artifact(tmp_path / "dest", archive=archive)
    assert caught.value.code is rk.ErrorCode.UNSAFE_ARCHIVE and "regular file for data/catalog.csv" in str(caught.value)


def test_an_inside_link_the_kit_does_not_read_is_skipped(routebr_artifact: Path, tmp_path: Path) -> None:
    archive = tmp_path / "ok.tar.gz"
    archive.write_bytes(_archive(_tree(routebr_artifact), _member(f"{TOP}/docs/readme", tarfile.SYMTYPE,
                                                                   "../data/README.md")))
    result = fetch_artifact(tmp_path / "dest", archive=archive)
    assert result.not_installed == 3 and not (tmp_path / "dest" / "docs").exists()


def test_not_an_archive(tmp_path: Path) -> None:
    archive = tmp_path / "page.tar.gz"
    archive.write_bytes(b"<html>rate limited</html>")
    with pytest.raises(rk.DataError) as caught:
        fetch_artifact(tmp_path / "dest", archive=archive)
    assert caught.value.code is rk.ErrorCode.FILE_UNREADABLE and caught.value.file == str(archive)
    assert _leftovers(tmp_path) == ["page.tar.gz"]


def test_offline_says_so_and_how_to_place_a_copy_by_hand(tmp_path: Path, capsys) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    dest = tmp_path / "artifacts" / "routebr"
    assert _fetch(f"http://127.0.0.1:{port}/x.tar.gz", dest, "--timeout", "5") == 2
    err = capsys.readouterr().err
    assert "[DOWNLOAD_FAILED]" in err and "offline" in err
    assert "To place a copy by hand" in err and "--archive FILE.tar.gz" in err
    assert f"https://github.com/YgcCoder/RouteBR/archive/{PUBLISHED_COMMIT}.tar.gz" in err
    assert not dest.exists() and _leftovers(dest.parent) == []


def test_http_error_is_a_download_failure(server: _Server, tmp_path: Path) -> None:
    with pytest.raises(rk.DataError) as caught:
        fetch_artifact(tmp_path / "dest", url=server.base + "/missing.tar.gz")
    assert caught.value.code is rk.ErrorCode.DOWNLOAD_FAILED and "HTTP 404" in str(caught.value)


def test_download_size_is_bounded(server: _Server, tmp_path: Path) -> None:
    url = server.serve("/big.tar.gz", b"\0" * 5000)
    with pytest.raises(rk.DataError) as caught:
        download(url, tmp_path / "big", max_bytes=4096)
    assert caught.value.code is rk.ErrorCode.UNSAFE_ARCHIVE


def test_archive_by_hand_verify_and_force(routebr_artifact: Path, tmp_path: Path, capsys) -> None:
    archive = tmp_path / "RouteBR.tar.gz"
    archive.write_bytes(_archive(_tree(routebr_artifact)))
    dest = tmp_path / "dest"
    assert main(["fetch-artifact", "--archive", str(archive), "--dest", str(dest)]) == 0
    capsys.readouterr()
    assert main(["fetch-artifact", "--verify", str(routebr_artifact)]) == 0
    assert "72/72 files verified" in capsys.readouterr().out

    (dest / "data" / "routebr_600.csv").write_bytes(b"edited")
    assert main(["fetch-artifact", "--verify", str(dest)]) == 1
    assert "MISMATCH data/routebr_600.csv: SHA-256 differs" in capsys.readouterr().out
    assert main(["fetch-artifact", "--archive", str(archive), "--dest", str(dest)]) == 2
    err = capsys.readouterr().err
    assert "[INVALID_VALUE]" in err and "--force" in err and str(dest) in err
    assert main(["fetch-artifact", "--archive", str(archive), "--dest", str(dest), "--force"]) == 0
    assert verify_tree(dest) == () and _leftovers(tmp_path) == ["RouteBR.tar.gz", "dest"]


@given(st.lists(st.sampled_from(["a", "b", "..", ".", "", "/", "\\", "c:", "\0"]), min_size=1, max_size=6)
       .map("".join))
def test_names_judged_safe_stay_inside_the_tree(name: str) -> None:
    if not _unsafe_relative(name):
        normal = posixpath.normpath(name)
        assert not normal.startswith("/") and normal != ".." and not normal.startswith("../")
        assert os.path.join("/root", normal).startswith("/root")
