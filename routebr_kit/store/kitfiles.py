"""Where the kit's own notebooks and parameter files are — in a source checkout or in an installed wheel.

A source checkout keeps them at the top level (``notebooks/``, ``params/``), where Jupyter users and the Makefile
expect them.  A wheel carries copies inside the package, under ``routebr_kit/resources/notebooks/`` and
``routebr_kit/resources/params/`` (``setup.py`` copies them at build time; nothing is duplicated in git).  The
checkout wins when there is one, so an edited notebook takes effect in an editable install at once.

The kit never writes into these folders: outputs go to the current directory or to ``--out`` (see
:func:`work_root`).  Standard library only.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import DataError, ErrorCode

#: The installed package (``routebr_kit/``) and its data folder.
PACKAGE = Path(__file__).resolve().parents[1]
_RESOURCES = PACKAGE / "resources"
#: The folder above the package: the repository root of a source checkout, ``site-packages`` for a wheel.
_ABOVE = PACKAGE.parent
#: The folders a checkout holds and a wheel ships (folder, file pattern).
SHIPPED = (("notebooks", "*.ipynb"), ("params", "*.yaml"))
_PARAMS_SUFFIXES = (".yaml", ".yml")


def source_checkout() -> Path | None:
    """The repository root when the kit runs from a source checkout (editable install or ``PYTHONPATH``), else
    ``None`` (an installed wheel: the folder above the package is ``site-packages``)."""
    root = _ABOVE
    if (root / "pyproject.toml").is_file() and (root / "notebooks").is_dir() and (root / "params").is_dir():
        return root
    return None


def package_parent() -> Path:
    """The folder the package is installed in: a checkout's root, or ``site-packages`` for a wheel."""
    return _ABOVE


def _folder(name: str) -> Path:
    checkout = source_checkout()
    return checkout / name if checkout is not None else _RESOURCES / name


def notebooks_dir() -> Path:
    """The kit's notebooks: ``notebooks/`` of the checkout, else the copies in the installed package."""
    return _folder("notebooks")


def params_dir() -> Path:
    """The kit's parameter files: ``params/`` of the checkout, else the copies in the installed package."""
    return _folder("params")


def shipped_params() -> tuple[str, ...]:
    """The names of the parameter files the kit ships (``ci``, ``default``, ``live.example``)."""
    folder = params_dir()
    return tuple(sorted(p.stem for p in folder.glob("*.yaml"))) if folder.is_dir() else ()


def params_file(value: str | Path) -> Path:
    """A ``--params`` value as a file: an existing path as given; else the kit's own file of that name
    (``default``, ``default.yaml`` or ``params/default.yaml`` from any directory)."""
    path = Path(value)
    if path.is_file():
        return path
    named = path.name if path.suffix in _PARAMS_SUFFIXES else f"{path.name}.yaml"
    bare = len(path.parts) == 1 or (len(path.parts) == 2 and path.parts[0] == "params")
    if bare and (params_dir() / named).is_file():
        return params_dir() / named
    raise DataError(ErrorCode.FILE_NOT_FOUND, "a parameters file, or the name of one the kit ships ("
                    + ", ".join(shipped_params()) + ")", file=str(path), field="--params")


def work_root() -> Path:
    """Where default outputs go: the checkout (``outputs/``, ``artifacts/`` beside the sources, as ``make`` expects)
    or, for an installed wheel, the current directory — never the package's own folder."""
    checkout = source_checkout()
    return checkout if checkout is not None else Path.cwd()


__all__ = ["PACKAGE", "SHIPPED", "notebooks_dir", "package_parent", "params_dir", "params_file", "shipped_params",
           "source_checkout", "work_root"]
