"""The phase boundaries at one omega from the global minimum, for every rank (docs/model.md sections 6-7): every
boundary located from converged fixed points of the state evolution
(:func:`~attnphase.numerics.se.state_evolution.solve`) alone.  At r = r* = 1
:func:`~attnphase.numerics.phase.boundaries.phase_boundaries` takes the scalar form's fast path instead
(:mod:`attnphase.numerics.phase.scalar_boundaries`: bifurcation eigenvalues of the agnostic branch, the fine-rule
Newton correction of alpha_c); this search is the one for r >= 2 or r* >= 2 (it runs at r = r* = 1 too:
:func:`lowest_branch_boundaries` takes any model).

* branches -- every fixed point the census finds, continued along the alpha grid
  (:mod:`attnphase.numerics.phase.census_continuation`: censuses at the grid's ends and where the lowest branch
  or the set of branches changes between neighbouring grid points, branches followed by warm starts, several branches
  of one label numbered, ``mixed#1``, ``mixed#2``, and described by their gauge invariants in the notes), with
  every birth and end located by bisection on existence;
* the global minimum at a grid point -- the branch of lowest e_t among those on there
  (e_t = min over the fixed points found); unknown where no census start and no followed branch converged;
* its changes -- between neighbouring grid points where the lowest branch differs, A below and B above
  (:func:`global_minimum_changes`): where both are on at both points, the root of
  Delta e_t = e_t(A) - e_t(B) by :func:`~attnphase.numerics.roots.illinois_bracket` on solves along the two
  branches (error = its final bracket's width); where B is born in between, its birth (when it is born from A, or
  lies below A where it is first found; else the root of Delta e_t above the birth); where A ends in between, its
  end (or the root of Delta e_t below it, where B lies below A at A's last point);
* ``alpha_c`` -- the first change of the global minimum from a positional or agnostic point to a semantic or
  mixed one (a change between two positional points, or from the agnostic to the positional one, is none), with
  the two branches (``alpha_c_from``, ``alpha_c_to``) and how it was located (``alpha_c_method``); every other
  change is in the notes;
* ``alpha_l`` -- where the global minimum's eps_g first drops below eps_lin (the linear baseline of section 5
  with the rank-r* teacher's h*), by the same root finder (or alpha_c, when eps_g jumps below eps_lin there).

A boundary not found is NaN with the reason in ``notes``: no change on the grid (absence) is told apart from
grid points where nothing converged (solver failure).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.errors.replicates import linearised_root_error
from attnphase.numerics.phase.boundary_results import Boundaries, CurvePoint, LocatedEnd, model_branches
from attnphase.numerics.phase.census_continuation import (END_TOL, MAX_CENSUS, Branch, BranchCensus, Continuation)
from attnphase.numerics.phase.census_separation import (A_SIDE, B_SIDE, UNSETTLED, Separation, SignSample, hugs_zero,
                                                         root_error, separation, settle_interval)
from attnphase.numerics.phase.gauge_orbits import paired_difference, within_errors
from attnphase.numerics.se.starts import teacher_rank
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.roots import RootNotFound, illinois_bracket
from attnphase.theory.params import ModelParams

#: Bracket width in alpha at which alpha_c and alpha_l stop.
ROOT_TOL = 5e-3
#: How alpha_c is located where the two branches cross (its ``method`` column).
ROOT_METHOD = "root of Delta e_t (Illinois regula falsi on solves); err = final bracket width"
#: ... and where the rule's blocks give its standard error.
ROOT_ERR_METHOD = ("root of Delta e_t (Illinois regula falsi on solves); err = hypot(the rule's standard error from "
                   "{n} blocks linearised at the root, {se:.2g}; the final bracket width, {width:.2g})")
#: The labels of the points the global minimum leaves at alpha_c.
UNORDERED = ("positional", "agnostic")


def teacher_eps_lin(params: ModelParams, cfg: SolverConfig) -> float:
    """eps_lin of the rank-r* teacher (:func:`~attnphase.numerics.se.observables.eps_lin`): converged
    Gauss--Hermite at r* = 1, on the solve's rule at r* >= 2."""
    from attnphase.numerics.se.observables import eps_lin

    return eps_lin(params, quadrature=cfg.quadrature if params.r_star >= 2 else None)


