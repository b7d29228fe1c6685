"""Write the pinned environment of routebr-kit: the exact versions installed in *this* interpreter's environment.

    python requirements/freeze.py requirements/lock.txt      # what `make lock` runs inside a throwaway venv
    python requirements/freeze.py --check requirements/lock.txt  # exit 1 unless this environment is the lock
    python requirements/freeze.py --check requirements/lock.txt --extras local   # ... and the optional extras too
    python requirements/freeze.py --build-requires           # prints [build-system].requires

Only the dependency closure of pyproject.toml is written (``[project].dependencies``, the extras named in
``EXTRAS`` and ``[build-system].requires``, followed through each installed distribution's own metadata with its
environment markers evaluated here), plus ``pip`` itself, so a package installed by hand never leaks into the lock.
A required distribution that is not installed, or whose installed version is outside the range its dependant
asks for, is an error: the lock is only ever written from an environment that satisfies pyproject.toml.
The output has no timestamp: the same environment gives a byte-identical file.

The lock covers every extra, but only ``EXTRAS`` are installed by default: a pin that only an optional extra
(``OPTIONAL_EXTRAS``, e.g. ``local``) needs is written with the trailing comment ``# only [local]``.  ``--check``
compares the closure of the default extras with the lock's other pins; ``--extras local`` (what ``make
local-model`` runs) adds that extra's closure and its marked pins, so each environment is checked exactly.
"""

from __future__ import annotations

import platform
import sys
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("dev", "scale", "learned")
OPTIONAL_EXTRAS = ("local",)  # pinned in the lock, installed only on request (make local-model)
ONLY = "  # only "
ALWAYS = ("pip",)  # the installer is pinned too (make upgrades the venv's bundled pip to this version)


class LockError(SystemExit):
    """A closure that cannot be pinned (missing distribution or version outside its dependant's range)."""


@dataclass(frozen=True, slots=True)
class Installed:
    """One installed distribution, its metadata read once."""

    name: str
    version: str
    requires: tuple[str, ...]


def installed_distributions() -> dict[str, Installed]:
    """Canonical name → the distribution imported here (the first on sys.path, as importlib finds it)."""
    out: dict[str, Installed] = {}
    for dist in metadata.distributions():
        md = dist.metadata
        if md["Name"] and canonicalize_name(md["Name"]) not in out:
            out[canonicalize_name(md["Name"])] = Installed(md["Name"], md["Version"],
                                                           tuple(md.get_all("Requires-Dist") or ()))
    return out


def roots(pyproject: Path, optional_extras: tuple[str, ...] = ()) -> list[tuple[Requirement, str]]:
    """The requirements pyproject.toml names (with ``optional_extras`` too), each with who asks for it."""
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    project = data["project"]
    out = [(Requirement(r), "[project].dependencies") for r in project.get("dependencies", [])]
    optional = project.get("optional-dependencies", {})
    for extra in (*EXTRAS, *optional_extras):
        if extra not in optional:
            raise LockError(f"pyproject.toml: expected extra [{extra}] in [project.optional-dependencies]")
        out += [(Requirement(r), f"[{extra}]") for r in optional[extra]]
    out += [(Requirement(r), "[build-system].requires") for r in data.get("build-system", {}).get("requires", [])]
    out += [(Requirement(name), "installer") for name in ALWAYS]
    return out


def _applies(req: Requirement, extras: frozenset[str]) -> bool:
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": e}) for e in (extras or {""}))


def closure(pyproject: Path, own_name: str, optional_extras: tuple[str, ...] = ()) -> dict[str, Installed]:
    """Canonical name → installed distribution for everything pyproject.toml needs here (own package excluded)."""
    own = canonicalize_name(own_name)
    installed = installed_distributions()
    found: dict[str, Installed] = {}
    extras_seen: dict[str, frozenset[str]] = {}
    todo = [(req, frozenset(), who) for req, who in roots(pyproject, optional_extras)]
    while todo:
        req, parent_extras, who = todo.pop()
        if not _applies(req, parent_extras):
            continue
        name = canonicalize_name(req.name)
        if name == own:
            continue
        dist = installed.get(name)
        if dist is None:
            raise LockError(f"{req} (needed by {who}) is not installed in {sys.prefix}")
        if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
            raise LockError(f"{req} (needed by {who}): installed {dist.version} is outside the range")
        wanted = extras_seen.get(name, frozenset()) | frozenset(req.extras)
        if name in found and wanted == extras_seen[name]:
            continue
        found[name], extras_seen[name] = dist, wanted
        todo += [(Requirement(child), wanted, f"{dist.name} {dist.version}") for child in dist.requires]
    return found


