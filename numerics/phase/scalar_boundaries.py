"""The phase boundaries of docs/model.md section 6 at one omega, rank r = r* = 1: the fast path of
:func:`~attnphase.numerics.phase.boundaries.phase_boundaries` (docs/method.md sections 5-7).

The two branches are followed by continuation (:func:`~attnphase.numerics.phase.continuation.sweep`):

* ``alpha_c`` -- root of Delta e_t(alpha) = e_t(semantic) - e_t(positional) by safeguarded Newton steps (slope
  Delta E[M]), corrected by Newton steps with E[M] on a finer rule
  (:func:`~attnphase.numerics.phase.boundary_refinement.refine_alpha_c`);
* ``alpha_l`` -- the smallest alpha >= alpha_c where the semantic eps_g drops below eps_lin, by Brent's method,
  refined on a finer rule (:func:`~attnphase.numerics.phase.boundary_refinement.refine_alpha_l`);
* branch ends -- :mod:`attnphase.numerics.phase.branch_end`.

Every evaluation is a fixed point warm-started from the nearest converged point of the same branch (a cold start
last); a boundary not bracketed on the grid is searched for beyond it (:mod:`attnphase.numerics.phase.brackets`), one
still not found is NaN with the reason in the notes.  Every boundary carries its standard error from the rules'
scrambling blocks (:mod:`attnphase.numerics.errors.replicates`).
"""

from __future__ import annotations

import math
from dataclasses import replace
from functools import partial
from typing import Callable, Sequence

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.grids import even_grid
from attnphase.numerics.parallel import without_memory
from attnphase.numerics.phase.absence import absence_note
from attnphase.numerics.phase.boundary_refinement import (alpha_c_method, alpha_l_interval, corrected_alpha_c,
                                                            global_alpha_l, refined_alpha_l)
from attnphase.numerics.phase.boundary_results import Boundaries, LocatedEnd, end_columns, exists_side
from attnphase.numerics.phase.brackets import (
    ALPHA_LIMIT, STEP_ASIDE, BranchLost, delta_bracket, delta_e_t, extend_branch, first_solvable, grid_extension,
    grow_alpha_c_down, grow_alpha_c_up, positional_grid,
)
from attnphase.numerics.phase.branch_end import end_note, on_branch, overlap_size
from attnphase.numerics.phase.continuation import BranchSweep, solve_from, sweep
from attnphase.numerics.phase.gauge_orbits import orbit_key, same_point
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.roots import RootNotFound, brent_root, safeguarded_newton
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.state_evolution import FixedPoint, solve
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: The alpha grid where none is given: 12 points on [0.1, 3].
DEFAULT_ALPHAS = tuple(even_grid("0.1", "3", 12))

#: The notes on an alpha_l found where no alpha_c is (replaced once an alpha_c is located: :mod:`lowest_point_change`).
ALPHA_L_BELOW_AT_START = "alpha_l: semantic eps_g already below eps_lin at the lower end of the range"
ALPHA_L_WITHOUT_ALPHA_C = "alpha_l: with no alpha_c, where the semantic eps_g meets eps_lin on its branch"
#: The note on alpha_l where no semantic point converged on the grid (alpha_l lies on the semantic branch).
ALPHA_L_NO_SEMANTIC = "alpha_l: no semantic point found (alpha_l is where the semantic eps_g drops below eps_lin)"

#: The tolerances of :func:`~attnphase.numerics.phase.boundaries.phase_boundaries` at r = r* = 1: alpha_c and alpha_l
#: in alpha; a branch end found by bisection.
XTOL, BISECTION_TOL = 1e-4, 1e-3


