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

from attnphase.numerics.overlaps import Overlaps
from attnphase.numerics.quadrature import make_rule
from attnphase.numerics.stability import BIFURCATION_QUADRATURE, Bifurcation, branch_bifurcation
from attnphase.numerics.state_evolution import BRANCHES, FixedPoint, SolverConfig, solve, solve_at_m, solve_at_theta
from attnphase.theory.params import ModelParams


@dataclass(frozen=True, eq=False)
class BranchSweep:
    """Result of following one branch over a grid of alpha.

    Attributes:
        branch: requested branch.
        points: one fixed point per requested alpha (per alpha reached, with ``past_end=False``),
            in increasing alpha.
        spinodal: alpha where the branch ends inside the range (NaN if it spans it).
        spinodal_side: ``"below"`` if the branch exists above the spinodal, ``"above"`` otherwise.
        end_points: for the semantic branch, the points traced towards its end at fixed theta.
        end_reason: how the end was detected: ``"bifurcation"`` (where the agnostic branch turns
            unstable in theta -- semantic -- or stable again in m -- positional;
            :mod:`attnphase.numerics.stability`), ``"theta trace"`` (semantic, at fixed theta),
            ``"label change"`` (past the end the iteration converges to another fixed point) or
            ``"no convergence"`` (past the end the solver fails: the end may be a numerical one).
        end_note: why the bifurcation was not used, where the trace or the bisection stands in.
    """

    branch: str
    points: list[FixedPoint]
    spinodal: float = math.nan
    spinodal_side: str = ""
    end_points: tuple[FixedPoint, ...] = ()
    end_reason: str = ""
    end_note: str = ""

    def on_branch(self) -> list[FixedPoint]:
        """The converged points carrying the requested label (semantic: with |th0| >= SEMANTIC_THETA_FLOOR,
        positional: with |m| >= POSITIONAL_M_FLOOR)."""
        return [p for p in self.points if _ok(p, self.branch)]


#: Ways to locate a branch's end in a sweep (see :func:`sweep`).
BRANCH_ENDS = ("bifurcation", "trace")

#: SE-evaluation budget of one warm-started continuation step.
CONTINUATION_MAX_ITER = 60


#: Below this |th0| the semantic branch is not followed: near its continuous end alpha(theta)
#: is so flat (alpha - alpha_end ~ theta^2) and the theta direction of the SE map so soft that
#: quadrature noise (theta error bars ~1e-4 with sobol12) moves alpha by more than the remaining
#: distance to the end, and creates spurious fixed points with tiny theta below it (omega = 0.25,
#: sobol12: theta = 0.025 / 0.018 / 0.011 / 0.007 traced at alpha = 0.653 / 0.639 / 0.610 / 0.527;
#: omega = 0.15: theta = 2e-4 converged at alpha = 0.364, far below the end at 0.60).  Sweeps
#: count a semantic point as on the branch only above it, and the end trace stops there.
SEMANTIC_THETA_FLOOR = 0.02

#: The positional analogue of :data:`SEMANTIC_THETA_FLOOR` for |m|: sweeps count a positional
#: point as on the branch only above it (at omega <= 0.2, sobol12, continuation past the branch's
#: end converged to spurious points with |m| ~ 0.001-0.005), and its end trace stops there.
POSITIONAL_M_FLOOR = 0.02


#: Scheduled points of a branch-end trace (geometric in the order parameter, see
#: :func:`semantic_branch_end`); failed or jumping steps add up to ``max_subdivisions`` each.
N_TRACE = 6