def render(pyproject: Path, optional_extras: tuple[str, ...] = OPTIONAL_EXTRAS) -> str:
    """The lock's text: the default closure, plus each optional extra's own pins marked ``# only [extra]``."""
    own = tomllib.loads(pyproject.read_text(encoding="utf-8"))["project"]["name"]
    base = closure(pyproject, own)
    pins = dict(base)
    only: dict[str, list[str]] = {}
    for extra in optional_extras:
        for name, dist in closure(pyproject, own, (extra,)).items():
            if name not in base:
                pins[name] = dist
                only.setdefault(name, []).append(extra)
    header = [
        "# Pinned environment of routebr-kit: the exact versions its tests pass with.",
        "# GENERATED by `make lock` (requirements/freeze.py) -- do not edit by hand.",
        f"# Closure of pyproject.toml: [project].dependencies + extras [{','.join(EXTRAS)}] + [build-system].requires"
        " + pip,",
        *([f"# and the optional extras [{','.join(optional_extras)}]: a pin only they need ends in"
           f" '{ONLY.strip()} [extra]' (make local-model)"] if optional_extras else []),
        f"# resolved for CPython {platform.python_version()} on {sys.platform} {platform.machine()}"
        " (environment markers are evaluated there).",
        "# Every make target installs with: pip install -c requirements/lock.txt --build-constraint"
        " requirements/lock.txt -e '.[dev,scale,learned]'",
    ]
    body = [f"{pins[n].name}=={pins[n].version}" + (f"{ONLY}[{','.join(only[n])}]" if n in only else "")
            for n in sorted(pins)]
    return "\n".join(header + body) + "\n"


def pins(text: str, source: str, extras: tuple[str, ...] | None = None) -> dict[str, str]:
    """Canonical name → ``name==version`` line of a lock's text; a duplicate or unpinned line is an error.

    ``extras`` chooses which ``# only [extra]`` pins are kept: those of the named optional extras (``None``: all).
    """
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if ONLY in line:
            line, marked = line.split(ONLY, 1)
            wanted = marked.strip().removeprefix("[").removesuffix("]").split(",")
            if not marked.strip().startswith("[") or set(wanted) - set(OPTIONAL_EXTRAS):
                raise LockError(f"{source}:{number}: expected '{ONLY.strip()} [extra]' naming optional extras "
                                f"{', '.join(OPTIONAL_EXTRAS)}, got {raw.strip()!r}")
            if extras is not None and not set(wanted) & set(extras):
                continue
        req = Requirement(line)
        spec = list(req.specifier)
        if len(spec) != 1 or spec[0].operator != "==" or req.marker or req.extras:
            raise LockError(f"{source}:{number}: expected one exact pin 'name==version', got {line!r}")
        name = canonicalize_name(req.name)
        if name in out:
            raise LockError(f"{source}:{number}: {req.name} is pinned twice")
        out[name] = line
    return out


def check(lock: Path, extras: tuple[str, ...] = ()) -> int:
    """0 when this environment's closure (default extras + ``extras``) equals the lock's pins for them; else print
    every difference and return 1."""
    unknown = set(extras) - set(OPTIONAL_EXTRAS)
    if unknown:
        raise LockError(f"--extras: expected optional extras of {', '.join(OPTIONAL_EXTRAS)}, got {sorted(unknown)}")
    want = pins(lock.read_text(encoding="utf-8"), str(lock), extras)
    have = pins(render(ROOT / "pyproject.toml", extras), "this environment")
    diffs = [f"  {n}: lock {want.get(n, '(absent)')}, installed {have.get(n, '(absent)')}"
             for n in sorted(want.keys() | have.keys()) if want.get(n) != have.get(n)]
    if diffs:
        print(f"{sys.prefix} does not match {lock} (run `make lock` after changing pyproject.toml):", file=sys.stderr)
        print("\n".join(diffs), file=sys.stderr)
        return 1
    print(f"{sys.prefix} matches {lock}: {len(want)} pins")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--build-requires"]:  # `make lock` installs these into the throwaway venv so they can be pinned
        data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
        print(" ".join(data["build-system"]["requires"]))
        return 0
    if len(argv) == 2 and argv[0] == "--check":  # every make target: the venv it built is exactly the lock
        return check(Path(argv[1]))
    if len(argv) == 4 and argv[0] == "--check" and argv[2] == "--extras":  # make local-model
        return check(Path(argv[1]), tuple(e for e in argv[3].split(",") if e))
    if len(argv) != 1:
        raise LockError("usage: python requirements/freeze.py OUT.txt | --check LOCK.txt [--extras local]"
                        " | --build-requires")
    text = render(ROOT / "pyproject.toml")
    out = Path(argv[0])
    tmp = out.with_suffix(out.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8", newline="\n")
    tmp.replace(out)
    print(f"wrote {out}: {len(pins(text, str(out)))} pins")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
