"""The phase boundaries at one omega for every rank, and the (alpha, omega) phase diagram (docs/method.md section 5).

One entry, :func:`phase_boundaries`: at r = r* = 1 the scalar form's fast path
(:mod:`attnphase.numerics.phase.scalar_boundaries`), at r >= 2 or r* >= 2 the search from the global minimum
(:mod:`attnphase.numerics.phase.lowest_branch`); both return one :class:`Boundaries`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Sequence

from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.config import SolverConfig, check_positive
from attnphase.numerics.grids import checked_grid
from attnphase.numerics.parallel import map_in_order
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.lowest_branch import lowest_branch_boundaries
from attnphase.numerics.phase.lowest_point_change import lowest_point_alpha_c
from attnphase.numerics.phase.positional_birth import positional_birth_below
from attnphase.numerics.phase.scalar_boundaries import (
    BISECTION_TOL, XTOL, _portable, curves_branch, scalar_boundaries,
)
from attnphase.theory.params import ModelParams


def phase_boundaries(params: ModelParams, alphas: Sequence[float] | None = None, *, config: SolverConfig | None = None,
                     xtol: float = XTOL, bisection_tol: float = BISECTION_TOL) -> Boundaries:
    """alpha_c, alpha_l and every branch's end at ``params.omega`` over the alpha grid ``alphas``.

    r = r* = 1: :func:`~attnphase.numerics.phase.scalar_boundaries.scalar_boundaries` (``xtol``: alpha_c and alpha_l
    in alpha; ``bisection_tol``: a branch end found by bisection; ``alphas`` None: 12 points on [0.1, 3]), then
    :func:`~attnphase.numerics.phase.lowest_point_change.lowest_point_alpha_c` where it finds no crossing, else
    :func:`~attnphase.numerics.phase.positional_birth.positional_birth_below`; otherwise
    :func:`~attnphase.numerics.phase.lowest_branch.lowest_branch_boundaries` on ``alphas`` (its own tolerances)."""
    cfg = config or SolverConfig()
    xtol, bisection_tol = check_positive("xtol", xtol), check_positive("bisection_tol", bisection_tol)
    if is_scalar_form(params.r, params.r_star):
        b = scalar_boundaries(params, alphas, config=cfg, xtol=xtol, bisection_tol=bisection_tol)
        if math.isfinite(b.alpha_c):  # the crossing: the positional birth below the branch's sweep
            return positional_birth_below(params, b, cfg, alphas)
        return lowest_point_alpha_c(params, b, cfg, alphas)  # no crossing: the first change of the lowest point
    if alphas is None:
        raise ValueError("the boundaries at rank r >= 2 or r* >= 2 need an alpha grid")
    return lowest_branch_boundaries(params, alphas, cfg)


@dataclass(frozen=True)
class BoundariesSpec:
    """One boundary computation: ``params`` (its omega, r, r*) on the alpha grid ``alphas`` (None: the default)
    with ``config``; ``whole``: the positional branch also over the grid below the boundaries' range, refined
    between its points, for the curves' figure (r = r* = 1,
    :func:`~attnphase.numerics.phase.scalar_boundaries.curves_branch`)."""

    params: ModelParams
    alphas: tuple[float, ...] | None
    config: SolverConfig | None = None
    whole: bool = False


def boundaries_job(spec: BoundariesSpec) -> Boundaries:
    """:func:`phase_boundaries` for one :class:`BoundariesSpec`, its fixed points without solver memory."""
    alphas = None if spec.alphas is None else list(spec.alphas)
    b = phase_boundaries(spec.params, alphas, config=spec.config)
    if spec.whole and is_scalar_form(spec.params.r, spec.params.r_star):
        b = replace(b, positional=curves_branch(spec.params, alphas, b.positional, spec.config))
    return replace(b, semantic=_portable(b.semantic), positional=_portable(b.positional))


def phase_diagram(
    params: ModelParams,
    omegas: Sequence[float],
    alphas: Sequence[float] | None = None,
    *,
    config: SolverConfig | None = None,
    workers: int = 1,
) -> list[Boundaries]:
    """Boundaries at every omega of ``omegas`` (other parameters from ``params``), in that order.

    ``workers`` > 1 computes them in that many processes (the same numbers, the fixed points without solver memory).
    ValueError before any work for an omega outside [0, 1], an alpha <= 0, or a value given twice.
    """
    grid = None if alphas is None else tuple(checked_grid("alphas", alphas, "alpha"))
    jobs = [BoundariesSpec(params.replace(omega=w), grid, config)
            for w in checked_grid("omegas", omegas, "omega", least_open=False, most=1.0)]
    return map_in_order(boundaries_job, jobs, workers)
