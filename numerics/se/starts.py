"""The cold start of each branch of the r = 1 state evolution (the rank-r starts: :mod:`attnphase.numerics.se.rank_starts`).

Semantic: theta = 0.8 rho0, m = 0; positional: theta = 0, m along P's first column; agnostic: theta = 0,
m = 0 (docs/model.md section 3 for the overlaps).
"""

from __future__ import annotations

import numpy as np

from attnphase.numerics.config import BRANCHES
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.theory.params import ModelParams


def initial_overlaps(params: ModelParams, branch: str) -> Overlaps:
    """Deterministic starting state of each branch (m only along the range of P)."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    L, rho0 = params.L, params.rho0
    m = np.zeros(L)
    if branch == "semantic":
        return Overlaps(q0=rho0, V0=1.0, m=m, th0=0.8 * rho0)
    if branch == "positional":
        col = params.P_array[:, 0]
        if not np.any(col):
            raise ValueError("P has a zero first column: no positional direction to start from")
        return Overlaps(q0=0.1, V0=50.0, m=0.2 * col / np.abs(col).max(), th0=0.0)
    return Overlaps(q0=0.1, V0=1.0, m=m, th0=0.0)
