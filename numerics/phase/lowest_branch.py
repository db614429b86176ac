"""The boundary search over the model's branches at one omega, for every rank (docs/model.md sections 6-7):
every boundary located from converged fixed points of the state evolution
(:func:`~attnphase.numerics.se.state_evolution.solve`) alone.  At r = r* = 1
:func:`~attnphase.numerics.phase.boundaries.phase_boundaries` takes the scalar form's fast path instead
(:mod:`attnphase.numerics.phase.scalar_boundaries`: bifurcation eigenvalues of the agnostic branch, the fine-rule
Newton correction of alpha_c); this search is the one for r >= 2 or r* >= 2 (it runs at r = r* = 1 too:
:func:`lowest_branch_boundaries` takes any model).

* branches -- semantic, positional, and mixed when r >= 2, each followed over the alpha grid by
  warm starts (:func:`follow_branch`, what ``sweep --rank`` does); a point is *on* a branch
  when its solve converged and its label (:func:`~attnphase.numerics.se.overlaps.branch_label`)
  is the branch's;
* branch ends -- where a branch is on at one grid point and not at the next: bisection on the
  existence of a converged fixed point with the branch's label (warm-started from the nearest
  point on it, then from the embedded start), to ``end_tol``; the error is the final bracket's width,
  the kind says what the solve gave on the far side (another label, or no convergence -- which may be
  the solver's limit rather than the branch's);
* ``alpha_c`` -- where the lowest-e_t branch changes (the first change on the grid): the root of
  Delta e_t = e_t(A) - e_t(B) between the branch A lowest below and B lowest above, by
  :func:`~attnphase.numerics.roots.illinois_bracket` on solves, error = its final bracket's width;
  where B does not exist at the lower grid point, alpha_c is B's end (B is born below A);
* ``alpha_l`` -- where the lowest branch's eps_g first drops below eps_lin (the linear baseline of
  section 5 with the rank-r* teacher's h*), by the same root finder (or alpha_c, when eps_g jumps
  below eps_lin there).

A boundary not found is NaN with the reason in ``notes``.
"""

from __future__ import annotations

import math
from typing import Callable, Sequence

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundary_results import Boundaries, LocatedEnd, model_branches
from attnphase.numerics.se.starts import teacher_rank
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.state_evolution import solve
from attnphase.numerics.roots import RootNotFound, illinois_bracket
from attnphase.theory.params import ModelParams

#: Bisection tolerance of a branch end in alpha (the reported error is the final bracket's width).
END_TOL = 0.05
#: Bracket width in alpha at which alpha_c and alpha_l stop.
ROOT_TOL = 5e-3
#: How the ends and alpha_c are located (their ``method`` columns).
END_METHOD = "bisection on the existence of a converged fixed point with the branch's label; err = final bracket width"
ROOT_METHOD = "root of Delta e_t (Illinois regula falsi on solves); err = final bracket width"


def on_labelled_branch(fp: FixedPoint | None, branch: str) -> bool:
    """A converged fixed point with the label ``branch``."""
    return fp is not None and fp.status.converged and fp.branch == branch


def solve_on(params: ModelParams, alpha: float, branch: str, cfg: SolverConfig,
             near: FixedPoint | None) -> FixedPoint:
    """The fixed point on ``branch`` at alpha: warm-started from ``near`` (if given), then, where that
    did not converge onto the branch, from the embedded start; the last attempt is returned."""
    fp = solve(params, alpha, branch, config=cfg, init=near.overlaps) if near is not None else None
    if not on_labelled_branch(fp, branch):
        fp = solve(params, alpha, branch, config=cfg)
    return fp


def follow_branch(params: ModelParams, alphas: Sequence[float], branch: str, cfg: SolverConfig,
                  progress: Callable[[FixedPoint], None] | None = None) -> list[FixedPoint]:
    """``branch`` over the ascending grid, each point warm-started from the last point on the branch."""
    out, prev = [], None
    for a in sorted(alphas):
        fp = solve_on(params, float(a), branch, cfg, prev)
        if on_labelled_branch(fp, branch):
            prev = fp
        out.append(fp)
        if progress is not None:
            progress(fp)
    return out


def teacher_eps_lin(params: ModelParams, cfg: SolverConfig) -> float:
    """eps_lin of the rank-r* teacher (:func:`~attnphase.numerics.se.observables.eps_lin`): converged
    Gauss--Hermite at r* = 1, on the solve's rule at r* >= 2."""
    from attnphase.numerics.se.observables import eps_lin

    return eps_lin(params, quadrature=cfg.quadrature if params.r_star >= 2 else None)