def scalar_boundaries(params: ModelParams, alphas: Sequence[float] | None = None, *, config: SolverConfig | None = None,
                      xtol: float = XTOL, bisection_tol: float = BISECTION_TOL) -> Boundaries:
    """alpha_c, alpha_l and the branch ends at ``params.omega`` over the alpha grid ``alphas`` (module doc; the
    arguments as :func:`~attnphase.numerics.phase.boundaries.phase_boundaries`'s).  ``config.alpha_c_quadrature``
    None keeps alpha_c on the solve rule (``alpha_c_coarse`` equals it)."""
    alphas = DEFAULT_ALPHAS if alphas is None else alphas
    cfg = config or SolverConfig()
    params = se_params(params)  # correlated tokens: their whitened form (docs/model.md section 7)
    rule = model_rule(params, cfg)
    kw = dict(config=cfg, bisection_tol=bisection_tol, past_end=False)
    sem = sweep(params, alphas, "semantic", **kw)
    pos = positional_below(params, alphas, sweep(params, positional_grid(alphas, sem), "positional", **kw), kw)
    pos, lower_note = lower_positional(params, alphas, pos, rule, kw)
    notes: list[str] = [lower_note] if lower_note else []
    beyond = grid_extension(max(alphas))
    if beyond and math.isnan(pos.end.alpha):
        # the positional end lies above the grid, if anywhere: follow the branch on up to ALPHA_LIMIT
        pos, ext_note = extend_branch(params, pos, beyond, kw)
        notes += [ext_note] if ext_note else []
    if beyond and not sem.on_branch():
        sem = semantic_above(params, sem, max(alphas), beyond, kw)
    for sw in (sem, pos):
        if sw.end.kind == "solver failure":
            notes.append(f"{sw.branch} end at {sw.end.alpha:.3f} found by solver failure (may be numerical)")
        if sw.end.note:
            notes.append(end_note(sw.branch, sw.end))
        said = any(n.startswith(f"{sw.branch} branch followed up to") for n in notes)
        if math.isnan(sw.end.alpha) and sw.on_branch() and not said:  # NaN end: say why (it spans the grid)
            notes.append(f"{sw.branch} end: none in [{min(alphas):g}, {max(alphas):g}] (the branch exists on the whole grid)")
    s_on, p_on = sem.on_branch(), pos.on_branch()  # fresh lists: on_branch_solve adds its points to them
    solved = {"semantic": s_on, "positional": p_on}

    def on_branch_solve(branch: str, alpha: float) -> FixedPoint:
        # from the nearest converged point, the next nearest (on the other side where there is one), then cold (a
        # warm start can stall where the branch has two close pieces); a point already solved at alpha is reused
        pts = solved[branch]
        ranked = sorted(pts, key=lambda p: abs(p.alpha - alpha))
        if ranked and ranked[0].alpha == alpha:
            return ranked[0]
        tries = ranked[:1] + [p for p in ranked[1:] if (p.alpha - alpha) * (ranked[0].alpha - alpha) < 0][:1]
        tries += [p for p in ranked[1:2] if len(tries) < 2]
        for near in [*tries, None]:
            fp = solve_from(params, alpha, branch, near, cfg, rule)
            if fp.status.converged and fp.branch == branch:
                break
        else:
            raise BranchLost(f"{branch} branch lost at alpha = {alpha:.5f} ({fp.status.message}, label {fp.branch})")
        pts.append(fp)  # root-finding iterates close in: later evaluations start nearer
        return fp

    # alpha_c: sign change of Delta e_t on the common grid
    alpha_c = math.nan
    # a branch with no point on it: absent (with its evidence) or solver failure
    notes += [absence_note(sw.points, sw.branch, rule, cfg) for sw, on in ((sem, s_on), (pos, p_on)) if not on]
    grown: list[bool] = []

    def grow_semantic() -> bool:
        # once: the semantic branch followed up from the grid's top to ALPHA_LIMIT
        nonlocal sem
        if not grown:
            before = len(sem.points)
            sem, _ = extend_branch(params, sem, beyond, kw) if beyond else (sem, "")
            s_on.extend(p for p in sem.points[before:] if on_branch(p, "semantic"))
            grown.append(len(sem.points) > before)
        return grown[0]

    d_et = partial(delta_e_t, on_branch_solve)
    if s_on and p_on and not ({p.alpha for p in s_on} & {p.alpha for p in p_on}):
        fill_positional(s_on, p_on, pos.end.on_solve_rule, on_branch_solve)
    if s_on and p_on and not ({p.alpha for p in s_on} & {p.alpha for p in p_on}):
        fill_overlap(s_on, p_on, sem.end.on_solve_rule, pos.end.on_solve_rule, on_branch_solve)
    delta, bracket = delta_bracket(s_on, p_on)
    if bracket is None and delta and all(d > 0 for _, d in delta) and pos.end.on_solve_rule > delta[-1][0]:
        # positional lower on the common grid, the positional branch reaching above its highest point
        bracket = grow_alpha_c_up(d_et, *delta[-1], pos.end.on_solve_rule,
                                   [p.alpha for p in s_on if delta[-1][0] < p.alpha < pos.end.on_solve_rule])
    if bracket is None and delta and all(d > 0 for _, d in delta) and beyond:
        grow_semantic()  # positional lower on the whole grid: alpha_c lies above it, if anywhere
        delta, bracket = delta_bracket(s_on, p_on)
    if bracket is None and delta and all(d <= 0 for _, d in delta) and sem.end.on_solve_rule < delta[0][0]:
        # semantic lower on the common grid, the semantic branch reaching below its lowest point
        bracket = grow_alpha_c_down(d_et, sem.end.on_solve_rule, *delta[0])
    if bracket is not None:
        (a0, d0), (a1, d1) = bracket
        try:
            alpha_c = safeguarded_newton(d_et, a0, a1, d0, d1, xtol, aside=STEP_ASIDE, failure=BranchLost)
        except (BranchLost, RootNotFound) as exc:
            notes.append(f"alpha_c: {exc}")
    elif delta:
        sign = "semantic lower" if all(d <= 0 for _, d in delta) else "positional lower"
        notes.append(f"alpha_c outside the range where both branches exist ({sign} throughout"
                     + (f", searched up to alpha = {delta[-1][0]:.3g}, limit {ALPHA_LIMIT:g})" if any(grown) else ")"))
        if all(d <= 0 for _, d in delta) and not math.isnan(sem.end.alpha):
            notes.append("the semantic branch is the global minimum wherever it exists")
    else:
        notes.append("alpha_c: the branches never coexist on the grid")
    alpha_c_coarse, alpha_c_err = alpha_c, math.nan
    if math.isfinite(alpha_c):
        try:
            alpha_c, note, alpha_c_err = corrected_alpha_c(alpha_c, s_on, p_on, on_branch_solve, cfg)
        except BranchLost as exc:
            note = f"alpha_c: {cfg.alpha_c_quadrature} correction not applied ({exc}); the value is the solve rule's root"
        notes += [note] if note else []
    # alpha_l: semantic eps_g meets eps_lin, at or above alpha_c
    alpha_l, lost = math.nan, None
    if s_on:
        eps_lin = s_on[0].observables.eps_lin
        lo = alpha_c if not math.isnan(alpha_c) else None
        cand = sorted((p for p in s_on if lo is None or p.alpha >= lo), key=lambda p: p.alpha)
        diff: list[tuple[float, float]] | None = [(p.alpha, p.observables.eps_g - eps_lin) for p in cand]

        def gap(a: float) -> float:
            return on_branch_solve("semantic", a).observables.eps_g - eps_lin
        if lo is not None:  # the first sample at alpha_c, or a little above where the solve stalls there
            first = first_solvable(gap, lo, diff[0][0] if diff else lo + 0.1)
            if first is None:
                notes.append("alpha_l: the semantic branch is lost at alpha_c")
                diff = None
            elif first[1] <= 0 and first[0] != lo:
                notes.append(f"alpha_l: the semantic branch is lost at alpha_c; eps_g is below eps_lin "
                             f"from alpha = {first[0]:.4f}")
                diff = None
            else:
                diff = [first] + diff
        if diff and diff[0][1] <= 0:
            alpha_l = diff[0][0] if lo is not None else math.nan
            if lo is None:
                notes.append(ALPHA_L_BELOW_AT_START)
        elif diff is not None:
            if diff and all(d > 0 for _, d in diff) and grow_semantic():
                # eps_g still above eps_lin at the top: the semantic branch followed on up
                diff = sorted(diff + [(p.alpha, p.observables.eps_g - eps_lin) for p in s_on if p.alpha > diff[-1][0]])
            br = next(((a0, a1) for (a0, d0), (a1, d1) in zip(diff, diff[1:]) if d0 > 0 >= d1), None)
            if br is None:
                top = max(a for a, _ in diff) if diff else math.nan
                notes.append(f"alpha_l: semantic eps_g stays above eps_lin up to alpha = {top:.3g}"
                             + (f" (search limit {ALPHA_LIMIT:g})" if any(grown) else ""))
            else:
                try:
                    alpha_l = brent_root(gap, *br, xtol)
                except BranchLost as exc:
                    lost = alpha_l_interval(s_on, eps_lin, *br, exc)
                if lo is None and math.isfinite(alpha_l) and delta and all(d > 0 for _, d in delta):
                    alpha_l, note = global_alpha_l(on_branch_solve, alpha_l, eps_lin)
                    notes += [note] if note else []
                if lo is None and (math.isfinite(alpha_l) or lost):
                    notes.append(f"{ALPHA_L_WITHOUT_ALPHA_C} (not measured from alpha_c)")
    else:
        notes.append(ALPHA_L_NO_SEMANTIC)
    alpha_l, alpha_l_err, note = lost or refined_alpha_l(s_on, alpha_l, alpha_c, alpha_c_err, cfg)
    notes += [note] if note else []
    return with_scalar_labels(Boundaries(
        omega=params.omega, alpha_c=alpha_c, alpha_l=alpha_l, notes=tuple(notes), alpha_c_coarse=alpha_c_coarse,
        semantic=sem, positional=pos, alpha_c_err=alpha_c_err, alpha_l_err=alpha_l_err,
        **end_columns("semantic", sem.end), **end_columns("positional", pos.end)), cfg)


