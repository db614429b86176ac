"""The phase boundaries at one omega from the global minimum, for every rank (docs/model.md sections 6-7;
docs/method.md section 11, "The rank-r phase diagram"): every fixed point the censuses find, continued along the
alpha grid (:mod:`attnphase.numerics.phase.census_continuation`); the global minimum at a grid point is the branch of
lowest e_t there, and its changes (:mod:`attnphase.numerics.phase.global_minimum_changes`) are a branch's birth or
end, the root of Delta e_t = e_t(A) - e_t(B) with err = hypot(the rule's standard error linearised at the root, the
final bracket width), or, where the rule does not tell A and B apart, the centre +- half-width of the interval where
the sign of Delta e_t is not established.  The changes are located on ends that bracket where each branch is on
(located again where later solves reached a branch past them), twice at most (:data:`ENDS_ROUNDS`).

* ``alpha_c`` -- the first change of the global minimum from a positional or agnostic point to a semantic or mixed
  one (``alpha_c_from``, ``alpha_c_to``, ``alpha_c_method``); every other change is in the notes;
* ``alpha_l`` -- where the global minimum's eps_g first drops below eps_lin (the rank-r* teacher's): the root of
  eps_g - eps_lin, err = hypot(the rule's standard error linearised at the root, the final bracket width), or the
  change where eps_g jumps below eps_lin there.

A boundary not found is NaN with the reason in ``notes`` (absence told apart from solver failure).  At r = r* = 1
:func:`~attnphase.numerics.phase.boundaries.phase_boundaries` takes the scalar form's fast path instead.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Sequence

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundary_results import Boundaries, CurvePoint, LocatedEnd, end_columns, model_branches
from attnphase.numerics.phase.branches import Branch, BranchCensus, on_at
from attnphase.numerics.phase.census_continuation import Continuation
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.phase.global_minimum_changes import Change, branch_root, global_minimum_changes
from attnphase.numerics.roots import RootNotFound
from attnphase.numerics.se.observables import eps_lin
from attnphase.numerics.se.results import FixedPoint
from attnphase.theory.params import ModelParams

#: Bracket width in alpha at which alpha_c and alpha_l stop.
ROOT_TOL = 5e-3
#: Times the global minimum's changes are located, each after the ends their last solves made stale were located
#: again (:meth:`~attnphase.numerics.phase.census_continuation.Continuation.refreshed_ends`).
ENDS_ROUNDS = 2
#: The labels of the points the global minimum leaves at alpha_c.
UNORDERED = ("positional", "agnostic")


def teacher_eps_lin(params: ModelParams, cfg: SolverConfig) -> float:
    """eps_lin of the rank-r* teacher (:func:`~attnphase.numerics.se.observables.eps_lin`): converged
    Gauss--Hermite at r* = 1, on the solve's rule at r* >= 2."""
    return eps_lin(params, quadrature=cfg.quadrature if params.r_star >= 2 else None)


def lowest_branch_boundaries(params: ModelParams, alphas: Sequence[float], config: SolverConfig | None = None
                             ) -> Boundaries:
    """The boundaries of the module doc at ``params.omega`` (ranks r = params.r, r* = params.r_star)."""
    cfg = config or SolverConfig()
    cont = Continuation(params, alphas, cfg)
    bc = cont.run()
    lin = teacher_eps_lin(params, cfg)
    moved: list[str] = []
    for _ in range(ENDS_ROUNDS):
        cont.phase = "ends"
        ends, more = cont.refreshed_ends(bc)
        bc, moved = replace(bc, ends=ends), moved + more
        notes = list(bc.notes)
        c, (alpha_l, alpha_l_err, l_branch) = _changes(cont, bc, lin, notes)
        if not cont.stale(bc):
            break
    else:
        cont.phase = "ends"
        ends, more = cont.refreshed_ends(bc)
        bc, moved = replace(bc, ends=ends), moved + more
        notes.append(f"ends: still moving after {ENDS_ROUNDS} rounds of the global minimum's changes (their solves "
                     "reached branches past the ends located before them): a change located at a birth or end may "
                     "be at the one located before")
    notes[len(bc.notes):len(bc.notes)] = moved + ([ends_note(bc.ends)] if bc.ends else [])
    notes.append(work_note(cont.count, cont.seconds))
    columns, nan = {}, math.nan
    in_gaps = {id(e) for pair in gaps(bc.ends) for e in pair}
    for label in model_branches(params.r):
        e = next((e for e in bc.ends if bc.branch(e.branch).label == label and id(e) not in in_gaps),
                 LocatedEnd(label, nan, nan, "", ""))
        columns |= end_columns(label, e if e.branch == label else replace(e, kind=f"{e.branch}: {e.kind}"))
        if not any(b.label == label for b in bc.branches):
            notes.append(f"{label} branch: no {label} fixed point found by the censuses at alpha = "
                         + ", ".join(f"{a:g}" for a in bc.censused) + " nor along the branches they found")
    c = c or Change(math.nan, math.nan, "", "", "", (math.nan, math.nan))
    method = c.method + ("; not distinguishable at the rule beside it (notes)" if c.established is False else "")
    return Boundaries(omega=params.omega, alpha_c=c.alpha, alpha_l=alpha_l, notes=tuple(notes), alpha_c_err=c.err,
                      alpha_l_err=alpha_l_err, r=params.r, r_star=params.r_star, alpha_c_from=c.frm,
                      alpha_c_to=c.to, alpha_c_method=method, alpha_l_branch=l_branch, eps_lin=lin, ends=bc.ends,
                      curves=_curves(bc, model_branches(params.r)), **columns)


