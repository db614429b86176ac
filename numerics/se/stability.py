"""Where the branches meet the agnostic one: the alpha at which it turns unstable in theta or in m.

At a th0 = 0 state the SE map's eigenvalue in the theta direction is
lambda = alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l], S_l = eta_l sum_k xi_k eta_k - xi_l
(:mod:`attnphase.theory.stability`: a likelihood-ratio derivative, no derivative of the jumping
proximal map).  Along the agnostic branch lambda(alpha) rises through 1 where the semantic
branch bifurcates from it; where that bifurcation is supercritical this is the semantic
branch's continuous end, located by secant steps on lambda(alpha) - 1 (:mod:`attnphase.numerics.phase.bifurcation`),
every lambda on the same (fine) rule.  The fixed-theta trace of :mod:`attnphase.numerics.phase.continuation` looks for the
same end from the other side, where alpha(theta) is flat and the rule's noise decides the minimum
(docs/method.md, section 5, branches and boundaries).  Likewise in the m direction: the leading eigenvalue mu of the
m-block of the Jacobian falls through 1 where the positional branch, followed upward, rejoins the
agnostic one.

Away from the agnostic branch no direction decouples: :func:`se_jacobian` takes the whole Jacobian
dF/dx of the SE map by central differences (:func:`matrix_jacobian` at r >= 2 or r* >= 2), and
:func:`stability_eigenvalue` is the leading eigenvalue a fixed point's stability is judged by (at r >= 2
transverse to the gauge orbit; ``attnphase census``, docs/method.md section 12, the census).
"""

from __future__ import annotations

from dataclasses import dataclass
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

#: The steps :func:`stability_eigenvalue` takes the median over.  The map jumps where a node's global
#: proximal minimiser changes basin, and a jump that falls inside one difference quotient moves the
#: leading eigenvalue by itself (measured, positional point at omega = 0.3, alpha = 1.25, sobol12: 0.30,
#: 0.40, 0.35, 0.38 at steps 1e-3, 3e-3, 1e-2, 3e-2, and 1.12, 0.41, 0.34, 0.40 at a point of the same
#: rule 1.6e-4 away in m; 0.30, 0.31, 0.77, 0.45 on another scrambling): one outlier among three steps
#: is discarded by the median.
STABILITY_STEPS = (1e-3, 3e-3, 1e-2)

@dataclass(frozen=True, eq=False)
class NodeSolves:
    """The proximal solves at a rule's nodes at one state.

    Attributes:
        g: g_l = (h_hat_l - w_l) / V_l per node, shape (N, L).
        failures: nodes whose proximal solve did not converge.
        minima: the distinct local minima per node of the full search these solves come from (global mode;
            None otherwise): what a nearby state's solves polish (:func:`node_solves`).
    """

    g: np.ndarray
    failures: int
    minima: Candidates | None


def node_solves(params: ModelParams, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
                polish_from: Candidates | None = None) -> NodeSolves:
    """g at the rule's nodes for the state ``ov``: one full proximal search, or, with ``polish_from``, a
    polish of those minima (:func:`attnphase.numerics.se.channel.prox_with_minima`)."""
    w, V, res, minima = prox_with_minima(model_kernels(params), params, ov, rule, config, polish_from)
    return NodeSolves((res.h - w) / V, int((~res.converged).sum()), minima)


def theta_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
    solves: NodeSolves | None = None,
) -> tuple[float, int]:
    """(lambda, number of nodes whose proximal solve failed) at the th0 = 0 state ``ov``; ``solves``: the
    proximal solves at the rule's nodes for ``ov`` if the caller has them (else one full search)."""
    if ov.th0 != 0.0:
        raise ValueError(f"theta stability is defined at th0 = 0, got th0 = {ov.th0}")
    L = params.L
    xi, eta = rule.nodes[:, :L], rule.nodes[:, L:]
    solves = solves or node_solves(params, ov, rule, config)
    S = eta * (xi * eta).sum(axis=1, keepdims=True) - xi
    E_gS = rule.weights @ (solves.g * S)
    return theta_stability(alpha, ov.V0, ov.q0, params.rho0, params.sigma2, E_gS), solves.failures


