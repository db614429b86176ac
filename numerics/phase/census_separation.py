"""How far apart two branches' e_t lie at the rule, and the rule's error of the alpha where they cross.

The global minimum at one alpha is the branch of lowest e_t on the solve rule.  Whether the rule tells two
branches A and B apart there is the paired difference over the rule's R blocks
(:func:`~attnphase.numerics.phase.gauge_orbits.paired_difference`):

    Delta = e_t(B) - e_t(A),   err(Delta) = std_j(e_t(B)_j - e_t(A)_j) / sqrt(R),

each point re-solved warm on block j (:func:`~attnphase.numerics.errors.replicates.replicate_points`); the blocks'
common quadrature error cancels in the difference.  Two branches are *distinguishable* at the rule where
|Delta| >= :data:`DISTINGUISHABLE` err(Delta) (:func:`separation`).

The alpha_c of a crossing (a root x of Delta e_t found on the pooled rule) has the rule's standard error
linearised at the root (:func:`~attnphase.numerics.errors.replicates.linearised_root_error`, as the rank-1
path's :func:`~attnphase.numerics.phase.boundary_refinement.block_root_error`):

    x_j = a - Delta_j(a) / (d Delta / d alpha),   err(x) = std_j(x_j) / sqrt(R),

a the bracket's end nearest the root, Delta_j(a) the blocks' differences there and d Delta / d alpha the
bracket's secant slope (:func:`root_error`).

A point the census continuation finds at one grid point only, beside a point of another branch, may be that point
split in two by the rule's jumps (docs/method.md section 12): :func:`one_point_at_the_rule` applies the census's
merge within error bars to the two.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.replicates import (linearised_root_error, replicate_count, replicate_errors,
                                                  replicate_points)
from attnphase.numerics.phase.gauge_orbits import paired_difference, within_errors
from attnphase.numerics.se.results import FixedPoint

#: Two branches are told apart at the rule where |Delta e_t| is at least this many paired errors.
DISTINGUISHABLE = 2.0


@dataclass(frozen=True, eq=False)
class Replicas:
    """A fixed point and its re-solves on the rule's blocks (None where one left its branch): what
    :func:`~attnphase.numerics.phase.gauge_orbits.paired_difference` pairs."""

    point: FixedPoint
    replicates: tuple[FixedPoint | None, ...]
    blocks: bool = True
    errors: dict = field(default_factory=dict)

    def err(self, key: str) -> Any:
        """The error bar of ``key`` from the blocks (NaN where not computed)."""
        return self.errors.get(f"err_{key}", math.nan)


def replicas(fp: FixedPoint, cfg: SolverConfig, bars: bool = False) -> Replicas:
    """``fp`` re-solved warm on each block of ``cfg``'s solve rule (none where the rule has one block); with ``bars``
    its error bars from them (:func:`~attnphase.numerics.errors.replicates.replicate_errors`)."""
    reps, blocks = replicate_points(fp, cfg, 0) if replicate_count(cfg) else ([], True)
    errors = replicate_errors(fp, reps, blocks) if bars and reps else {}
    return Replicas(fp, tuple(reps), blocks, errors)


def one_point_at_the_rule(a: FixedPoint, b: FixedPoint, cfg: SolverConfig) -> bool:
    """Whether two converged points at one alpha are one fixed point that the rule's jumps split in two: every gauge
    invariant, and e_t to its paired error, within the census's SAME_WITHIN_ERRORS combined error bars
    (:func:`~attnphase.numerics.phase.gauge_orbits.within_errors`, the labels may differ), on ``cfg``'s blocks."""
    return within_errors(replicas(a, cfg, True), replicas(b, cfg, True))


@dataclass(frozen=True)
class Separation:
    """Delta e_t = e_t(upper) - e_t(lower) at ``alpha``, its paired error over ``pairs`` blocks (NaN below two)."""

    alpha: float
    lower: str
    upper: str
    delta: float
    err: float
    pairs: int

    @property
    def ratio(self) -> float:
        """|Delta| / err(Delta) (NaN without an error)."""
        if self.err == 0 and self.delta != 0:  # every block gives the same difference
            return math.inf
        return abs(self.delta) / self.err if self.err > 0 else math.nan

    @property
    def distinguishable(self) -> bool | None:
        """|Delta| >= DISTINGUISHABLE err(Delta); None where the error is not known."""
        return None if not math.isfinite(self.ratio) else bool(self.ratio >= DISTINGUISHABLE)

    def describe(self) -> str:
        """``at alpha = 0.627: mixed#1 below positional by 2.1e-05 +- 8.4e-06 (2.5 paired errors)``, with ``not
        distinguishable at the rule`` where it is not."""
        text = f"at alpha = {self.alpha:.4g}: {self.lower} below {self.upper} by {self.delta:.2g}"
        if not math.isfinite(self.err):
            return text + f" (no paired error: {self.pairs} block pairs converged)"
        text += f" +- {self.err:.2g} ({self.ratio:.1f} paired errors)"
        return text + ("" if self.distinguishable else ": not distinguishable at the rule")


def separation(lower: Replicas, upper: Replicas, names: tuple[str, str]) -> Separation:
    """The paired difference of the module doc between two points at one alpha (``names``: lower's, upper's)."""
    delta, err, n = paired_difference(lower, upper)
    return Separation(float(lower.point.alpha), names[0], names[1], delta, err, n)


def root_error(a_point: FixedPoint, b_point: FixedPoint, slope: float, cfg: SolverConfig) -> tuple[float, int]:
    """(the standard error of the root of Delta e_t = e_t(A) - e_t(B) linearised at the points' alpha -- the module
    doc --, the blocks used): ``a_point`` on A and ``b_point`` on B at one alpha, ``slope`` = d Delta / d alpha.
    NaN with fewer than two blocks where both re-solves stayed on their branches."""
    ra, rb = replicas(a_point, cfg), replicas(b_point, cfg)
    values = [pa.observables.e_t - pb.observables.e_t for pa, pb in zip(ra.replicates, rb.replicates)
              if pa is not None and pb is not None]
    err = linearised_root_error(float(a_point.alpha), values, slope) if len(values) >= 2 else math.nan
    return err, len(values)
