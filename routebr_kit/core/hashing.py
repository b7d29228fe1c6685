"""SHA-256 helpers shared by assets, manifests and caches."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any, BinaryIO

from .errors import DataError, ErrorCode


def open_regular(path: str | Path, expected: str = "a regular file", *, field: str | None = None) -> BinaryIO:
    """``path`` opened for reading in binary mode, only when it is a regular file.

    The open itself never blocks (``O_NONBLOCK``: a FIFO with no writer would otherwise hang it) and the type is
    checked on the opened descriptor (``fstat``), so nothing swapped in between a check and the open is read.  A
    FIFO, socket, device or directory, and a symbolic link that leads nowhere, is ``WRONG_TYPE`` naming the path; a
    missing path ``FILE_NOT_FOUND``; a link loop or a refused open ``FILE_UNREADABLE``.
    """
    name = str(path)
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        if os.path.islink(path):
            raise DataError(ErrorCode.WRONG_TYPE, expected, file=name, field=field,
                            got=f"a dangling symbolic link (to {os.readlink(path)!r})") from None
        raise DataError(ErrorCode.FILE_NOT_FOUND, expected, file=name, field=field) from None
    except IsADirectoryError:
        raise DataError(ErrorCode.WRONG_TYPE, expected, file=name, field=field, got="a directory") from None
    except OSError as exc:
        detail = "a symbolic-link loop" if exc.errno == errno.ELOOP else exc.strerror or type(exc).__name__
        raise DataError(ErrorCode.FILE_UNREADABLE, expected, file=name, field=field, detail=detail) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = ("a directory" if stat.S_ISDIR(mode) else "a FIFO" if stat.S_ISFIFO(mode)
                    else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) else "a socket or special file")
            raise DataError(ErrorCode.WRONG_TYPE, expected, file=name, field=field, got=kind)
        if flags & getattr(os, "O_NONBLOCK", 0):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | Path, expected: str = "a regular file to hash") -> str:
    """SHA-256 of a regular file (anything else: a typed error from :func:`open_regular`, never a hang)."""
    digest = hashlib.sha256()
    with open_regular(path, expected) as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def canonical_json(value: Any) -> str:
    """Compact, key-sorted, non-ASCII-preserving JSON: the form every content hash is taken over."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def sha256_json(value: Any) -> str:
    return sha256_bytes(canonical_json(value).encode("utf-8"))
