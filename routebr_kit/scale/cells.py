"""Frozen study cells keyed by content hash, and their atomic on-disk results under ``cells/<key>/``.

A :class:`Cell` names an importable function (``"package.module:function"``) and a JSON payload (configuration,
seeds, policy or system, asset hashes, a version).  Its key is the SHA-256 of the canonical JSON of both, so
two equal cells share one key (computed once) and a cell whose payload changed in any way gets a new key — a
stale result can never be picked up for it.

On disk, a finished cell is a directory ``cells/<key>/`` holding ``cell.json`` (the spec) and ``result.json``
(canonical JSON) plus ``done.json`` (the result's SHA-256).  The directory is written under a temporary name and
renamed into place, so a killed process leaves either a complete cell or nothing but a ``.tmp-*`` directory.
"""

from __future__ import annotations

import importlib
import os
import shutil
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..core.hashing import canonical_json, sha256_bytes
from ..store.files import parse_json, read_json, read_text

CELL, RESULT, DONE = "cell.json", "result.json", "done.json"
_TMP_PREFIX = ".tmp-"


@dataclass(frozen=True, slots=True)
class Cell:
    """One unit of work: ``function(payload) -> JSON-able result``.  Build with :meth:`of`."""

    function: str  # "package.module:function", importable on every worker
    payload_json: str  # canonical JSON of the payload (a string keeps the cell hashable and immutable)

    @classmethod
    def of(cls, function: str, payload: Mapping[str, Any]) -> Cell:
        module, sep, name = function.partition(":")
        if not sep or not module or not name.isidentifier():
            raise DataError(ErrorCode.INVALID_VALUE, "a cell function as 'package.module:function'",
                            field="function", got=function)
        try:
            text = canonical_json(dict(payload))
        except (TypeError, ValueError) as exc:
            raise DataError(ErrorCode.WRONG_TYPE, "a JSON-serialisable payload of finite values", field="payload",
                            detail=str(exc)) from None
        return cls(function, text)

    @property
    def payload(self) -> dict[str, Any]:
        return parse_json(self.payload_json, "a cell payload", kind=dict)

    @property
    def spec_json(self) -> str:
        return canonical_json({"function": self.function, "payload": self.payload})

    @property
    def key(self) -> str:
        """SHA-256 of the canonical spec: the cell's identity and directory name."""
        return sha256_bytes(self.spec_json.encode("utf-8"))


def compute(cell: Cell) -> str:
    """Run a cell (on any worker): the canonical JSON text of its result."""
    module, _, name = cell.function.partition(":")
    try:
        function = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise DataError(ErrorCode.UNKNOWN_REFERENCE, "an importable cell function", field="function",
                        got=cell.function, detail=str(exc)) from None
    if not callable(function):
        raise DataError(ErrorCode.WRONG_TYPE, "a callable cell function", field="function", got=cell.function)
    result = function(cell.payload)
    try:
        return canonical_json(result)
    except (TypeError, ValueError) as exc:
        raise DataError(ErrorCode.WRONG_TYPE, "a JSON-serialisable cell result of finite values",
                        field=cell.function, detail=str(exc)) from None


@dataclass(frozen=True, slots=True)
class CellStore:
    """The ``cells/`` directory of a study."""

    root: Path

    def path(self, cell: Cell) -> Path:
        return self.root / cell.key

    def load(self, cell: Cell) -> Any | None:
        """The stored result of ``cell``, or ``None`` if it is not finished.

        A directory whose spec differs from the cell, or whose result does not match its recorded hash, is never
        used: it raises (delete the directory to recompute it).
        """
        where = self.path(cell)
        if not where.exists() and not where.is_symlink():
            return None
        if not where.is_dir():
            raise DataError(ErrorCode.WRONG_TYPE, "a cell directory (delete it to recompute the cell)",
                            file=str(where), got="a file")
        spec = read_text(where / CELL, "a complete cell directory (cell, result, done)")
        text = read_text(where / RESULT, "a complete cell directory (cell, result, done)")
        done = read_json(where / DONE, "a complete cell directory (cell, result, done)")
        if spec != cell.spec_json:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "a stored cell spec equal to the requested cell",
                            file=str(where / CELL), got=spec[:200])
        if not isinstance(done, dict) or done.get("result_sha256") != sha256_bytes(text.encode("utf-8")):
            raise DataError(ErrorCode.CHECKSUM_MISMATCH, "the result hash recorded in done.json",
                            file=str(where / RESULT))
        return parse_json(text, "a cell result", kind=None, file=str(where / RESULT))

    def save(self, cell: Cell, result_json: str) -> Path:
        """Write a finished cell atomically (temporary directory, then one rename)."""
        if self.root.exists() and not self.root.is_dir():
            raise DataError(ErrorCode.WRONG_TYPE, "a cells directory", file=str(self.root), got="a file")
        self.root.mkdir(parents=True, exist_ok=True)
        final = self.path(cell)
        if final.is_symlink() or (final.exists() and not final.is_dir()):
            raise DataError(ErrorCode.WRONG_TYPE, "a cell directory (delete it to recompute the cell)",
                            file=str(final), got="a file")
        tmp = self.root / f"{_TMP_PREFIX}{cell.key}-{uuid.uuid4().hex}"
        tmp.mkdir()
        try:
            for name, text in ((CELL, cell.spec_json), (RESULT, result_json),
                               (DONE, canonical_json({"result_sha256": sha256_bytes(result_json.encode("utf-8"))}))):
                with open(tmp / name, "w", encoding="utf-8", newline="") as handle:
                    handle.write(text)
                    handle.flush()
                    os.fsync(handle.fileno())
            try:
                os.rename(tmp, final)
            except OSError:
                if not final.is_dir():  # lost a race only if someone else finished the same cell
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
        return final

    def clean_partial(self) -> int:
        """Remove ``.tmp-*`` directories left by killed runs; returns how many."""
        if not self.root.is_dir():
            return 0
        stale = [p for p in self.root.iterdir() if p.name.startswith(_TMP_PREFIX)]
        for p in stale:
            shutil.rmtree(p, ignore_errors=True)
        return len(stale)
