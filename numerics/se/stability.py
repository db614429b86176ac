"""Stability of the SE map's fixed points (docs/method.md sections 5 and 12).

At the agnostic branch: lambda, the eigenvalue in the theta direction,
lambda = alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l], S_l = eta_l sum_k xi_k eta_k - xi_l
(:mod:`attnphase.theory.stability`), and mu, the leading eigenvalue of the m-block; the branches end where
they cross 1 (:mod:`attnphase.numerics.phase.bifurcation`).  At any fixed point: :func:`se_jacobian`
(:func:`matrix_jacobian` at r >= 2 or r* >= 2) by central differences and :func:`stability_eigenvalue`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.prox.global_prox import Candidates
from attnphase.numerics.quadrature.rules import QuadratureRule, matrix_rule
from attnphase.numerics.se.channel import channel_moments, prox_with_minima
from attnphase.numerics.se.fixed_point import MAX_FD_HALVINGS
from attnphase.numerics.se.gauge import gauge_tangents
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.se_map import admissible, model_rule, se_step
from attnphase.numerics.se.starts import teacher_rank
from attnphase.numerics.se.updates import update, update_hat
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams
from attnphase.theory.stability import m_stability, theta_stability

#: Relative step of :func:`se_jacobian`'s central differences.
JACOBIAN_STEP = 1e-3

#: At the student Q = 0 :func:`matrix_jacobian` differentiates the map at q0 = max(q / r, this) I: the map is linear
#: in the student's scale there (at lam = 1, alpha = 1 the leading eigenvalue at q0 = 1e-10 I, no zero student, and
#: at 5e-13 I agree to 2e-8), and at q0 ~ 1e-35, where a solve can land, the steps (q / r)^{1/2} / 10 in m leave the
#: fields' round-off larger than the differences.
ZERO_STUDENT_SCALE = 1e-14

#: The steps :func:`stability_eigenvalue` takes the median over (a jump of the map inside one difference
#: quotient moves the leading eigenvalue by itself: one such outlier among three is discarded).
STABILITY_STEPS = (1e-3, 3e-3, 1e-2)

@dataclass(frozen=True, eq=False)
class NodeSolves:
    """The proximal solves at a rule's nodes at one state: g_l = (h_hat_l - w_l) / V_l (N, L), the nodes whose
    solve failed, and the distinct local minima of the full search (global mode; else None)."""

    g: np.ndarray
    failures: int
    minima: Candidates | None


def node_solves(params: ModelParams, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
                polish_from: Candidates | None = None) -> NodeSolves:
    """g at the rule's nodes for the state ``ov``: one full proximal search, or, with ``polish_from``, a
    polish of those minima (:func:`attnphase.numerics.se.channel.prox_with_minima`)."""
    w, V, res, minima = prox_with_minima(model_kernels(params), params, ov, rule, config, polish_from)
    return NodeSolves((res.h - w) / V, int((~res.converged).sum()), minima)


def eigenvalue_state(ov: Overlaps) -> Overlaps:
    """The state the eigenvalues in theta and m (:func:`theta_stability_at`, :func:`m_stability_at`) are taken at:
    ``ov``, or at the student Q = 0 the agnostic state at q0 = max(q0, :data:`ZERO_STUDENT_SCALE`)
    (:meth:`Overlaps.isotropic_zero`), where the fields sqrt(q0) xi keep their digits.  At q0 ~ 1e-50, where a strong
    ridge's solve lands, E[g xi] is round-off over sqrt(q0): ``--lam 0.1 --omega 0.1`` gave mu = 59 at alpha =
    1.47 and 5e5 at 1.67, where mu rises smoothly from 0.87 at alpha = 1 to 1.64 at 1.67 at this state."""
    return ov.isotropic_zero(ZERO_STUDENT_SCALE) if ov.zero_student else ov


def theta_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
    solves: NodeSolves | None = None,
) -> tuple[float, int]:
    """(lambda, number of nodes whose proximal solve failed) at the th0 = 0 state ``ov`` (at Q = 0:
    :func:`eigenvalue_state`); ``solves``: the proximal solves at the rule's nodes for ``ov`` if the caller has them
    (else one full search; at Q = 0 always one)."""
    if ov.th0 != 0.0:
        raise ValueError(f"theta stability is defined at th0 = 0, got th0 = {ov.th0}")
    if ov.zero_student:  # the solves given were at the raw state
        ov, solves = eigenvalue_state(ov), None
    xi, eta = rule.nodes[:, :params.L], rule.nodes[:, params.L:]
    solves = solves or node_solves(params, ov, rule, config)
    S = eta * (xi * eta).sum(axis=1, keepdims=True) - xi
    E_gS = rule.weights @ (solves.g * S)
    return theta_stability(alpha, ov.V0, ov.q0, params.rho0, params.sigma2, E_gS), solves.failures


def m_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
    solves: NodeSolves | None = None,
) -> tuple[float, int]:
    """(mu, failed proximal solves): the leading eigenvalue of the m-block of the SE map's Jacobian at the
    agnostic state ``ov`` (at Q = 0: :func:`eigenvalue_state`); ``solves`` as for :func:`theta_stability_at`."""
    if ov.th0 != 0.0 or np.any(ov.m != 0.0):
        raise ValueError(f"m stability is defined at an agnostic state (m = 0, th0 = 0), got m = {ov.m}, th0 = {ov.th0}")
    if ov.zero_student:  # the solves given were at the raw state
        ov, solves = eigenvalue_state(ov), None
    solves = solves or node_solves(params, ov, rule, config)
    E_gxi = np.einsum("n,nl,nj->lj", rule.weights, solves.g, rule.nodes[:, :params.L])
    J = m_stability(alpha, ov.V0, ov.q0, params.sigma2, params.P_array, E_gxi)
    return leading_on_range(J, params.P_array), solves.failures


def leading_on_range(J: np.ndarray, P: np.ndarray) -> float:
    """max Re(eigenvalue) of J = alpha V0 P G restricted to the range of P (invariant under J; J's other
    eigenvalues are exactly 0, which would hide a negative leading one); NaN for P = 0."""
    w, U = np.linalg.eigh(P)
    R = U[:, w > 1e-12 * max(1.0, float(np.max(np.abs(w))))]
    return float(np.max(np.linalg.eigvals(R.T @ J @ R).real)) if R.shape[1] else float("nan")


#: Per direction: the eigenvalue at a state, and the sign of its slope in alpha where the branch ends.
DIRECTIONS = {"theta": (theta_stability_at, 1.0), "m": (m_stability_at, -1.0)}


def se_jacobian(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
                step: float = JACOBIAN_STEP) -> np.ndarray:
    """dF/dx at ``ov`` by :func:`central_differences`, x = (q0, V0, m_1..m_L, th0) and F the exact SE step
    (:func:`~attnphase.numerics.se.se_map.se_step`) on ``config.quadrature`` symmetrised over the model's
    group; every overlap is perturbed, the symmetry-breaking directions included."""
    cfg = config or SolverConfig()
    rule = model_rule(params, cfg)

    def F(o: Overlaps) -> np.ndarray:
        return se_step(params, alpha, o, cfg, rule=rule)[0].to_vector()

    return central_differences(F, ov, Overlaps.from_vector, params.rho0, step)


def central_differences(F: Callable[[Overlaps], np.ndarray], ov: Overlaps, unpack: Callable[[np.ndarray], Overlaps],
                        rho0: float, step: float) -> np.ndarray:
    """J[:, i] = (F(x0 + h_i e_i) - F(x0 - h_i e_i)) / (2 h_i) at x0 = ``ov``'s vector (``unpack`` its inverse),
    h_i = ``step`` max(|x0_i|, s_i), s_i = 1 on V0's coordinates and 0.1 on the others; one-sided where a side
    leaves the admissible region (:func:`admissible`), h_i halved (at most MAX_FD_HALVINGS times) while both do.
    At the student Q = 0 (:attr:`Overlaps.zero_student`) the steps take the student's own scale, s_i = q / r on
    q0's coordinates and 0.1 (q / r)^{1/2} on m's and th0's: a step of 0.1 there would swamp the fields' spread
    (q / r)^{1/2}, and g's round-off divided by it would be the difference."""
    x0 = ov.to_vector()
    k = ov.r * (ov.r + 1) // 2  # V0 packed after q0's upper triangle
    scale = np.full(x0.size, 0.1)
    scale[k:2 * k] = 1.0
    if ov.zero_student:
        scale[:k] = ov.q / ov.r
        scale[2 * k:] = 0.1 * np.sqrt(ov.q / ov.r)
    J = np.empty((x0.size, x0.size))
    for i in range(x0.size):
        h = step * max(abs(x0[i]), scale[i])
        for _ in range(MAX_FD_HALVINGS + 1):
            sides = []
            for sign in (1.0, -1.0):
                x = x0.copy()
                x[i] += sign * h
                sides.append(x if admissible(unpack(x), rho0) else x0)
            if sides[0] is not x0 or sides[1] is not x0:
                break
            h *= 0.5
        xp, xm = sides
        J[:, i] = (F(unpack(xp)) - F(unpack(xm))) / (xp[i] - xm[i])
    return J


