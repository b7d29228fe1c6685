"""Fetch the published RouteBR artifact: download, extract safely, verify every file the kit reads, move into place.

The published repository (``YgcCoder/RouteBR``, MIT) is downloaded as GitHub's tarball of the pinned commit
(:data:`ARCHIVE_URL`); its single top-level folder is ``RouteBR-<commit>/``.  The kit ships the SHA-256 of every
file it reads from that repository (``routebr_kit/resources/artifact_sha256.json``, hashes only — never the
files), and :func:`fetch_artifact` installs exactly those files:

1. download into a temporary folder beside the destination (bounded size), or take an archive given by hand;
2. stream each wanted member out of the archive into the temporary folder, hashing as it writes — members outside
   ``RouteBR-<commit>/``, absolute names, ``..``, links that leave the tree, devices and oversized members make
   the whole archive :attr:`~routebr_kit.core.errors.ErrorCode.UNSAFE_ARCHIVE`; nothing is ever extracted by name
   through :mod:`tarfile`'s own extraction;
3. refuse the archive when any listed file is missing (``FILE_NOT_FOUND``) or differs (``CHECKSUM_MISMATCH``),
   naming the file;
4. only then rename the verified tree to the destination (:func:`default_dest`: ``artifacts/routebr/`` of a source
   checkout, else of the current directory — never inside the installed package) — a failed fetch leaves no
   destination and no temporary folder behind.

Files of the archive the kit does not read (source code, the raw receipts the kit has no hash for) are not
installed; ``LICENSE`` is kept (the MIT notice travels with the copy) and recorded as unverified.  The install
records its provenance in ``FETCHED.json``.  Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import shutil
import tarfile
import tempfile
import time
import urllib.error
import urllib.request
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import IO

from ..core.errors import DataError, ErrorCode
from ..core.hashing import sha256_file
from . import artifact as _artifact
from .artifact import ARTIFACT_ENV, PUBLISHED_COMMIT, PUBLISHED_REPOSITORY
from .files import read_json
from .kitfiles import PACKAGE, package_parent, source_checkout

#: The SHA-256 values the kit ships for the files it reads from the published repository.
MANIFEST_PATH = Path(__file__).resolve().parents[1] / "resources" / "artifact_sha256.json"
#: GitHub's tarball of one commit.
_ARCHIVE_URL = "https://codeload.github.com/{repository}/tar.gz/{commit}"
#: The provenance record written into an installed artifact.
FETCHED_FILE = "FETCHED.json"
#: Installed next to the verified files when the archive has them (not read by the kit, so not hashed).
_NOTICE_FILES = ("LICENSE",)

#: What the kit reads from the repository (and the documents that go with the data), as glob patterns relative
#: to the repository root.  ``build_manifest`` hashes every file of an artifact that matches one of them.
_KIT_READS = (
    "data/*.csv",
    "experiments/prompts.json",
    "experiments/api_profiles.json",
    "experiments/results/*/*/*/predictions.csv",
    "experiments/results/*/*/*/run_manifest.json",
    "experiments/results/*/*/*/raw/*.json",
    "analysis/results/FINAL_RESULTS.md",
    "analysis/results/FINAL_RESULTS.json",
    "analysis/results/RESULT_FREEZE_MANIFEST.json",
    "data/*.md",
    "experiments/README.md",
    "CITATION.cff",
)

_MAX_ARCHIVE_BYTES = 256 << 20  # the published repository's tarball is a few MB
_MAX_MEMBER_BYTES = 64 << 20
_MAX_TOTAL_BYTES = 512 << 20
_MAX_MEMBERS = 100_000
_CHUNK = 1 << 16


@dataclass(frozen=True, slots=True)
class ShippedManifest:
    """The repository, the commit and ``relative path -> SHA-256`` of every file the kit reads."""

    repository: str
    commit: str
    files: Mapping[str, str]

    @property
    def top_folder(self) -> str:
        """The archive's single top-level folder (``RouteBR-<commit>``)."""
        return f"{self.repository.rpartition('/')[2]}-{self.commit}"

    @property
    def url(self) -> str:
        return _ARCHIVE_URL.format(repository=self.repository, commit=self.commit)


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What :func:`fetch_artifact` did."""

    dest: Path
    source: str  # the URL or the archive file
    verified: int  # files checked against the shipped SHA-256 values
    archive_sha256: str = ""  # empty when the destination was already present and verified
    not_installed: int = 0  # archive files the kit does not read
    notices: tuple[str, ...] = ()
    already_present: bool = False


def load_shipped_manifest(path: str | Path = MANIFEST_PATH) -> ShippedManifest:
    """The shipped SHA-256 manifest, type-checked."""
    path = Path(path)
    raw = read_json(path, "the kit's artifact SHA-256 manifest (a JSON object)")
    for key in ("repository", "commit", "files"):
        if key not in raw:
            raise DataError(ErrorCode.MISSING_COLUMN, f"a key {key!r}", file=str(path), field=key)
    files = raw["files"]
    if not isinstance(files, dict) or not files:
        raise DataError(ErrorCode.WRONG_TYPE, "a non-empty object of path -> SHA-256", file=str(path),
                        field="files", got=type(files).__name__)
    for rel, digest in files.items():
        if _unsafe_relative(rel):
            raise DataError(ErrorCode.INVALID_VALUE, "a relative path inside the repository", file=str(path),
                            field="files", got=rel)
        if not isinstance(digest, str) or len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise DataError(ErrorCode.INVALID_VALUE, "a lower-case hex SHA-256", file=str(path),
                            field=f"files.{rel}", got=digest)
    return ShippedManifest(str(raw["repository"]), str(raw["commit"]), MappingProxyType(dict(files)))


def build_manifest(root: str | Path) -> dict[str, object]:
    """The manifest for an artifact directory: every file matching :data:`KIT_READS` (sorted, POSIX paths)."""
    root = Path(root)
    files = sorted({p.relative_to(root).as_posix() for pattern in _KIT_READS for p in root.glob(pattern)
                    if p.is_file()})
    if not files:
        raise DataError(ErrorCode.EMPTY_VALUE, "an artifact directory with the files the kit reads", file=str(root))
    return {"repository": PUBLISHED_REPOSITORY, "commit": PUBLISHED_COMMIT,
            "about": "SHA-256 of every file routebr-kit reads from the published repository (hashes only); "
                     "written by routebr_kit.store.fetch.build_manifest",
            "files": {rel: sha256_file(root / rel) for rel in files}}


def verify_tree(root: str | Path, manifest: ShippedManifest | None = None) -> tuple[str, ...]:
    """Problems of an installed artifact against the shipped hashes (empty when every listed file matches)."""
    manifest = manifest or load_shipped_manifest()
    root = Path(root)
    problems = []
    for rel, expected in manifest.files.items():
        path = root / rel
        if path.is_symlink() or not path.is_file():
            problems.append(f"{rel}: missing")
        elif sha256_file(path) != expected:
            problems.append(f"{rel}: SHA-256 differs")
    return tuple(problems)


def default_dest() -> Path:
    """Where the artifact goes by default: ``artifacts/routebr/`` of the source checkout (where the kit looks first),
    or, for an installed wheel, ``./artifacts/routebr/`` of the current directory (the kit looks there too) — never
    under ``site-packages``."""
    return _artifact.CONVENTIONAL_DIR if source_checkout() is not None else Path.cwd() / "artifacts" / "routebr"


def check_dest(dest: Path) -> None:
    """Refuse a destination inside the installed package (or, for a wheel, anywhere under its ``site-packages``)."""
    where = dest.resolve()
    forbidden = [PACKAGE] if source_checkout() is not None else [PACKAGE, package_parent()]
    if any(where.is_relative_to(folder) for folder in forbidden):
        raise DataError(ErrorCode.INVALID_VALUE, "a destination outside the installed package (e.g. "
                        "./artifacts/routebr)", file=str(dest), field="--dest")


def manual_instructions(dest: str | Path, manifest: ShippedManifest) -> str:
    """How to place a copy by hand (printed when the download is impossible)."""
    page = f"https://github.com/{manifest.repository}/archive/{manifest.commit}.tar.gz"
    return "\n".join([
        "To place a copy by hand:",
        f"  1. on a machine with network access, download {page}",
        f"     (or clone it — git clone https://github.com/{manifest.repository} && "
        f"git -C {manifest.repository.rpartition('/')[2]} checkout {manifest.commit} — and use --verify below)",
        "  2. copy the .tar.gz here and run:  routebr-kit fetch-artifact --archive FILE.tar.gz",
        f"     (verifies every file against the kit's SHA-256 values and unpacks into {dest})",
        "  or point the kit at an existing copy without installing it:",
        f"     routebr-kit fetch-artifact --verify DIR   then   export {ARTIFACT_ENV}=DIR",
    ])


# --------------------------------------------------------------------------------------------- fetching


def fetch_artifact(dest: str | Path | None = None, *, url: str | None = None, archive: str | Path | None = None,
                   force: bool = False, timeout: float = 60.0, manifest: ShippedManifest | None = None,
                   progress: Callable[[int, int | None], None] | None = None) -> FetchResult:
    """Download (or take ``archive``), verify and install the published artifact into ``dest``.

    An existing destination that already verifies is left alone (``already_present``); any other existing
    destination is refused unless ``force`` (then it is replaced only after the new tree has verified).
    ``progress(bytes_so_far, total_or_None)`` is called while downloading.
    """
    manifest = manifest or load_shipped_manifest()
    dest = Path(dest) if dest is not None else default_dest()
    check_dest(dest)
    source = str(archive) if archive is not None else (url or manifest.url)
    if dest.exists() or dest.is_symlink():
        problems = verify_tree(dest, manifest) if dest.is_dir() else ("not a directory",)
        if not problems:
            return FetchResult(dest, source, len(manifest.files), already_present=True)
        if not force:
            raise DataError(ErrorCode.INVALID_VALUE, "a destination that does not exist yet (or --force to "
                            "replace it)", file=str(dest), got=problems[0],
                            detail=f"{len(problems)} of {len(manifest.files)} files missing or different")
    if archive is not None and not Path(archive).is_file():
        raise DataError(ErrorCode.FILE_NOT_FOUND, "an archive file (.tar.gz)", file=str(archive))
    dest.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(dir=dest.parent, prefix=f".{dest.name}.fetch-"))
    try:
        if archive is None:
            archive_path = work / "archive.tar.gz"
            download(source, archive_path, timeout=timeout, progress=progress)
        else:
            archive_path = Path(archive)
        staged = work / "tree"
        not_installed, notices = _extract_verified(archive_path, staged, manifest)
        archive_sha256 = sha256_file(archive_path)
        record = {"repository": manifest.repository, "commit": manifest.commit, "source": source,
                  "archive_sha256": archive_sha256, "verified_files": len(manifest.files),
                  "unverified_notices": list(notices), "archive_files_not_installed": not_installed}
        (staged / FETCHED_FILE).write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
        if dest.exists() or dest.is_symlink():  # force: the old tree goes only now that the new one verified
            old = work / "replaced"
            os.replace(dest, old)
        os.replace(staged, dest)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return FetchResult(dest, source, len(manifest.files), archive_sha256, not_installed, notices)


#: The total deadline of one archive download (connect, headers and the whole body), seconds.
_DOWNLOAD_DEADLINE_S = 1800.0


def download(url: str, target: Path, *, timeout: float = 60.0, max_bytes: int = _MAX_ARCHIVE_BYTES,
             deadline_s: float = _DOWNLOAD_DEADLINE_S,
             progress: Callable[[int, int | None], None] | None = None) -> None:
    """Stream ``url`` into ``target``; any failure is one ``DOWNLOAD_FAILED`` error naming the URL."""
    request = urllib.request.Request(url, headers={"User-Agent": "routebr-kit fetch-artifact"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response, open(target, "wb") as out:  # noqa: S310
            declared = response.headers.get("Content-Length")
            total = int(declared) if declared and declared.isdigit() else None
            if total is not None and total > max_bytes:
                raise DataError(ErrorCode.UNSAFE_ARCHIVE, f"an archive of at most {max_bytes} bytes", file=url,
                                got=f"{total} bytes")
            written = 0
            until = time.monotonic() + deadline_s
            reader = getattr(response, "read1", None) or response.read
            while chunk := reader(_CHUNK):
                written += len(chunk)
                if written > max_bytes:
                    raise DataError(ErrorCode.UNSAFE_ARCHIVE, f"an archive of at most {max_bytes} bytes", file=url,
                                    got=f"more than {max_bytes} bytes")
                if time.monotonic() > until:
                    raise DataError(ErrorCode.DOWNLOAD_FAILED, f"the whole archive within {deadline_s:g} s",
                                    file=url, got=f"{written:,} bytes when the deadline passed")
                out.write(chunk)
                if progress is not None:
                    progress(written, total)
    except DataError:
        raise
    except urllib.error.HTTPError as exc:
        raise DataError(ErrorCode.DOWNLOAD_FAILED, "the published archive", file=url,
                        detail=f"HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError, ValueError) as exc:  # offline, DNS, refused, timeout, bad URL
        reason = getattr(exc, "reason", exc)
        raise DataError(ErrorCode.DOWNLOAD_FAILED, "a reachable archive (no network?)", file=url,
                        detail=str(reason) or type(exc).__name__) from None


def _extract_verified(archive: Path, staged: Path, manifest: ShippedManifest) -> tuple[int, tuple[str, ...]]:
    """Write every listed file of ``archive`` into ``staged`` and check its SHA-256 on the way.

    Returns ``(archive files not installed, notice files installed)``.  Raises on the first unsafe member, on a
    listed file that is missing or differs, and on an unreadable archive.
    """
    wanted = dict(manifest.files)
    prefix = manifest.top_folder + "/"
    seen: set[str] = set()
    notices: list[str] = []
    not_installed = members = total = 0
    staged.mkdir(parents=True)
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                members += 1
                if members > _MAX_MEMBERS:
                    raise _unsafe(archive, f"at most {_MAX_MEMBERS} archive members", f"more than {_MAX_MEMBERS}")
                name = member.name
                if name.rstrip("/") == manifest.top_folder and member.isdir():
                    continue
                if _unsafe_relative(name) or not name.startswith(prefix):
                    raise _unsafe(archive, f"every member inside {prefix}", name)
                rel = name[len(prefix):].rstrip("/")
                if member.issym() or member.islnk():
                    if rel in wanted or rel in _NOTICE_FILES:
                        raise _unsafe(archive, f"a regular file for {rel}", f"a link to {member.linkname}")
                    target = member.linkname if member.islnk() else posixpath.join(posixpath.dirname(name),
                                                                                   member.linkname)
                    target = posixpath.normpath(target) if target and "\0" not in target else ""
                    if _unsafe_relative(target) or not target.startswith(prefix):
                        raise _unsafe(archive, "links that stay inside the repository",
                                      f"{rel} -> {member.linkname}")
                    not_installed += 1
                    continue
                if member.isdir():
                    continue
                if not member.isfile():
                    raise _unsafe(archive, "regular files and folders only", f"{rel} (type {member.type!r})")
                if rel not in wanted and rel not in _NOTICE_FILES:
                    not_installed += 1
                    continue
                if rel in seen:
                    raise _unsafe(archive, "each file once", rel)
                if member.size > _MAX_MEMBER_BYTES:
                    raise _unsafe(archive, f"files of at most {_MAX_MEMBER_BYTES} bytes", f"{rel}: {member.size}")
                total += member.size
                if total > _MAX_TOTAL_BYTES:
                    raise _unsafe(archive, f"at most {_MAX_TOTAL_BYTES} bytes in all", rel)
                seen.add(rel)
                handle = tar.extractfile(member)
                if handle is None:  # pragma: no cover - isfile() members always have data
                    raise _unsafe(archive, f"readable data for {rel}", rel)
                digest = _write_member(handle, staged / rel)
                if rel in _NOTICE_FILES:
                    notices.append(rel)
                elif digest != wanted[rel]:
                    raise DataError(ErrorCode.CHECKSUM_MISMATCH, f"SHA-256 {wanted[rel]} (the kit's shipped value)",
                                    file=rel, got=digest, detail=f"in {archive}; the archive is refused")
    except (tarfile.TarError, EOFError, zlib.error, OSError) as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, "a gzip-compressed tar archive", file=str(archive),
                        detail=str(exc) or type(exc).__name__) from None
    missing = sorted(set(wanted) - seen)
    if missing:
        raise DataError(ErrorCode.FILE_NOT_FOUND, f"every file the kit reads inside {prefix}", file=missing[0],
                        detail=f"{len(missing)} listed files missing from {archive}; the archive is refused")
    return not_installed, tuple(sorted(notices))


def _write_member(handle: IO[bytes], path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    with open(path, "xb") as out:  # "x": never through an existing name (a link planted by an earlier member)
        while chunk := handle.read(_CHUNK):  # tarfile stops at the member's declared (and checked) size
            digest.update(chunk)
            out.write(chunk)
    os.chmod(path, 0o644)
    return digest.hexdigest()


def _unsafe(archive: Path, expected: str, got: str) -> DataError:
    return DataError(ErrorCode.UNSAFE_ARCHIVE, expected, file=str(archive), got=got,
                     detail="the archive is refused")


def _unsafe_relative(name: object) -> bool:
    """True for anything but a plain relative POSIX path without ``..`` (absolute, backslash, NUL, drive)."""
    if not isinstance(name, str) or not name or "\0" in name or "\\" in name:
        return True
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return True
    return any(part == ".." for part in name.split("/"))
