"""Where an experiment's ledgers come from — one vocabulary for the CONFIRM study and the backend screening.

A notebook names a :class:`Source`; :func:`resolve_source` turns it into a concrete one (never ``auto``), the
artifact directory it will read (if any) and a banner that says, in plain words, what was chosen and how to switch.
``auto`` never fails: the published artifact when one is found (an explicit path, ``$ROUTEBR_ARTIFACT``, the
kit's conventional folder, a sibling checkout — see :func:`~routebr_kit.store.artifact.artifact_candidates`), else
the seeded simulation.  ``artifact`` fails loudly when no artifact is found, with the same hint.
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any, NamedTuple

from ..core.errors import DataError, ErrorCode
from ..prompts import Protocol
from ..store.artifact import (
    ARTIFACT_ENV,
    CONVENTIONAL_DIR,
    PUBLISHED_COMMIT,
    PUBLISHED_REPOSITORY,
    REPO,
    artifact_candidates,
    find_artifact,
    is_artifact_dir,
)


class Source(str, enum.Enum):
    """The sources of every research-question notebook (``auto`` resolves to one of the other three)."""

    ARTIFACT = "artifact"  # the published runs (no model call)
    SIMULATED = "simulated"  # seeded error models calibrated on the published screening (a simulation)
    LIVE = "live"  # an OpenAI-compatible endpoint, only when its API key is set
    AUTO = "auto"  # the artifact when one is found, else simulated


class ResolvedSource(NamedTuple):
    """A concrete source, the artifact directory it reads (``None``: none found or none needed) and a banner."""

    source: Source
    artifact_dir: Path | None
    banner: str


#: How to obtain the published runs (shown whenever they were not found).
HOW_TO_GET = (f"get the published repository {PUBLISHED_REPOSITORY} at commit {PUBLISHED_COMMIT[:12]} (MIT) "
              f"into the kit's `{CONVENTIONAL_DIR.relative_to(REPO)}/` folder, or point `${ARTIFACT_ENV}` or the "
              "`artifact_dir` parameter at a copy")


def parse_source(value: object) -> Source:
    """A :class:`Source` from a notebook literal, or a typed error naming the choices."""
    try:
        return Source(value)
    except ValueError:
        raise DataError(ErrorCode.UNKNOWN_ENUM, "one of " + ", ".join(s.value for s in Source), got=value,
                        field="source") from None


def resolve_source(source: str | Source, artifact_dir: str | Path | None = None) -> ResolvedSource:
    """The concrete source of ``source`` (see the module docstring), with a Markdown banner.

    ``artifact_dir`` is the notebook's parameter (empty: discover).  With ``simulated`` or ``live`` the artifact is
    still looked up — notebooks compare with the published numbers when they can — but its absence is no error.
    An explicit ``artifact_dir`` that is not an artifact is an error for ``artifact`` and is reported in the
    banner (never silently) for the other sources.
    """
    chosen = parse_source(source)
    explicit = Path(artifact_dir) if artifact_dir else None
    bad_explicit = explicit is not None and not is_artifact_dir(explicit)
    if chosen is Source.ARTIFACT:
        if bad_explicit:
            raise DataError(ErrorCode.FILE_NOT_FOUND, "an artifact directory with data/ and experiments/results/ "
                            f"(or set source = \"auto\" to fall back to the simulation; {HOW_TO_GET})",
                            file=str(explicit), field="artifact_dir")
        found = find_artifact(explicit)
        if found is None:
            raise DataError(ErrorCode.FILE_NOT_FOUND, "a published artifact in one of " + _looked_in(None)
                            + f" (or set source = \"auto\" to fall back to the simulation; {HOW_TO_GET})",
                            field="artifact_dir")
        return ResolvedSource(Source.ARTIFACT, found, _artifact_banner(found, explicit, requested=True))
    found = None if bad_explicit else find_artifact(explicit)
    if chosen is Source.AUTO and found is not None:
        return ResolvedSource(Source.ARTIFACT, found, _artifact_banner(found, explicit, requested=False))
    concrete = Source.SIMULATED if chosen is Source.AUTO else chosen
    return ResolvedSource(concrete, found, _fallback_banner(chosen, concrete, found, explicit, bad_explicit))


def published_prompts(protocol: Protocol, source: Source, artifact_dir: Path | None) -> Path | None:
    """The published protocol's ``prompts.json`` (the artifact's, checked now); ``None`` for the kit protocol.  A
    simulated run sends no request, so it cannot speak the published protocol."""
    from ..backends.registry import published_prompts_path

    if protocol is not Protocol.PUBLISHED:
        return None
    if source is Source.SIMULATED:
        raise DataError(ErrorCode.INVALID_VALUE, "source 'live' (or 'artifact') with protocol 'published': a "
                        "simulated run sends no request", got=source.value, field="protocol")
    return published_prompts_path(artifact_dir)


def kit_benchmark_file(folder: Path, name: str, seed: int, language: str, **options: Any) -> Path:
    """``folder/name`` of the kit's generated benchmark of ``seed`` and ``language`` (``options``: those of
    :func:`~routebr_kit.dataset.generate_benchmark`), written on first use: generation is deterministic, so an
    existing copy is the same bytes."""
    from ..dataset import generate_benchmark, write_benchmark

    if not (folder / name).exists():
        write_benchmark(generate_benchmark(seed, language, **options), folder)
    return folder / name


def _how_named(found: Path, explicit: Path | None) -> str:
    for how, path in artifact_candidates(explicit):
        if is_artifact_dir(path) and path.resolve() == found:
            return how
    return "explicit path"  # pragma: no cover - find_artifact only returns candidates


def _looked_in(explicit: Path | None) -> str:
    return ", ".join(f"{how} `{path}`" for how, path in artifact_candidates(explicit))


def _artifact_banner(found: Path, explicit: Path | None, *, requested: bool) -> str:
    why = "as requested" if requested else "`source = \"auto\"` found it"
    return (f"**Source: the published artifact** ({why}; {_how_named(found, explicit)} `{found}`). Every number "
            "below is recomputed from the published runs. To run the seeded simulation instead, set "
            "`source = \"simulated\"`; for a real endpoint, `source = \"live\"`.")


def _fallback_banner(chosen: Source, concrete: Source, found: Path | None, explicit: Path | None,
                     bad_explicit: bool) -> str:
    if concrete is Source.LIVE:
        head = "**Source: live** — a real OpenAI-compatible endpoint (only when its API key is set)."
    else:
        head = ("**Source: simulated** — seeded error models of the published backends; the numbers below "
                "exercise the pipeline and illustrate the mechanism, they are **not evidence about any model**.")
    if bad_explicit:
        where = (f" The given `artifact_dir` `{explicit}` is not an artifact directory "
                 "(no data/ and experiments/results/).")
    elif found is None:
        where = f" No published artifact was found (looked in: {_looked_in(explicit)})."
    else:
        where = f" A published artifact is available at `{found}` for comparisons."
    if chosen is Source.AUTO:
        switch = f" To use the published runs, {HOW_TO_GET}; `source = \"auto\"` then picks them up."
    elif found is None:
        switch = f" For the published runs set `source = \"artifact\"` after you {HOW_TO_GET}."
    else:
        switch = " For the published runs set `source = \"artifact\"` (or `\"auto\"`)."
    return head + where + switch


__all__ = ["HOW_TO_GET", "ResolvedSource", "Source", "kit_benchmark_file", "parse_source", "published_prompts",
           "resolve_source"]