class _Lost(RuntimeError):
    """A solve inside a root search did not converge onto its branch."""


class _Points:
    """The converged points of each branch (warm starts for later solves)."""

    def __init__(self, params: ModelParams, cfg: SolverConfig, sweeps: dict[str, list[FixedPoint]]):
        self.params, self.cfg = params, cfg
        self.on = {b: [fp for fp in pts if on_labelled_branch(fp, b)] for b, pts in sweeps.items()}

    def nearest(self, branch: str, alpha: float) -> FixedPoint | None:
        pts = self.on[branch]
        return min(pts, key=lambda fp: abs(fp.alpha - alpha)) if pts else None

    def solve(self, branch: str, alpha: float) -> FixedPoint | None:
        """The point on ``branch`` at alpha (kept), or None: warm-started from the nearest point on the
        branch below alpha and from the nearest above (nearer first), then from the embedded start."""
        below = [fp for fp in self.on[branch] if fp.alpha <= alpha]
        above = [fp for fp in self.on[branch] if fp.alpha > alpha]
        starts = [max(below, key=lambda fp: fp.alpha)] if below else []
        starts += [min(above, key=lambda fp: fp.alpha)] if above else []
        for near in sorted(starts, key=lambda fp: abs(fp.alpha - alpha)):
            fp = solve(self.params, alpha, branch, config=self.cfg, init=near.overlaps)
            if on_labelled_branch(fp, branch):
                break
        else:
            fp = solve(self.params, alpha, branch, config=self.cfg)
        if not on_labelled_branch(fp, branch):
            return None
        self.on[branch].append(fp)
        return fp

    def value(self, branch: str, alpha: float, key: Callable[[FixedPoint], float]) -> float:
        fp = self.solve(branch, alpha)
        if fp is None:
            raise _Lost(f"the {branch} branch was lost at alpha = {alpha:.4g}")
        return key(fp)


def locate_end(pts: _Points, branch: str, good: FixedPoint, bad: FixedPoint, tol: float) -> LocatedEnd:
    """Bisection between ``good`` (on the branch) and ``bad`` (not) to a bracket of width <= ``tol``."""
    lo, hi, far = good.alpha, bad.alpha, bad
    while abs(hi - lo) > tol:
        mid = 0.5 * (lo + hi)
        fp = solve_on(pts.params, mid, branch, pts.cfg, good)
        if on_labelled_branch(fp, branch):
            lo, good = mid, fp
            pts.on[branch].append(fp)
        else:
            hi, far = mid, fp
    kind = f"converges to the {far.branch} label" if far.status.converged else "no converged solve (solver failure)"
    return LocatedEnd(branch, 0.5 * (lo + hi), abs(hi - lo), "above" if hi < lo else "below", kind, END_METHOD)


def branch_ends(pts: _Points, branch: str, points: list[FixedPoint], tol: float) -> tuple[list[LocatedEnd], list[str]]:
    """Every grid interval where the branch starts or stops existing, located by :func:`locate_end`."""
    on = [on_labelled_branch(fp, branch) for fp in points]
    ends, notes = [], []
    if not any(on):
        why = "no solve converged" if not any(fp.status.converged for fp in points) else \
            "the solves converged to " + "/".join(sorted({fp.branch for fp in points if fp.status.converged})) + " labels"
        return [], [f"{branch} branch: no {branch} fixed point on the grid ({why}); no end located"]
    for i in range(len(points) - 1):
        if on[i] != on[i + 1]:
            good, bad = (points[i], points[i + 1]) if on[i] else (points[i + 1], points[i])
            ends.append(locate_end(pts, branch, good, bad, tol))
    if len(ends) > 1:
        notes.append(f"{branch} branch: {len(ends)} ends on the grid (at alpha = "
                     + ", ".join(f"{e.alpha:.3f}" for e in ends) + "); the first is in its column")
    if all(on):
        notes.append(f"{branch} branch: exists at every grid point, no end in range")
    return ends, notes


def lowest_branch(sweeps: dict[str, list[FixedPoint]], i: int) -> str:
    """The branch with the lowest e_t at grid point i among those on their branch there; "" where none is,
    or where a branch's solve did not converge (its e_t is unknown, so which branch is lowest is too)."""
    if not all(fps[i].status.converged for fps in sweeps.values()):
        return ""
    cands = [(fps[i].observables.e_t, b) for b, fps in sweeps.items() if on_labelled_branch(fps[i], b)]
    return min(cands)[1] if cands else ""


