"""Reading YAML configuration files with located, typed errors (JSON lives in :mod:`routebr_kit.store.assets`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode


def read_yaml(path: str | Path, expected: str = "a YAML file") -> Any:
    """The parsed document (``None`` for an empty file); a missing or malformed file is a located DataError."""
    import yaml

    path = Path(path)
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(ErrorCode.FILE_NOT_FOUND, expected, file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(ErrorCode.FILE_UNREADABLE, expected, file=str(path), detail=str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        raise DataError(ErrorCode.INVALID_VALUE, "valid YAML", file=str(path),
                        line=mark.line + 1 if mark is not None else None, detail=str(exc)) from None
