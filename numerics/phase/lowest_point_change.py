"""alpha_c at rank r = r* = 1 where the scalar form's crossing of the two branches finds none: the first change of
the lowest-e_t fixed point along alpha from a positional or agnostic point to the semantic one (docs/model.md
section 6; docs/general.md, "How alpha_c is found where the branches never cross").

The fixed points are the agnostic point A (always one), the positional point P and the semantic point S, taken grid
alpha by grid alpha from below (:class:`~attnphase.numerics.phase.grid_points.GridPoints`: each branch on, absent or
unknown, the lowest point the one of least e_t, none where a branch stays unknown).  The change X -> S
between neighbouring known grid points is located on Delta e_t(alpha) = e_t(S~) - e_t(X~), Z~ being Z's point where
Z is on and A elsewhere: S's birth from A where it is born in between, else the root of Delta e_t by Brent's
method, with the standard error of Delta e_t's blocks over its slope Delta E[M] -- but the birth where S was born
from A below and that root lies within the rule's noise of it (a bifurcation's new branch lies below A from its birth
on; Delta e_t ~ 0 between decides nothing) (:func:`_locate`).  A change from A to P before it is P's birth, located
where mu crosses 1 (the new branch lies below A from its birth on): among the ends, and in P's end columns where the
sweeps found no end of P.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import agnostic_eigenvalue
from attnphase.numerics.phase.boundary_refinement import alpha_l_interval, coarse_alpha_c_error, refined_alpha_l
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.brackets import BranchLost
from attnphase.numerics.phase.branch_end import BranchEnd, on_branch, positional_birth
from attnphase.numerics.phase.branch_jump import follow_down, jump_at, order_parameter
from attnphase.numerics.phase.continuation import BranchSweep
from attnphase.numerics.phase.grid_points import SWEPT, GridPoints, past_end
from attnphase.numerics.phase.positional_birth import with_birth
from attnphase.numerics.phase.scalar_boundaries import ALPHA_L_WITHOUT_ALPHA_C, BISECTION_TOL, DEFAULT_ALPHAS
from attnphase.numerics.roots import brent_root
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.se_map import model_rule
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: Tolerance in alpha of the root of Delta e_t (as the scalar form's alpha_c, ``xtol``).
ROOT_XTOL = 1e-4

#: The scalar form's notes on alpha_c, replaced where this search runs.
SCALAR_NOTES = ("alpha_c: the branches never coexist on the grid", "alpha_c outside the range where both branches",
                "the semantic branch is the global minimum wherever it exists")

#: Where the semantic point followed down from above a jump of Delta e_t stays below the agnostic point to where its
#: solves stop converging, its birth from the agnostic point is alpha_c if it lies at most this fraction of the grid
#: bracket below (:func:`_below_followed`): the unresolved gap is then inside the error bar.
UNRESOLVED_FRACTION = 0.25

#: Where the semantic branch was born from the agnostic point below the change's bracket and the root of Delta e_t
#: lies within this many of its standard errors of the birth, alpha_c is the birth (:func:`_locate`).
TIE_ERRORS = 2.0

def lowest_point_alpha_c(params: ModelParams, b: Boundaries, config: SolverConfig,
                         alphas: Sequence[float] | None = None) -> Boundaries:
    """``b`` (the scalar form's boundaries on the grid ``alphas``, None: its default) with alpha_c, its error and its
    labels from the first change of the lowest-e_t point to the semantic one (module doc) where ``b`` has none;
    ``b`` unchanged where it has one or lacks the sweeps.  The grid: ``alphas`` and every alpha the sweeps reached
    (they stop at a branch's end)."""
    sem, pos = b.semantic, b.positional
    if math.isfinite(b.alpha_c) or sem is None or pos is None or not (sem.points or pos.points):
        return b
    params = se_params(params)
    s = GridPoints(params, b, config, model_rule(params, config))
    notes = [n for n in b.notes if not n.startswith(SCALAR_NOTES)]
    given = DEFAULT_ALPHAS if alphas is None else alphas
    grid = sorted({float(a) for a in given} | {p.alpha for p in sem.points} | {p.alpha for p in pos.points})
    seq: list[tuple[float, str]] = []
    failures: list[tuple[float, str]] = []  # (alpha, why the lowest point is unknown there)
    change: tuple[float, str, float] | None = None
    others: list[tuple[float, str, float, str]] = []  # changes between the other points: (a0, from, a1, to)
    try:
        for a in grid:
            label, why = s.lowest(a)
            if not label:
                failures.append((a, why))
                continue
            if seq and seq[-1][1] != label:
                a0, l0 = seq[-1]
                if label == "semantic":
                    change = (a0, l0, a)
                    break
                others.append((a0, l0, a, label))
            seq.append((a, label))
    except BranchLost as exc:
        return replace(b, notes=tuple(notes + [f"alpha_c: not located: {exc}"]))
    top = change[2] if change else math.inf
    # past a branch's located end it is absent there, however its solve ended (GridPoints.status)
    unseen = [f"{a:.4g} ({br}: {why})" for br in SWEPT for a, why in sorted(s.failed[br].items())
              if a > top and not past_end(s.sweeps[br], a)]
    notes += [f"retried: {r}" for r in s.retried]
    if failures:
        notes.append("solver failure at alpha = " + "; ".join(f"{a:.4g}: {why}" for a, why in failures)
                     + " (the lowest point unknown there; not absence)")
    located = [_other_change(s, *c) for c in others]
    if others:
        notes.append("the lowest point changes " + ", ".join(text for _, text in located)
                     + " (no alpha_c: not to a semantic point)")
    for end in (end for end, _ in located if end is not None):
        b = with_birth(b, end)
    if unseen:
        notes.append("solver failure at alpha = " + ", ".join(unseen) + f" (above alpha_c's bracket, which ends at "
                     f"{top:.4g}: not retried, no bearing on the first change)")
    if change is None:
        return replace(b, notes=tuple(notes + [_no_change_note(s, seq)]))
    a0, l0, a1 = change
    inside = [a for a, _ in failures if a0 < a < a1]
    try:
        # a grid point between the two where the lowest point is unknown leaves the change unbracketed, unless only
        # the semantic solves failed there and the branch followed down from a1 locates it
        located = _past_failures(s, l0, a0, a1, inside) if inside else _locate(s, l0, a0, a1)
    except BranchLost as exc:
        return replace(b, notes=tuple(notes + [f"alpha_c ({l0} -> semantic): not located: {exc}"]))
    if located is None:
        return replace(b, notes=tuple(notes + [f"alpha_c ({l0} -> semantic): not located: solver failure inside "
                                                f"its bracket [{a0:.4g}, {a1:.4g}]"]))
    alpha_c, err, method, l0 = located
    where = (f"between grid alphas {a0:.4g} and {a1:.4g}" if a0 <= alpha_c <= a1 else
             f"{'below' if alpha_c < a0 else 'above'} the grid alphas {a0:.4g} and {a1:.4g} where the grid's lowest "
             "points change")
    note = (f"alpha_c = {alpha_c:.4g} +- {err:.2g}: the lowest-e_t point changes from the {l0} point to the semantic "
            f"point {where} ({method})")
    out = replace(b, alpha_c=alpha_c, alpha_c_err=err, alpha_c_coarse=alpha_c, alpha_c_from=l0,
                  alpha_c_to="semantic", alpha_c_method=method)
    try:
        redone = _alpha_l(s, b, alpha_c, err)
    except BranchLost as exc:
        redone = (math.nan, math.nan, f"alpha_l: {exc}")
    if redone is None:  # the scalar form's alpha_l stands: it lies above alpha_c, or there is none
        return replace(out, notes=tuple([n for n in notes if not n.startswith(ALPHA_L_WITHOUT_ALPHA_C)] + [note]))
    alpha_l, alpha_l_err, l_note = redone
    kept = [n for n in notes if not n.startswith("alpha_l")]  # the scalar form's notes on the alpha_l replaced
    return replace(out, alpha_l=alpha_l, alpha_l_err=alpha_l_err,
                   alpha_l_branch="semantic" if math.isfinite(alpha_l) else "",
                   notes=tuple(kept + [note] + ([l_note] if l_note else [])))


def _other_change(s: GridPoints, a0: float, l0: str, a1: float, l1: str) -> tuple[BranchEnd | None, str]:
    """(the located end or None, the note's words) of the change of the lowest point from ``l0`` (at a0) to ``l1`` (at
    a1), neither semantic: the positional branch's birth where the agnostic point at a0 is stable in m
    (:func:`~attnphase.numerics.phase.branch_end.positional_birth`), else the grid's bracket."""
    between = f"{l0} -> {l1} between alpha = {a0:.4g} and {a1:.4g}"
    if (l0, l1) != ("agnostic", "positional") or not (
            agnostic_eigenvalue(s.point("agnostic", a0), "positional", s.rule, s.cfg) < 1.0):
        return None, between
    end, words = positional_birth(s.params, s.on["positional"][a1], a0, s.cfg)
    if end is None:
        return None, f"{between} ({words})"
    return end, f"{l0} -> {l1} at {words}"


def _alpha_l(s: GridPoints, b: Boundaries, alpha_c: float, alpha_c_err: float) -> tuple[float, float, str] | None:
    """alpha_l measured from the alpha_c located here (docs/model.md section 6: the smallest alpha >= alpha_c where
    the semantic eps_g drops below eps_lin) as (alpha_l, its error, a note), or None where the scalar form's stands
    (its crossing lies above alpha_c, or eps_g stays above eps_lin at every semantic point above alpha_c): alpha_c
    where eps_g of S~ (the semantic point; the agnostic one at a birth from it) is below eps_lin there, else Brent's
    root of eps_g(S~) - eps_lin between alpha_c and the first semantic point above it where it is below, refined as
    the scalar form's (:func:`~attnphase.numerics.phase.boundary_refinement.refined_alpha_l`), or where that search
    loses the branch the interval its converged solves allow
    (:func:`~attnphase.numerics.phase.boundary_refinement.alpha_l_interval`)."""
    on = s.on["semantic"]
    if b.alpha_l >= alpha_c or not on:  # NaN compares False
        return None
    eps_lin = next(iter(on.values())).observables.eps_lin
    below = sorted(a for a, fp in on.items() if a > alpha_c and fp.observables.eps_g <= eps_lin)
    if not below:
        return None

    def gap(a: float) -> float:
        return s.point("semantic", a).observables.eps_g - eps_lin

    if gap(alpha_c) <= 0:
        return refined_alpha_l(list(on.values()), alpha_c, alpha_c, alpha_c_err, s.cfg)
    try:
        alpha_l = brent_root(gap, alpha_c, below[0], ROOT_XTOL)
    except BranchLost as exc:
        return alpha_l_interval(list(on.values()), eps_lin, alpha_c, below[0], exc)
    return refined_alpha_l(list(on.values()), alpha_l, alpha_c, alpha_c_err, s.cfg)


def _delta_e_t(s: GridPoints, x: str) -> Callable[[float], float]:
    """Delta e_t(alpha) = e_t(S~) - e_t(X~), X being ``x``, on solves (:meth:`GridPoints.point`)."""
    return lambda a: s.point("semantic", a).observables.e_t - s.point(x, a).observables.e_t


def _sign_change(path: list[FixedPoint], gap: Callable[[float], float]) -> tuple[float, tuple[float, float] | None]:
    """(Delta e_t = ``gap`` at the lowest point of ``path`` (increasing alpha), the first neighbours (u, v) of the path
    with Delta e_t > 0 at u and <= 0 at v, or None where there are none)."""
    deltas = [(fp.alpha, gap(fp.alpha)) for fp in path]
    return deltas[0][1], next(((u, v) for (u, du), (v, dv) in zip(deltas, deltas[1:]) if du > 0 >= dv), None)


def _locate(s: GridPoints, x: str, a0: float, a1: float) -> tuple[float, float, str, str]:
    """(alpha_c, its error, how, the point it changes from) of the change from ``x`` (lowest at a0) to the semantic
    point (lowest at a1): from the agnostic point where ``x``'s branch has ended (fallen to it) where S is born."""
    gap = _delta_e_t(s, x)
    sem = s.sweeps["semantic"]
    d0 = gap(a0)
    end = sem.end.on_solve_rule
    if (x != "agnostic" and sem.end_side == "below" and sem.end.kind == "bifurcation" and a0 < end <= a1
            and _fallen(s, x, end)):
        # x's branch has ended below S's birth: between them the agnostic point is the lowest (both Z~ are A there,
        # Delta e_t = 0 on a whole interval, not a crossing), and the change to S is its birth from A
        return sem.end.alpha, sem.end.err, (
            f"{_birth(sem)}; the {x} point, lowest at the grid alpha {a0:.4g}, has fallen to the agnostic one at the "
            f"birth, which is the lowest below it; e_t(semantic) - e_t(agnostic) = {gap(a1):.3g} < 0 at the next grid "
            f"point {a1:.4g}; err = the birth's standard error over the rules' blocks"), "agnostic"
    if x == "agnostic" and d0 == 0.0 and sem.end_side == "below" and a0 <= end <= a1:
        # S is born in (a0, a1]: from A by a bifurcation (Delta e_t = 0 there), or at a fold
        if sem.end.kind == "bifurcation":
            method = (f"{_birth(sem)}; e_t(semantic) - e_t(agnostic) = {gap(a1):.3g} < 0 at the next grid point "
                      f"{a1:.4g}; err = the birth's standard error over the rules' blocks")
            return sem.end.alpha, sem.end.err, method, x
        d_end = gap(end)
        if d_end <= 0:
            return sem.end.alpha, sem.end.err, (f"the semantic branch appears at its {sem.end.kind} (by "
                                                f"{sem.end.method}) below the agnostic point ({d_end:.3g})"), x
        a0, d0 = end, d_end
    if x == "agnostic" and d0 == 0.0 and sem.end_side == "below" and sem.end.kind == "bifurcation" and end < a0:
        # S born from A below a0 and one point with A at a0 (its order parameter below the floor): a bifurcation's
        # new branch lies below A from its birth on, and Delta e_t = 0 at a0 is no root
        why = s.absent["semantic"].get(a0, "")
        return sem.end.alpha, sem.end.err, (
            f"{_birth(sem)} below the grid alpha {a0:.4g}, where its point is the agnostic one"
            + (f" ({why})" if why else "")
            + f"; e_t(semantic) - e_t(agnostic) = {gap(a1):.3g} < 0 at the next grid point {a1:.4g}; err = the "
            "birth's standard error over the rules' blocks"), x
    alpha_c = brent_root(gap, a0, a1, ROOT_XTOL)
    jumped = ""
    if (jump := jump_at(s.on["semantic"], "semantic", alpha_c, 2 * ROOT_XTOL)) is not None:
        # the solves on either side of the root reached two points of the label: follow the upper one down
        path, jumped = _follow_upper(s, a0, a1, alpha_c, jump)
        d_low, cross = _sign_change(path, gap)
        if cross is None:
            return _below_followed(s, x, path, d_low, jumped, a0, a1)
        alpha_c, jumped = brent_root(gap, *cross, ROOT_XTOL), jumped + "; on it "
    if x != "agnostic" and sem.end_side == "below" and math.isfinite(end) and alpha_c < end:
        # the root lies below S's end, where S~ is the agnostic point: there x's point gives way to the agnostic one
        # (rises above it, or falls to it), which is the lowest until S appears: the change to S is from A
        alpha, err, how, since = _locate(s, "agnostic", a0, a1)
        return alpha, err, (f"the {x} point, lowest at the grid alpha {a0:.4g}, gives way to the agnostic one at "
                            f"{alpha_c:.4g} (the root of e_t(agnostic) - e_t({x}): it rises above it or falls to "
                            f"it), below the semantic branch's {sem.end.kind} at {sem.end.alpha:.4g}; from the "
                            f"agnostic point: {how}"), since
    err, method = _root_error(s, x, alpha_c)
    method = jumped + method
    if end < a0 and _tied_to_birth(sem, x, alpha_c, err):
        # S born from A below a0 and the root not told apart from the birth: a bifurcation's new branch lies below A
        # from its birth on, and Delta e_t ~ 0 between (within the rule's noise) decides nothing
        return sem.end.alpha, sem.end.err, (
            f"{_birth(sem)} below the grid alpha {a0:.4g}: the root of Delta e_t = e_t(semantic) - e_t(agnostic) on "
            f"solves, {alpha_c:.4g} +- {err:.2g}, lies within {TIE_ERRORS:g} of its standard errors of the birth "
            f"(Delta e_t = {d0:.2g} at {a0:.4g}, {gap(a1):.3g} at {a1:.4g}); err = the birth's standard error over the "
            "rules' blocks"), x
    return alpha_c, err, method, x


def _followed(s: GridPoints, a0: float, top: FixedPoint) -> list[FixedPoint]:
    """The semantic point ``top`` followed down (:func:`~attnphase.numerics.phase.branch_jump.follow_down`) to a0, or
    to the semantic branch's birth where it lies below; the path's points replace S's known points over its range."""
    sem = s.sweeps["semantic"]
    lower = a0
    if sem.end_side == "below" and sem.end.kind == "bifurcation" and math.isfinite(sem.end.alpha):
        lower = min(lower, sem.end.on_solve_rule)
    path = follow_down(s.params, "semantic", top, lower, BISECTION_TOL, s.cfg, s.rule)
    on = s.on["semantic"]
    for a in [a for a in on if path[0].alpha <= a < top.alpha]:
        del on[a]
    on.update({fp.alpha: fp for fp in path})
    return path


def _past_failures(s: GridPoints, x: str, a0: float, a1: float,
                   inside: list[float]) -> tuple[float, float, str, str] | None:
    """(alpha_c, its error, how, from) of the change from ``x`` (lowest at a0) to the semantic point (lowest at a1)
    where the lowest point is unknown at the grid alphas ``inside`` between them because the semantic solves alone
    failed there: located on S's point at a1 followed down (:func:`_followed`), as after a jump -- the root of Delta
    e_t along it, else the birth (:func:`_below_followed`); None where another branch failed there."""
    if any(a in s.failed["positional"] or a not in s.failed["semantic"] for a in inside):
        return None
    path = _followed(s, a0, s.on["semantic"][a1])
    words = (f"the semantic solves failed at alpha = {', '.join(f'{a:.4g}' for a in inside)} inside the bracket "
             f"[{a0:.4g}, {a1:.4g}]; its point at {a1:.4g} followed down by warm steps to alpha = {path[0].alpha:.4g} "
             f"({len(path) - 1} steps)")
    gap = _delta_e_t(s, x)
    d_low, cross = _sign_change(path, gap)
    if cross is None:
        return _below_followed(s, x, path, d_low, words, a0, a1)
    alpha_c = brent_root(gap, *cross, ROOT_XTOL)
    err, method = _root_error(s, x, alpha_c)
    sem = s.sweeps["semantic"]
    if _tied_to_birth(sem, x, alpha_c, err):
        return sem.end.alpha, sem.end.err, (
            f"{_birth(sem)}: {words}; on it the root of Delta e_t = e_t(semantic) - e_t(agnostic), {alpha_c:.4g} +- "
            f"{err:.2g}, lies within {TIE_ERRORS:g} of its standard errors of the birth; err = the birth's standard "
            "error over the rules' blocks"), x
    return alpha_c, err, f"{words}; on it {method}", x


def _follow_upper(s: GridPoints, a0: float, a1: float, root: float,
                  jump: tuple[FixedPoint, FixedPoint]) -> tuple[list[FixedPoint], str]:
    """(the path, the note's words) where the semantic solves beside ``root`` reached two points of the label
    (``jump``: below, above): the point above followed down (:func:`_followed`), its points replacing the other
    point's solves."""
    lo, hi = jump
    path = _followed(s, a0, hi)
    words = (f"the semantic solves beside the root {root:.4g} of Delta e_t between the grid alphas {a0:.4g} and "
             f"{a1:.4g} reached two points of the label (|th0| {order_parameter(lo, 'semantic'):.3g} at alpha = "
             f"{lo.alpha:.5g}, {order_parameter(hi, 'semantic'):.3g} at {hi.alpha:.5g}): a jump, not a crossing; the "
             f"upper one followed down by warm steps to alpha = {path[0].alpha:.4g} ({len(path) - 1} steps)")
    return path, words


def _below_followed(s: GridPoints, x: str, path: list[FixedPoint], d_low: float, words: str, a0: float,
                    a1: float) -> tuple[float, float, str, str]:
    """(alpha_c, its error, how, from) where the semantic point followed down (``path``) stays below ``x``'s all
    the way (Delta e_t = ``d_low`` <= 0 at its lowest point), x being the agnostic point: the semantic branch's birth
    from it (a bifurcation's new branch lies below A from its birth on) where the birth lies below the path's lowest
    point by at most :data:`UNRESOLVED_FRACTION` of the bracket [a0, a1], its error hypot(the birth's, that gap: the
    rule resolves no point of the branch there); BranchLost otherwise (the change lies below the path, not located)."""
    sem = s.sweeps["semantic"]
    gap = path[0].alpha - sem.end.on_solve_rule
    if (x == "agnostic" and sem.end_side == "below" and sem.end.kind == "bifurcation"
            and 0.0 <= gap <= UNRESOLVED_FRACTION * (a1 - a0)):
        return sem.end.alpha, math.hypot(sem.end.err, gap), (
            f"{_birth(sem)}: {words}, below the agnostic point all the way (Delta e_t = {d_low:.3g} at its lowest "
            f"point), {gap:.3g} above the birth, no solve between converging (the rule's jumps); err = hypot(the "
            f"birth's standard error over the rules' blocks, {sem.end.err:.2g}; that gap)"), x
    raise BranchLost(f"{words}, below the {x} point all the way (Delta e_t = {d_low:.3g} at its lowest point); "
                     "below it its solves fail: the change lies lower")


def _birth(sem: BranchSweep) -> str:
    """The words of the semantic branch's birth from the agnostic point, ``sem``'s end (a bifurcation)."""
    return f"birth of the semantic branch from the agnostic point (bifurcation, lambda = 1, by {sem.end.method})"


def _root_error(s: GridPoints, x: str, alpha_c: float) -> tuple[float, str]:
    """(the error of a root ``alpha_c`` of Delta e_t from ``x``, how the root and its error were found): the standard
    error of Delta e_t's blocks over its slope at the nearest alpha where both points are known
    (:func:`~attnphase.numerics.phase.boundary_refinement.coarse_alpha_c_error`), NaN where there is none."""
    xs, ss = s.on[x], s.on["semantic"]
    err = coarse_alpha_c_error(list(ss.values()), list(xs.values()), alpha_c, s.cfg) if set(xs) & set(ss) else math.nan
    return err, (f"Brent's root of Delta e_t = e_t(semantic) - e_t({x}) on solves; err = standard error of Delta "
                 "e_t's blocks over its slope Delta E[M] at the nearest common point")


def _tied_to_birth(sem: BranchSweep, x: str, alpha_c: float, err: float) -> bool:
    """Whether a root ``alpha_c`` +- ``err`` of Delta e_t from the agnostic point (``x``) lies within
    :data:`TIE_ERRORS` of its standard errors of the semantic branch's birth from it (``sem``'s end, a bifurcation
    below which the branch does not exist): a bifurcation's new branch lies below A from its birth on, and a Delta e_t
    within the rule's noise of 0 between decides nothing, so the change is the birth."""
    return (x == "agnostic" and sem.end_side == "below" and sem.end.kind == "bifurcation"
            and alpha_c - sem.end.alpha <= TIE_ERRORS * err)


def _fallen(s: GridPoints, x: str, alpha: float) -> bool:
    """Whether ``x``'s point at alpha is the agnostic one (its branch has ended there); False where its solve there
    fails (unknown: the change is then searched on Delta e_t, which meets that failure itself)."""
    try:
        return on_branch(s.point(x, alpha), "agnostic")
    except BranchLost:
        return False


def _no_change_note(s: GridPoints, seq: list[tuple[float, str]]) -> str:
    """Why there is no alpha_c: the lowest point at every grid alpha where it is known, and the semantic branch's
    status."""
    if not seq:
        return "alpha_c: the lowest point is unknown at every grid alpha (solver failure)"
    labels = sorted({lab for _, lab in seq})
    lo, hi = seq[0][0], seq[-1][0]
    if labels == ["semantic"]:
        return (f"alpha_c: the semantic point is the lowest at every grid alpha where it is known ({lo:.4g} to "
                f"{hi:.4g}): the change lies below the grid, if anywhere")
    s_on = sorted(s.on["semantic"])
    why = ("the semantic point is absent at every grid alpha" if not s_on else
           f"the semantic point, on at alpha = {s_on[0]:.4g} to {s_on[-1]:.4g}, lies above it wherever both are on")
    if s_on and s_on[-1] >= hi:  # on at the grid's end and still above: the change may lie past it
        why += f" (the change may lie past the grid's end: a grid reaching beyond alpha = {hi:.4g}, --alpha, looks there)"
    where = ", ".join(f"{lab} at {a:.4g}" for a, lab in seq)
    return f"alpha_c: no change of the lowest point to the semantic one on the grid ({where}): {why}"