class _Lost(RuntimeError):
    """A solve inside a root search did not converge onto its branch."""


@dataclass(frozen=True)
class Change:
    """A change of the global minimum from branch ``frm`` to ``to`` at ``alpha`` +- ``err``, located by ``method``,
    in the grid interval ``interval``."""

    alpha: float
    err: float
    frm: str
    to: str
    method: str
    interval: tuple[float, float]
    separations: tuple[Separation, ...] = ()

    @property
    def established(self) -> bool | None:
        """Whether the rule tells the two branches apart at a grid point beside the change (the lower one on each
        side known to be lower): True where it does on every side measured, False where it does on none and fails on
        one, None otherwise (no paired error)."""
        seen = [s.distinguishable for s in self.separations]
        return True if seen and all(seen) else False if False in seen and True not in seen else None


def flank_separations(cont: Continuation, A: Branch, B: Branch, a: float, b: float) -> tuple[Separation, ...]:
    """Delta e_t between A and B with its paired error at the grid points a (A lowest) and b (B lowest), where
    both are on (:mod:`~attnphase.numerics.phase.census_separation`)."""
    out = []
    for x, low, up in ((a, A, B), (b, B, A)):
        if low.on(x) and up.on(x):
            out.append(separation(cont.replicas(low.points[x]), cont.replicas(up.points[x]), (low.name, up.name)))
    return tuple(out)


def _value(cont: Continuation, br: Branch, alpha: float, key: Callable[[FixedPoint], float]) -> float:
    fp, _, _ = cont.solve_on(br, alpha)
    if fp is None:
        raise _Lost(f"the {br.name} branch was lost at alpha = {alpha:.4g}")
    return key(fp)


def _e_t(fp: FixedPoint) -> float:
    return fp.observables.e_t


def _sample(cont: Continuation, A: Branch, B: Branch, x: float) -> SignSample:
    """Delta e_t = e_t(A) - e_t(B) at x with its paired error over the rule's blocks (:class:`SignSample`), and whether
    the two points are one at the rule (where the error does not tell them apart).  At a grid point a branch not on is
    absent (the continuation followed it there); off the grid both are solved warm, and a failed solve leaves the
    sample not settled (solver failure is never taken for absence)."""
    x = float(x)
    if x in cont.grid:
        pa, pb = A.points.get(x), B.points.get(x)
        if (pa is None) != (pb is None):
            return SignSample(x, math.nan, math.nan, absent="A" if pa is None else "B")
    else:
        pa, pb = cont.solve_on(A, x)[0], cont.solve_on(B, x)[0]
    if pa is None or pb is None:
        return SignSample(x, math.nan, math.nan)
    ra, rb = cont.replicas(pa), cont.replicas(pb)
    delta, err, _ = paired_difference(rb, ra)  # e_t(A) - e_t(B)
    sample = SignSample(x, delta, err)
    if sample.side == UNSETTLED:
        sample = replace(sample, same=within_errors(ra, rb))
    return sample


def _flank_samples(cont: Continuation, A: Branch, B: Branch, a: float, b: float) -> list[SignSample]:
    """Samples at a and b and, where one of them is not on its side (A's at a, B's at b), at the grid points beyond it
    until one is (or the grid ends)."""
    out = [_sample(cont, A, B, a), _sample(cont, A, B, b)]
    for side, beyond in ((A_SIDE, [g for g in reversed(cont.grid) if g < a]), (B_SIDE, [g for g in cont.grid if g > b])):
        last = out[0] if side == A_SIDE else out[1]
        for g in beyond:
            if last.side == side:
                break
            last = _sample(cont, A, B, g)
            out.append(last)
    return out