def _ok(fp: FixedPoint, branch: str) -> bool:
    ok = fp.status.converged and fp.branch == branch
    if branch == "semantic":
        return ok and abs(fp.overlaps.th0) >= SEMANTIC_THETA_FLOOR
    if branch == "positional":
        return ok and float(np.linalg.norm(fp.overlaps.m)) >= POSITIONAL_M_FLOOR
    return ok


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
    past_end: bool = True,
    branch_end: str = "bifurcation",
    bifurcation_quadrature: str = BIFURCATION_QUADRATURE,
) -> BranchSweep:
    """Follow ``branch`` over ``alphas`` by continuation; one FixedPoint per alpha (sorted ascending).

    With ``past_end=False`` the sweep stops where the branch ends: the alphas beyond it (the
    first one included) get no row (phase boundaries need only the branch itself).
    ``branch_end``: how a branch's end inside the range is located. ``"bifurcation"``: where the
    agnostic branch turns unstable in theta (semantic branch, followed down) or turns stable
    again in m (positional branch, followed up) -- an eigenvalue of the SE map's Jacobian equal to
    1 on the rule ``bifurcation_quadrature`` (:mod:`attnphase.numerics.stability`), taken where it
    lies beyond the branch's last point; otherwise, and with ``"trace"``, the semantic end is the
    smallest alpha of a trace at fixed theta and other ends are bisected in alpha
    (docs/numerics.md, section 5).
    """
    if branch_end not in BRANCH_ENDS:
        raise ValueError(f"branch_end must be one of {BRANCH_ENDS}, got {branch_end!r}")
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    grid = sorted(float(a) for a in alphas)
    if not grid or grid[0] <= 0 or not all(math.isfinite(a) for a in grid):
        raise ValueError(f"alphas must be finite and > 0, got {list(alphas)}")
    cfg = config or SolverConfig(prox=prox)
    full_cfg = replace(cfg, prox=prox)  # for the agnostic solves of a bifurcation
    # a warm-started point that needs more than this, or whose Newton iteration fails, is
    # treated as off the branch (the step is halved)
    cfg = replace(cfg, prox=prox, max_iter=min(cfg.max_iter, CONTINUATION_MAX_ITER), warm_fallback=False)
    rule = make_rule(params.L, cfg.quadrature)
    direction = direction or default_direction(branch)
    if direction not in ("up", "down"):
        raise ValueError(f"direction must be 'up' or 'down', got {direction!r}")
    order = grid if direction == "up" else grid[::-1]

    # the semantic branch's end is traced at fixed theta (other ends are bisected in alpha)
    traced = (branch, direction) == ("semantic", "down")

    def run(alpha: float, init: FixedPoint | None) -> FixedPoint:
        if init is None:
            return solve(params, alpha, branch, config=cfg, rule=rule)
        return solve(params, alpha, branch, init=init.overlaps, memory=init.memory, config=cfg, rule=rule)

    good: FixedPoint | None = start if start is not None and _ok(start, branch) else None
    # the last grid point on the branch: between grid points a step can converge to a spurious
    # point near a soft end (omega = 0.2, sobol12 seed 1: theta >= 0.02 at alpha = 0.4955, below
    # the bifurcation at 0.625 that the grid point 0.627 sits just above)
    grid_good = good
    last: FixedPoint | None = None
    results: dict[float, FixedPoint] = {}
    spinodal, side = math.nan, ""
    end_points: tuple[FixedPoint, ...] = ()
    end_reason = end_note = ""
    ended = False
    for alpha in order:
        if ended and not past_end:
            break
        if ended:
            fp = run(alpha, last)
            if end_points and alpha >= spinodal:
                # above the traced end the branch exists: start from the traced point nearest in alpha
                near = min(end_points, key=lambda p: abs(p.alpha - alpha))
                retry = run(alpha, near)
                if _ok(retry, branch) or not fp.status.converged:
                    fp = retry
        elif good is None:
            fp = run(alpha, None)
            if _ok(fp, branch):
                good = fp
        else:
            # where a branch's end is traced at fixed theta, one halving suffices
            step_floor = abs(alpha - good.alpha) / 3 if traced else min_step
            reached, fp = _advance(run, good, alpha, branch, step_floor)
            good = reached
            if not _ok(fp, branch) and branch_end == "bifurcation" and (branch, direction) in _BIFURCATING:
                bif = _bifurcation_from(params, good, _BIFURCATING[(branch, direction)], full_cfg, bifurcation_quadrature)
                anchor = (grid_good or good).alpha
                beyond = bif.alpha <= anchor if direction == "down" else bif.alpha >= anchor
                if bif.converged and beyond:
                    spinodal, end_reason, ended = bif.alpha, "bifurcation", True
                    side = "below" if direction == "down" else "above"
                else:
                    end_note = bif.message if not bif.converged else (
                        f"bifurcation at {bif.alpha:.4f} is not beyond the branch's last grid point ({anchor:.4f})")
            if not _ok(fp, branch) and traced and not ended:
                # natural-parameter continuation in theta: robust where alpha(theta) is flat
                end = semantic_branch_end(params, good, config=cfg)
                spinodal, end_points = end.alpha_end, end.points
                if alpha >= spinodal:
                    near = min(end_points or (good,), key=lambda p: abs(p.alpha - alpha))
                    fp = run(alpha, near)
                end_reason = "theta trace"
                side = "below"
                ended = True
            if not _ok(fp, branch) and not ended:
                spinodal = _bisect_end(run, good, fp.alpha, branch, spinodal_tol)
                end_reason = "label change" if fp.status.converged else "no convergence"
                side = "below" if direction == "down" else "above"
                ended = True
            if ended and not _ok(fp, branch):
                if not past_end:
                    break  # this alpha lies past the end: no row
                fp = run(alpha, good)
        last = fp if fp.status.converged else (good or fp)
        results[alpha] = fp
        if _ok(fp, branch) and not ended:
            grid_good = fp
        if progress is not None:
            progress(fp)
    return BranchSweep(branch, [results[a] for a in grid if a in results], spinodal, side, end_points, end_reason,
                       end_note)


