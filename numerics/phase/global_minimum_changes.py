"""Where the global minimum changes along alpha (docs/model.md sections 6-7; docs/method.md section 11, "the global
minimum" and "error bars of the decision"): between neighbouring grid points of a
:class:`~attnphase.numerics.phase.branches.BranchCensus` where the lowest branch differs, A below and B above, the
alpha where the branch of lowest e_t changes from A to B, with its error and how it was located: the root of
Delta e_t = e_t(A) - e_t(B) (:func:`_delta_root`), the interval where its sign is not established
(:func:`_delta_change`), or B's birth or A's end (:func:`locate_change`).  A change not located is NaN with the reason
in the notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from attnphase.numerics.errors.replicates import linearised_root_error
from attnphase.numerics.phase.boundary_results import LocatedEnd
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.phase.branches import Branch, BranchCensus, on_at
from attnphase.numerics.phase.census_continuation import END_TOL, Continuation, locate_end
from attnphase.numerics.phase.census_separation import (A_SIDE, B_SIDE, UNSETTLED, Separation, SignSample, hugs_zero,
                                                         separation, settle_interval)
from attnphase.numerics.phase.gauge_orbits import paired_difference, within_errors
from attnphase.numerics.roots import RootNotFound, illinois_bracket

#: How alpha_c is located where the two branches cross (its ``method`` column).
ROOT_METHOD = "root of Delta e_t (Illinois regula falsi on solves); err = final bracket width"
#: ... and where the rule's blocks give its standard error.
ROOT_ERR_METHOD = ("root of Delta e_t (Illinois regula falsi on solves); err = hypot(the rule's standard error from "
                   "{n} blocks linearised at the root, {se:.2g}; the final bracket width, {width:.2g})")


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
    return tuple(separation(cont.replicas(low.points[x]), cont.replicas(up.points[x]), (low.name, up.name))
                 for x, low, up in ((a, A, B), (b, B, A)) if low.on(x) and up.on(x))


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
    x, width, err, n = branch_root(cont, (A, B), lambda pa, pb: pa.observables.e_t - pb.observables.e_t, a, b, tol,
                                   evaluations)
    if not math.isfinite(err):
        bar, method = width, ROOT_METHOD + f"; the rule's error not known ({n} blocks stayed on both branches)"
    else:
        bar, method = math.hypot(err, width), ROOT_ERR_METHOD.format(n=n, se=err, width=width)
    far = hugs_zero(evaluations, x, bar, flank_err)
    nearest = [max((t for t in far if t < x), default=None), min((t for t in far if t > x), default=None)]
    return x, bar, method, [t for t in nearest if t is not None]


def branch_root(cont: Continuation, branches: Sequence[Branch], g: Callable[..., float], a: float, b: float,
                tol: float, evaluations: list[tuple[float, float]] | None = None) -> tuple[float, float, float, int]:
    """(the root x on [a, b] of g(the points of ``branches`` at alpha) by Illinois regula falsi, its final bracket's
    width (<= ``tol``), the rule's standard error of x linearised at the bracket's end c nearest x, x_j = c - g_j(c) /
    the bracket's secant slope with g_j g on block j's re-solves (NaN below two blocks where all stayed on their
    branches), that number of blocks); each evaluation (alpha, g) is appended to ``evaluations``."""
    def f(x: float) -> float:
        v = g(*(cont.point(br, x) for br in branches))
        if evaluations is not None:
            evaluations.append((x, v))
        return v

    x, lo, hi = illinois_bracket(f, a, b, f(a), f(b), tol)
    near = min((lo, hi), key=lambda t: abs(t - x))  # a root on a point tried: a zero-width bracket, [a, b]'s slope
    slope = (f(hi) - f(lo)) / (hi - lo) if hi > lo else (f(b) - f(a)) / (b - a)
    blocks = zip(*(cont.replicas(br.points[near]).replicates for br in branches))
    values = [g(*ps) for ps in blocks if all(p is not None for p in ps)]
    err = linearised_root_error(near, values, slope) if len(values) >= 2 else math.nan
    return x, hi - lo, err, len(values)


def _end_in(bc: BranchCensus, br: Branch, a: float, b: float, exists: str) -> LocatedEnd | None:
    return next((e for e in bc.ends if e.branch == br.name and e.exists == exists and a <= e.alpha <= b), None)


def locate_change(cont: Continuation, bc: BranchCensus, A: Branch, B: Branch, a: float, b: float,
                  tol: float) -> Change:
    """Where the global minimum changes from A (lowest at a) to B (lowest at b): where B is born in between, its
    birth (when it is born from A, or lies below A where it is first found; else the change above the birth); where
    A ends in between, its end (or the change below it, where B lies below A at A's last point); else
    :func:`_delta_change`.  A birth or end in [a, b] that the census's step 4 did not locate (a branch given a point
    at a or b after it, by a root search) is located here (:func:`locate_end`)."""
    born = None if B.on(a) else _end_in(bc, B, a, b, "above") or locate_end(cont, B, b, a)
    ends = None if A.on(b) else _end_in(bc, A, a, b, "below") or locate_end(cont, A, a, b)
    for end, X, Y, what in ((born, B, A, "birth"), (ends, A, B, "end")):
        if end is None:
            continue
        # X's point nearest its birth (end)
        x = min(t for t in X.points if t >= end.alpha) if X is B else max(t for t in X.points if t <= end.alpha)
        if end.kind == f"meets {Y.name}" or not Y.on(x) and cont.solve_on(Y, x)[0] is None or X.e_t(x) <= Y.e_t(x):
            bound = ""
            if "solver failure" in end.kind:  # no solve converged past it: X may go on there, and be the lowest
                bound = (f"; {X.name} was not reached {'below' if X is B else 'above'} it (solver failure, not "
                         f"absence): the change may lie {'lower' if X is B else 'higher'}")
            return Change(end.alpha, end.err, A.name, B.name, f"{what} of {X.name} ({end.kind}; {end.method}){bound}",
                          (a, b))
        a, b = (x, b) if X is B else (a, x)
    x, err, method = _delta_change(cont, A, B, a, b, tol, END_TOL)
    return Change(x, err, A.name, B.name, method, (a, b))


def global_minimum_changes(cont: Continuation, bc: BranchCensus, tol: float,
                           notes: list[str]) -> tuple[list[str], list[Change]]:
    """(the lowest branch's name at each grid point, "" where none is on; every change of it located)."""
    grid = bc.grid
    lowest, unknown = [], []
    for i, a in enumerate(grid):
        on, gaps = on_at(bc.branches, a), bc.gaps(i)
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
            changes.append(locate_change(cont, bc, A, B, a, b, tol))
        except (BranchLost, RootNotFound, ValueError) as exc:
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
