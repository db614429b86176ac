"""Quasi-Newton for the rank-r SE map: consistent finite differences and a carried Jacobian.

The rank-r map offers two evaluations (numerics/se/rank_se.py): the exact one (a full multi-start
proximal search) and a cheap approximate one (Newton polished from the last full search's minima).
The generic solver (numerics/se/fixed_point.py) takes its forward-difference Jacobian

    J[:, j] = (G(x + h_j b_j) - G(x)) / h_j,   G(y) = B^T D (F(y) - y),  h_j = FD_STEP max(1, |b_j . x|),

with whatever evaluation the map gives, so a column could mix an exact G(x) with an approximate
G(x + h b_j) (or the reverse): their difference, ~1e-3 at L = 2, r = 2 (a few nodes whose global
minimum the polish misses), over h ~ 1e-4 gave columns wrong by O(10), steps that failed and fresh
Jacobians that failed again (21 finite-difference Jacobians, 250 of the 485 SE evaluations of one
mixed solve with its error bars).  :class:`RankFixedPointSolver` takes the base point with a full
search and every column polished from *its* minima (:meth:`RankSEMap.polishing`): the same basins
on both sides of each difference, i.e. the Jacobian of the exact map away from the rule's basin switches.

A Jacobian is carried from one solve to the next (:class:`CarriedJacobian`, the error bars'
warm block solves start with the full solve's): stored with its basis B0 and scaling D0 at x0,
it is moved to the basis B1, D1 of the new solve's x1 as

    J1 = B1^T diag(D1 / D0) B0 J0 B0^T B1,

the same linear map F' - I in the full coordinates, restricted to the new subspace; on directions of B1
outside the span of B0 (a Jacobian carried from a projected stage, numerics/se/matrix_solve.py) F' = 0 is assumed:
the term -B1^T D1 (I - B0 B0^T) B1 is added.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from attnphase.numerics.se.fixed_point import FixedPointSolver


@dataclass(frozen=True, eq=False)
class CarriedJacobian:
    """J0 (k x k) of G on the orthonormal basis B0 (n x k) at x0 (n,) (D0 = 1 / max(1, |x0|))."""

    J: np.ndarray
    B: np.ndarray
    x: np.ndarray

    def moved_to(self, B1: np.ndarray, x1: np.ndarray) -> np.ndarray | None:
        """J1 on basis B1 at x1 (module doc), or None where the dimensions differ."""
        if B1.shape[0] != self.B.shape[0]:
            return None
        ratio = np.maximum(1.0, np.abs(self.x)) / np.maximum(1.0, np.abs(x1))  # D1 / D0
        off = B1 - self.B @ (self.B.T @ B1)  # the part of the new basis the old one lacks: F' = 0 assumed there
        carried = B1.T @ (ratio[:, None] * (self.B @ self.J @ (self.B.T @ B1)))
        return carried - B1.T @ (off / np.maximum(1.0, np.abs(x1))[:, None])


class RankFixedPointSolver(FixedPointSolver):
    """The generic solver with the consistent finite-difference Jacobian of the module doc."""

    def _fd_jacobian(self, x: np.ndarray, G: np.ndarray, B: np.ndarray,
                     resid: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> np.ndarray | None:
        base = self._eval(x, exact=True)  # a full search: its minima are what the columns polish
        if base is None:
            return super()._fd_jacobian(x, G, B, resid)
        with self.fmap.polishing():
            return super()._fd_jacobian(x, resid(x, base.fx), B, resid)