def positional_below(params: ModelParams, alphas: Sequence[float], pos: BranchSweep, kw: dict) -> BranchSweep:
    """``pos`` (the positional branch followed from the first grid point above the semantic end,
    :func:`~attnphase.numerics.phase.brackets.positional_grid`), where none of its points is on the branch, with the
    branch followed up over the grid below and its end located there (``--lam 0.001 --omega 0.45``: absent above
    the semantic end at 1.28, on up to 0.60); unchanged where it has a point on the branch or the grid below has
    none."""
    first = min((p.alpha for p in pos.points), default=math.inf)
    below = [float(a) for a in sorted(alphas) if a < first]
    if pos.on_branch() or not below:
        return pos
    low = sweep(params, below + [first], "positional", **kw)  # up to the first point above: the end's bracket
    on = [p for p in low.on_branch() if p.alpha < first]
    return BranchSweep("positional", on + pos.points, low.end, low.end_side) if on else pos


def lower_positional(params: ModelParams, alphas: Sequence[float], pos: BranchSweep, rule: QuadratureRule,
                     kw: dict) -> tuple[BranchSweep, str]:
    """(``pos``, "") or, where the positional family has two branches and ``pos`` follows the higher, (the lower one
    followed over ``pos``'s grid, a note saying so).  ``pos`` starts cold at its first grid point alpha_s; where its
    point there lies above the agnostic point in e_t (a positional point below it is what a bifurcation from it gives)
    the branch is also followed up from the grid's start to alpha_s, and where that reaches a different point, lower
    in e_t, the sweep starts from it (``--A "0.9,0.1;0.5,0.5" --omega 0.45``: |m| 0.365 cold at alpha = 3, e_t
    5e-4 above the agnostic point; |m| 0.534 followed up, below both it and the semantic point)."""
    on = pos.on_branch()
    first = on[0] if on else None
    below = [float(a) for a in sorted(alphas) if first is not None and a < first.alpha]
    if first is None or first.alpha != min(p.alpha for p in pos.points) or not below:
        return pos, ""
    cfg = kw["config"]
    agn = solve(params, first.alpha, "agnostic", config=cfg, rule=rule)
    if not on_branch(agn, "agnostic") or first.observables.e_t <= agn.observables.e_t:
        return pos, ""
    low = sweep(params, below + [first.alpha], "positional", **kw)
    other = next((p for p in low.on_branch() if p.alpha == first.alpha), None)
    if (other is None or other.observables.e_t >= first.observables.e_t
            or same_point(orbit_key(params, other), orbit_key(params, first))):
        return pos, ""
    grid = [p.alpha for p in pos.points if p.alpha >= first.alpha]
    alt = sweep(params, grid, "positional", start=other, **kw)
    return alt, (f"positional: two branches at alpha = {first.alpha:.4g}: the cold start's (|m| = "
                 f"{overlap_size(first, 'm'):.3g}, e_t {first.observables.e_t:.6g}, above the agnostic point's "
                 f"{agn.observables.e_t:.6g}) and, lower, the one followed up from alpha = {below[0]:.4g} (|m| = "
                 f"{overlap_size(other, 'm'):.3g}, e_t {other.observables.e_t:.6g}): the lower one followed")


