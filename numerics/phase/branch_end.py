"""Where a branch ends: one function, :func:`locate_branch_end`, with a named strategy (docs/method.md section 5).

A branch followed in alpha (semantic downward, positional upward) ends (``BranchEnd.kind``) at a ``"bifurcation"``
(it meets the agnostic branch continuously, its order parameter going to 0), a ``"fold"`` (it turns back at a
finite order parameter, or continuation past it converges to another label) or a ``"solver failure"`` (past it the
solver fails: the end may be a numerical one).  It is located (``BranchEnd.method``) by the ``"eigenvalue"`` of the
SE Jacobian at the agnostic fixed point crossing 1 (:mod:`attnphase.numerics.phase.bifurcation`), a ``"trace"`` at
fixed order parameter (:func:`trace_branch_end`) or ``"bisection"`` in alpha (the only one at r >= 2 or r* >= 2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

import numpy as np

from attnphase.numerics.capabilities import MATRIX_END_NOTE
from attnphase.numerics.config import SolverConfig, check_positive
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.roots import bisect_last_true
from attnphase.numerics.phase.bifurcation import branch_bifurcation
from attnphase.numerics.phase.end_rule import points_below_crossing, traced_end_on_finer
from attnphase.numerics.se.fixed_order_solve import solve_at_order
from attnphase.numerics.se.results import FixedPoint
from attnphase.numerics.se.starts import check_branch
from attnphase.theory.params import ModelParams

#: A semantic point counts as on the branch only where |th0| is at least this, and the end trace stops there: near
#: the continuous end the theta direction is so soft that quadrature noise creates spurious fixed points with tiny
#: theta (docs/method.md section 5).
SEMANTIC_THETA_FLOOR = 0.02

#: The positional analogue of :data:`SEMANTIC_THETA_FLOOR` for |m|.
POSITIONAL_M_FLOOR = 0.02

#: Scheduled points of a branch-end trace (geometric in the order parameter, see
#: :func:`trace_branch_end`); failed or jumping steps add subdivisions.
N_TRACE = 6

#: Branch (and sweep direction) whose end meets the agnostic branch, and the eigenvalue direction.
BIFURCATING = {("semantic", "down"): "theta", ("positional", "up"): "m"}

#: Why the aligned map's ends are traced: its branches do not leave the agnostic point by a bifurcation.
ALIGNED_END_NOTE = ("the aligned proximal map picks each node's minimum by the sign of h . r, which flips with the "
                    "order parameter, so it is not smooth at the agnostic point and its branches do not end where the "
                    "eigenvalue there crosses 1: its ends are traced (semantic) or bisected")


def ends_by_bifurcation(config: SolverConfig) -> bool:
    """Whether ``config`` locates branch ends as bifurcations of the agnostic branch: the strategy
    ``"bifurcation"``, on a proximal map smooth at the agnostic point (the global and local maps; not the aligned
    one, :data:`ALIGNED_END_NOTE`)."""
    return config.branch_end == "bifurcation" and config.prox != "aligned"


#: The order parameters a branch has, each with the floor below which a point does not count as on it: the
#: semantic branch th0, the positional branch m, the mixed one (r >= 2) both, the agnostic one none.
BRANCH_FLOORS = {"semantic": (("th0", SEMANTIC_THETA_FLOOR),), "positional": (("m", POSITIONAL_M_FLOOR),),
                 "mixed": (("th0", SEMANTIC_THETA_FLOOR), ("m", POSITIONAL_M_FLOOR)), "agnostic": ()}


def overlap_size(fp: FixedPoint, name: str) -> float:
    """The size of the overlap ``name`` ("th0" or "m") of ``fp``, a gauge invariant at every rank: its Frobenius
    norm, |th0| = (sum of th0's squared singular values)^1/2 and |m| = (sum_l |m_l|^2)^1/2 (at r = r* = 1 the
    absolute value of th0 and the Euclidean norm of (m_1 .. m_L))."""
    x = getattr(fp.overlaps, name)
    return abs(float(x)) if np.ndim(x) == 0 else float(np.linalg.norm(x))


def size_text(fp: FixedPoint, name: str, fmt: str = ".3g", label: str = "") -> str:
    """``|name| = value`` (:func:`overlap_size`, ``label`` in place of the name where given), saying which norm it is
    where the overlap has several entries: ``|m| = 0.0612 (norm of m_1..m_2)``, beside a record whose ``m`` is m_1."""
    x = getattr(fp.overlaps, name)
    text = f"|{label or name}| = {overlap_size(fp, name):{fmt}}"
    if np.ndim(x) == 0:
        return text
    return text + (f" (norm of m_1..m_{np.size(x)})" if np.ndim(x) == 1 else " (Frobenius norm)")


def on_branch(fp: FixedPoint, branch: str) -> bool:
    """Converged, labelled ``branch``, and each of its order parameters (:data:`BRANCH_FLOORS`) at or above its
    floor, at every rank; ValueError for a ``branch`` that is no label of a fixed point (``"foo"``)."""
    check_branch(branch)
    return (bool(fp.status.converged) and fp.branch == branch
            and all(overlap_size(fp, name) >= floor for name, floor in BRANCH_FLOORS.get(branch, ())))


def below_floor(fp: FixedPoint, branch: str) -> bool:
    """Converged with ``branch``'s label but not on the branch: one of its order parameters below its floor
    (:data:`BRANCH_FLOORS`), a point next to the agnostic one; ValueError as :func:`on_branch`'s."""
    check_branch(branch)
    return bool(fp.status.converged) and fp.branch == branch and not on_branch(fp, branch)


