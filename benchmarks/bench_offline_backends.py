"""How fast the offline backends answer, alone and through the runner (prints measured figures; asserts nothing).

    .venv/bin/python benchmarks/bench_offline_backends.py [--artifact ../shared/routebr_artifact] [--repeat 5]

* proposals (cases) per second of ``local:lexical``, ``local:learned`` (trained first; its training time printed) and
  ``sim:<profile>`` on the 160 SELECT cases (backend calls only);
* wall time of a full RouteBR run of SELECT-160 through the runner (receipts, fsynced ledger, manifest);
* ``sim:`` with ``sleep_scale`` so each call really waits its simulated latency scaled down 20×: wall time at
  concurrency 1, 8 and 32 against the ideal ``Σ latency / concurrency``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from routebr_kit.backends.lexical import LexicalBackend
from routebr_kit.backends.simulated import SimulatedBackend
from routebr_kit.core.aio import run_sync
from routebr_kit.core.calls import ModelCall
from routebr_kit.core.records import Stage
from routebr_kit.runs.runner import run_cases
from routebr_kit.store.artifact import Artifact

ROOT = Path(__file__).resolve().parents[1]


def calls_per_second(backend, cases, payloads, repeat: int) -> float:
    async def every():
        for case in cases:
            await backend.complete(ModelCall(case.case_id, Stage.ROUTEBR, payloads[case.case_id]))

    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run_sync(every())
        best = min(best, time.perf_counter() - start)
    return len(cases) / best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--artifact", default=str(ROOT.parent / "shared" / "routebr_artifact"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    artifact = Artifact(args.artifact)
    cases = tuple(artifact.cases("select").values())
    controller = artifact.assets.controller()
    payloads = {c.case_id: controller.proposal_payload(c.request) for c in cases}

    sim = SimulatedBackend("deepseek_v4_primary", cases)
    lexical = LexicalBackend(artifact.assets.catalog)
    print(f"backend calls (cases/s), {len(cases)} SELECT cases, best of {args.repeat}:")
    print(f"  sim:deepseek_v4_primary  {calls_per_second(sim, cases, payloads, args.repeat):9,.0f} calls/s")
    print(f"  local:lexical            {calls_per_second(lexical, cases, payloads, args.repeat):9,.0f} calls/s")
    try:
        from routebr_kit.backends.learned import LearnedBackend, train

        start = time.perf_counter()
        learned = LearnedBackend(train())
        trained = time.perf_counter() - start
        rate = calls_per_second(learned, cases, payloads, args.repeat)
        print(f"  local:learned            {rate:9,.0f} calls/s  (trained in {trained:.1f} s on generated data)")
    except Exception as exc:  # noqa: BLE001 - the extra [learned] is optional
        print(f"  local:learned            not run: {exc}")

    with tempfile.TemporaryDirectory() as tmp:
        for name, backend in (("sim:deepseek_v4_primary", sim), ("local:lexical", lexical)):
            start = time.perf_counter()
            run_cases(cases, backend, system="routebr", assets=artifact.assets, out_dir=Path(tmp) / name,
                      progress=False)
            print(f"runner, {name:24s} {time.perf_counter() - start:6.2f} s for {len(cases)} cases")

        scale = 0.05
        total = sum(run_sync(sim.complete(ModelCall(c.case_id, Stage.ROUTEBR, payloads[c.case_id]))).latency_ms
                    for c in cases) / 1000 * scale
        print(f"sleeping simulator (latency x {scale}): Σ latency {total:.2f} s")
        for concurrency in (1, 8, 32):
            sleeping = SimulatedBackend("deepseek_v4_primary", cases, sleep_scale=scale)
            start = time.perf_counter()
            run_cases(cases, sleeping, system="routebr", assets=artifact.assets,
                      out_dir=Path(tmp) / f"sleep-{concurrency}", concurrency=concurrency, progress=False)
            wall = time.perf_counter() - start
            ideal = total / concurrency
            print(f"  concurrency {concurrency:2d}: {wall:6.2f} s "
                  f"(ideal {ideal:5.2f} s, efficiency {ideal / wall:.2f})")


if __name__ == "__main__":
    main()