def m_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None,
    solves: NodeSolves | None = None,
) -> tuple[float, int]:
    """(mu, failed proximal solves): the leading eigenvalue (largest real part) of the m-block of the
    SE map's Jacobian at the agnostic state ``ov`` (m = 0, th0 = 0); ``solves`` as for
    :func:`theta_stability_at`."""
    if ov.th0 != 0.0 or np.any(ov.m != 0.0):
        raise ValueError(f"m stability is defined at an agnostic state (m = 0, th0 = 0), got m = {ov.m}, th0 = {ov.th0}")
    L = params.L
    xi = rule.nodes[:, :L]
    solves = solves or node_solves(params, ov, rule, config)
    E_gxi = np.einsum("n,nl,nj->lj", rule.weights, solves.g, xi)
    J = m_stability(alpha, ov.V0, ov.q0, params.sigma2, params.P_array, E_gxi)
    return leading_on_range(J, params.P_array), solves.failures


def leading_on_range(J: np.ndarray, P: np.ndarray) -> float:
    """max Re(eigenvalue) of J = alpha V0 P G restricted to the range of P, the m directions the positions
    can hold.  J maps every vector into range(P), so range(P) is invariant and J's other eigenvalues are exactly
    0: a P with a null space (the default L = 2 Gram [[1, -1], [-1, 1]]: m_1 + m_2) would otherwise report
    mu = 0 wherever the positional eigenvalue is negative, and the bifurcation secant then sees a flat mu."""
    w, U = np.linalg.eigh(P)
    R = U[:, w > 1e-12 * max(1.0, float(np.max(np.abs(w))))]
    if R.shape[1] == 0:
        return float("nan")
    return float(np.max(np.linalg.eigvals(R.T @ J @ R).real))


#: Per direction: the eigenvalue at a state, and the sign of its slope in alpha where the branch
#: ends (theta: lambda rises through 1 at the semantic branch's birth, which is its end when
#: followed downward; m: mu falls through 1 where the positional branch, followed upward, rejoins
#: the agnostic one).  Located by :mod:`attnphase.numerics.phase.bifurcation`.
DIRECTIONS = {"theta": (theta_stability_at, 1.0), "m": (m_stability_at, -1.0)}


def se_jacobian(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
                step: float = JACOBIAN_STEP) -> np.ndarray:
    """dF/dx at ``ov`` by central differences, x = (q0, V0, m_1..m_L, th0) and F the exact SE step
    (:func:`~attnphase.numerics.se.se_map.se_step`) on ``config.quadrature`` symmetrised over the model's
    group.  Every overlap is perturbed, so the directions that break the state's symmetry (m at a
    semantic or agnostic state, th0 at a positional one) are included: the perturbed state has the
    smaller symmetry group, and nothing is projected back (:func:`central_differences` takes the steps)."""
    cfg = config or SolverConfig()
    rule = model_rule(params, cfg)

    def F(x: np.ndarray) -> np.ndarray:
        return se_step(params, alpha, Overlaps.from_vector(x), cfg, rule=rule)[0].to_vector()

    x0 = ov.to_vector()
    scale = np.full(x0.size, 0.1)
    scale[1] = 1.0
    return central_differences(F, x0, scale, lambda x: admissible(Overlaps.from_vector(x), params.rho0), step)


def central_differences(F: Callable[[np.ndarray], np.ndarray], x0: np.ndarray, scale: np.ndarray,
                        inside: Callable[[np.ndarray], bool], step: float) -> np.ndarray:
    """J[:, i] = (F(x0 + h_i e_i) - F(x0 - h_i e_i)) / (2 h_i), h_i = ``step`` max(|x0_i|, scale_i), one-sided where
    a side leaves the admissible region (``inside``), and h_i halved (at most MAX_FD_HALVINGS times) while both sides
    leave it: next to the edge th0^2 = q0 rho0 (an agnostic point with q0 = 1e-27 at lambda = 0.1) the th0 step must
    fit inside |th0| < sqrt(q0 rho0)."""
    J = np.empty((x0.size, x0.size))
    for i in range(x0.size):
        h = step * max(abs(x0[i]), scale[i])
        for _ in range(MAX_FD_HALVINGS + 1):
            sides = []
            for sign in (1.0, -1.0):
                x = x0.copy()
                x[i] += sign * h
                sides.append(x if inside(x) else x0)
            if sides[0] is not x0 or sides[1] is not x0:
                break
            h *= 0.5
        xp, xm = sides
        J[:, i] = (F(xp) - F(xm)) / (xp[i] - xm[i])
    return J