#: Branch (and sweep direction) whose end meets the agnostic branch, and the eigenvalue direction.
_BIFURCATING = {("semantic", "down"): "theta", ("positional", "up"): "m"}


def _bifurcation_from(
    params: ModelParams, good: FixedPoint, direction: str, cfg: SolverConfig, quadrature: str
) -> Bifurcation:
    """Eigenvalue 1 on the agnostic branch, from the branch's last point.

    theta: the agnostic start is that point with theta set to 0 (near the semantic end theta is
    small and the agnostic state close), then a cold start; m: a cold agnostic start first (the
    positional point's V0 is far from the agnostic one: warm starts from it failed at omega = 0.15,
    0.2), then that point with m set to 0 (a cold start failed at omega = 0.2, sobol12 seed 2).
    """
    ov = good.overlaps
    zeroed = replace(good, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=0.0 * ov.m, th0=0.0), memory=None)
    starts = (zeroed, None) if direction == "theta" else (None, zeroed)
    return branch_bifurcation(params, good.alpha, direction, quadrature=quadrature, config=cfg, starts=starts)


def _advance(run, good: FixedPoint, target: float, branch: str, min_step: float) -> tuple[FixedPoint, FixedPoint]:
    """Reach ``target`` from ``good`` by steps that halve on failure and double on success.

    Returns (last good point, last attempt); they coincide when ``target`` was reached.
    """
    cur = good
    step = target - cur.alpha
    while abs(target - cur.alpha) > 1e-12:
        a = cur.alpha + step
        if (step > 0 and a > target) or (step < 0 and a < target):
            a, step = target, target - cur.alpha
        fp = run(a, cur)
        if _ok(fp, branch):
            # after a halving, grow the step again by doubling rather than jumping to the
            # target: where the branch is hard to follow, a failed solve costs a whole budget
            step = 2 * (a - cur.alpha)
            cur = fp
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


@dataclass(frozen=True, eq=False)
class BranchEnd:
    """The end of a branch traced at a fixed order parameter (th0 or |m|) shrinking towards 0.

    Attributes:
        alpha_end: the extreme alpha reached on the branch (its spinodal): the smallest for
            the semantic branch (followed downward), the largest for the positional one.
        theta_at_end: the order parameter at that point (th0, or |m| for the positional
            branch; -> 0 for a continuous end, > 0 at a fold).
        points: the converged fixed points traced, in the order of decreasing order parameter.
    """

    alpha_end: float
    theta_at_end: float
    points: tuple[FixedPoint, ...]


def _order(fp: FixedPoint, branch: str) -> float:
    """The order parameter a branch end is traced in: |th0| (semantic) or |m| (positional)."""
    ov = fp.overlaps
    return abs(float(ov.th0)) if branch == "semantic" else float(np.linalg.norm(ov.m))


def semantic_branch_end(
    params: ModelParams,
    start: FixedPoint,
    *,
    n_theta: int = N_TRACE,
    theta_min_ratio: float = 0.02,
    theta_floor: float = SEMANTIC_THETA_FLOOR,
    max_alpha_jump: float = 0.1,
    max_subdivisions: int = 4,
    config: SolverConfig | None = None,
) -> BranchEnd:
    """Follow the semantic branch from ``start`` to small theta at fixed theta (alpha solved for).

    theta runs geometrically from 0.9 theta(start) down to ``theta_min_ratio`` theta(start), but
    not below ``theta_floor`` (see :data:`SEMANTIC_THETA_FLOOR`);
    each point is warm-started from the last converged one; a step that fails or moves alpha by
    more than ``max_alpha_jump`` is retried in up to ``max_subdivisions`` geometric half-steps,
    and the trace stops where alpha still jumps.  The branch's end is the
    smallest alpha reached: where alpha(theta) has an interior minimum the branch ends at a
    fold; where alpha keeps decreasing as theta -> 0 it ends continuously.
    """
    return _trace_end(params, start, "semantic", n_theta, theta_min_ratio, theta_floor,
                      max_alpha_jump, max_subdivisions, config)


def positional_branch_end(
    params: ModelParams,
    start: FixedPoint,
    *,
    n_m: int = N_TRACE,
    m_min_ratio: float = 0.02,
    m_floor: float = POSITIONAL_M_FLOOR,
    max_alpha_jump: float = 0.1,
    max_subdivisions: int = 1,
    config: SolverConfig | None = None,
) -> BranchEnd:
    """Follow the positional branch from ``start`` to small |m| at fixed |m| (alpha solved for).

    The positional analogue of :func:`semantic_branch_end` (same schedule and safeguards,
    with :func:`~attnphase.numerics.state_evolution.solve_at_m`); the branch's end is the
    LARGEST alpha reached (the branch is followed upward).  Where the positional branch ends
    at these parameters (omega <= 0.2, defaults) alpha(|m|) is nearly flat over a wide range
    of |m|, and a solve at fixed alpha there has several nearby fixed points (docs/numerics.md
    section 5).
    """
    return _trace_end(params, start, "positional", n_m, m_min_ratio, m_floor,
                      max_alpha_jump, max_subdivisions, config)