def _changes(cont: Continuation, bc: BranchCensus, lin: float, notes: list[str]
             ) -> tuple[Change | None, tuple[float, float, str]]:
    """The global minimum's changes over ``bc`` (``alpha_c``'s, the first leaving a positional or agnostic point, or
    None) and (alpha_l, its error, its branch), their notes added to ``notes``."""
    cont.phase = "changes"
    lowest, changes = global_minimum_changes(cont, bc, ROOT_TOL, notes)
    c = next((ch for ch in changes if bc.branch(ch.frm).label in UNORDERED and bc.branch(ch.to).label not in UNORDERED),
             None)
    if c is not None and not math.isfinite(c.alpha):
        notes.append(f"alpha_c: the first change away from a positional or agnostic point, {c.frm} -> {c.to} in "
                     f"[{c.interval[0]:g}, {c.interval[1]:g}], was not located")
        c = None
    elif c is None:
        notes.append("alpha_c: " + _no_alpha_c(bc, lowest, changes))
    cont.phase = "alpha_l"
    return c, _alpha_l(cont, bc, lowest, changes, lin, ROOT_TOL, notes)


def gaps(ends: Sequence[LocatedEnd]) -> list[tuple[LocatedEnd, LocatedEnd]]:
    """(end, birth) for each end of a branch followed, next in alpha among its ends, by a birth of the same branch:
    an interval where the branch, on at both sides, was not reached (not a located end of the branch)."""
    pairs = []
    for name in dict.fromkeys(e.branch for e in ends):
        own = sorted((e for e in ends if e.branch == name), key=lambda e: e.alpha)
        pairs += [(a, b) for a, b in zip(own, own[1:]) if a.exists == "below" and b.exists == "above"]
    return pairs


def ends_note(ends: Sequence[LocatedEnd]) -> str:
    """The notes' ``births and ends:`` line: each birth and end with its bracket and what lies beyond it; an end
    and the birth after it (:func:`gaps`) said as the interval where the branch was not reached."""
    paired = {id(e): (a, b) for a, b in gaps(ends) for e in (a, b)}
    said = []
    for e in ends:
        if id(e) not in paired:
            said.append(f"{e.branch} {'born' if e.exists == 'above' else 'ends'} at {e.alpha:.4g} +- {e.err:.2g} "
                        f"({e.kind})")
        elif paired[id(e)][0] is e:
            b = paired[id(e)][1]
            said.append(f"{e.branch} not reached between {e.alpha:.4g} +- {e.err:.2g} and {b.alpha:.4g} +- "
                        f"{b.err:.2g}, on at both sides (beyond them: {e.kind}; {b.kind})")
    return "births and ends: " + "; ".join(said)


def _no_alpha_c(bc: BranchCensus, lowest: list[str], changes: list[Change]) -> str:
    """Why no change of the global minimum leaves a positional or agnostic point (``lowest``: its name per grid
    point, "" where unknown)."""
    grid, known = bc.grid, [(a, n) for a, n in zip(bc.grid, lowest) if n]
    span = f"[{grid[0]:g}, {grid[-1]:g}]"
    if not changes:
        present = sorted({n for _, n in known})
        return (f"the global minimum is {'/'.join(present) or 'unknown'} at every grid point of {span} where it is "
                "known: no change in range")
    first_alpha, first = known[0]
    if bc.branch(first).label not in UNORDERED:
        return (f"the global minimum is already {first} at alpha = {first_alpha:g}, the first grid point where it is "
                f"known, and none of its changes on {span} leaves a positional or agnostic point: the change lies "
                "below the grid, if anywhere")
    return f"the global minimum never leaves a positional or agnostic point on {span}"


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
    def point(label: str, a: float) -> CurvePoint:
        on = on_at([b for b in bc.branches if b.label == label], a)
        obs = on[0].points[a].observables if on else None
        return (a, True, obs.e_t, obs.eps_g) if obs is not None else (a, False, math.nan, math.nan)
    return {label: tuple(point(label, a) for a in bc.grid) for label in labels}


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

    def eps_g_gap(fp: FixedPoint) -> float:
        return fp.observables.eps_g - lin

    def root(br: Branch, a: float, b: float) -> tuple[float, float, str]:
        """The root of eps_g - eps_lin on ``br`` and its error: hypot(the rule's standard error from the blocks at
        the bracket's end nearest the root, linearised with the bracket's secant slope; the bracket width)."""
        x, width, se, n = branch_root(cont, (br,), eps_g_gap, a, b, tol)
        if math.isfinite(se):
            notes.append(f"alpha_l: the rule's standard error {se:.2g} ({n} blocks, linearised at the root), "
                         f"the bracket width {width:.2g}")
            return x, math.hypot(se, width), br.name
        return x, width, br.name

    try:
        if A is B:
            return root(A, grid[i], grid[j])
        ch = next((c for c in changes if c.interval[0] >= grid[i] and c.interval[1] <= grid[j]), None)
        if ch is None or not math.isfinite(ch.alpha):
            notes.append(f"alpha_l: the global minimum changes {A.name} -> {B.name} in [{grid[i]:g}, {grid[j]:g}] "
                         "without a located change there")
            return math.nan, math.nan, ""
        xc = ch.alpha
        pa = cont.solve_on(A, xc)[0]
        if pa is not None and eps_g_gap(pa) <= 0:
            return root(A, grid[i], xc)
        if eps_g_gap(cont.point(B, xc)) <= 0:
            notes.append(f"alpha_l = the change at {xc:.4g}: eps_g jumps below eps_lin where {B.name} becomes the lowest")
            return xc, ch.err, B.name
        return root(B, xc, grid[j])
    except (BranchLost, RootNotFound, ValueError) as exc:
        notes.append(f"alpha_l: root not found: {exc}")
        return math.nan, math.nan, ""
