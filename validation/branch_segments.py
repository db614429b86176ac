"""Where a followed branch exists, for plotting it truthfully (docs/model.md section 6): at a grid point where
the solve converged on the branch's family, with its order parameter at or above the branch's floor (|theta| for the
semantic branch, |m| for the positional one: below it the point is not the branch, as for the solver's own
:func:`~attnphase.numerics.phase.branch_end.on_branch`), and on the side of its end where it lives (the semantic branch
above, the positional one below); a curve is drawn between two grid points only where it exists at both.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from attnphase.numerics.phase.branch_end import BRANCH_FLOORS

#: The side of its end on which each branch exists (True: above).
EXISTS_ABOVE_END = {"semantic": True, "positional": False}


def above_floor(theta: float | None, m_norm: float | None, branch: str) -> bool:
    """Each order parameter of ``branch`` at or above its floor (:data:`~attnphase.numerics.phase.branch_end.
    BRANCH_FLOORS`, the solver's own: |theta| for the semantic branch, |m| for the positional one, both for the mixed
    one), from |theta| and |m| (None: unknown, not above); True for a branch without one."""
    size = {"th0": theta, "m": m_norm}
    return all(size[name] is not None and abs(float(size[name])) >= floor
               for name, floor in BRANCH_FLOORS.get(branch, ()))


def past_end(alpha: float, branch: str, end: float | None) -> bool:
    """``alpha`` lies past ``branch``'s located ``end``, on the side where the branch does not exist
    (:data:`EXISTS_ABOVE_END`); False without an end, or for a branch without a side."""
    above = EXISTS_ABOVE_END.get(branch)
    if end is None or not math.isfinite(end) or above is None:
        return False
    return alpha < end if above else alpha > end


def exists_at(record: dict[str, Any], branch: str, end: float) -> bool:
    """The branch exists at this record's alpha (converged, on the family, above its floor, on the existing side of
    ``end``)."""
    m_norm = record.get("m_norm", record.get("m"))
    if (not record.get("converged") or record.get("branch") != branch
            or not above_floor(record.get("theta"), m_norm, branch)):
        return False
    return not past_end(record["alpha"], branch, end)


def existing_segments(
    records: Sequence[dict[str, Any]], branch: str, end: float | None, key: str, absolute: bool = False
) -> list[tuple[list[float], list[float]]]:
    """Contiguous runs ``(alphas, values)`` of the records (in alpha order) where the branch exists."""
    def point(rec: dict[str, Any]) -> tuple[float, float] | None:
        value = rec.get(key)
        if exists_at(rec, branch, math.nan if end is None else end) and value is not None and math.isfinite(value):
            return float(rec["alpha"]), abs(float(value)) if absolute else float(value)
        return None

    points = [point(rec) for rec in sorted(records, key=lambda r: r["alpha"])]
    return [tuple(map(list, zip(*run))) for ok, run in itertools.groupby(points, key=bool) if ok]


def drawn_end(records: Sequence[dict[str, Any]], branch: str, end: float | None) -> float | None:
    """The alpha where to mark the branch's end: ``end`` when it is finite and the branch exists somewhere on
    the grid (``None`` otherwise: no end in range, or nothing drawn to end)."""
    if end is None or not math.isfinite(end) or not any(exists_at(r, branch, end) for r in records):
        return None
    return float(end)