def semantic_above(params: ModelParams, sem: BranchSweep, top: float, beyond: list[float], kw: dict) -> BranchSweep:
    """``sem`` (a semantic sweep none of whose points on the grid up to ``top`` is on the branch) with the branch
    followed down from its cold start at the last alpha of ``beyond`` to ``top`` and its end located there: where a
    strong ridge holds the branch above the grid (``--lam 0.1 --omega 0.4``: on at alpha = 6 and 10, born between
    them and 3); ``sem`` unchanged where no point above the grid is on the branch."""
    ext = sweep(params, [top, *beyond], "semantic", **kw)
    above = [p for p in ext.on_branch() if p.alpha > top]
    return BranchSweep("semantic", sem.points + above, ext.end, ext.end_side) if above else sem


def with_scalar_labels(b: Boundaries, config: SolverConfig) -> Boundaries:
    """``b`` with the columns every rank shares filled in from its two sweeps: alpha_c between positional and
    semantic and how it was located (:func:`alpha_c_method`), alpha_l on the semantic branch, eps_lin, and both
    branch ends."""
    found = math.isfinite(b.alpha_c)
    method = alpha_c_method(config, b.alpha_c_err) if found else ""
    points = [p for sw in (b.semantic, b.positional) if sw is not None for p in sw.points if p.status.converged]
    ends, sides = [], {}
    for sw, default in ((b.semantic, "above"), (b.positional, "below")):
        if sw is not None and math.isfinite(sw.end.alpha):
            exists = exists_side(sw.end_side) or default
            ends.append(LocatedEnd(sw.branch, sw.end.alpha, sw.end.err, exists, sw.end.kind, sw.end.method))
            if getattr(b, f"{sw.branch}_end") == sw.end.alpha:
                sides[f"{sw.branch}_end_exists"] = exists
    return replace(b, r=1, r_star=1, alpha_c_from="positional" if found else "", alpha_c_to="semantic" if found else "",
                   alpha_c_method=method, alpha_l_branch="semantic" if math.isfinite(b.alpha_l) else "",
                   eps_lin=points[0].observables.eps_lin if points else math.nan, ends=tuple(ends), **sides)