#: The kind of a traced end the trace stopped short of (:func:`trace_branch_end`): not located.
STOPPED = "trace stopped"


@dataclass(frozen=True, eq=False)
class BranchEnd:
    """The end of a branch.

    Attributes:
        alpha: where the branch ends (NaN when it was not located).
        kind: ``"bifurcation"``, ``"fold"`` or ``"solver failure"`` (the module doc); :data:`STOPPED` for a trace
            that stopped short of the end (alpha NaN).
        method: ``"eigenvalue"``, ``"trace"`` or ``"bisection"``.
        points: the fixed points traced towards the end (method ``"trace"``), in trace order.
        note: why the preferred strategy was not used, when it was not.
        err: standard error of ``alpha`` from the rules' blocks (a bifurcation located by its
            eigenvalue, :func:`attnphase.numerics.phase.bifurcation.branch_bifurcation`; NaN otherwise).
        solve_rule_alpha: where the end lies on the solve rule, which the branch's own points are solved on
            (a bifurcation's root before its multilevel step; NaN: ``alpha``, see :meth:`on_solve_rule`).
    """

    alpha: float
    kind: str
    method: str
    points: tuple[FixedPoint, ...] = ()
    note: str = ""
    err: float = math.nan
    solve_rule_alpha: float = math.nan

    @property
    def on_solve_rule(self) -> float:
        """The end as the branch's points see it: ``solve_rule_alpha`` where set, else ``alpha``."""
        return self.alpha if math.isnan(self.solve_rule_alpha) else self.solve_rule_alpha


def end_note(branch: str, end: BranchEnd) -> str:
    """The note a phase diagram's row carries for ``branch``'s ``end``: its method and ``end.note`` (set)."""
    return f"{branch} end by {end.method}: {end.note}"


def locate_branch_end(
    params: ModelParams,
    branch: str,
    direction: str,
    good: FixedPoint,
    anchor: float,
    failed: FixedPoint,
    run: Callable[[float, FixedPoint], FixedPoint],
    config: SolverConfig,
    *,
    bisection_tol: float = 1e-3,
    full_config: SolverConfig | None = None,
) -> BranchEnd:
    """Locate the end of ``branch`` (followed in ``direction``) past its last converged point ``good``.

    ``failed`` is the first solve that left the branch, ``anchor`` the alpha of the branch's last point on the
    sweep's grid, ``run(alpha, start)`` the sweep's warm-started solve.  Strategy ``config.branch_end``:
    ``"bifurcation"`` takes :func:`bifurcation_end` where it applies; otherwise, and with ``"trace"``, the semantic
    branch followed down is traced at fixed theta (:func:`trace_branch_end`) and any other end is bisected in alpha
    to ``bisection_tol`` (every end at r >= 2 or r* >= 2, :data:`~attnphase.numerics.capabilities.MATRIX_END_NOTE`).
    """
    end, note = bifurcation_end(params, branch, direction, good, anchor, config, full_config, far=failed.alpha)
    if end is not None:
        return end
    if (branch, direction) == ("semantic", "down") and not good.is_matrix:
        traced = trace_branch_end(params, good, branch, config=config)
        if traced.kind != STOPPED:
            return finer_trace(params, traced, branch, config, note)
        note = "; ".join(n for n in (note, traced.note) if n)  # the end lies past the trace: bisected below

    def holds(alpha: float, start: FixedPoint) -> FixedPoint | None:
        fp = run(alpha, start)
        return fp if on_branch(fp, branch) else None

    alpha = bisect_last_true(holds, good.alpha, good, failed.alpha, bisection_tol)
    return BranchEnd(alpha, "fold" if failed.status.converged else "solver failure", "bisection", note=note)