def _delta_change(cont: Continuation, A: Branch, B: Branch, a: float, b: float, tol: float,
                  edge_tol: float) -> tuple[float, float, str]:
    """Where Delta e_t = e_t(A) - e_t(B) changes sign on [a, b] (both branches on at a and b), its error and how it was
    found.  Where the rule establishes A lowest at a and B lowest at b (:func:`_flank_samples`) and no evaluation of
    the root search far from the root lies within the flanks' paired errors of 0
    (:func:`~attnphase.numerics.phase.census_separation.hugs_zero`), the root by Illinois regula falsi, its error
    hypot(the rule's standard error linearised at the root -- at the bracket's end nearest it, the bracket's secant
    slope --, the final bracket's width).  Otherwise Delta e_t hugs 0: alpha_c is the centre of the interval where its
    sign is not established at the rule (:func:`~attnphase.numerics.phase.census_separation.settle_interval`, its edges
    bisected to ``edge_tol``) and the error its half-width, which covers every root the rule allows there."""
    samples = _flank_samples(cont, A, B, a, b)
    measure = lambda x: _sample(cont, A, B, x)  # noqa: E731
    clean = samples[0].side == A_SIDE and samples[1].side == B_SIDE
    if clean:
        x, bar, method, far = _delta_root(cont, A, B, a, b, tol, max(samples[0].err, samples[1].err))
        if not far:
            return x, bar, method
        samples += [measure(t) for t in far]
    iv = settle_interval(measure, samples, edge_tol)
    if iv is not None:
        return iv.centre, iv.half_width, iv.describe()
    if not clean:  # every sample settled on a side after all
        x, bar, method, _ = _delta_root(cont, A, B, a, b, tol, math.nan)
    return x, bar, method


def _delta_root(cont: Continuation, A: Branch, B: Branch, a: float, b: float, tol: float,
                flank_err: float) -> tuple[float, float, str, list[float]]:
    """(the root of Delta e_t on [a, b] by Illinois regula falsi, its error, how it was found, on each side of it the
    evaluation nearest to it of those farther than HUG_BARS errors that lie within the flanks' paired errors of 0 --
    :func:`~attnphase.numerics.phase.census_separation.hugs_zero`)."""
    evaluations: list[tuple[float, float]] = []

    def delta(x: float) -> float:
        v = _value(cont, A, x, _e_t) - _value(cont, B, x, _e_t)
        evaluations.append((x, v))
        return v

    x, lo, hi = illinois_bracket(delta, a, b, delta(a), delta(b), tol)
    near = min((lo, hi), key=lambda t: abs(t - x))  # a root on a point tried: a zero-width bracket, the grid's slope
    slope = (delta(hi) - delta(lo)) / (hi - lo) if hi > lo else (delta(b) - delta(a)) / (b - a)
    err, n = root_error(cont.replicas(A.points[near]), cont.replicas(B.points[near]), slope)
    if not math.isfinite(err):
        bar, method = hi - lo, ROOT_METHOD + f"; the rule's error not known ({n} blocks stayed on both branches)"
    else:
        bar, method = math.hypot(err, hi - lo), ROOT_ERR_METHOD.format(n=n, se=err, width=hi - lo)
    far = hugs_zero(evaluations, x, bar, flank_err)
    nearest = [max((t for t in far if t < x), default=None), min((t for t in far if t > x), default=None)]
    return x, bar, method, [t for t in nearest if t is not None]


def _end_in(bc: BranchCensus, br: Branch, a: float, b: float, exists: str) -> LocatedEnd | None:
    return next((e for e in bc.ends if e.branch == br.name and e.exists == exists and a <= e.alpha <= b), None)


