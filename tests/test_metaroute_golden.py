"""Golden: the exact mode regenerates the published MetaRoute-Bench files byte for byte (on Python 3.11 too).

``traces.csv`` is not shipped; its published git blob ids are compared instead.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from routebr_kit.metaroute import Suite, run_benchmark
from routebr_kit.metaroute.export import git_blob_id, published_match

TRACES_BLOB = {"main": "751cd2f1fbd6137a66ebc0ad361064bbe69a71d0",
               "ablations": "71ce1f5ed23208bd7f102be6131e60ef7e46142b"}
SHIPPED = ("tasks.csv", "summary.csv", "comparisons.csv", "details.json")


@pytest.fixture(scope="module", params=["main", "ablations"])
def regenerated(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    suite = request.param
    out = tmp_path_factory.mktemp(suite)
    run_benchmark(30, suite=Suite(suite)).export(out)
    return suite, out


@pytest.mark.parametrize("name", SHIPPED)
def test_file_is_byte_identical(regenerated: tuple[str, Path], metaroute_artifact: Path, name: str) -> None:
    suite, out = regenerated
    assert (out / name).read_bytes() == (metaroute_artifact / suite / name).read_bytes()


def test_traces_have_the_published_blob_id(regenerated: tuple[str, Path]) -> None:
    suite, out = regenerated
    assert git_blob_id(out / "traces.csv") == TRACES_BLOB[suite]


def test_published_match_reports_every_file(regenerated: tuple[str, Path], metaroute_artifact: Path) -> None:
    suite, out = regenerated
    assert published_match(out, metaroute_artifact, suite) == dict.fromkeys(
        ["tasks.csv", "summary.csv", "comparisons.csv", "details.json", "traces.csv"], True)


def test_git_blob_id_matches_git_hash_object(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    path.write_bytes(b"hello\n")
    assert git_blob_id(path) == "ce013625030ba8dba906f756967f9e9ca394464a"  # git hash-object of "hello\n"


def test_seed_prefix_property() -> None:
    """Seeds are keyed per trace: the first seeds of a longer run are the shorter run."""
    short, long = run_benchmark(2, suite=Suite.ABLATIONS), run_benchmark(3, suite=Suite.ABLATIONS)
    prefix = long.traces.select(seeds=[0, 1])
    assert (prefix.success == short.traces.success).all()
    assert (prefix.expected_success == short.traces.expected_success).all()
    assert (prefix.cost == short.traces.cost).all()
