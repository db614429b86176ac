"""The branches of fixed points along alpha, as :mod:`attnphase.numerics.phase.census_continuation` finds them.

A *branch* (:class:`Branch`) is a curve of converged fixed points over alpha with one label
(:func:`~attnphase.numerics.se.overlaps.branch_label`), each point with its orbit key
(:func:`~attnphase.numerics.phase.gauge_orbits.orbit_key`); several of one label are numbered (``mixed#1``,
``mixed#2``) and told apart by their gauge invariants (:func:`describe`).  A :class:`BranchCensus` is every branch
over a grid, the grid points censused, those where no census start converged, and every birth and end located.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from attnphase.numerics.phase.boundary_results import LocatedEnd
from attnphase.numerics.se.results import FixedPoint


class Branch:
    """One branch while it is searched: its name, its label and its converged points by alpha."""

    def __init__(self, name: str, label: str, point: FixedPoint, key: np.ndarray):
        self.name, self.label = name, label
        self.points: dict[float, FixedPoint] = {float(point.alpha): point}
        self.keys: dict[float, np.ndarray] = {float(point.alpha): key}

    def on(self, alpha: float) -> bool:
        return float(alpha) in self.points

    def nearest(self, alpha: float) -> float:
        """The alpha of the branch's point nearest to ``alpha``."""
        return min(self.points, key=lambda a: (abs(a - alpha), a))

    def predict(self, alpha: float) -> np.ndarray:
        """The orbit key at alpha, extrapolated linearly from the branch's two points nearest alpha (its one point's
        key where it has one)."""
        near = sorted(self.points, key=lambda a: (abs(a - alpha), a))[:2]
        if len(near) < 2:
            return self.keys[near[0]]
        (a1, a2), (k1, k2) = near, (self.keys[near[0]], self.keys[near[1]])
        return k1 + (alpha - a1) * (k2 - k1) / (a2 - a1)

    def add(self, fp: FixedPoint, key: np.ndarray) -> None:
        self.points[float(fp.alpha)] = fp
        self.keys[float(fp.alpha)] = key

    def e_t(self, alpha: float) -> float:
        return self.points[float(alpha)].observables.e_t


def on_at(branches: Sequence[Branch], alpha: float) -> list[Branch]:
    """The ``branches`` on at alpha, lowest e_t first."""
    return sorted((b for b in branches if b.on(alpha)), key=lambda b: b.e_t(alpha))


def describe(branch: Branch, alpha: float | None = None) -> str:
    """``name``: its gauge invariants at ``alpha`` (default: its point nearest the middle of its range), e.g.
    ``mixed#2: |th0| 0.255, |m_l| 0.176/0.176, q0 eig 0.147/0.0892 at alpha = 0.8``."""
    a = branch.nearest(alpha if alpha is not None else float(np.median(sorted(branch.points))))
    inv = branch.points[a].invariants
    keys = ("th0_singular_values", "m_norms", "q0_eigenvalues") if "m_norms" in inv else ("theta", "m", "q")
    th, m, q = ("/".join(f"{abs(float(v)):.3g}" for v in np.atleast_1d(inv.get(k, []))) for k in keys)
    return f"{branch.name}: |th0| {th}, |m_l| {m}, q0 eig {q} at alpha = {a:g}"


@dataclass(frozen=True, eq=False)
class BranchCensus:
    """The branches over ``grid`` (:class:`Branch`, in the order found), the grid points censused, those where no
    census start converged, every end or birth located, and notes."""

    grid: tuple[float, ...]
    branches: tuple[Branch, ...]
    censused: tuple[float, ...]
    failed: tuple[float, ...]
    ends: tuple[LocatedEnd, ...]
    notes: tuple[str, ...]

    def gaps(self, i: int) -> list[Branch]:
        """The branches not on at grid point i but on at grid points on both sides of it (their solves failed there)."""
        a = self.grid[i]
        return [b for b in self.branches if not b.on(a) and any(b.on(x) for x in self.grid[:i])
                and any(b.on(x) for x in self.grid[i + 1:])]

    def branch(self, name: str) -> Branch:
        return next(b for b in self.branches if b.name == name)
