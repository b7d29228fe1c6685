"""One ledger's scorecard: the paper's metrics per split, FLIP pairs and the trivial-proposer floor of the same cases
(what ``routebr-kit score``, ``diff`` and the notebooks print)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ..core.errors import DataError, ErrorCode
from ..store.cases import Case, Split
from ..store.ledger import PredictionRow
from .floor import trivial_floor
from .forbidden import DispatchGate
from .metrics import flip_pairs, index_cases, score


def score_report(rows: Sequence[PredictionRow], cases: Sequence[Case] | Mapping[str, Case], *,
                 file: str | None = None, release: DispatchGate | None = None,
                 controller: Any = None) -> dict[str, Any]:
    """``{"splits": {label: Scores}, "flip": PairScores | None, "incomplete_pairs": int, "floor": Floor | None}``
    for one ledger (forbidden dispatches counted when ``release`` is given; the trivial-proposer floor of the scored
    cases, :mod:`.floor`, when ``controller`` is)."""
    index = index_cases(cases)
    try:
        by_split: dict[str, list[PredictionRow]] = {}
        unknown = next((r for r in rows if r.case_id not in index), None)
        if unknown is not None:
            raise DataError(ErrorCode.UNKNOWN_REFERENCE, "a case ID of the cases file", line=unknown.line,
                            field="case_id", got=unknown.case_id)
        for split in Split:
            chosen = [r for r in rows if index[r.case_id].split is split]
            if chosen:
                by_split[split.value] = chosen
        splits = {label: score(chosen, index, release) for label, chosen in by_split.items()}
        if len(splits) > 1:
            splits["ALL"] = score(rows, index, release)
        flip_rows = by_split.get(Split.FLIP.value, [])
        members: dict[str, int] = {}
        for r in flip_rows:
            members[index[r.case_id].pair_id] = members.get(index[r.case_id].pair_id, 0) + 1
        complete = [r for r in flip_rows if members[index[r.case_id].pair_id] == 2]
        pairs = flip_pairs(complete, index) if complete else None
    except DataError as exc:
        raise exc.at(file=file) from None
    floor = None
    if controller is not None:
        floor = trivial_floor([index[c] for c in dict.fromkeys(r.case_id for r in rows)], controller)
    return {"splits": splits, "flip": pairs, "floor": floor,
            "incomplete_pairs": sum(1 for n in members.values() if n != 2)}
