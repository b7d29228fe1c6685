"""The release each ledger task ran under, as a :class:`~routebr_kit.evaluation.forbidden.DispatchGate`: what the
diff asks whether a row's dispatch was allowed by the rules on that row's state.

Where a task's release comes from, in order:

* a ledger set that carries its assets — the published artifact (its ``data/`` assets), an in-memory shadow
  result (the candidate assets), or assets passed to :func:`~routebr_kit.review.ledgers.load_ledgers`;
* a shadow output on disk: the candidate asset files its ``shadow_manifest.json`` names
  (:func:`routebr_kit.verify.releases.release_assets`);
* otherwise (run directories): the assets stored next to the task's gold cases file
  (:func:`~routebr_kit.store.assets.assets_beside`), checked against the asset hashes the run's manifest recorded
  — a catalog, rule program or state schema other than the one the run ran under is an ``INCONSISTENT_ASSETS``
  error naming the manifest field, never a verdict under the wrong release.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..evaluation.forbidden import DispatchGate
from ..store.assets import assets_beside
from ..store.ledger import MANIFEST
from ..verify.releases import release_assets
from .ledgers import SHADOW_MANIFEST, LedgerSet, LedgerTask


def check_recorded_hashes(gate: DispatchGate, manifest: Mapping[str, Any], file: str) -> None:
    """The run manifest's recorded ``hashes`` (catalog, rules, state schema; each when recorded) are ``gate``'s."""
    hashes = manifest.get("hashes")
    if not isinstance(hashes, Mapping):
        return
    mine = gate.hashes
    actual = {"catalog": mine["catalog"], "rules": mine["rules"], "state_schema": mine["state_schema"] or None}
    for name, value in actual.items():
        if name in hashes and hashes[name] != value:
            raise DataError(ErrorCode.INCONSISTENT_ASSETS, "the assets the run recorded (the release its "
                            "forbidden dispatches are checked under)", file=file, field=f"hashes.{name}",
                            got=hashes[name], detail=f"the assets beside the cases file hash to {value}")


def release_beside(cases_path: str | Path, state_schema: str | Path | None = None) -> DispatchGate:
    """The release stored next to a gold cases file (:func:`~routebr_kit.store.assets.assets_beside`; ``state_schema``:
    the runtime-state schema file the run used, when it is not the ``state_schema.json`` beside the cases); a missing
    asset file says what it is needed for."""
    try:
        return DispatchGate(assets_beside(cases_path, state_schema).controller())
    except DataError as exc:
        if exc.code is not ErrorCode.FILE_NOT_FOUND or exc.detail:
            raise
        raise DataError(exc.code, exc.expected, file=exc.file, line=exc.line, field=exc.field, got=exc.got,
                        detail="the release next to the cases file, under which forbidden dispatches are checked"
                        ) from None


class Releases:
    """Each task's release of one ledger set (see the module docstring), loaded once per source."""

    def __init__(self, ledgers: LedgerSet, state_schema: str | Path | None = None) -> None:
        self.ledgers = ledgers
        self.state_schema = state_schema  # run directories: the schema file the runs used (``run --state-schema``)
        self._gates: dict[Any, DispatchGate] = {}

    def _memo(self, key: Any, make: Callable[[], DispatchGate]) -> DispatchGate:
        if key not in self._gates:
            self._gates[key] = make()
        return self._gates[key]

    def gate(self, task: LedgerTask) -> DispatchGate:
        ledgers = self.ledgers
        if ledgers.assets is not None:
            return self._memo("set", lambda: DispatchGate(ledgers.assets.controller()))
        if (Path(ledgers.root) / SHADOW_MANIFEST).is_file():
            return self._memo("shadow", lambda: DispatchGate(release_assets(ledgers.root).controller()))
        if task.cases_path is None:
            raise DataError(ErrorCode.EMPTY_VALUE, "a gold cases file next to the assets the run ran under",
                            file=str(task.path / MANIFEST), field="cases_path")
        gate = self._memo(Path(task.cases_path).resolve(), lambda: release_beside(task.cases_path, self.state_schema))
        check_recorded_hashes(gate, task.manifest, str(task.path / MANIFEST))
        return gate


__all__ = ["Releases", "check_recorded_hashes", "release_beside"]
