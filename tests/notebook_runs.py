"""Notebooks executed once per pytest process with papermill, shared by the notebook conclusion tests.

``executed(name, variant)`` runs ``notebooks/<name>.ipynb`` with the variant's parameters (and environment) into a
temporary folder the first time it is asked for and returns that folder afterwards, so several test modules check
one run.  Each notebook has two variants — two seeds or two sources — chosen to be small (seconds, not minutes).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from conftest import ROUTEBR_ARTIFACT

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"
ARTIFACT = ROUTEBR_ARTIFACT  # found like the CLI finds it (tests/conftest.py)

#: The source the release-review notebook finds only through $ROUTEBR_ARTIFACT (see linked_artifact).
ENV_ARTIFACT = "{linked}"

#: notebook -> (variant name, parameters, environment) × 2
VARIANTS: dict[str, tuple[tuple[str, dict[str, Any], dict[str, str]], ...]] = {
    "00_quickstart": (("510300", {}, {}), ("510500", {"order_code": "510500", "order_name": "CSI 500 ETF"}, {})),
    "01_dataset_construction": (("seed-1", {"seed": 1}, {}), ("seed-2", {"seed": 2, "language": "zh"}, {})),
    "02_backend_screening": tuple((f"seed-{s}", {"source": "simulated", "seed": s, "generated_seed": s,
                                                 "sweep_seeds": 3, "include_lexical": False}, {}) for s in (1, 2)),
    **{name: tuple((f"seed-{s}", {"source": "simulated", "seed": s}, {}) for s in (1, 2))
       for name in ("03_rq1_routing_correctness", "04_rq2_state_flip", "05_rq3_object_contract", "06_ablations")},
    "07_paper_replay": (("artifact", {"source": "artifact"}, {}),
                        ("simulated", {"source": "simulated", "fallback_seed": 1}, {})),
    "08_metaroute_bench": tuple((f"seeds-{s}", {"seeds": s, "mode": "fast"}, {}) for s in (10, 12)),
    "09_metaroute_ablations": tuple((f"seeds-{s}", {"seeds": s, "mode": "fast", "power_seeds": [10, 30],
                                                    "power_modes": ["fast"]}, {}) for s in (10, 12)),
    "10_release_review": (("artifact", {"source": "artifact"}, {"ROUTEBR_ARTIFACT": ENV_ARTIFACT}),
                          ("simulated", {"source": "simulated", "seed": 1}, {})),
    "11_adversarial": tuple((f"seed-{s}", {"seed": s, "per_family": 4}, {}) for s in (1, 2)),
    "12_metaroute_robustness": tuple((f"sample-{s}", {"samples": 6, "seeds": 3, "sample_seed": s}, {})
                                     for s in (1, 2)),
    "13_real_proposers": tuple((f"seed-{s}", {"seed": s, "train_seeds": [0]}, {}) for s in (8, 9)),
    "14_sessions": tuple((f"seed-{s}", {"seed": s, "sessions": 10 + 5 * s}, {}) for s in (1, 2)),
}

_ROOT: Path | None = None
_DONE: dict[tuple[str, str], Path] = {}


def _root() -> Path:
    global _ROOT
    if _ROOT is None:
        _ROOT = Path(tempfile.mkdtemp(prefix="routebr_notebook_runs_"))
        atexit.register(shutil.rmtree, _ROOT, True)
    return _ROOT


def linked_artifact() -> Path:
    """A folder that is an artifact by its layout, whose children link into the published one (nothing copied)."""
    root = _root() / "env_artifact"
    if not root.exists():
        root.mkdir()
        for child in ARTIFACT.iterdir():
            (root / child.name).symlink_to(child)
    return root


def variant_names(name: str) -> tuple[str, ...]:
    return tuple(v[0] for v in VARIANTS[name])


def executed(name: str, variant: str) -> Path:
    """The output folder of ``name`` run with ``variant`` (executed on first use; ``executed.ipynb`` inside)."""
    key = (name, variant)
    if key in _DONE:
        return _DONE[key]
    import papermill as pm

    _, parameters, env = next(v for v in VARIANTS[name] if v[0] == variant)
    out_dir = _root() / f"{name}-{variant}"
    out_dir.mkdir()
    env = {k: (str(linked_artifact()) if v == ENV_ARTIFACT else v) for k, v in env.items()}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        pm.execute_notebook(str(NOTEBOOKS / f"{name}.ipynb"), str(out_dir / "executed.ipynb"),
                            parameters={**parameters, "out_dir": str(out_dir)}, cwd=str(NOTEBOOKS),
                            progress_bar=False, kernel_name="python3")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    _DONE[key] = out_dir
    return out_dir