def fill_positional(s_on: list[FixedPoint], p_on: list[FixedPoint], end: float,
                    on_branch_solve: Callable[[str, float], FixedPoint]) -> None:
    """The positional branch at the semantic grid points below its end, where the sweep left none in common (its end
    found ahead by the eigenvalue, the grid points in between dropped): each solved from the nearest positional
    point, up from the lowest, until one is lost (``p_on`` grows)."""
    for a in sorted(p.alpha for p in s_on if p.alpha > min(q.alpha for q in p_on) and p.alpha < end):
        try:
            on_branch_solve("positional", a)
        except BranchLost:
            break


#: Points :func:`fill_overlap` solves both branches at.
OVERLAP_POINTS = 3


def fill_overlap(s_on: list[FixedPoint], p_on: list[FixedPoint], sem_end: float, pos_end: float,
                 on_branch_solve: Callable[[str, float], FixedPoint], n: int = OVERLAP_POINTS) -> None:
    """Both branches inside the alpha range where they coexist, where the grid still has no point of both (a
    semantic sweep that stopped converging a grid step above its end, a positional end between two grid points):
    at ``n`` alphas evenly inside (max(``sem_end``, the lowest positional point), min(``pos_end``, the lowest
    semantic point)) -- NaN ends bound nothing -- the semantic branch solved down from its nearest point, the
    positional one up from its (``s_on`` and ``p_on`` grow; a solve that loses its branch is skipped)."""
    lo = max(sem_end if math.isfinite(sem_end) else -math.inf, min(p.alpha for p in p_on))
    hi = min(pos_end if math.isfinite(pos_end) else math.inf, min(p.alpha for p in s_on))
    if not lo < hi:
        return
    inside = [lo + (hi - lo) * (k + 1) / (n + 1) for k in range(n)]
    for branch, order in (("semantic", inside[::-1]), ("positional", inside)):
        for a in order:
            try:
                on_branch_solve(branch, a)
            except BranchLost:
                continue