def locate_change(cont: Continuation, bc: BranchCensus, A: Branch, B: Branch, a: float, b: float,
                  tol: float, edge_tol: float = END_TOL) -> Change:
    """Where the global minimum changes from A (lowest at a) to B (lowest at b): module doc."""
    born = None if B.on(a) else _end_in(bc, B, a, b, "above")
    ends = None if A.on(b) else _end_in(bc, A, a, b, "below")
    if born is None and not B.on(a) or ends is None and not A.on(b):
        raise _Lost(f"{A.name if not A.on(b) else B.name} is not on at both grid points and its end was not located")
    if born is not None:
        first = min(x for x in B.points if x >= born.alpha)  # B's point nearest its birth
        if born.kind == f"meets {A.name}" or not A.on(first) and cont.solve_on(A, first)[0] is None \
                or B.e_t(first) <= A.e_t(first):
            return Change(born.alpha, born.err, A.name, B.name, f"birth of {B.name} ({born.kind}; {born.method})", (a, b))
        a = first
    if ends is not None:
        last = max(x for x in A.points if x <= ends.alpha)  # A's point nearest its end
        if ends.kind == f"meets {B.name}" or not B.on(last) and cont.solve_on(B, last)[0] is None \
                or A.e_t(last) <= B.e_t(last):
            return Change(ends.alpha, ends.err, A.name, B.name, f"end of {A.name} ({ends.kind}; {ends.method})", (a, b))
        b = last
    x, err, method = _delta_change(cont, A, B, a, b, tol, edge_tol)
    return Change(x, err, A.name, B.name, method, (a, b))


def global_minimum_changes(cont: Continuation, bc: BranchCensus, tol: float, notes: list[str],
                           edge_tol: float = END_TOL) -> tuple[list[str], list[Change]]:
    """(the lowest branch's name at each grid point, "" where none is on; every change of it located)."""
    grid = bc.grid
    lowest, unknown = [], []
    for i, a in enumerate(grid):
        on, gaps = bc.on_at(i), bc.gaps(i)
        lowest.append(on[0].name if on and not gaps else "")
        if not on:
            unknown.append(f"{a:g} (" + ("no census start converged" if a in bc.failed else "no branch converged") + ")")
        elif gaps:
            unknown.append(f"{a:g} ({'/'.join(b.name for b in gaps)} not converged, on at both sides)")
    if unknown:
        notes.append("global minimum unknown (solver failure, not absence) at alpha = " + ", ".join(unknown)
                     + "; its changes are searched between the other grid points")
    known = [i for i in range(len(grid)) if lowest[i]]
    changes = []
    for i, j in zip(known, known[1:]):
        if lowest[i] == lowest[j]:
            continue
        A, B, a, b = bc.branch(lowest[i]), bc.branch(lowest[j]), grid[i], grid[j]
        try:
            changes.append(locate_change(cont, bc, A, B, a, b, tol, edge_tol))
        except (_Lost, RootNotFound, ValueError) as exc:
            notes.append(f"global minimum: {A.name} -> {B.name} in [{a:g}, {b:g}], not located: {exc}")
            changes.append(Change(math.nan, math.nan, A.name, B.name, f"not located: {exc}", (a, b)))
    changes = [replace(c, separations=flank_separations(cont, bc.branch(c.frm), bc.branch(c.to), *c.interval))
               for c in changes]
    for c in changes:
        if math.isfinite(c.alpha):
            notes.append(f"global minimum: {c.frm} -> {c.to} at alpha = {c.alpha:.4g} +- {c.err:.2g} ({c.method})")
        if c.separations:
            notes.append(f"global minimum {c.frm} -> {c.to}, Delta e_t beside it: "
                         + "; ".join(sep.describe() for sep in c.separations)
                         + ("; the change is not established at the rule" if c.established is False else ""))
    return lowest, changes


