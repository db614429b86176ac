"""Continuation of fixed points in alpha, warm-started from converged points only (docs/method.md section 5).

A branch is followed from a cold start at one end of the alpha range (semantic downward, positional, agnostic and
mixed upward), each next point warm-started from the last converged point of the branch, the step halved on failure
down to ``min_step``.  When even the smallest step fails the branch has ended:
:func:`~attnphase.numerics.phase.branch_end.locate_branch_end` locates the end, and the sweep goes on from the last
good point, so the rows past the end show the fixed point the iteration lands on, with its true label.
"""

from __future__ import annotations

import math
from itertools import groupby
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.phase.branch_end import (BranchEnd, bifurcation_end, ends_by_bifurcation, locate_branch_end,
                                                 on_branch)
from attnphase.numerics.config import BRANCHES, SolverConfig, check_positive
from attnphase.numerics.errors.replicates import judged_matrix_point, no_errors
from attnphase.numerics.grids import checked_grid
from attnphase.numerics.se.overlaps import on_branch_subspace
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.starts import MATRIX_BRANCHES, check_branch, teacher_rank
from attnphase.numerics.se.state_evolution import (
    POSITIONAL_COLD_ALPHA, FixedPoint, mixed_from_mixtures, positional_past_agnostic, solve,
)
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: SE evaluations a warm-started continuation step may spend at r = r* = 1 before it counts as off the branch (at
#: r >= 2 or r* >= 2 ``config.max_iter``: a finite-difference Jacobian costs one evaluation per unknown, docs/method.md
#: section 5).
CONTINUATION_MAX_ITER = 60


def solve_from(params: ModelParams, alpha: float, branch: str, start: FixedPoint | None, config: SolverConfig,
               rule=None) -> FixedPoint:
    """:func:`~attnphase.numerics.se.state_evolution.solve` warm from ``start`` (its overlaps and solver memory), cold
    where None; for the agnostic point from ``start``'s overlaps with m = th0 = 0 exactly (a point labelled agnostic
    may carry |m| ~ 1e-13, which grows where the agnostic point is unstable in m: ``--rho0 2 --omega 0.05`` at
    alpha = 0.1, warm from the agnostic point at 0.627, reached the positional point)."""
    init = None if start is None else start.overlaps
    if init is not None and branch == "agnostic":
        init = on_branch_subspace(init, "agnostic")
    return solve(params, alpha, branch, init=init, memory=None if start is None else start.memory, config=config,
                 rule=rule)


#: No end located in the range.
NO_END = BranchEnd(math.nan, "", "")


@dataclass(frozen=True, eq=False)
class BranchSweep:
    """Result of following one branch over a grid of alpha.

    Attributes:
        branch: requested branch.
        points: one fixed point per requested alpha (per alpha reached, with ``past_end=False``),
            in increasing alpha.
        end: where the branch ends inside the range (:class:`~attnphase.numerics.phase.branch_end.BranchEnd`;
            ``end.alpha`` is NaN if the branch spans the range).
        end_side: ``"below"`` if the branch exists above its end, ``"above"`` otherwise.
        errors: per point, its ``err_<key>`` standard errors
            (:func:`attnphase.numerics.errors.quadrature_error.point_errors`; empty when not computed).
        others: at r >= 2 or r* >= 2, where a label can have several branches, per point off the followed branch
            the point of its label a cold solve reaches there, None where it reaches none or the point is on the
            branch (:func:`cold_points_off_branch`; empty when not looked for).
        birth: the positional branch's birth from the agnostic point below its first point on the branch
            (:func:`~attnphase.numerics.phase.positional_birth.sweep_birth`; NaN alpha where none was located),
            ``birth_note`` what was found there ("" where nothing was looked for).
        rule_points: per point, where it is on the branch by its label and floor but a finer rule's solve from it
            reaches the agnostic point (a point of the solve rule's jumps,
            :func:`~attnphase.numerics.phase.absence.finer_rule_rows`), why; "" elsewhere (empty when not looked
            for).  Such a point is not on the branch (:meth:`on_branch`).
    """

    branch: str
    points: list[FixedPoint]
    end: BranchEnd = NO_END
    end_side: str = ""
    errors: tuple[dict[str, float], ...] = ()
    others: tuple[FixedPoint | None, ...] = ()
    birth: BranchEnd = NO_END
    birth_note: str = ""
    rule_points: tuple[str, ...] = ()

    def rule_point(self, i: int) -> str:
        """Why point i is the solve rule's (:attr:`rule_points`), "" where it is not."""
        return self.rule_points[i] if self.rule_points else ""

    def past_end(self, alpha: float) -> bool:
        """Whether ``alpha`` lies past the branch's end located in the range (on the side where it does not exist)."""
        a = self.end.alpha
        return math.isfinite(a) and (alpha < a if self.end_side == "below" else alpha > a)

    def on_branch(self) -> list[FixedPoint]:
        """The converged points carrying the requested label, with the order parameter above the
        branch's floor (:func:`attnphase.numerics.phase.branch_end.on_branch`), that are not the solve rule's
        (:attr:`rule_points`)."""
        return [p for i, p in enumerate(self.points) if on_branch(p, self.branch) and not self.rule_point(i)]


def sweep(
    params: ModelParams,
    alphas: Sequence[float],
    branch: str = "semantic",
    *,
    config: SolverConfig | None = None,
    direction: str | None = None,
    min_step: float = 1e-3,
    bisection_tol: float = 1e-3,
    start: FixedPoint | None = None,
    progress: Callable[[FixedPoint], None] | None = None,
    past_end: bool = True,
) -> BranchSweep:
    """Follow ``branch`` over ``alphas`` by continuation; one FixedPoint per alpha (sorted ascending).

    With ``past_end=False`` the alphas beyond the branch's end get no row.  Where the branch exists at a grid point
    but the warm-started step failed, that point is solved once more with the full solver budget, warm then (with
    ``past_end``) cold.
    """
    scalar = is_scalar_form(params.r, teacher_rank(params))
    check_branch(branch, BRANCHES if scalar else MATRIX_BRANCHES)
    grid = sorted(checked_grid("alphas", alphas, "alpha"))
    min_step, bisection_tol = check_positive("min_step", min_step), check_positive("bisection_tol", bisection_tol)
    full_cfg = config or SolverConfig()
    cfg = replace(full_cfg, max_iter=min(full_cfg.max_iter, CONTINUATION_MAX_ITER) if scalar else full_cfg.max_iter,
                  warm_fallback=False)
    params = se_params(params)  # correlated tokens: their whitened form (docs/model.md section 7)
    rule = model_rule(params, cfg) if scalar else None  # the matrix form takes its rule from the config
    direction = direction or ("down" if branch == "semantic" else "up")  # from its cold start
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
    order = grid if direction == "up" else grid[::-1]
    # where the end is traced at fixed theta or found ahead by the eigenvalue, no point near it is needed
    traced = scalar and (branch, direction) == ("semantic", "down")
    bifurcating = scalar and (branch, direction) == ("positional", "up") and ends_by_bifurcation(full_cfg)

    def run(alpha: float, init: FixedPoint | None) -> FixedPoint:
        return solve_from(params, alpha, branch, init, cfg, rule)

    def rescue(alpha: float, near: FixedPoint, cold_too: bool = True) -> FixedPoint:
        fp = solve(params, alpha, branch, init=near.overlaps, config=full_cfg, rule=rule)
        if on_branch(fp, branch) or not cold_too:
            return fp
        cold = solve(params, alpha, branch, config=full_cfg, rule=rule)
        return cold if on_branch(cold, branch) or not fp.status.converged else fp

    good: FixedPoint | None = start if start is not None and on_branch(start, branch) else None
    # the last grid point on the branch (between grid points a step can reach a spurious point near a soft end)
    grid_good = good
    last: FixedPoint | None = None
    results: dict[float, FixedPoint] = {}
    end, side = NO_END, ""
    for alpha in order:
        ended = math.isfinite(end.alpha)
        if ended and not past_end:
            if not exists_at(end, direction, alpha):
                break
            # a grid alpha between a failed step and the end located beyond it: the branch exists here
            fp = rescue(alpha, good, cold_too=past_end)
            good = fp if on_branch(fp, branch) else good
        elif ended:
            fp = run(alpha, last)
            if end.points and alpha >= end.on_solve_rule:
                # above the traced end the branch exists: start from the traced point nearest in alpha
                near = min(end.points, key=lambda p: abs(p.alpha - alpha))
                retry = run(alpha, near)
                if on_branch(retry, branch) or not fp.status.converged:
                    fp = retry
            if on_branch(fp, branch) and (not ends_by_bifurcation(full_cfg) or end.kind == "solver failure"):
                # the branch goes on past the end located (the aligned map's ends are not bifurcations, and an end
                # bisected on failed solves is where they failed): that end was not where the branch ends
                end, side, good = NO_END, "", fp
        elif good is None:
            # the branch's cold start, with the full budget (from the agnostic point where the last grid point's
            # positional start, at or above POSITIONAL_COLD_ALPHA, fell to it)
            fell = (scalar and branch == "positional" and last is not None and last.requested == "positional"
                    and last.status.converged and last.branch == "agnostic"
                    and POSITIONAL_COLD_ALPHA <= last.alpha < alpha)
            fp = positional_past_agnostic(params, alpha, last, full_cfg, rule) if fell else None
            if fp is None:
                fp = solve(params, alpha, branch, config=full_cfg, rule=rule)
            if branch == "mixed" and last is None and not on_branch(fp, branch):
                fp = mixed_from_mixtures(fp, full_cfg)  # the first point: the census's mixture starts too
            if on_branch(fp, branch):
                good = fp
        else:
            step_floor = abs(alpha - good.alpha) / 3 if traced or bifurcating else min_step
            reached, fp, step = _advance(run, good, alpha, branch, step_floor)
            good = reached
            ahead = None
            if bifurcating and not on_branch(fp, branch):
                if not order_growing([p for p in results.values() if on_branch(p, branch)] + [good]):
                    ahead, _ = bifurcation_end(params, branch, direction, good, (grid_good or good).alpha, cfg,
                                               full_cfg)
                if ahead is None:
                    # no end ahead, or |m| still growing (no continuous end just ahead): the fine step from now on
                    bifurcating = False
                    reached, fp, _ = _advance(run, good, alpha, branch, min_step, step)
                    good = reached
            if not on_branch(fp, branch):
                end = ahead or locate_branch_end(params, branch, direction, good, (grid_good or good).alpha, fp, run,
                                                 cfg, bisection_tol=bisection_tol, full_config=full_cfg)
                side = "below" if direction == "down" else "above"
                exists_here = exists_at(end, direction, alpha)
                if end.method == "trace" and exists_here:
                    near = min(end.points or (good,), key=lambda p: abs(p.alpha - alpha))
                    fp = run(alpha, near)
                if not on_branch(fp, branch) and exists_here:
                    # the diagram's sweeps (past_end False) try it warm only: a cold solve beside an end costs
                    # seconds and rarely converges there (phase-diagram --omega 0: 8 CPU-s at 0.8909, in vain)
                    fp = rescue(alpha, good, cold_too=past_end)
                if not on_branch(fp, branch) and end.kind == "solver failure":
                    # an end found only because warm solves failed may be numerical: a cold solve, full budget
                    cold = solve(params, alpha, branch, config=full_cfg, rule=rule)
                    if on_branch(cold, branch):
                        fp, good, end, side = cold, cold, NO_END, ""
                if not on_branch(fp, branch) and not exists_here:
                    if not past_end:
                        break  # this alpha lies past the end: no row
                    fp = run(alpha, good)
        last = fp if fp.status.converged else (good or fp)
        results[alpha] = fp
        if on_branch(fp, branch) and not math.isfinite(end.alpha):
            grid_good = fp
        if progress is not None:
            progress(fp)
    return BranchSweep(branch, [results[a] for a in grid if a in results], end, side)


def exists_at(end: BranchEnd, direction: str, alpha: float) -> bool:
    """Whether the branch followed in ``direction`` exists at ``alpha`` by its located ``end``: at or above it going
    down, at or below it going up (on the solve rule)."""
    return alpha >= end.on_solve_rule if direction == "down" else alpha <= end.on_solve_rule


def order_growing(path: Sequence[FixedPoint]) -> bool:
    """Whether |m| grew between the last two points of ``path`` (a positional branch followed up, in
    increasing alpha; False with fewer than two distinct alphas): at a bifurcation |m| falls to 0, so where it
    still grows a failed warm step is the solver's, and the eigenvalue's secant is not tried."""
    pts = [next(run) for _, run in groupby((p for p in path if p is not None), key=lambda p: p.alpha)]  # one per alpha
    return len(pts) >= 2 and float(np.linalg.norm(pts[-1].overlaps.m)) > float(np.linalg.norm(pts[-2].overlaps.m))


def _advance(run, good: FixedPoint, target: float, branch: str, min_step: float,
             step: float | None = None) -> tuple[FixedPoint, FixedPoint, float]:
    """Reach ``target`` from ``good`` by steps (the first ``step``, default the whole way) that halve on failure
    and double on success; (last good point, last attempt, the next step): the points coincide when ``target``
    was reached, else the next step is the first below ``min_step``."""
    cur = good
    step = target - cur.alpha if step is None else step
    while abs(target - cur.alpha) > 1e-12:
        a = cur.alpha + step
        if (step > 0 and a > target) or (step < 0 and a < target):
            a, step = target, target - cur.alpha
        fp = run(a, cur)
        if on_branch(fp, branch):
            step = 2 * (a - cur.alpha)
            cur = fp
            continue
        step /= 2
        if abs(step) < min_step:
            return cur, fp, step
    return cur, cur, step


def judged_sweep(sw: BranchSweep, config: SolverConfig, n_rules: int = 0) -> BranchSweep:
    """``sw`` (r >= 2 or r* >= 2) with each point short of the branch's end judged as ``attnphase solve`` judges its
    solve (:func:`~attnphase.numerics.errors.replicates.judged_matrix_point`: one that stalled at the rule's
    jump scale accepted where its replicates reproduce it), and with ``config.error_bars`` every point's error bars
    (NaN where none is made)."""
    points, errors = [], []
    for fp in sw.points:
        judged, err = (fp, {}) if sw.past_end(fp.alpha) and not fp.status.converged else \
            judged_matrix_point(fp, config, n_rules)
        points.append(judged)
        errors.append(no_errors(judged) | {k: v for k, v in err.items() if k.startswith("err_")})
    return replace(sw, points=points, errors=tuple(errors) if config.error_bars else ())


def cold_points_off_branch(params: ModelParams, sw: BranchSweep, config: SolverConfig, n_rules: int = 0
                           ) -> BranchSweep:
    """``sw`` with :attr:`BranchSweep.others`: at each of its points off the followed branch, a cold solve of the
    branch's label (at r >= 2 or r* >= 2 its embedded start; judged as ``attnphase solve`` judges it where it does
    not converge, :func:`~attnphase.numerics.errors.replicates.judged_matrix_point` with ``n_rules``), kept
    where it reaches a point of the label above its floors -- another branch of the label there; ``sw`` unchanged at
    r = r* = 1 (one branch per label)."""
    if is_scalar_form(params.r, teacher_rank(params)):
        return sw
    others = []
    for fp in sw.points:
        cold = None if on_branch(fp, sw.branch) else solve(params, fp.alpha, sw.branch, config=config)
        if cold is not None and not cold.status.converged:
            cold = judged_matrix_point(cold, config, n_rules)[0]
        others.append(cold if cold is not None and on_branch(cold, sw.branch) else None)
    return replace(sw, others=tuple(others))