def finer_trace(params: ModelParams, traced: BranchEnd, branch: str, config: SolverConfig, note: str) -> BranchEnd:
    """The traced end ``traced`` at its extreme point's order parameter on the finer end rule
    (:func:`~attnphase.numerics.phase.end_rule.traced_end_on_finer`; the solve rule's alpha kept as
    ``solve_rule_alpha``), with ``note`` and the check's own; unchanged where the check finds no alpha."""
    extreme = [p for p in traced.points if p.alpha == traced.alpha]
    if not extreme:
        return replace(traced, note=note)
    alpha, checked = traced_end_on_finer(params, extreme[0], branch, config)
    note = "; ".join(n for n in (note, checked) if n)
    if math.isnan(alpha):
        return replace(traced, note=note)
    return replace(traced, alpha=alpha, note=note, solve_rule_alpha=traced.alpha)


def bifurcation_end(
    params: ModelParams,
    branch: str,
    direction: str,
    good: FixedPoint,
    anchor: float,
    config: SolverConfig,
    full_config: SolverConfig | None = None,
    *,
    far: float | None = None,
) -> tuple[BranchEnd | None, str]:
    """The end of ``branch`` (followed in ``direction`` up to its point ``good``) where it meets the
    agnostic branch: the alpha where the SE Jacobian's eigenvalue at the agnostic fixed point crosses
    1 in the branch's direction (:data:`BIFURCATING`), on ``config.bifurcation_quadrature``, when
    the strategy is ``"bifurcation"`` and the crossing lies beyond ``anchor`` (the branch's last grid
    point) the right way.  The secant starts at ``good``'s alpha; where it finds no such crossing (it does not
    converge, or reaches another crossing: one not beyond, or the wrong way, as where the agnostic point itself
    stops converging) again at ``anchor``, then at ``far`` (the first alpha past ``good`` where the branch was not
    found: the end lies between them, and a secant from ``good`` may not reach an end far from it in its steps).
    Returns (the end or None, why not when None: the first crossing's reason, else the last failure's -- empty
    when the strategy does not apply).
    """
    if config.branch_end != "bifurcation" or (branch, direction) not in BIFURCATING:
        return None, ""
    if not ends_by_bifurcation(config):
        return None, ALIGNED_END_NOTE
    if good.is_matrix:
        return None, MATRIX_END_NOTE

    def rejected(bif) -> str:
        """Why ``bif`` is not the end ("" where it is)."""
        return crossing_rejected(bif, anchor, direction == "down") if bif.converged else bif.message

    # the agnostic solve can fail at one alpha, or the secant reach another crossing (where the agnostic point
    # itself changes): from the branch's last point, the grid point, then the other side of the end
    reasons: list[tuple[bool, str]] = []  # (converged, why not the end) of each start
    for guess in (None, *dict.fromkeys(g for g in (anchor, far) if g is not None and g != good.alpha)):
        bif = bifurcation_from(params, good, BIFURCATING[(branch, direction)], full_config or config, guess)
        why, note = rejected(bif), ""
        if points_to_check(bif, anchor, direction == "down"):  # the right way, but points below: the branch's?
            why, note = points_below_crossing(params, good, bif.solve_rule_alpha, full_config or config)
        if not why:
            return BranchEnd(bif.alpha, "bifurcation", "eigenvalue", note=note, err=bif.err,
                             solve_rule_alpha=bif.solve_rule_alpha), ""
        reasons.append((bif.converged, why))
    return None, first_reason(reasons)


def first_reason(reasons: list[tuple[bool, str]]) -> str:
    """Why no crossing of a secant's tries (converged, why not the end) is the end: the first converged crossing's
    reason, where one was found; else the last failure's."""
    return next((why for converged, why in reasons if converged), reasons[-1][1])


def crossing_rejected(bif, last: float | None, down: bool) -> str:
    """Why the converged eigenvalue crossing ``bif`` is not the end of a branch followed ``down`` in alpha (semantic)
    or up (positional) whose last grid point is at ``last`` (None: none to check); "" where it is.  The crossing
    must lie beyond that point on the solve rule (the branch's points live there) and go the end's way: lambda rises
    through 1 where the semantic branch is born (its end followed down), mu falls through 1 where the positional
    branch ends (followed up) and rises through 1 where it is born (:func:`positional_birth`); the other way it is not
    that end."""
    on_rule = bif.solve_rule_alpha
    if last is not None and (on_rule > last if down else on_rule < last):
        return f"bifurcation at {on_rule:.4f} (solve rule) is not beyond the branch's last grid point ({last:.4f})"
    if bif.slope < 0 if down else bif.slope > 0:
        return (f"the eigenvalue crosses 1 the wrong way at {bif.alpha:.4f} (slope {bif.slope:+.2f}): the "
                "branch's birth")
    return ""


