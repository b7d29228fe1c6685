"""Where an experiment's ledgers come from — one vocabulary for the CONFIRM study and the backend screening."""

from __future__ import annotations

import enum


class Source(str, enum.Enum):
    """The three sources of every research-question notebook."""

    ARTIFACT = "artifact"  # the published runs (no model call)
    SIMULATED = "simulated"  # seeded error models calibrated on the published screening (a simulation)
    LIVE = "live"  # an OpenAI-compatible endpoint, only when its API key is set


__all__ = ["Source"]
