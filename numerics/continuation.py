"""Continuation of fixed points in alpha (and omega), warm-started from converged points only.

A branch is followed from a cold start at one end of the alpha range: the
semantic branch downward from the largest alpha (it exists at large alpha), the
positional and agnostic branches upward from the smallest.  Each next point is
warm-started from the last converged point of the requested branch; on failure
(no convergence, or the label changed) the step is halved down to ``min_step``.
When even the smallest step fails, the branch has ended: the end point (a
spinodal) is located by bisection to ``spinodal_tol`` in alpha, and the sweep
goes on from the last good point, so the rows past the end show the fixed point
the iteration actually lands on, with its true label.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from attnphase.numerics.quadrature import QuadratureRule, make_rule
from attnphase.numerics.state_evolution import BRANCHES, FixedPoint, SolverConfig, solve
from attnphase.theory.params import ModelParams


@dataclass(frozen=True, eq=False)
class BranchSweep:
    """Result of following one branch over a grid of alpha.

    Attributes:
        branch: requested branch.
        points: one fixed point per requested alpha, in increasing alpha.
        spinodal: alpha where the branch ends inside the range (NaN if it spans it).
        spinodal_side: ``"below"`` if the branch exists above the spinodal, ``"above"`` otherwise.
    """

    branch: str
    points: list[FixedPoint]
    spinodal: float = math.nan
    spinodal_side: str = ""

    def on_branch(self) -> list[FixedPoint]:
        """The converged points carrying the requested label."""
        return [p for p in self.points if p.status.converged and p.branch == self.branch]


#: SE-evaluation budget of one warm-started continuation step.
CONTINUATION_MAX_ITER = 60


def _ok(fp: FixedPoint, branch: str) -> bool:
    return fp.status.converged and fp.branch == branch


def default_direction(branch: str) -> str:
    """Sweep direction in which a branch is followed from its cold start."""
    return "down" if branch == "semantic" else "up"


def sweep(
    params: ModelParams,
    alphas: Sequence[float],
    branch: str = "semantic",
    prox: str = "global",
    *,
    direction: str | None = None,
    config: SolverConfig | None = None,
    min_step: float = 1e-3,
    spinodal_tol: float = 1e-3,
    start: FixedPoint | None = None,
    progress: Callable[[FixedPoint], None] | None = None,
) -> BranchSweep:
    """Follow ``branch`` over ``alphas`` by continuation; one FixedPoint per alpha (sorted ascending)."""
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    grid = sorted(float(a) for a in alphas)
    if not grid or grid[0] <= 0 or not all(math.isfinite(a) for a in grid):
        raise ValueError(f"alphas must be finite and > 0, got {list(alphas)}")
    cfg = config or SolverConfig(prox=prox)
    # a warm-started point that needs more than this is treated as off the branch
    cfg = replace(cfg, prox=prox, max_iter=min(cfg.max_iter, CONTINUATION_MAX_ITER))
    rule = make_rule(params.L, cfg.quadrature)
    direction = direction or default_direction(branch)
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
    order = grid if direction == "up" else grid[::-1]

    def run(alpha: float, init: FixedPoint | None) -> FixedPoint:
        return solve(params, alpha, branch, init=None if init is None else init.overlaps, config=cfg, rule=rule)

    good: FixedPoint | None = start if start is not None and _ok(start, branch) else None
    last: FixedPoint | None = None
    results: dict[float, FixedPoint] = {}
    spinodal, side = math.nan, ""
    ended = False
    for alpha in order:
        if ended:
            fp = run(alpha, last)
        elif good is None:
            fp = run(alpha, None)
            if _ok(fp, branch):
                good = fp
        else:
            reached, fp = _advance(run, good, alpha, branch, min_step)
            good = reached
            if not _ok(fp, branch):
                spinodal = _bisect_end(run, good, fp.alpha, branch, spinodal_tol)
                side = "below" if direction == "down" else "above"
                ended = True
                fp = run(alpha, good)
        last = fp if fp.status.converged else (good or fp)
        results[alpha] = fp
        if progress is not None:
            progress(fp)
    return BranchSweep(branch, [results[a] for a in grid], spinodal, side)


def _advance(run, good: FixedPoint, target: float, branch: str, min_step: float) -> tuple[FixedPoint, FixedPoint]:
    """Reach ``target`` from ``good`` by steps that halve on failure.

    Returns (last good point, last attempt); they coincide when ``target`` was reached.
    """
    cur = good
    step = target - cur.alpha
    while abs(target - cur.alpha) > 1e-12:
        a = cur.alpha + step
        if (step > 0 and a > target) or (step < 0 and a < target):
            a = target
        fp = run(a, cur)
        if _ok(fp, branch):
            cur = fp
            step = target - cur.alpha
            continue
        step /= 2
        if abs(step) < min_step:
            return cur, fp
    return cur, cur


def _bisect_end(run, good: FixedPoint, bad_alpha: float, branch: str, tol: float) -> float:
    """Bisect between the last good point and a failing alpha for the end of the branch."""
    lo, hi = good, bad_alpha
    while abs(hi - lo.alpha) > tol:
        mid = 0.5 * (lo.alpha + hi)
        fp = run(mid, lo)
        if _ok(fp, branch):
            lo = fp
        else:
            hi = mid
    return 0.5 * (lo.alpha + hi)