def whole_positional_branch(params: ModelParams, grid: list[float], pos: BranchSweep,
                            config: SolverConfig | None = None) -> BranchSweep:
    """``pos`` (the positional branch as phase boundaries follow it) with the points of ``grid`` below its first
    point added: a sweep down from its lowest converged point (warm steps down converge where a cold sweep up from
    the grid's start fails), stopping where the branch ends; a cold sweep up where it has none."""
    first = min((p.alpha for p in pos.points), default=math.inf)
    lower = [a for a in grid if a < first]
    if not lower:
        return pos
    on = pos.on_branch()
    start = on[0] if on and on[0].alpha == first else None
    low = sweep(params, lower, "positional", config=config, direction=None if start is None else "down", start=start,
                past_end=False)
    return BranchSweep(pos.branch, low.points + pos.points, pos.end, pos.end_side)


def curves_branch(params: ModelParams, alphas: Sequence[float] | None, pos: BranchSweep,
                  config: SolverConfig | None = None) -> BranchSweep:
    """The positional branch the curves' figure draws: the whole branch on the grid
    (:func:`whole_positional_branch`), refined between its points up to the grid's end (:func:`refined_branch`)."""
    grid = sorted(float(a) for a in (DEFAULT_ALPHAS if alphas is None else alphas))
    return refined_branch(params, whole_positional_branch(params, grid, pos, config), config, upto=grid[-1])


#: Points the curves' figure adds between two neighbouring points of the positional branch on the grid.
CURVE_REFINEMENT = 2


def refined_branch(params: ModelParams, sw: BranchSweep, config: SolverConfig | None = None, *,
                   upto: float = math.inf) -> BranchSweep:
    """``sw`` with CURVE_REFINEMENT points added between each two neighbouring points on the branch up
    to ``upto`` (one that leaves the branch is dropped), so that a figure draws the branch as a curve; the
    points in increasing alpha, no per-point errors.  The point at alpha = (1 - t) alpha_lo + t alpha_hi starts from
    the overlaps interpolated alike, (1 - t) x_lo + t x_hi (admissible: the set q0 > 0, V0 > 0, th0^2 < q0 rho0 is
    convex), with the lower point's solver memory."""
    on = [p for p in sw.on_branch() if p.alpha <= upto]
    if len(on) < 2:
        return sw
    cfg = config or SolverConfig()
    p = se_params(params)
    rule = model_rule(p, cfg)
    added = []
    for lo, hi in zip(on, on[1:]):
        x_lo, x_hi = lo.overlaps.to_vector(), hi.overlaps.to_vector()
        for k in range(1, CURVE_REFINEMENT + 1):
            t = k / (CURVE_REFINEMENT + 1)
            fp = solve(p, lo.alpha + (hi.alpha - lo.alpha) * t, sw.branch,
                       init=type(lo.overlaps).from_vector(x_lo + (x_hi - x_lo) * t), memory=lo.memory, config=cfg,
                       rule=rule)
            if on_branch(fp, sw.branch):
                added.append(fp)
    return replace(sw, points=sorted(sw.points + added, key=lambda q: q.alpha), errors=())


def _portable(sw: BranchSweep | None) -> BranchSweep | None:
    if sw is None:
        return None
    end = replace(sw.end, points=tuple(without_memory(p) for p in sw.end.points))
    others = tuple(None if p is None else without_memory(p) for p in sw.others)
    return replace(sw, points=[without_memory(p) for p in sw.points], end=end, others=others)