def matrix_jacobian(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None) -> np.ndarray:
    """dF/dx at the matrix overlaps ``ov`` (r >= 2 or r* >= 2, x = :meth:`Overlaps.to_vector`) by
    :func:`central_differences`, F the rank-r SE map with no hat projected on ``config.quadrature``, every
    difference polished from the base state's full search (the same basins on both sides of each quotient).  At the
    student Q = 0 (:attr:`Overlaps.zero_student`) F is the map the solver iterates there, q0 and V0 of the state and
    of its image made isotropic (:meth:`Overlaps.isotropic_zero`; m and th0 kept): q0's directions are round-off
    there, and the map at the raw state divides that round-off by the steps; it is differentiated at q0 = max(q / r,
    :data:`ZERO_STUDENT_SCALE`) I, m = th0 = 0."""
    cfg = config or SolverConfig()
    L, r, rs = params.L, params.r, teacher_rank(params)
    rule = matrix_rule(L, r, rs, cfg.quadrature)
    kernels = get_kernels(L, r, channel=params.channel)

    def isotropic(o: Overlaps) -> Overlaps:
        """At Q = 0: q0 and V0 made isotropic, m and th0 (the steps' own directions) kept."""
        if not o.zero_student:
            return o
        iso = o.isotropic_zero()
        return Overlaps(iso.q0, iso.V0, o.m, o.th0)

    ov = eigenvalue_state(ov)  # at Q = 0 the isotropic state, at a scale where the differences keep their digits
    minima = channel_moments(kernels, params, isotropic(ov), rule, config=cfg).candidates  # every difference's

    def F(o: Overlaps) -> np.ndarray:
        try:
            at = isotropic(o)
            mom = channel_moments(kernels, params, at, rule, config=cfg, candidates=minima, full_search=False)
            new = update(params, update_hat(params, alpha, at, mom, "mixed"))
            return isotropic(new).to_vector() if o.zero_student else new.to_vector()
        except (ValueError, np.linalg.LinAlgError):  # a difference's state where the map is not defined: J is NaN
            return np.full(o.to_vector().size, np.nan)

    return central_differences(F, ov, partial(Overlaps.from_vector, L=L, r=r, r_star=rs), params.rho0,
                               JACOBIAN_STEP)