def points_to_check(bif, lowest: float, down: bool) -> bool:
    """Whether :func:`points_below_crossing` decides the crossing ``bif``: a converged one going the end's way of a
    branch followed ``down`` (semantic) whose lowest grid point, at ``lowest``, lies below it on the solve rule."""
    return down and bif.converged and bif.solve_rule_alpha > lowest and not crossing_rejected(bif, None, True)


def bifurcation_from(params: ModelParams, good: FixedPoint, direction: str, cfg: SolverConfig,
                     alpha_guess: float | None = None, step: float = 0.05):
    """Eigenvalue 1 on the agnostic branch, from the branch's last point ``good`` (secant steps from
    ``alpha_guess``, default that point's alpha; ``step``: the secant's scale, see
    :func:`~attnphase.numerics.phase.bifurcation.branch_bifurcation`).  The agnostic starts: theta -- ``good`` with
    theta set to 0 (the agnostic state is close), then cold; m -- cold first (the positional point's V0 is far from
    the agnostic one), then ``good`` with m set to 0."""
    ov = good.overlaps
    zeroed = replace(good, overlaps=Overlaps(q0=ov.q0, V0=ov.V0, m=0.0 * ov.m, th0=0.0), memory=None)
    starts = (zeroed, None) if direction == "theta" else (None, zeroed)
    return branch_bifurcation(params, good.alpha if alpha_guess is None else alpha_guess, direction,
                              config=cfg, starts=starts, step=step)


def positional_birth(params: ModelParams, good: FixedPoint, fallen: float, cfg: SolverConfig
                     ) -> tuple[BranchEnd | None, str]:
    """Where the positional branch, on at its point ``good`` and absent at alpha = ``fallen`` below it (the agnostic
    point stable in m there, mu < 1), is born from the agnostic point: the alpha between them where mu, the agnostic
    point's eigenvalue in m, rises through 1 (by :func:`bifurcation_from` from ``good``, then from ``fallen``).
    Returns (the birth, what a note says of it) or (None, why none was located: the first crossing's reason, else the
    last failure's)."""
    reasons: list[tuple[bool, str]] = []
    for guess in (None, fallen):
        bif = bifurcation_from(params, good, "m", cfg, guess)
        why = crossing_rejected(bif, good.alpha, True) if bif.converged else bif.message
        if not why and bif.solve_rule_alpha <= fallen:
            why = (f"the eigenvalue crosses 1 at {bif.solve_rule_alpha:.4f} (solve rule), below alpha = {fallen:.4g} "
                   "where the agnostic point is stable in m")
        if not why:
            err = f" +- {bif.err:.2g}" if math.isfinite(bif.err) else ""
            return BranchEnd(bif.alpha, "bifurcation", "eigenvalue", err=bif.err,
                             solve_rule_alpha=bif.solve_rule_alpha), (
                f"the positional branch's birth from the agnostic point at alpha = {bif.alpha:.5g}{err} (mu = 1, by "
                f"eigenvalue, between alpha = {fallen:.4g}, where the agnostic point is stable in m, and the branch's "
                f"point at {good.alpha:.4g})")
        reasons.append((bif.converged, why))
    return None, f"the positional branch's birth not located: {first_reason(reasons)}"


