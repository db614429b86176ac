"""Phase boundaries continued in omega (docs/method.md section 13): each omega's boundaries computed locally from
its neighbours', from their predictions (:func:`~attnphase.numerics.phase.omega_prediction.predict`), both branches
warm-started from the neighbour's fixed points at the same alpha, the ends by the bifurcation secant from the
predicted end, alpha_c and alpha_l bracketed around their predictions and refined as in
:func:`~attnphase.numerics.phase.scalar_boundaries.scalar_boundaries`.  Where the local computation fails (a
boundary not bracketed near its prediction or further from it than the tolerance, a branch lost, an end of another
kind) that omega is computed independently, the reason in its notes, and the chain goes on from that result.
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Sequence

from attnphase.numerics.phase.boundary_results import Boundaries, end_columns
from attnphase.numerics.phase.boundary_refinement import corrected_alpha_c, refined_alpha_l
from attnphase.numerics.phase.brackets import (ALPHA_LIMIT, STEP_ASIDE, BranchLost, delta_e_t, first_solvable,
                                              grid_extension)
from attnphase.numerics.phase.branch_end import (BranchEnd, bifurcation_from, crossing_rejected, end_note, on_branch,
                                                 points_to_check)
from attnphase.numerics.phase.end_rule import points_below_crossing
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.continuation import CONTINUATION_MAX_ITER, NO_END, BranchSweep, _advance, solve_from
from attnphase.numerics.phase.scalar_boundaries import _portable, curves_branch, scalar_boundaries, with_scalar_labels
from attnphase.numerics.phase.omega_prediction import ContinuationFailed, Prediction, predict
from attnphase.numerics.roots import RootNotFound, brent_root, safeguarded_newton
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import FixedPoint
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: The first bracket of alpha_c: this multiple of the Newton step from the prediction (at least
#: MIN_BRACKET), doubling until it closes or passes the tolerance.
BRACKET_OVERSHOOT, MIN_BRACKET = 1.5, 2e-3


class _Branches:
    """The fixed points of both branches at one model, each solve warm-started from the nearest
    known point (the neighbour's in omega, or this model's)."""

    def __init__(self, params: ModelParams, config: SolverConfig) -> None:
        self.params, self.cfg = params, config
        self.steps = replace(config, max_iter=min(config.max_iter, CONTINUATION_MAX_ITER), warm_fallback=False)
        self.rule = model_rule(params, config)
        self.grid: dict[str, list[FixedPoint]] = {"semantic": [], "positional": []}
        self.iterates: dict[str, list[FixedPoint]] = {"semantic": [], "positional": []}

    def _run(self, alpha: float, branch: str, start: FixedPoint | None, cfg: SolverConfig) -> FixedPoint | None:
        fp = solve_from(self.params, alpha, branch, start, cfg, self.rule)
        return fp if on_branch(fp, branch) else None

    def continue_point(self, branch: str, alpha: float, neighbour: FixedPoint | None) -> FixedPoint | None:
        """``branch`` at grid point ``alpha``: from the neighbour's point there (the step budget), then
        from the nearest point of this model (as a sweep steps, then with the full budget) and cold;
        None if none is on the branch."""
        fp = self._run(alpha, branch, neighbour, self.steps) if neighbour is not None else None
        near = min(self.grid[branch] + self.iterates[branch], key=lambda p: abs(p.alpha - alpha), default=None)
        if fp is None and near is not None:
            fp = self.reach(branch, near, alpha) or self._run(alpha, branch, near, self.cfg)
        if fp is None:
            fp = self._run(alpha, branch, None, self.cfg)
        if fp is not None:
            self.grid[branch].append(fp)
        return fp

    def reach(self, branch: str, start: FixedPoint, target: float) -> FixedPoint | None:
        """``branch`` at the grid point ``target`` as phase_boundaries' sweep gets there from its grid
        point ``start`` (warm steps halving down to a third of the way), None where it does not."""
        def run(alpha: float, init: FixedPoint) -> FixedPoint:
            return solve_from(self.params, alpha, branch, init, self.steps, self.rule)

        _, fp, _ = _advance(run, start, target, branch, abs(target - start.alpha) / 3)
        return fp if on_branch(fp, branch) and fp.alpha == target else None

    def extension_point(self, branch: str, alpha: float, neighbour: FixedPoint | None,
                        below: FixedPoint) -> FixedPoint | None:
        """``branch`` at ``alpha`` above the grid (where phase_boundaries follows a branch with no end on up to
        ALPHA_LIMIT), given ``below``, this model's point at the previous alpha: from the neighbour's point there
        (the step budget, as a grid point), else reached from ``below`` as phase_boundaries' sweep gets there;
        None where neither is on the branch."""
        fp = self._run(alpha, branch, neighbour, self.steps) if neighbour is not None else None
        return fp if fp is not None else self.reach(branch, below, alpha)

    def at(self, branch: str, alpha: float, seeds: Sequence[FixedPoint] = ()) -> FixedPoint:
        """``branch`` at ``alpha`` (a root finder's iterate): from this model's nearest point, the next
        nearest on the other side, the nearest of ``seeds`` (the neighbour's), then cold; BranchLost."""
        own = sorted(self.grid[branch] + self.iterates[branch], key=lambda p: abs(p.alpha - alpha))
        tries = own[:1] + [p for p in own[1:] if (p.alpha - alpha) * (own[0].alpha - alpha) < 0][:1]
        near_seed = sorted((s for s in seeds if s.branch == branch), key=lambda p: abs(p.alpha - alpha))[:1]
        if near_seed and (not tries or abs(near_seed[0].alpha - alpha) < abs(tries[0].alpha - alpha)):
            tries = near_seed + tries
        for start in [*tries, None]:
            fp = self._run(alpha, branch, start, self.cfg)
            if fp is not None:
                self.iterates[branch].append(fp)
                return fp
        raise BranchLost(f"{branch} branch lost at alpha = {alpha:.5f}")

    def sweep(self, branch: str, end: BranchEnd, side: str) -> BranchSweep:
        return BranchSweep(branch, sorted(self.grid[branch], key=lambda p: p.alpha), end, side)


def continued_boundaries(
    params: ModelParams, alphas: Sequence[float], previous: Sequence[Boundaries], *, seeds: Sequence[FixedPoint] = (),
    config: SolverConfig | None = None, xtol: float = 1e-4, prediction: Prediction | None = None,
) -> tuple[Boundaries, tuple[FixedPoint, ...]]:
    """The boundaries at ``params.omega`` computed locally from ``previous`` (the last one or two
    omegas' boundaries, with their branch sweeps) and ``seeds`` (the last one's root-finding iterates);
    returns them and this omega's iterates (the next omega's seeds).  ContinuationFailed (or
    BranchLost / RootNotFound) where it cannot: see the module doc."""
    params = se_params(params)  # correlated tokens: their whitened form (docs/model.md section 7)
    cfg, near, pred = config or SolverConfig(), previous[-1], prediction or predict(previous, params.omega)
    if near.semantic is None or near.positional is None:
        raise ContinuationFailed(f"no fixed points kept at omega = {near.omega:g}")
    for k in ("alpha_c", "alpha_l", "semantic_end"):
        if not math.isfinite(pred.values[k]):
            raise ContinuationFailed(f"no {k} at omega = {near.omega:g} to continue")
    if near.semantic_end_method != "eigenvalue" or (
            math.isfinite(near.positional_end) and near.positional_end_method != "eigenvalue"):
        raise ContinuationFailed(f"a branch end at omega = {near.omega:g} is not a bifurcation found by its eigenvalue")
    grid = set(float(a) for a in alphas) | set(grid_extension(max(alphas)))
    br = _Branches(params, cfg)
    notes = [f"continued from omega = {near.omega:g}"]

    # the semantic branch at its lowest grid point (the neighbour's, continued; the next one up where
    # that one lies past the end), its end, and phase_boundaries' step past it
    sem, pos = br.grid["semantic"], br.grid["positional"]
    _end_point(br, "semantic", near.semantic.on_branch(), grid)
    sem_end = _bifurcation_end(params, min(sem, key=lambda p: p.alpha), "theta", pred.values["semantic_end"], cfg,
                               pred.secant_step("semantic_end"), sem)
    pred.check("semantic_end", sem_end.alpha)
    notes += [end_note("semantic", sem_end)] if sem_end.note else []
    if not sem:  # the end moved above the point continued (omega going up): the next grid point up, from
        # the neighbour's nearest point (its grid points or root-finding iterates)
        g = min(a for a in grid if a > sem_end.on_solve_rule)
        theirs = [p for p in (*seeds, *near.semantic.on_branch()) if p.branch == "semantic"]
        if not theirs or br.continue_point("semantic", g, min(theirs, key=lambda p: abs(p.alpha - g))) is None:
            raise ContinuationFailed(f"semantic branch lost at alpha = {g:.4f}, above its end")
    for a in sorted((a for a in grid if sem_end.on_solve_rule < a < min(p.alpha for p in sem)), reverse=True):
        br.continue_point("semantic", a, None)  # a grid point newly above the end (omega going down)
    low = min(sem, key=lambda p: p.alpha)
    past = [a for a in sorted(grid) if a < sem_end.on_solve_rule][-1:]
    if past and br.reach("semantic", low, past[0]) is not None:
        raise ContinuationFailed(f"the semantic branch goes on below lambda = 1 at {sem_end.alpha:.4f} "
                                 f"(on the branch at alpha = {past[0]:.4f})")

    # the positional branch: its highest grid point below the end, the end, and phase_boundaries' step
    # past it; where it has no end, followed from the grid's top to ALPHA_LIMIT as phase_boundaries does
    pos_end_pred = pred.values["positional_end"]
    above = sorted((p for p in near.positional.on_branch() if p.alpha in grid and p.alpha > sem_end.on_solve_rule),
                   key=lambda p: p.alpha)
    if math.isfinite(pos_end_pred):
        top = _end_point(br, "positional", above, grid)
        pos_end = _bifurcation_end(params, top, "m", pos_end_pred, cfg, pred.secant_step("positional_end"), [])
        pred.check("positional_end", pos_end.alpha)
        for a in sorted(a for a in grid if top.alpha < a < pos_end.on_solve_rule):  # newly below the end (omega going up)
            nxt = br.continue_point("positional", a, None)
            if nxt is None:  # not converged so close to the end: a gap in the curve, as phase_boundaries' sweep has
                break
            top = nxt
        past = [a for a in sorted(grid) if a > pos_end.on_solve_rule][:1]
        if past and br.reach("positional", top, past[0]) is not None:
            raise ContinuationFailed(f"the positional branch goes on past mu = 1 at {pos_end.alpha:.4f} "
                                     f"(on the branch at alpha = {past[0]:.4f})")
    else:
        start = next((p for p in above if p.alpha == max(alphas)), None)
        top = br.continue_point("positional", max(alphas), start) if start is not None else None
        for a in grid_extension(max(alphas)):
            theirs = next((p for p in above if p.alpha == a), None)
            top = br.extension_point("positional", a, theirs, top) if top is not None else None
            if top is None:
                raise ContinuationFailed(f"positional branch not followed up to alpha = {a:g}")
            pos.append(top)
        pos_end = NO_END
        notes.append(f"positional branch followed up to alpha = {ALPHA_LIMIT:g} (the search limit): no end below it")
    seeds = (*seeds, *near.semantic.on_branch(), *near.positional.on_branch())

    # alpha_c: Delta e_t bracketed outward from its prediction
    d_et = partial(delta_e_t, partial(br.at, seeds=seeds))
    top_alpha = ALPHA_LIMIT if not math.isfinite(pos_end.alpha) else pos_end.on_solve_rule
    a_pred, tol_c = pred.values["alpha_c"], pred.tolerances["alpha_c"]
    if not sem_end.on_solve_rule < a_pred < top_alpha:
        raise ContinuationFailed(f"predicted alpha_c {a_pred:.4f} outside the range where both branches exist")
    bracket = _bracket_decreasing("alpha_c", d_et, a_pred, tol_c, sem_end.on_solve_rule, top_alpha)
    alpha_c_coarse = safeguarded_newton(d_et, *bracket, xtol, aside=STEP_ASIDE, failure=BranchLost)
    pred.check("alpha_c", alpha_c_coarse)
    alpha_c, note, alpha_c_err = corrected_alpha_c(alpha_c_coarse, br.iterates["semantic"], br.iterates["positional"],
                                                   br.at, cfg)
    notes += [note] if note else []

    alpha_l = _alpha_l(br, alpha_c, pred, seeds, min((a for a in grid if a > alpha_c), default=alpha_c + 0.1), xtol)
    pred.check("alpha_l", alpha_l)
    alpha_l, alpha_l_err, note = refined_alpha_l(br.grid["semantic"] + br.iterates["semantic"], alpha_l, alpha_c,
                                                 alpha_c_err, cfg)
    notes += [note] if note else []
    b = with_scalar_labels(Boundaries(
        omega=params.omega, alpha_c=alpha_c, alpha_l=alpha_l, notes=tuple(notes), alpha_c_coarse=alpha_c_coarse,
        semantic=br.sweep("semantic", sem_end, "below"),
        positional=br.sweep("positional", pos_end, "above" if math.isfinite(pos_end.alpha) else ""),
        alpha_c_err=alpha_c_err, alpha_l_err=alpha_l_err,
        **end_columns("semantic", sem_end), **end_columns("positional", pos_end)), cfg)
    return b, tuple(br.iterates["semantic"] + br.iterates["positional"])


def _end_point(br: _Branches, branch: str, theirs: list[FixedPoint], grid: set[float]) -> FixedPoint:
    """The branch's two grid points nearest its end (semantic: lowest, positional: highest) among those of ``grid``:
    the neighbour's continued, the failed ones nearer the end reached by phase_boundaries' steps back out
    while they converge (all added to ``br``); ContinuationFailed where none is continued."""
    down = branch == "semantic"
    order = sorted((p for p in theirs if p.alpha in grid), key=lambda p: p.alpha if down else -p.alpha)
    failed, found = [], []
    for p in order:  # two points: the next omega has one in reserve
        got = br.continue_point(branch, p.alpha, p)
        found += [got] if got is not None else []
        failed += [p.alpha] if got is None and not found else []
        if len(found) == 2:
            break
    if not found:
        raise ContinuationFailed(f"no {branch} point continued")
    got = found[0]
    for a in reversed(failed):  # back out towards the end, as the sweep steps
        nxt = br.reach(branch, got, a)
        if nxt is None:  # past the end, or a gap in the curve next to it, as phase_boundaries' sweep has: the end
            break        # is the bifurcation's, checked against its prediction
        br.grid[branch].append(nxt)
        got = nxt
    return got


def _bifurcation_end(params: ModelParams, last: FixedPoint, direction: str, guess: float,
                     cfg: SolverConfig, step: float, points: list[FixedPoint]) -> BranchEnd:
    """The branch's end where the agnostic eigenvalue in ``direction`` crosses 1, by the secant from ``guess`` (the
    agnostic start: ``last``, the branch's last grid point), accepted beyond the branch's last grid point and
    crossing the right way.  Semantic: the grid ``points`` below a crossing the right way are dropped where
    :func:`~attnphase.numerics.phase.end_rule.points_below_crossing` finds them the solve rule's (its note is the
    end's), as for an omega computed on its own; where it does not, ContinuationFailed (that omega is computed on its
    own, its end traced).  The caller continues the next grid point up where no point is left."""
    bif = bifurcation_from(params, last, direction, cfg, guess, step)
    if not bif.converged:
        raise ContinuationFailed(f"{direction} bifurcation from {guess:.4f}: {bif.message}")
    down, on_rule, note = direction == "theta", bif.solve_rule_alpha, ""  # the branch's points live on the solve rule
    lowest = min(points, key=lambda p: p.alpha) if points else None
    if lowest is not None and points_to_check(bif, lowest.alpha, down):
        why, note = points_below_crossing(params, lowest, on_rule, cfg)
        if why:
            raise ContinuationFailed(f"{direction}: {why}")
        points[:] = [p for p in points if p.alpha > on_rule]
        last = min(points, key=lambda p: p.alpha) if points else None
    why = crossing_rejected(bif, None if last is None else last.alpha, down)
    if why:
        raise ContinuationFailed(f"{direction}: {why}")
    return BranchEnd(bif.alpha, "bifurcation", "eigenvalue", note=note, err=bif.err, solve_rule_alpha=on_rule)


def _bracket_decreasing(what: str, f, x0: float, reach: float, lo: float, *rest: float,
                        first: float = MIN_BRACKET) -> tuple[float, float, float, float]:
    """(a, b, f(a), f(b)) with f(a) > 0 >= f(b), a < b, for f decreasing with (value, slope) = f(x)
    (slope NaN: unknown): from ``x0`` a Newton step long (BRACKET_OVERSHOOT times; ``first`` without a
    slope; at least MIN_BRACKET), doubling, at most ``reach`` from x0, inside (lo, hi); ``rest`` = (hi,)
    or (f(lo), hi) where f(lo) > 0 is known (lo then closes a bracket)."""
    f_lo, hi = rest if len(rest) == 2 else (math.nan, rest[0])
    f0, slope = f(x0)
    sign, dist = (1.0 if f0 > 0 else -1.0), BRACKET_OVERSHOOT * abs(f0 / slope) if slope < 0 else first
    dist = min(max(dist, MIN_BRACKET), reach)
    while True:
        x = x0 + sign * dist
        if x <= lo and f_lo > 0:
            return lo, x0, f_lo, f0
        if not lo < x < hi:
            raise ContinuationFailed(f"{what} not bracketed between {x0:.4f} and the range's edge")
        fx, _ = f(x)
        if (fx > 0) != (f0 > 0):
            return (x0, x, f0, fx) if sign > 0 else (x, x0, fx, f0)
        if dist >= reach:
            raise ContinuationFailed(f"{what} not bracketed within {reach:.3f} of its prediction {x0:.4f}")
        dist = min(2 * dist, reach)


def _alpha_l(br: _Branches, alpha_c: float, pred: Prediction, seeds: Sequence[FixedPoint], above: float,
            xtol: float) -> float:
    """The alpha >= alpha_c where semantic eps_g - eps_lin changes sign from > 0 to <= 0: phase_boundaries'
    first sample at alpha_c (a little above, towards the grid point ``above``, where the solve stalls
    there), then bracketed outward from the prediction and refined by Brent's method; alpha_c where
    eps_g is already below eps_lin there."""
    eps_lin, seen = br.grid["semantic"][0].observables.eps_lin, {}

    def gap(a: float) -> float:  # Brent evaluates its bracket's ends again
        if a not in seen:
            seen[a] = br.at("semantic", a, seeds).observables.eps_g - eps_lin
        return seen[a]

    first = first_solvable(gap, alpha_c, above)
    if first is None or (first[1] <= 0 and first[0] != alpha_c):
        raise ContinuationFailed("alpha_l: the semantic branch is lost at alpha_c")
    if first[1] <= 0:
        return alpha_c
    guess = max(pred.values["alpha_l"], first[0] + MIN_BRACKET)
    move = pred.moves["alpha_l"]  # the secant's error: ~10 % of its move
    a, b, _, _ = _bracket_decreasing("alpha_l", lambda x: (gap(x), math.nan), guess, pred.tolerances["alpha_l"],
                                     *first, ALPHA_LIMIT, first=0.15 * move if math.isfinite(move) else MIN_BRACKET)
    return brent_root(gap, a, b, xtol)


def next_boundaries(params: ModelParams, alphas: Sequence[float], previous: Sequence[Boundaries], *,
                    seeds: Sequence[FixedPoint] = (), config: SolverConfig | None = None,
                    prediction: Prediction | None = None) -> tuple[Boundaries, tuple[FixedPoint, ...]]:
    """:func:`continued_boundaries`, or, where it fails, phase_boundaries at ``params`` with the
    reason in the notes (then no seeds)."""
    try:
        return continued_boundaries(params, alphas, previous, seeds=seeds, config=config, prediction=prediction)
    except (ContinuationFailed, BranchLost, RootNotFound) as exc:
        b = scalar_boundaries(params, alphas, config=config)
        return replace(b, notes=b.notes + (f"omega continuation failed ({exc}): computed independently",)), ()


def boundaries_chain(params: ModelParams, alphas: Sequence[float], anchor: float, up: Sequence[float],
                     down: Sequence[float], config: SolverConfig | None = None,
                     whole: bool = False) -> list[Boundaries]:
    """phase_boundaries at omega = ``anchor`` (``whole``: with the whole positional branch, for the
    curves), then continued to the omegas ``up`` and ``down`` in their order, each from the last two;
    all in increasing omega, their fixed points without solver memory."""
    p0 = params.replace(omega=float(anchor))
    start = scalar_boundaries(p0, alphas, config=config)
    rows = [start]
    for seq in (up, down):
        prev, seeds = [start], ()
        for w in seq:
            b, seeds = next_boundaries(params.replace(omega=float(w)), alphas, prev[-2:], seeds=seeds, config=config)
            prev.append(b)
            rows.append(b)
    if whole:
        rows[0] = replace(start, positional=curves_branch(p0, alphas, start.positional, config))
    return [replace(b, semantic=_portable(b.semantic), positional=_portable(b.positional))
            for b in sorted(rows, key=lambda b: b.omega)]