def _fp_at(fps: list[FixedPoint], branch: str, i: int) -> FixedPoint | None:
    return fps[i] if on_labelled_branch(fps[i], branch) else None


def lowest_branch_boundaries(params: ModelParams, alphas: Sequence[float], config: SolverConfig | None = None, *,
                          end_tol: float = END_TOL, root_tol: float = ROOT_TOL) -> Boundaries:
    """The boundaries of the module doc at ``params.omega`` (ranks r = params.r, r* = params.r_star)."""
    cfg = config or SolverConfig()
    grid = sorted(float(a) for a in alphas)
    sweeps = {b: follow_branch(params, grid, b, cfg) for b in model_branches(params.r)}
    pts = _Points(params, cfg, sweeps)
    ends, notes = [], []
    for b, fps in sweeps.items():
        e, n = branch_ends(pts, b, fps, end_tol)
        ends += e
        notes += n
    lowest = [lowest_branch(sweeps, i) for i in range(len(grid))]
    unknown = [f"{grid[i]:g} ({'/'.join(b for b, fps in sweeps.items() if not fps[i].status.converged)})"
               for i in range(len(grid)) if not lowest[i]]
    if unknown:
        notes.append("lowest-e_t branch unknown where a branch's solve did not converge: alpha = " + ", ".join(unknown)
                     + "; alpha_c and alpha_l are searched between the other grid points")
    c = _alpha_c(pts, sweeps, grid, lowest, ends, root_tol, notes)
    lin = teacher_eps_lin(params, cfg)
    alpha_l, alpha_l_err, l_branch = _alpha_l(pts, sweeps, grid, lowest, c, lin, root_tol, notes)
    curves = {b: tuple((fp.alpha, on_labelled_branch(fp, b), fp.observables.e_t, fp.observables.eps_g) for fp in fps)
              for b, fps in sweeps.items()}
    first = {b: next((e for e in ends if e.branch == b), None) for b in model_branches(params.r)}
    columns = {}
    for b, e in first.items():
        columns |= {f"{b}_end": e.alpha if e else math.nan, f"{b}_end_err": e.err if e else math.nan,
                    f"{b}_end_kind": e.kind if e else "", f"{b}_end_method": e.method if e else ""}
    alpha_c, alpha_c_err, c_from, c_to, c_method = c
    return Boundaries(omega=params.omega, alpha_c=alpha_c, alpha_l=alpha_l, notes=tuple(notes), alpha_c_err=alpha_c_err,
                      alpha_l_err=alpha_l_err, r=params.r, r_star=teacher_rank(params), alpha_c_from=c_from,
                      alpha_c_to=c_to, alpha_c_method=c_method, alpha_l_branch=l_branch, eps_lin=lin,
                      ends=tuple(ends), curves=curves, **columns)