def transverse_leading_eigenvalue(J: np.ndarray, ov: Overlaps) -> float:
    """max Re(eigenvalue) of C^T J C, C an orthonormal basis of the complement of the gauge orbit's tangents T at
    ``ov`` (J T = T: the eigenvalue 1 of the orbit left out)."""
    T = gauge_tangents(ov)
    C = np.eye(J.shape[0])
    if T.shape[1]:
        U, sv, _ = np.linalg.svd(T, full_matrices=True)
        rank = int(np.sum(sv > 1e-8 * max(1.0, float(np.abs(ov.to_vector()).max()))))
        C = U[:, rank:]
    return float(np.max(np.linalg.eigvals(C.T @ J @ C).real))


def stability_eigenvalue(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None) -> float:
    """The leading eigenvalue max Re(lambda) of the SE map's Jacobian at the fixed point ``ov`` (stable below 1;
    docs/method.md section 12): at r = r* = 1 the median over :data:`STABILITY_STEPS` of :func:`se_jacobian`'s
    (at an agnostic state at least lambda and mu), else :func:`matrix_jacobian`'s transverse to the gauge orbit.
    At the student Q = 0 the scalar form too takes the agnostic state at q0 = max(q0, :data:`ZERO_STUDENT_SCALE`),
    where its differences keep their digits (m and th0 there are round-off).
    """
    cfg = config or SolverConfig()
    if ov.is_matrix:
        J = matrix_jacobian(params, alpha, ov, cfg)
        return transverse_leading_eigenvalue(J, ov) if np.all(np.isfinite(J)) else float("nan")
    ov = eigenvalue_state(ov)
    jacobians = [se_jacobian(params, alpha, ov, cfg, step) for step in STABILITY_STEPS]
    leads = [np.max(np.linalg.eigvals(J).real) for J in jacobians if np.all(np.isfinite(J))]
    lead = float(np.median(leads)) if leads else float("nan")  # NaN: no step gave a finite Jacobian
    if ov.th0 == 0.0 and not np.any(ov.m):
        rule = model_rule(params, cfg)
        lead = max(lead, theta_stability_at(params, alpha, ov, rule, cfg)[0],
                   m_stability_at(params, alpha, ov, rule, cfg)[0])
    return float(lead)
