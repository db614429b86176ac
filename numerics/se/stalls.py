"""Cold state-evolution solves that stall, or converge within the rule's jumps of an agnostic point, judged once
more (docs/method.md section 4): converged to the rule's jump scale (:func:`jump_at`), finished on the symmetric
subspace (:func:`finish_collapse`), or the agnostic point with the branch absent (:func:`judge_agnostic_image`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.stability import m_stability_at, theta_stability_at
from attnphase.numerics.se.fixed_point import DISTRUST_RESIDUAL, FD_STEP, Evaluation
from attnphase.numerics.se.overlaps import on_branch_subspace
from attnphase.numerics.se.starts import initial_overlaps
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.numerics.se.se_map import FixedAlpha, SEMap
from attnphase.numerics.se.results import FixedPoint

#: The solver a stalled solve is finished with (:func:`attnphase.numerics.se.state_evolution.solve` passes itself).
Solver = Callable[..., FixedPoint]


#: A stalled solve whose residual is above this is never accepted at the rule's jump scale, however large the jump
#: next to it: the approximate map's own limit (a residual that size is no node's contribution; ``--rho0 1e-6``,
#: alpha = 2, omega = 0.3: residual 0.44 beside a jump of 1.26, where V0 ~ 2300).
JUMP_ACCEPT_MAX = DISTRUST_RESIDUAL


def judge_stalled(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule, solve: Solver) -> FixedPoint:
    """A cold solve that did not converge, judged once more: converged to the rule's jump scale
    (:func:`jump_at`; residual at most :data:`JUMP_ACCEPT_MAX`), else finished on the symmetric subspace where it
    creeps (:func:`finish_collapse`), else solved again with damping (:func:`damped_retry`)."""
    if fp.status.converged or not math.isfinite(fp.status.residual):
        return fp
    judged, ev = at_jump_scale(fp, SEMap(fp.params, FixedAlpha(fp.alpha), rule, cfg))
    if judged.status.converged or ev is None:
        return judged
    return damped_retry(finish_collapse(fp, ev, cfg, rule, judged.status.iterations, solve), cfg, rule, solve)


def at_jump_scale(fp: FixedPoint, smap: SEMap) -> tuple[FixedPoint, Evaluation | None]:
    """(``fp`` accepted as converged to the rule's jump scale where the jump of ``smap`` (its map) next to it
    (:func:`jump_at`) is at least its exact residual, at most :data:`JUMP_ACCEPT_MAX`; else ``fp`` with the
    evaluations spent counted; the exact evaluation at ``fp``, None where it left the map's domain).  At every rank."""
    if (ev := smap.evaluate(fp.overlaps.to_vector(), exact=True)) is None:
        return fp, None
    jump, evaluations = jump_at(smap, ev) if ev.residual <= JUMP_ACCEPT_MAX else (math.nan, 0)
    spent = fp.status.iterations + 1 + evaluations
    if jump >= ev.residual:
        message = (f"converged to the rule's jump scale: residual {ev.residual:.2e} <= the jump {jump:.2e} of the "
                   f"SE map within {min(ev.residual, JUMP_PROBE):.1e} of the point")
        return fp.with_status(converged=True, iterations=spent, residual=ev.residual, message=message, jump=jump), ev
    return fp.with_status(iterations=spent), ev


#: The damping of :func:`damped_retry`: x <- (1 - d) F(x) + d x.
RETRY_DAMPING = 0.5


def damped_retry(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule, solve: Solver) -> FixedPoint:
    """A cold solve still not converged, solved once more from its branch's cold start with damping
    :data:`RETRY_DAMPING` (where ``cfg``'s is smaller): the undamped iteration can overshoot from a start far
    from every fixed point and wander, where the damped one settles (L = 2 with P = I at alpha = 2, omega = 0.3:
    on the agnostic point, the positional branch having ended at alpha = 1.39).  The retry where it converges,
    its message saying so and its evaluations counting both solves; else ``fp``."""
    if fp.status.converged or cfg.damping >= RETRY_DAMPING:
        return fp
    again = solve(fp.params, fp.alpha, fp.requested, config=cfg.replace(damping=RETRY_DAMPING), rule=rule)
    if not again.status.converged:
        return fp
    message = (f"{again.status.message} (damping {RETRY_DAMPING:g}: the undamped start stalled at residual "
               f"{fp.status.residual:.2e})")
    return again.with_status(iterations=fp.status.iterations + again.status.iterations, message=message)


#: The probes of :func:`jump_at` reach min(residual, JUMP_PROBE) from the point: the quasi-Newton step's own
#: finite-difference scale.
JUMP_PROBE = FD_STEP


def jump_at(smap: SEMap, ev: Evaluation) -> tuple[float, int]:
    """(J, evaluations): the largest second difference of the exact map along the probe directions d,

        J = max_{d, s = +-1} max_i |F(x)_i + F(x + s h d)_i - 2 F(x + s h d / 2)_i| / max(1, |x_i|),

    h = min(r, JUMP_PROBE), r the residual at x, d the columns of the symmetric subspace at x and the residual's
    direction on it, each step scaled like the residual.  J >= r: F jumps by the whole residual near x.
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
    """A cold solve that stalled while the map shrinks its order parameter (below COLLAPSED of the cold start's),
    re-solved warm from its projection on the symmetric subspace (m = 0, th0 = 0): where that converges, the
    agnostic point (``requested`` unchanged, the message saying how), else ``fp`` unchanged.  ``ev`` is the exact
    evaluation at ``fp``'s overlaps, ``spent`` the SE evaluations so far.
    """
    params = fp.params
    if fp.requested not in ORDER_COMPONENTS or not shrinking_order(ev.x, ev.fx, fp.requested, params.L):
        return fp
    o = ORDER_COMPONENTS[fp.requested](params.L)
    size = float(np.linalg.norm(ev.x[o]))
    if size > COLLAPSED * float(np.linalg.norm(initial_overlaps(params, fp.requested).to_vector()[o])):
        return fp  # the iterates have not lost most of the order parameter: no creep to speak of
    agnostic = solve(params, fp.alpha, "agnostic", config=cfg, rule=rule,
                     init=on_branch_subspace(fp.overlaps, "agnostic"))
    if not agnostic.status.converged:
        return fp
    message = (f"converged on the symmetric subspace: the {fp.requested} start stalled at residual "
               f"{fp.status.residual:.2e} (order parameter {size:.3g}) with the map shrinking its order parameter")
    status = replace(agnostic.status, iterations=spent + agnostic.status.iterations, message=message,
                     prox_failures=fp.status.prox_failures + agnostic.status.prox_failures)
    return replace(agnostic, status=status, requested=fp.requested)


def confirm_jump_acceptance(fp: FixedPoint, reproduced: int, tried: int) -> FixedPoint:
    """``fp``, or ``fp`` not converged where it was accepted at the rule's jump scale (:func:`jump_at`) and
    fewer than two of the ``tried`` re-solves on other rules (``reproduced``) converged on its branch: a place
    where this rule's map jumps, not a fixed point on this rule (a finer rule can tell whether the model has one there:
    the aligned semantic point at alpha = 0.6, omega = 0.3 is missed on sobol10:4 and converges on sobol12:4)."""
    jump = fp.status.jump
    if not (fp.status.converged and math.isfinite(jump)) or reproduced >= 2 or tried == 0:
        return fp
    message = (f"not converged: residual {fp.status.residual:.2e} above tol was accepted at the rule's jump scale "
               f"{jump:.2e}, but only {reproduced} of the {tried} rules of the error estimate reproduce the "
               f"{fp.branch} point: not a fixed point on this rule (a finer --quadrature tells whether the model "
               f"has one here)")
    return fp.with_status(converged=False, message=message)


#: The key of a FixedPoint's ``extra`` where :func:`judge_agnostic_image` keeps its evidence:
#: {"mu" or "lambda": (the rule's name, the agnostic point's eigenvalue on it)}.
AGNOSTIC_EIGENVALUE = "agnostic_eigenvalue"

#: :func:`judge_agnostic_image` looks at a converged point whose order parameter is at most this fraction of the
#: cold start's, times (1 - the agnostic point's eigenvalue in that direction).
IMAGE_FRACTION = 0.1


def judge_agnostic_image(fp: FixedPoint, cfg: SolverConfig, rule: QuadratureRule, solve: Solver) -> FixedPoint:
    """A cold solve that converged on its symmetry-breaking branch with an order parameter o close to 0, judged
    against the agnostic point x_a (m = 0, th0 = 0) it sits next to (docs/method.md section 4).

    Where x_a converges with eigenvalue e < 1 in the order parameter's direction (mu in m, lambda in theta:
    :mod:`attnphase.numerics.se.stability`) and |o| <= IMAGE_FRACTION (1 - e) |o_0| (o_0 the cold start's),
    the result is x_a, labelled agnostic (``requested`` unchanged), its message giving the evidence (also in
    ``extra[AGNOSTIC_EIGENVALUE]``).  Otherwise ``fp`` unchanged.
    """
    if not fp.status.converged or fp.requested not in ORDER_COMPONENTS or fp.branch != fp.requested:
        return fp
    params = fp.params
    o = ORDER_COMPONENTS[fp.requested](params.L)
    size = float(np.linalg.norm(fp.overlaps.to_vector()[o]))
    start = float(np.linalg.norm(initial_overlaps(params, fp.requested).to_vector()[o]))
    if size > IMAGE_FRACTION * start:
        return fp  # far from the symmetric subspace: a point of the branch (the common case, nothing computed)
    agnostic = solve(params, fp.alpha, "agnostic", config=cfg, rule=rule,
                     init=on_branch_subspace(fp.overlaps, "agnostic"))
    if not (agnostic.status.converged and agnostic.branch == "agnostic"):
        return fp
    at = m_stability_at if fp.requested == "positional" else theta_stability_at
    eig, _ = at(params, fp.alpha, on_branch_subspace(agnostic.overlaps, "agnostic"), rule, cfg)
    if not (math.isfinite(eig) and eig < 1.0 and size <= IMAGE_FRACTION * (1.0 - eig) * start):
        return fp
    name, symbol = ("m", "mu") if fp.requested == "positional" else ("theta", "lambda")
    norm = f" (norm of m_1..m_{params.L})" if name == "m" else ""  # beside a record whose m is m_1
    message = (f"absent: the {fp.requested} start converged to |{name}| = {size:.2g}{norm}, the agnostic point "
               f"displaced by the rule's jumps; the agnostic point's eigenvalue in {name} is below 1 here ({symbol} = {eig:.3g}), "
               f"so no {fp.requested} branch leaves it")
    status = replace(agnostic.status, iterations=fp.status.iterations + agnostic.status.iterations, message=message,
                     prox_failures=fp.status.prox_failures + agnostic.status.prox_failures)
    extra = agnostic.extra | {AGNOSTIC_EIGENVALUE: {symbol: (rule.name, float(eig))}}
    return replace(agnostic, status=status, requested=fp.requested, extra=extra)