def _alpha_c(pts: _Points, sweeps, grid, lowest, ends, tol, notes) -> tuple[float, float, str, str, str]:
    """(alpha_c, err, from, to, method) at the first change of the lowest branch on the grid that is a
    boundary: both branches on at both grid points (a root of Delta e_t), or one of them starting or
    ending there by a change of label; a change where a branch's solves stop converging is noted and
    passed over (the solver's limit, not a crossing)."""
    known = [i for i in range(len(grid)) if lowest[i]]
    changes = [(i, j) for i, j in zip(known, known[1:]) if lowest[i] != lowest[j]]
    if not changes:
        present = sorted(set(lowest) - {""})
        notes.append(f"alpha_c: the lowest-e_t branch is {'/'.join(present) or 'unknown'} at every grid point of "
                     f"[{grid[0]:g}, {grid[-1]:g}] where it is known: no change in range")
    found = None
    for i, j in changes:
        A, B = lowest[i], lowest[j]
        a, b = grid[i], grid[j]
        if found is not None:
            notes.append(f"alpha_c: the lowest-e_t branch changes again, {A} -> {B} in [{a:g}, {b:g}]")
            continue
        missing = B if _fp_at(sweeps[B], B, i) is None else A if _fp_at(sweeps[A], A, j) is None else ""
        if missing:
            end = next((e for e in ends if e.branch == missing and a <= e.alpha <= b), None)
            if end is None or not end.kind.startswith("converges"):
                why = "its end was not located" if end is None else f"its solves stop converging at {end.alpha:.4g}"
                notes.append(f"alpha_c: {A} -> {B} in [{a:g}, {b:g}] is not a boundary: the {missing} branch is "
                             f"not on at alpha = {a if missing == B else b:g} and {why}")
                continue
            notes.append(f"alpha_c: the {missing} branch {'starts' if missing == B else 'ends'} at its end "
                         f"({end.kind}) while {'below ' + A if missing == B else 'the lowest'}")
            found = (end.alpha, end.err, A, B, f"end of the {missing} branch ({END_METHOD})")
            continue

        def delta(x: float) -> float:
            return pts.value(A, x, lambda fp: fp.observables.e_t) - pts.value(B, x, lambda fp: fp.observables.e_t)

        fa = sweeps[A][i].observables.e_t - sweeps[B][i].observables.e_t
        fb = sweeps[A][j].observables.e_t - sweeps[B][j].observables.e_t
        try:
            x, lo, hi = illinois_bracket(delta, a, b, fa, fb, tol)
        except (_Lost, RootNotFound) as exc:
            notes.append(f"alpha_c: {A} -> {B} in [{a:g}, {b:g}], root not found: {exc}")
            continue
        notes.append(f"alpha_c: Delta e_t = e_t({A}) - e_t({B}) = {fa:.2e} at alpha = {a:g}, {fb:.2e} at {b:g}")
        found = (x, hi - lo, A, B, ROOT_METHOD)
    return found or (math.nan, math.nan, "", "", "")


def _alpha_l(pts: _Points, sweeps, grid, lowest, c, lin, tol, notes) -> tuple[float, float, str]:
    """(alpha_l, err, branch): the first drop of the lowest branch's eps_g below eps_lin."""
    gap = [sweeps[b][i].observables.eps_g - lin if b else math.nan for i, b in enumerate(lowest)]
    idx = [i for i in range(len(grid)) if lowest[i]]
    if not idx:
        notes.append("alpha_l: the lowest branch is known at no grid point")
        return math.nan, math.nan, ""
    if gap[idx[0]] <= 0:
        notes.append(f"alpha_l: eps_g of the lowest branch ({lowest[idx[0]]}) is below eps_lin already at alpha = "
                     f"{grid[idx[0]]:g}, the first grid point where the lowest branch is known")
        return math.nan, math.nan, ""
    drop = next((k for k in range(len(idx) - 1) if gap[idx[k]] > 0 >= gap[idx[k + 1]]), None)
    if drop is None:
        notes.append(f"alpha_l: eps_g of the lowest branch stays above eps_lin = {lin:.6g} up to alpha = {grid[idx[-1]]:g}")
        return math.nan, math.nan, ""
    i, j = idx[drop], idx[drop + 1]
    A, B = lowest[i], lowest[j]
    try:
        if A == B:
            return _eps_root(pts, A, grid[i], grid[j], gap[i], gap[j], lin, tol) + (A,)
        xc, errc = c[0], c[1]
        if not (math.isfinite(xc) and grid[i] <= xc <= grid[j]):
            notes.append(f"alpha_l: the lowest branch changes {A} -> {B} in [{grid[i]:g}, {grid[j]:g}] "
                         "without a located alpha_c there")
            return math.nan, math.nan, ""
        gA = pts.value(A, xc, lambda fp: fp.observables.eps_g) - lin if pts.nearest(A, xc) else math.inf
        if gA <= 0:
            return _eps_root(pts, A, grid[i], xc, gap[i], gA, lin, tol) + (A,)
        gB = pts.value(B, xc, lambda fp: fp.observables.eps_g) - lin
        if gB <= 0:
            notes.append(f"alpha_l = alpha_c: eps_g jumps below eps_lin where {B} becomes the lowest branch")
            return xc, errc, B
        return _eps_root(pts, B, xc, grid[j], gB, gap[j], lin, tol) + (B,)
    except (_Lost, RootNotFound) as exc:
        notes.append(f"alpha_l: root not found: {exc}")
        return math.nan, math.nan, ""


def _eps_root(pts: _Points, branch: str, a: float, b: float, ga: float, gb: float, lin: float,
              tol: float) -> tuple[float, float]:
    x, lo, hi = illinois_bracket(lambda t: pts.value(branch, t, lambda fp: fp.observables.eps_g) - lin, a, b, ga, gb, tol)
    return x, hi - lo

