"""Cold state-evolution solves that stall, judged once more (docs/method.md section 4).

The SE map on a finite rule is piecewise smooth: where a node's global proximal minimiser switches
basin, F jumps by that node's weight times the change of its g.  A cold solve that did not converge
(:func:`attnphase.numerics.se.state_evolution.solve`) ends in one of two stated ways, or stays a failure:

* converged to the rule's jump scale (:func:`jump_at`): the residual r at the best point is at most
  the jump J of the map measured within min(r, FD_STEP) of it; ``status.jump`` = J;
* finished on the symmetric subspace (:func:`finish_collapse`): the map shrinks the order parameter
  at the best point, which has lost more than half of the cold start's; the warm agnostic solve from
  its projection is the result, labelled agnostic (``requested`` unchanged).

A cold solve that converged on its branch with an order parameter at the rule's noise next to an agnostic
point that is stable in that direction is that agnostic point (:func:`judge_agnostic_image`): the branch is
absent there, and the result says so with its evidence.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.stability import m_stability_at, theta_stability_at
from attnphase.numerics.se.fixed_point import FD_STEP, Evaluation
from attnphase.numerics.se.overlaps import Overlaps, on_branch_subspace
from attnphase.numerics.se.starts import initial_overlaps
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.se_map import FixedAlpha, SEMap
from attnphase.numerics.se.results import FixedPoint

#: The solver a stalled solve is finished with: :func:`attnphase.numerics.se.state_evolution.solve`, which
#: calls this module and passes itself in.
Solver = Callable[..., FixedPoint]


def judge_stalled(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule, solve: Solver) -> FixedPoint:
    """A cold solve that did not converge, judged once more: converged to the rule's jump scale
    (:func:`jump_at`), else finished on the symmetric subspace where it creeps (:func:`finish_collapse`)."""
    if fp.status.converged or not math.isfinite(fp.status.residual):
        return fp
    x = fp.overlaps.to_vector()
    smap = SEMap(fp.params, FixedAlpha(fp.alpha), rule, cfg)
    ev = smap.evaluate(x, exact=True)
    if ev is None:
        return fp
    jump, evaluations = jump_at(smap, ev)
    spent = fp.status.iterations + 1 + evaluations
    if jump >= ev.residual:
        message = (f"converged to the rule's jump scale: residual {ev.residual:.2e} <= the jump {jump:.2e} of the "
                   f"SE map within {min(ev.residual, JUMP_PROBE):.1e} of the point")
        return replace(fp, status=replace(fp.status, converged=True, iterations=spent, residual=ev.residual,
                                          message=message, jump=jump))
    return finish_collapse(fp, ev, cfg, rule, spent, solve)


#: The probes of :func:`jump_at` reach min(residual, JUMP_PROBE) from the point (scaled like the residual):
#: the quasi-Newton step's own finite-difference scale (fixed_point.FD_STEP), below which the solver
#: cannot see the map's slope, so the smooth part of a second difference stays O(|F''| 1e-8).
JUMP_PROBE = FD_STEP


def jump_at(smap: SEMap, ev: Evaluation) -> tuple[float, int]:
    """(J, evaluations): the largest second difference of the exact map along the probe directions d,

        J = max_{d, s = +-1} max_i |F(x)_i + F(x + s h d)_i - 2 F(x + s h d / 2)_i| / max(1, |x_i|),

    h = min(r, JUMP_PROBE),

    r the residual at x, d the columns of the symmetric subspace at x and the residual's direction on
    it, each step scaled like the residual (component i times max(1, |x_i|)).  Where F is smooth the
    second difference is O(|F''| h^2), far below r; J >= r means that F jumps by at least the whole
    residual within min(r, JUMP_PROBE) of x: a node's global proximal minimiser switches basin there,
    and no point of that neighbourhood is a fixed point of the rule's map to better than the jump.
    """
    x, r = ev.x, ev.residual
    B = smap.subspace(x)
    scale = np.maximum(1.0, np.abs(x))
    toward = B.T @ ((ev.fx - x) / scale)
    directions = [B[:, j] for j in range(B.shape[1])]
    if np.linalg.norm(toward) > 0:
        directions.append(B @ (toward / np.linalg.norm(toward)))
    jump, n = 0.0, 0
    for d in directions:
        for sign in (1.0, -1.0):
            step = sign * min(r, JUMP_PROBE) * scale * d
            if not (smap.admissible(x + step) and smap.admissible(x + 0.5 * step)):
                continue
            half, whole = smap.evaluate(x + 0.5 * step, exact=True), smap.evaluate(x + step, exact=True)
            n += 2
            if half is not None and whole is not None:
                jump = max(jump, float(np.max(np.abs(ev.fx + whole.fx - 2.0 * half.fx) / scale)))
    return jump, n


#: The order parameter of each symmetry-breaking branch: the components of x = (q0, V0, m, th0) it is.
ORDER_COMPONENTS = {"positional": lambda L: slice(2, 2 + L), "semantic": lambda L: slice(2 + L, 3 + L)}


def shrinking_order(x: np.ndarray, fx: np.ndarray, branch: str, L: int) -> bool:
    """Whether the SE map shrinks the branch's order parameter at x: o . (F(x)_o - o) < 0, o the
    order-parameter components of x (m for positional, th0 for semantic)."""
    if branch not in ORDER_COMPONENTS:
        return False
    o = ORDER_COMPONENTS[branch](L)
    return bool(np.any(x[o] != 0) and float(x[o] @ (fx[o] - x[o])) < 0)


#: A stalled solve counts as creeping towards the symmetric subspace only once its order parameter
#: has fallen below this fraction of the branch's cold start (:func:`initial_overlaps`).
COLLAPSED = 0.5


def finish_collapse(fp: FixedPoint, ev: Evaluation, cfg: SolverConfig, rule: QuadratureRule, spent: int,
                    solve: Solver) -> FixedPoint:
    """A cold solve that stalled while the map shrinks its order parameter, finished where it creeps to.

    Near a branch's end (or where the branch does not exist on the rule) the order parameter of the
    iterates decays by a factor close to 1 per step (the SE Jacobian's eigenvalue in that direction
    is ~1), and the stall is that slow creep, not the map's jumps: at L = 3, suite case (a), alpha =
    0.5, sobol10:4, |m| fell from 0.094 to 3.7e-3 over 89 evaluations, o . (F - x)_o < 0 throughout,
    and the solve stopped at residual 7.8e-5.  Such a solve (the map shrinking the order parameter at
    its best point, which has lost more than half of the cold start's: COLLAPSED) is re-solved warm
    from the projection of its best point on the symmetric subspace (m = 0, th0 = 0: the agnostic
    state, a fixed point of the map's symmetry); when that converges the result is that fixed point, labelled by what it is
    (``branch`` agnostic, ``requested`` unchanged), its message saying how it was reached.  Otherwise
    the original failure stands, unchanged.  ``ev`` is the exact evaluation at ``fp``'s overlaps,
    ``spent`` the SE evaluations so far (the solve's and the judging ones), ``solve`` the solver of the warm
    agnostic re-solve.
    """
    params = fp.params
    if fp.requested not in ORDER_COMPONENTS or not shrinking_order(ev.x, ev.fx, fp.requested, params.L):
        return fp
    ov = fp.overlaps
    o = ORDER_COMPONENTS[fp.requested](params.L)
    size = float(np.linalg.norm(ev.x[o]))
    if size > COLLAPSED * float(np.linalg.norm(initial_overlaps(params, fp.requested).to_vector()[o])):
        return fp  # the iterates have not lost most of the order parameter: no creep to speak of
    agnostic = solve(params, fp.alpha, "agnostic", config=cfg, rule=rule,
                     init=Overlaps(q0=ov.q0, V0=ov.V0, m=np.zeros(params.L), th0=0.0))
    if not agnostic.status.converged:
        return fp
    message = (f"converged on the symmetric subspace: the {fp.requested} start stalled at residual "
               f"{fp.status.residual:.2e} (order parameter {size:.3g}) with the map shrinking its order parameter")
    status = replace(agnostic.status, iterations=spent + agnostic.status.iterations, message=message,
                     prox_failures=fp.status.prox_failures + agnostic.status.prox_failures)
    return replace(agnostic, status=status, requested=fp.requested)


def confirm_jump_acceptance(fp: FixedPoint, reproduced: int, tried: int) -> FixedPoint:
    """``fp`` unless it was accepted at the rule's jump scale (:func:`jump_at`: residual above tol) and the
    rules of its error estimate do not back it: fewer than two of the ``tried`` re-solves on other rules
    (``reproduced``) converged on its branch.  Such a point is no fixed point of the model, only a place
    where one rule's map jumps (at sigma = 1e4, softmax saturated, every point is one: theta = 1.8e-6 was
    accepted at residual 4e-7 with tol 1e-10, 0 of 4 blocks on the branch); it is returned not converged."""
    jump = fp.status.jump
    if not (fp.status.converged and math.isfinite(jump)) or reproduced >= 2 or tried == 0:
        return fp
    message = (f"not converged: residual {fp.status.residual:.2e} above tol was accepted at the rule's jump scale "
               f"{jump:.2e}, but only {reproduced} of the {tried} rules of the error estimate reproduce the "
               f"{fp.branch} point: not a fixed point of the model")
    return replace(fp, status=replace(fp.status, converged=False, message=message))


#: The key of a FixedPoint's ``extra`` under which :func:`judge_agnostic_image` keeps the evidence it computed:
#: {symbol ("mu" or "lambda"): (the rule's name, the agnostic point's eigenvalue on that rule)}, which
#: :func:`attnphase.numerics.phase.absence.agnostic_eigenvalue` reads instead of computing it again.
AGNOSTIC_EIGENVALUE = "agnostic_eigenvalue"

#: :func:`judge_agnostic_image` looks at a converged point whose order parameter is at most this fraction of the
#: cold start's, times (1 - the agnostic point's eigenvalue in that direction).
IMAGE_FRACTION = 0.1


def judge_agnostic_image(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule, solve: Solver) -> FixedPoint:
    """A cold solve that converged on its symmetry-breaking branch with an order parameter o close to 0, judged
    against the agnostic point x_a (m = 0, th0 = 0) it sits next to.

    The eigenvalue e of the SE map at x_a in the order parameter's direction (mu in m for positional, lambda in
    theta for semantic: :mod:`attnphase.numerics.se.stability`, docs/model.md section 6) decides whether a
    branch can leave x_a: a branch bifurcates from it where e = 1, and a point of a branch born at e = 1 has
    (1 - e) ~ (|o| / o_0)^2 near its birth, o_0 the scale of the branch's order parameter (the cold start's,
    :func:`initial_overlaps`).  So where x_a converges (warm from the point's projection on the symmetric
    subspace), e < 1 and

        |o| <= IMAGE_FRACTION (1 - e) |o_0|,

    no branch of the model's map passes through the point: it is x_a displaced by the rule's jumps (a node's
    proximal minimiser switching basin within |o| of x_a; measured at L = 3, P = I, omega = 0.3, alpha = 1,
    sobol10:4: |m| = 2.3e-4 with residual 3e-11, while F_m(x_a + eps d) = -0.24 eps d for eps <= 1e-6, +2.6 eps d
    at eps = 1e-4, and mu = 0.59; three of the rule's four blocks converge to m = 0).  The result is then x_a,
    labelled agnostic (``requested`` unchanged), its message giving the evidence: the branch is absent here
    (the eigenvalue also in ``extra[AGNOSTIC_EIGENVALUE]``).  Otherwise ``fp`` unchanged.
    """
    if not fp.status.converged or fp.requested not in ORDER_COMPONENTS or fp.branch != fp.requested:
        return fp
    params = fp.params
    o = ORDER_COMPONENTS[fp.requested](params.L)
    size = float(np.linalg.norm(fp.overlaps.to_vector()[o]))
    start = float(np.linalg.norm(initial_overlaps(params, fp.requested).to_vector()[o]))
    if size > IMAGE_FRACTION * start:
        return fp  # far from the symmetric subspace: a point of the branch (the common case, nothing computed)
    ov = fp.overlaps
    agnostic = solve(params, fp.alpha, "agnostic", config=cfg, rule=rule,
                     init=Overlaps(q0=ov.q0, V0=ov.V0, m=np.zeros(params.L), th0=0.0))
    if not (agnostic.status.converged and agnostic.branch == "agnostic"):
        return fp
    at = m_stability_at if fp.requested == "positional" else theta_stability_at
    eig, _ = at(params, fp.alpha, on_branch_subspace(agnostic.overlaps, "agnostic"), rule, cfg)
    if not (math.isfinite(eig) and eig < 1.0 and size <= IMAGE_FRACTION * (1.0 - eig) * start):
        return fp
    name, symbol = ("m", "mu") if fp.requested == "positional" else ("theta", "lambda")
    message = (f"absent: the {fp.requested} start converged to |{name}| = {size:.2g}, the agnostic point displaced by "
               f"the rule's jumps; the agnostic point is stable in {name} here ({symbol} = {eig:.3g} < 1), so no "
               f"{fp.requested} branch leaves it")
    status = replace(agnostic.status, iterations=fp.status.iterations + agnostic.status.iterations, message=message,
                     prox_failures=fp.status.prox_failures + agnostic.status.prox_failures)
    extra = agnostic.extra | {AGNOSTIC_EIGENVALUE: {symbol: (rule.name, float(eig))}}
    return replace(agnostic, status=status, requested=fp.requested, extra=extra)