def lowest_branch_boundaries(params: ModelParams, alphas: Sequence[float], config: SolverConfig | None = None, *,
                             end_tol: float = END_TOL, root_tol: float = ROOT_TOL,
                             max_census: int = MAX_CENSUS) -> Boundaries:
    """The boundaries of the module doc at ``params.omega`` (ranks r = params.r, r* = params.r_star)."""
    cfg = config or SolverConfig()
    cont = Continuation(params, alphas, cfg)
    bc = cont.run(max_census, end_tol)
    grid, notes = bc.grid, list(bc.notes)
    if bc.ends:
        notes.append("births and ends: " + "; ".join(
            f"{e.branch} {'born' if e.exists == 'above' else 'ends'} at {e.alpha:.4g} +- {e.err:.2g} ({e.kind})"
            for e in bc.ends))
    cont.phase = "changes"
    lowest, changes = global_minimum_changes(cont, bc, root_tol, notes, end_tol)
    c = next((ch for ch in changes if bc.branch(ch.frm).label in UNORDERED and bc.branch(ch.to).label not in UNORDERED),
             None)
    if c is not None and not math.isfinite(c.alpha):
        notes.append(f"alpha_c: the first change away from a positional or agnostic point, {c.frm} -> {c.to} in "
                     f"[{c.interval[0]:g}, {c.interval[1]:g}], was not located")
        c = None
    elif c is None:
        present = sorted(set(lowest) - {""})
        notes.append("alpha_c: " + (f"the global minimum never leaves a positional or agnostic point on [{grid[0]:g}, "
                                    f"{grid[-1]:g}]" if changes else f"the global minimum is {'/'.join(present) or 'unknown'} "
                                    f"at every grid point of [{grid[0]:g}, {grid[-1]:g}] where it is known: no change in range"))
    lin = teacher_eps_lin(params, cfg)
    cont.phase = "alpha_l"
    alpha_l, alpha_l_err, l_branch = _alpha_l(cont, bc, lowest, changes, lin, root_tol, notes)
    notes.append(work_note(cont.count, cont.seconds))
    columns = {}
    for label in model_branches(params.r):
        e = next((e for e in bc.ends if bc.branch(e.branch).label == label), None)
        kind = "" if e is None else e.kind if e.branch == label else f"{e.branch}: {e.kind}"
        columns |= {f"{label}_end": e.alpha if e else math.nan, f"{label}_end_err": e.err if e else math.nan,
                    f"{label}_end_kind": kind, f"{label}_end_method": e.method if e else ""}
        if not any(b.label == label for b in bc.branches):
            notes.append(f"{label} branch: no {label} fixed point found by the censuses at alpha = "
                         + ", ".join(f"{a:g}" for a in bc.censused) + " nor along the branches they found")
    return Boundaries(omega=params.omega, alpha_c=c.alpha if c else math.nan, alpha_l=alpha_l, notes=tuple(notes),
                      alpha_c_err=c.err if c else math.nan, alpha_l_err=alpha_l_err, r=params.r,
                      r_star=teacher_rank(params), alpha_c_from=c.frm if c else "", alpha_c_to=c.to if c else "",
                      alpha_c_method=(c.method + ("; not distinguishable at the rule beside it (notes)"
                                                  if c.established is False else "")) if c else "", alpha_l_branch=l_branch, eps_lin=lin, ends=bc.ends,
                      curves=_curves(bc, model_branches(params.r)), **columns)


def work_note(count: dict[str, int], seconds: dict[str, float]) -> str:
    """The notes' ``work:`` line: censuses, solves by phase (those reused), block re-solves, each with its CPU seconds,
    e.g. ``work: 4 censuses (61 CPU s), 2 reused; solves follow 68 (80 CPU s), ...; 40 block re-solves (20 CPU s)``."""
    def cpu(k: str) -> str:
        return f" ({seconds[k]:.0f} CPU s)" if k in seconds else ""
    solves = [k for k in count if k not in ("censuses", "reused", "blocks")]
    return (f"work: {count.get('censuses', 0)} censuses{cpu('censuses')}, {count.get('reused', 0)} solves reused; solves "
            + ", ".join(f"{k} {count[k]}{cpu(k)}" for k in solves)
            + f"; {count.get('blocks', 0)} block re-solves{cpu('blocks')} (the error bars' and the separations')")


def _curves(bc: BranchCensus, labels: Sequence[str]) -> dict[str, tuple[CurvePoint, ...]]:
    """Per label, the lowest branch of that label at each grid point (the figure's and the dataset's curves)."""
    out = {}
    for label in labels:
        pts = []
        for a in bc.grid:
            on = sorted((b for b in bc.branches if b.label == label and b.on(a)), key=lambda b: b.e_t(a))
            fp = on[0].points[a] if on else None
            pts.append((a, fp is not None, fp.observables.e_t if fp else math.nan, fp.observables.eps_g if fp else math.nan))
        out[label] = tuple(pts)
    return out


