"""Where phase boundaries are searched for: brackets that grow beyond the alpha grid (docs/method.md section 5).

A boundary not bracketed on the grid is searched for beyond it before it is reported missing: above the grid's top
up to :data:`ALPHA_LIMIT` (:func:`grid_extension`, :func:`extend_branch`), alpha_c below the lowest common grid point
(:func:`grow_alpha_c_down`) and above the highest (:func:`grow_alpha_c_up`), alpha_l's first sample a little above
alpha_c (:func:`first_solvable`).  Delta e_t = e_t(semantic) - e_t(positional) is sampled through a callable
returning (Delta e_t, Delta E[M]) that raises :class:`BranchLost` when a solve leaves its branch.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from attnphase.numerics.phase.continuation import BranchSweep, sweep
from attnphase.numerics.se.state_evolution import FixedPoint
from attnphase.theory.params import ModelParams

#: Brackets grow beyond the grid's top up to this alpha (and no further; the note says so).
ALPHA_LIMIT = 10.0

#: Ratio of successive points of the grid's extension above its top (3 -> 6 -> 10 on the default grid).
GROWTH_RATIO = 2.0

#: Where alpha_c lies below the lowest common grid point, between the semantic end e and that point
#: a: Delta e_t is tried at e + f (a - e) for these f, the first with Delta e_t > 0 closing the bracket.
DOWN_FRACTIONS = (0.5, 0.25, 0.1)

#: Where alpha_c lies above the highest common grid point a, below the positional end e: Delta e_t
#: is tried at a + f (e - a) for these f (and at the semantic grid points in between), upward.
UP_FRACTIONS = (0.25, 0.5, 0.75, 0.9)

#: Where the semantic solve stalls at alpha_c, alpha_l's first sample is taken at alpha_c + f (g -
#: alpha_c) for these f, g the next semantic grid point.
AT_C_FRACTIONS = (0.05, 0.15, 0.3)

#: Where every solve of a branch fails at an iterate of alpha_c's root search (a rough patch of the map on the
#: rule, ~1e-3 wide in alpha: ``--sigma 0.4,0.6 --omega 0.4`` at alpha = 1.640-1.641), Delta e_t is evaluated this
#: far beside it instead (:func:`~attnphase.numerics.roots.safeguarded_newton`'s ``aside``).
STEP_ASIDE = 5e-3


class BranchLost(RuntimeError):
    """A root-finding evaluation left the branch it was following."""


def grid_extension(top: float) -> list[float]:
    """The alphas above a grid's ``top`` where brackets grow: a geometric sequence of ratio
    GROWTH_RATIO, its last point ALPHA_LIMIT (empty when ``top`` reaches the limit)."""
    out: list[float] = []
    a = top
    while a < ALPHA_LIMIT:
        a = min(a * GROWTH_RATIO, ALPHA_LIMIT)
        if ALPHA_LIMIT - a < 0.25 * (a - (out[-1] if out else top)):
            a = ALPHA_LIMIT  # no sliver of a last step
        out.append(a)
    return out


def extend_branch(params: ModelParams, sw: BranchSweep, beyond: list[float], kw: dict) -> tuple[BranchSweep, str]:
    """``sw`` (a branch reaching the grid's top) continued upward over ``beyond``; the branch's end
    there (positional) replaces ``sw.end`` when ``sw`` had none.  With a note when the search ends
    at ALPHA_LIMIT with the branch still there, or when the branch does not reach the grid's top."""
    on = sw.on_branch()
    top = max((p.alpha for p in sw.points), default=math.nan)
    if not on or on[-1].alpha < top:
        return sw, ""  # the branch ends (or is lost) inside the grid: nothing to grow
    ext = sweep(params, beyond, sw.branch, direction="up", start=on[-1], **kw)
    end, side = (ext.end, ext.end_side) if math.isnan(sw.end.alpha) else (sw.end, sw.end_side)
    grown = BranchSweep(sw.branch, sw.points + ext.points, end, side)
    reached = [p.alpha for p in ext.on_branch()]
    note = ""
    if sw.branch == "positional" and math.isnan(ext.end.alpha):
        note = (f"positional branch followed up to alpha = {ALPHA_LIMIT:g} (the search limit): no end below it"
                if reached and reached[-1] >= ALPHA_LIMIT else
                f"positional branch lost above alpha = {max(reached, default=top):.3g} without a located end")
    return grown, note


def delta_e_t(point: Callable[[str, float], FixedPoint], alpha: float) -> tuple[float, float]:
    """(Delta e_t, its slope d Delta e_t / d alpha = Delta E[M]) at alpha, Delta = semantic - positional, from the
    branches' points ``point(branch, alpha)`` (semantic solved first)."""
    s, p = (point(branch, alpha).observables for branch in ("semantic", "positional"))
    return s.e_t - p.e_t, s.E_M - p.E_M


def delta_bracket(s_on: list[FixedPoint], p_on: list[FixedPoint]):
    """Delta e_t = e_t(semantic) - e_t(positional) at the alphas where both branches have points,
    ascending, and the first pair of them where it changes sign from > 0 to <= 0 (or None)."""
    sd = {p.alpha: p for p in s_on}
    pd = {p.alpha: p for p in p_on}
    delta = [(a, sd[a].observables.e_t - pd[a].observables.e_t) for a in sorted(set(sd) & set(pd))]
    return delta, next((pair for pair in zip(delta, delta[1:]) if pair[0][1] > 0 >= pair[1][1]), None)


def first_solvable(gap: Callable[[float], float], lo: float, hi: float) -> tuple[float, float] | None:
    """(a, gap(a)) at the first of lo, lo + f (hi - lo) for f in AT_C_FRACTIONS where the
    semantic solve converges; None if it converges at none."""
    for a in (lo, *(lo + f * (hi - lo) for f in AT_C_FRACTIONS)):
        try:
            return a, gap(a)
        except BranchLost:
            continue
    return None


def positional_grid(alphas: Sequence[float], sem: BranchSweep) -> list[float]:
    """The alphas where phase boundaries follow the positional branch: from the first grid point
    above the semantic branch's end (alpha_c lies where both branches exist; below that end, near
    the positional branch's birth, cold solves fail slowly), the whole grid when the semantic
    branch has no end or no point on it."""
    grid = sorted(float(a) for a in alphas)
    above = [a for a in grid if a > sem.end.on_solve_rule] if sem.on_branch() and math.isfinite(sem.end.alpha) else []
    return above or grid


def grow_alpha_c_up(d_et: Callable[[float], tuple[float, float]], a_high: float, d_high: float,
                     a_end: float, grid: Sequence[float]):
    """A bracket of alpha_c above the highest common grid point ``a_high`` (Delta e_t = d_high > 0
    there), below the positional branch's end ``a_end``: Delta e_t at a_high + f (a_end - a_high)
    for f in UP_FRACTIONS and at the semantic branch's grid points ``grid`` in between, in
    increasing alpha, until it is <= 0.  None if it never is."""
    tries = sorted({*grid, *(a_high + f * (a_end - a_high) for f in UP_FRACTIONS)})
    return _sign_change(d_et, (a_high, d_high), tries)


def grow_alpha_c_down(d_et: Callable[[float], tuple[float, float]], a_end: float, a_low: float, d_low: float):
    """A bracket of alpha_c below the lowest common grid point ``a_low`` (Delta e_t = d_low <= 0
    there), above the semantic branch's end ``a_end``: Delta e_t at a_end + f (a_low - a_end) for f
    in DOWN_FRACTIONS until it is > 0 (near a continuous end the semantic branch approaches the
    agnostic one, above the positional one where that is the lower).  None if it never is."""
    return _sign_change(d_et, (a_low, d_low), [a_end + f * (a_low - a_end) for f in DOWN_FRACTIONS])


def _sign_change(d_et: Callable[[float], tuple[float, float]], start: tuple[float, float], alphas: Sequence[float]):
    """The first sign change of Delta e_t (the first of ``d_et``'s pair) from ``start`` = (alpha, Delta e_t) along
    ``alphas``, in their order: the sample where Delta e_t crosses to <= 0 (from > 0 at ``start``) or to > 0 (from
    <= 0) and the sample before it, as ((alpha, Delta e_t) lower in alpha, the higher); None if it never changes
    sign.  A sample whose solve leaves its branch is skipped."""
    last = start
    for a in alphas:
        try:
            d, _ = d_et(a)
        except BranchLost:
            continue
        closed = d <= 0 if start[1] > 0 else d > 0
        if closed:
            return min(last, (a, d)), max(last, (a, d))
        last = (a, d)
    return None