def _trace_end(
    params: ModelParams,
    start: FixedPoint,
    branch: str,
    n_steps: int,
    min_ratio: float,
    floor: float,
    max_alpha_jump: float,
    max_subdivisions: int,
    config: SolverConfig | None,
) -> BranchEnd:
    """Natural-parameter continuation in the branch's order parameter, towards 0 (see the callers)."""
    cfg = config or SolverConfig()
    # theta -> -theta (and m -> -m) is a symmetry (Q -> -Q): trace the size of the order parameter
    size_start = _order(start, branch)
    low = max(min_ratio * size_start, floor)
    if low >= 0.9 * size_start:
        return BranchEnd(alpha_end=float(start.alpha), theta_at_end=size_start, points=())
    sizes = np.geomspace(0.9 * size_start, low, n_steps)
    cur, pts = start, [start]
    stop = False
    for size in sizes:
        # a scheduled value whose solve fails or jumps in alpha is approached in up to
        # ``max_subdivisions`` geometric half-steps from the last good point
        target, left = float(size), max_subdivisions
        while True:
            if branch == "semantic":
                # a mirrored start's memory (Jacobian, candidates) belongs to the mirror state: not reused
                memory = cur.memory if cur.overlaps.th0 > 0 else None
                fp = solve_at_theta(params, target, cur.overlaps, config=cfg, memory=memory)
            else:
                fp = solve_at_m(params, target, cur.overlaps, config=cfg, memory=cur.memory)
            ok = fp.status.converged and fp.branch == branch and math.isfinite(fp.alpha)
            # semantic: any jump of alpha; positional: a jump DOWN in alpha lands on the rising
            # part of the branch (every |m| below the maximum is reached twice: near the branch's
            # birth at small alpha and again on its way to the end), while alpha(|m|) may climb
            # steeply towards the end
            da = fp.alpha - cur.alpha
            jump = ok and (abs(da) if branch == "semantic" else -da) > max_alpha_jump
            if ok and not jump:
                pts.append(fp)
                cur = fp
                if target == float(size):
                    break
                target = float(size)
                continue
            if left == 0:
                # a persistent jump in alpha: the solve left the branch (or quadrature noise
                # dominates): stop; a persistent failure: try the next value
                stop = jump
                break
            left -= 1
            target = math.sqrt(target * _order(cur, branch))
        if stop:
            break
    pick = min if branch == "semantic" else max
    best = pick(pts, key=lambda p: p.alpha)
    return BranchEnd(alpha_end=float(best.alpha), theta_at_end=_order(best, branch), points=tuple(pts[1:]))


def sweep_omega(
    params: ModelParams,
    alpha: float,
    omegas: Sequence[float],
    branch: str = "semantic",
    prox: str = "global",
    *,
    config: SolverConfig | None = None,
    min_step: float = 1e-3,
    start: FixedPoint | None = None,
    progress: Callable[[FixedPoint], None] | None = None,
) -> list[FixedPoint]:
    """Continuation in omega at fixed alpha, in the order given, warm-started from converged points.

    A failed step is retried with halved omega steps down to ``min_step``; the row for
    an omega where the branch could not be reached records the attempt (its status and
    label say so) and the next omega restarts from the last converged point.
    """
    if branch not in BRANCHES:
        raise ValueError(f"branch must be one of {BRANCHES}, got {branch!r}")
    cfg = replace(config or SolverConfig(), prox=prox, max_iter=min((config or SolverConfig()).max_iter, CONTINUATION_MAX_ITER))
    good = start if start is not None and _ok(start, branch) else None
    out = []
    for omega in omegas:
        target = params.replace(omega=float(omega))  # validates omega
        if good is None:
            fp = solve(target, alpha, branch, config=cfg)
        else:
            cur, step = good, float(omega) - good.params.omega
            fp = cur
            while abs(float(omega) - cur.params.omega) > 1e-12:
                w = cur.params.omega + step
                w = min(w, float(omega)) if step > 0 else max(w, float(omega))
                fp = solve(params.replace(omega=w), alpha, branch, init=cur.overlaps, memory=cur.memory, config=cfg)
                if _ok(fp, branch):
                    cur, step = fp, float(omega) - fp.params.omega
                    continue
                step /= 2
                if abs(step) < min_step:
                    break
            if _ok(fp, branch) and abs(fp.params.omega - float(omega)) < 1e-12:
                good = fp
        out.append(fp)
        if progress is not None:
            progress(fp)
    return out
