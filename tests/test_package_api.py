"""Each subpackage's public API is its ``__all__`` (Inspect-style): every listed name resolves, to the object its
defining module holds, and importing a package does not import its heavy modules."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import routebr_kit

PACKAGES = sorted(m.name for m in pkgutil.iter_modules(routebr_kit.__path__) if m.ispkg and m.name != "resources")
LAZY = ("adversarial", "experiments", "notebook", "runs", "systems")
PARTLY_LAZY = ("backends", "metaroute", "store")


@pytest.mark.parametrize("name", PACKAGES)
def test_every_subpackage_declares_its_public_api(name):
    package = importlib.import_module(f"routebr_kit.{name}")
    assert isinstance(package.__all__, (list, tuple)) and package.__all__, name
    for public in package.__all__:
        assert getattr(package, public) is not None, f"routebr_kit.{name}.{public}"


@pytest.mark.parametrize("name", LAZY)
def test_lazy_exports_are_the_defining_modules_objects(name):
    package = importlib.import_module(f"routebr_kit.{name}")
    for public, module in package._EXPORTS.items():
        assert getattr(package, public) is getattr(importlib.import_module(f"routebr_kit.{name}.{module}"), public)
        assert public not in {m.name for m in pkgutil.iter_modules(package.__path__)}  # a module would shadow it
    assert set(package.__all__) <= set(dir(package))
    with pytest.raises(AttributeError):
        package.no_such_name  # noqa: B018


def test_importing_a_lazy_package_imports_none_of_its_modules():
    code = ("import sys, routebr_kit.notebook, routebr_kit.experiments, routebr_kit.runs; "
            "print(sorted(m for m in sys.modules if m.startswith(('routebr_kit.notebook.', "
            "'routebr_kit.experiments.', 'routebr_kit.runs.'))))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_release_review_api_is_exported():
    from routebr_kit import review

    assert {"release_review", "Review", "load_ledgers", "write_release", "artifact_asset_files", "Gate",
            "DEFAULT_GATE", "split_table"} <= set(review.__all__)


@pytest.mark.parametrize("name", PARTLY_LAZY)
def test_names_loaded_on_first_use_are_the_modules_objects(name):
    package = importlib.import_module(f"routebr_kit.{name}")
    assert set(package._LAZY) <= set(package.__all__)
    for public, module in package._LAZY.items():
        assert getattr(package, public) is getattr(importlib.import_module(f"routebr_kit.{name}.{module}"), public)


def test_the_store_and_backends_packages_stay_standard_library_only_on_import():
    code = ("import sys, routebr_kit.store, routebr_kit.backends; "
            "print(sorted(m for m in ('numpy', 'pandas', 'yaml', 'openai') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_the_notebook_helpers_and_conclusions_are_exported():
    from routebr_kit import notebook

    assert {"outcome_figure", "figure_anatomy", "render_conclusion", "RuleEditor"} <= set(notebook.__all__)
    # notebooks 01/02/04/10/11: their conclusions are templates in the notebook
    assert not {"dataset", "pass_k", "rq2", "screening", "adversarial", "forbidden_contrast", "gate_calibration",
                "release_review", "security"} & set(notebook.__all__)


def test_single_notebook_helpers_live_in_their_domain_package():
    """Issue 30: notebook/ holds the pipeline, outputs, display and widgets; a notebook's domain helpers are its
    domain's (notebook 10's traffic and contrast in review, notebook 11's runs in adversarial, notebook 14's grid in
    experiments, its timeline in dataset, its counterexample replay in verify, its candidate review in review)."""
    from routebr_kit import adversarial, notebook, review
    from routebr_kit.adversarial import scorecard
    from routebr_kit.dataset import sessions as session_cases
    from routebr_kit.experiments import proposers, session_grid
    from routebr_kit.review import calibration, sessions, shadow
    from routebr_kit.verify import horizon_replay

    moved = {"review_source", "release_files", "first_match_order", "transitions", "forbidden_dispatch_contrast"}
    assert moved <= set(review.__all__) and all(callable(getattr(review, n)) for n in moved)
    assert callable(calibration.calibrate_gates) and callable(shadow.trace_pair)
    assert callable(scorecard.suite_runs) and callable(scorecard.adaptive_attacks) and adversarial
    assert callable(proposers.decide_all)
    assert callable(session_grid.run_benchmarks) and callable(session_cases.timeline)
    assert callable(horizon_replay.replay_counterexample) and callable(sessions.review_candidates)
    assert not (moved | {"suite_runs", "adaptive_attacks", "calibrate_gates", "trace_pair"}) & set(notebook.__all__)
    here = {p.stem for p in (Path(notebook.__file__).parent).glob("*.py")}
    assert not here & {"attacks", "calibration_runs", "contrast", "proposers", "review_traffic", "review_widget",
                        "sessions"}
    assert {h.strip("_") for h in here} <= {"init", "pipeline", "outputs", "display", "widgets"}
