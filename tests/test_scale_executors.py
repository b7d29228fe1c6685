"""One sweep, every executor: inline, a 2-thread pool, an in-process LocalCluster, an existing scheduler on
loopback and process workers all write byte-identical files."""

from __future__ import annotations

import concurrent.futures as cf
from pathlib import Path

import pytest

from routebr_kit.metaroute.sweep import default_space, design, run_sweep

pytest.importorskip("distributed")

SEEDS = 3


@pytest.fixture(scope="module")
def plan():
    return design(default_space(), samples=3, seed=11)


@pytest.fixture(scope="module")
def reference(plan, tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    out = tmp_path_factory.mktemp("inline")
    run_sweep(plan, SEEDS, out, executor="inline")
    return files(out)


def files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_reference_has_every_file(reference: dict[str, bytes]) -> None:
    assert {"summary.csv", "contrasts.csv", "configurations.csv", "manifest.json"} <= set(reference)
    assert sum(name.startswith("cells/") for name in reference) == 3 * 3


def test_thread_pool_is_byte_identical(plan, reference: dict[str, bytes], tmp_path: Path) -> None:
    with cf.ThreadPoolExecutor(2) as pool:
        run_sweep(plan, SEEDS, tmp_path, executor=pool)
    assert files(tmp_path) == reference


def test_process_workers_are_byte_identical(plan, reference: dict[str, bytes], tmp_path: Path) -> None:
    run_sweep(plan, SEEDS, tmp_path, executor="processes:2")
    assert files(tmp_path) == reference


def test_in_process_local_cluster_is_byte_identical(plan, reference: dict[str, bytes], tmp_path: Path) -> None:
    from distributed import Client, LocalCluster

    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        run_sweep(plan, SEEDS, tmp_path / "client", executor=client)
        run_sweep(plan, SEEDS, tmp_path / "address", executor=f"dask:{cluster.scheduler_address}")
        assert cluster.scheduler_address.startswith("inproc://")  # no network at all
    assert files(tmp_path / "client") == reference
    assert files(tmp_path / "address") == reference


def test_existing_scheduler_over_loopback_tcp(plan, reference: dict[str, bytes], tmp_path: Path) -> None:
    from distributed import LocalCluster

    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp", host="127.0.0.1",
                      scheduler_port=0, dashboard_address=None) as cluster:
        address = cluster.scheduler_address
        assert address.startswith("tcp://127.0.0.1:")
        run_sweep(plan, SEEDS, tmp_path, executor=f"dask:{address}")
    assert files(tmp_path) == reference
