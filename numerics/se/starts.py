"""The cold start of each branch of the r = 1 state evolution (the rank-r starts: :mod:`attnphase.numerics.se.rank_starts`).

Semantic: theta = 0.8 rho0, m = 0; positional: theta = 0, m along P's first column; agnostic: theta = 0,
m = 0 (docs/model.md section 3 for the overlaps).
"""

from __future__ import annotations

import numpy as np

from attnphase.numerics.config import BRANCHES
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.params import ModelParams


def positional_direction(params: ModelParams) -> np.ndarray | None:
    """The direction of m a positional start takes: P's first non-zero column scaled to max |.| = 1 (m lives
    in the range of P); None for P = 0, where no positional direction (and no positional branch) exists."""
    cols = [c for c in params.P_array.T if np.any(c)]
    return cols[0] / np.abs(cols[0]).max() if cols else None


def initial_overlaps(params: ModelParams, branch: str) -> Overlaps:
    """Deterministic starting state of each branch (m only along the range of P: its first non-zero column;
    P = 0 has no positional direction, and no positional branch: ValueError)."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    L, rho0 = params.L, params.rho0
    m = np.zeros(L)
    if branch == "semantic":
        return Overlaps(q0=rho0, V0=1.0, m=m, th0=0.8 * rho0)
    if branch == "positional":
        direction = positional_direction(params)
        if direction is None:
            raise ValueError("P = 0: no positional embeddings, so m = 0 for every student and no positional fixed "
                             "point exists")
        return Overlaps(q0=0.1, V0=50.0, m=0.2 * direction, th0=0.0)
    return Overlaps(q0=0.1, V0=1.0, m=m, th0=0.0)