def _alpha_l(cont: Continuation, bc: BranchCensus, lowest: list[str], changes: list[Change], lin: float, tol: float,
             notes: list[str]) -> tuple[float, float, str]:
    """(alpha_l, err, branch): the first drop of the global minimum's eps_g below eps_lin."""
    grid = bc.grid
    gap = [bc.branch(n).points[a].observables.eps_g - lin if n else math.nan for a, n in zip(grid, lowest)]
    idx = [i for i in range(len(grid)) if lowest[i]]
    if not idx:
        notes.append("alpha_l: the global minimum is known at no grid point")
        return math.nan, math.nan, ""
    if gap[idx[0]] <= 0:
        notes.append(f"alpha_l: eps_g of the global minimum ({lowest[idx[0]]}) is below eps_lin already at alpha = "
                     f"{grid[idx[0]]:g}, the first grid point where it is known")
        return math.nan, math.nan, ""
    drop = next((k for k in range(len(idx) - 1) if gap[idx[k]] > 0 >= gap[idx[k + 1]]), None)
    if drop is None:
        notes.append(f"alpha_l: eps_g of the global minimum stays above eps_lin = {lin:.6g} up to alpha = {grid[idx[-1]]:g}")
        return math.nan, math.nan, ""
    i, j = idx[drop], idx[drop + 1]
    A, B = bc.branch(lowest[i]), bc.branch(lowest[j])

    def eps_gap(br: Branch, x: float) -> float:
        return _value(cont, br, x, lambda fp: fp.observables.eps_g) - lin

    def root(br: Branch, a: float, b: float, ga: float, gb: float) -> tuple[float, float, str]:
        """The root of eps_g - eps_lin on ``br`` and its error: hypot(the rule's standard error from the blocks at
        the bracket's end nearest the root, linearised with the bracket's secant slope; the bracket width)."""
        x, lo, hi = illinois_bracket(lambda t: eps_gap(br, t), a, b, ga, gb, tol)
        near = min((lo, hi), key=lambda t: abs(t - x))
        slope = (eps_gap(br, hi) - eps_gap(br, lo)) / (hi - lo) if hi > lo else (gb - ga) / (b - a)
        reps = [p for p in cont.replicas(br.points[near]).replicates if p is not None]
        se = linearised_root_error(near, [p.observables.eps_g - lin for p in reps], slope) if len(reps) >= 2 else math.nan
        if math.isfinite(se):
            notes.append(f"alpha_l: the rule's standard error {se:.2g} ({len(reps)} blocks, linearised at the root), "
                         f"the bracket width {hi - lo:.2g}")
            return x, math.hypot(se, hi - lo), br.name
        return x, hi - lo, br.name

    try:
        if A is B:
            return root(A, grid[i], grid[j], gap[i], gap[j])
        ch = next((c for c in changes if c.interval[0] >= grid[i] and c.interval[1] <= grid[j]), None)
        if ch is None or not math.isfinite(ch.alpha):
            notes.append(f"alpha_l: the global minimum changes {A.name} -> {B.name} in [{grid[i]:g}, {grid[j]:g}] "
                         "without a located change there")
            return math.nan, math.nan, ""
        xc = ch.alpha
        gA = eps_gap(A, xc) if cont.solve_on(A, xc)[0] is not None else math.inf
        if gA <= 0:
            return root(A, grid[i], xc, gap[i], gA)
        gB = eps_gap(B, xc)
        if gB <= 0:
            notes.append(f"alpha_l = the change at {xc:.4g}: eps_g jumps below eps_lin where {B.name} becomes the lowest")
            return xc, ch.err, B.name
        return root(B, xc, grid[j], gB, gap[j])
    except (_Lost, RootNotFound, ValueError) as exc:
        notes.append(f"alpha_l: root not found: {exc}")
        return math.nan, math.nan, ""