def matrix_jacobian(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
                    step: float = JACOBIAN_STEP) -> np.ndarray:
    """dF/dx at the matrix overlaps ``ov`` (r >= 2 or r* >= 2, x = :meth:`Overlaps.to_vector`) by
    :func:`central_differences`, F the rank-r SE map with no hat projected (every direction) on
    ``config.quadrature``: the base state with a full proximal search, every difference polished from its minima --
    the same basins on both sides of each quotient, as the quasi-Newton's consistent differences take them (numerics/se/fixed_point.py): the
    Jacobian of the map away from the rule's basin switches, with no jump inside a quotient."""
    cfg = config or SolverConfig()
    L, r, rs = params.L, params.r, teacher_rank(params)
    rule = matrix_rule(L, r, rs, cfg.quadrature)
    kernels = get_kernels(L, r, channel=params.channel)
    minima = channel_moments(kernels, params, ov, rule, config=cfg).candidates  # what every difference polishes

    def unpack(x: np.ndarray) -> Overlaps:
        return Overlaps.from_vector(x, L, r, rs)

    def F(x: np.ndarray) -> np.ndarray:
        o = unpack(x)
        mom = channel_moments(kernels, params, o, rule, config=cfg, candidates=minima, full_search=False)
        return update(params, update_hat(params, alpha, o, mom, "mixed")).to_vector()

    x0 = ov.to_vector()
    k = params.r * (params.r + 1) // 2
    scale = np.full(x0.size, 0.1)
    scale[k:2 * k] = 1.0  # V0
    return central_differences(F, x0, scale, lambda x: admissible(unpack(x), params.rho0), step)


def transverse_leading_eigenvalue(J: np.ndarray, ov: Overlaps) -> float:
    """max Re(eigenvalue) of J on the directions transverse to the gauge orbit through ``ov``.  F commutes with the
    gauge (numerics/se/gauge.py), so J T = T on the orbit's tangents T: an eigenvalue 1 that only says the fixed
    points form an orbit.  With U an orthonormal basis of span(T) and C of its complement, J is block triangular in
    (U, C) and its other eigenvalues are those of C^T J C."""
    T = gauge_tangents(ov)
    C = np.eye(J.shape[0])
    if T.shape[1]:
        U, sv, _ = np.linalg.svd(T, full_matrices=True)
        rank = int(np.sum(sv > 1e-8 * max(1.0, float(np.abs(ov.to_vector()).max()))))
        C = U[:, rank:]
    return float(np.max(np.linalg.eigvals(C.T @ J @ C).real))


def stability_eigenvalue(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None) -> float:
    """The leading eigenvalue max Re(lambda) of the SE map's Jacobian at the fixed point ``ov``: the point
    is stable when it is < 1, i.e. when the damped iteration x <- (1 - d) F(x) + d x converges to it from
    nearby for some damping d < 1 (|(1 - d) lambda + d| < 1 for d close to 1 exactly when Re(lambda) < 1;
    the undamped map may overshoot, lambda < -1, at a point that is stable in this sense).

    The Jacobian is :func:`se_jacobian`'s, and the leading eigenvalue the median over the steps
    :data:`STABILITY_STEPS` (a jump of the rule's map inside a difference quotient is an outlier).
    On a fixed rule the difference quotients see the smooth part
    of the map only, not the term from the moving jump surface of the global proximal map (a node crosses
    it with probability ~ step): at the agnostic point at alpha = 2, omega = 0.3 its theta entry is 1.49
    where the likelihood-ratio eigenvalue lambda of :func:`theta_stability_at` is 1.70.  At an agnostic
    state (m = 0, th0 = 0) the leading eigenvalue is therefore also taken over lambda (theta) and mu (m),
    which have no such gap; elsewhere a value within ~15 % of 1 is a borderline verdict.

    Matrix overlaps (r >= 2 or r* >= 2): the leading eigenvalue of :func:`matrix_jacobian`'s Jacobian (one step, its
    differences polished from one full search, so no jump falls inside a quotient) transverse to the gauge orbit
    (:func:`transverse_leading_eigenvalue`); the same caveat on the jump surface applies, and the likelihood-ratio
    eigenvalues exist at r = r* = 1 only.
    """
    cfg = config or SolverConfig()
    if ov.is_matrix:
        J = matrix_jacobian(params, alpha, ov, cfg)
        return transverse_leading_eigenvalue(J, ov) if np.all(np.isfinite(J)) else float("nan")
    jacobians = [se_jacobian(params, alpha, ov, cfg, step) for step in STABILITY_STEPS]
    leads = [np.max(np.linalg.eigvals(J).real) for J in jacobians if np.all(np.isfinite(J))]
    lead = float(np.median(leads)) if leads else float("nan")  # NaN: no step gave a finite Jacobian
    if ov.th0 == 0.0 and not np.any(ov.m):
        rule = model_rule(params, cfg)
        lead = max(lead, theta_stability_at(params, alpha, ov, rule, cfg)[0],
                   m_stability_at(params, alpha, ov, rule, cfg)[0])
    return float(lead)