def trace_branch_end(
    params: ModelParams,
    start: FixedPoint,
    branch: str,
    *,
    config: SolverConfig | None = None,
    n_steps: int = N_TRACE,
    min_ratio: float = 0.02,
    max_alpha_jump: float = 0.1,
) -> BranchEnd:
    """Follow ``branch`` from ``start`` towards a vanishing order parameter, alpha solved for.

    The order parameter's size (|th0| semantic, |m| positional) runs geometrically from 0.9 of its value at
    ``start`` down to ``min_ratio`` of it, not below the branch's floor, each point warm-started
    from the last (:func:`~attnphase.numerics.se.fixed_order_solve.solve_at_order`).  A step that fails or jumps in
    alpha by more than ``max_alpha_jump`` (positional: down in alpha) is retried in up to 4 (semantic) or 1
    (positional) geometric half-steps; the trace stops where alpha still jumps.  The end is the
    extreme alpha reached: a ``"fold"`` where that is an interior extremum of alpha(order parameter), else a
    ``"bifurcation"``; where the trace stopped on a jump at its extreme alpha (still moving towards the end), or made
    no step at all, the end is not located: alpha NaN, kind :data:`STOPPED`, why in ``note``.  ValueError for an
    ``n_steps`` that is no integer >= 1, a ``min_ratio`` outside (0, 0.9) or a ``max_alpha_jump`` that is not > 0.
    """
    if branch not in ("semantic", "positional"):
        raise ValueError(f"a branch end is traced on the semantic or positional branch, got {branch!r}")
    if isinstance(n_steps, bool) or not isinstance(n_steps, (int, np.integer)) or n_steps < 1:
        raise ValueError(f"n_steps must be an integer >= 1, got {n_steps!r}")
    if not (isinstance(min_ratio, (int, float, np.floating)) and 0.0 < min_ratio < 0.9):
        raise ValueError(f"min_ratio must lie in (0, 0.9) (the trace runs from 0.9 of the start's size down to it), "
                         f"got {min_ratio!r}")
    check_positive("max_alpha_jump", max_alpha_jump)
    cfg = config or SolverConfig()
    semantic = branch == "semantic"
    order = "th0" if semantic else "m"  # the order parameter, its size by overlap_size
    size_start = overlap_size(start, order)
    if not on_branch(start, branch):  # a trace from elsewhere shows nothing of where the branch ends
        return BranchEnd(math.nan, STOPPED, "trace", note=(
            f"the start at alpha = {start.alpha:.4g} is no point of the {branch} branch ({start.branch} label, "
            f"|{'theta' if semantic else 'm'}| = {size_start:.3g}, converged: {bool(start.status.converged)}): "
            "nothing to trace"))
    low = max(min_ratio * size_start, SEMANTIC_THETA_FLOOR if semantic else POSITIONAL_M_FLOOR)
    if low >= 0.9 * size_start:
        return BranchEnd(float(start.alpha), "bifurcation", "trace")
    sizes = np.geomspace(0.9 * size_start, low, n_steps)
    cur, pts = start, [start]
    for size in sizes:
        target, left = float(size), 4 if semantic else 1
        while True:
            # a mirrored semantic start's memory (Jacobian, candidates) belongs to the mirror state: not reused
            memory = cur.memory if not semantic or cur.overlaps.th0 > 0 else None
            fp = solve_at_order(params, order, target, cur.overlaps, config=cfg, memory=memory)
            ok = fp.status.converged and fp.branch == branch and math.isfinite(fp.alpha)
            da = fp.alpha - cur.alpha
            jump = ok and (abs(da) if semantic else -da) > max_alpha_jump
            if ok and not jump:
                pts.append(fp)
                cur = fp
                if target == float(size):
                    break
                target = float(size)
                continue
            if left == 0:
                break
            left -= 1
            target = math.sqrt(target * overlap_size(cur, order))
        if jump:  # a persistent jump in alpha stops the trace; a persistent failure goes on to the next value
            break
    if len(pts) == 1:  # no step from the start: the trace shows nothing of where the branch ends
        return BranchEnd(math.nan, STOPPED, "trace", note=(
            f"the trace at fixed {'theta' if semantic else 'm'} made no step from alpha = {start.alpha:.4g}: its "
            f"solves at a smaller {'theta' if semantic else '|m|'} did not converge"))
    best = (min if semantic else max)(pts, key=lambda p: p.alpha)
    if jump and best is pts[-1]:  # alpha still moving towards the end where the trace stopped: not located
        return BranchEnd(math.nan, STOPPED, "trace", tuple(pts[1:]), note=(
            f"the trace at fixed {order} stopped at alpha = {best.alpha:.4g}, short of the end: its next step jumps "
            f"in alpha by more than {max_alpha_jump:g}"))
    kind = "bifurcation" if best is pts[-1] and len(pts) > 1 else "fold"
    alphas = [p.alpha for p in pts]
    backwards = [b - a for a, b in zip(alphas, alphas[1:])]
    if kind == "bifurcation" and (max(backwards) > 0 if semantic else min(backwards) < 0):
        # alpha moved away from the end on the way to it: the rule's noise, which a finer rule may not share
        far = (max if semantic else min)(alphas)
        return BranchEnd(float(best.alpha), kind, "trace", tuple(pts[1:]), note=(
            f"alpha along the trace is not monotone (it reached {far:.4g} before ending at {best.alpha:.4g}): near "
            f"the end the trace may follow the rule's noise ({cfg.quadrature}); its extreme point re-solved on a "
            "finer rule tells (the commands do, on --end-quadrature)"))
    return BranchEnd(float(best.alpha), kind, "trace", tuple(pts[1:]))
