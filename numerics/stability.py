"""Where the branches meet the agnostic one: the alpha at which it turns unstable in theta or in m.

At a th0 = 0 state the SE map's eigenvalue in the theta direction is
lambda = alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l], S_l = eta_l sum_k xi_k eta_k - xi_l
(:mod:`attnphase.theory.stability`: a likelihood-ratio derivative, no derivative of the jumping
proximal map).  Along the agnostic branch lambda(alpha) rises through 1 where the semantic
branch bifurcates from it; where that bifurcation is supercritical this is the semantic
branch's continuous end, located here by secant steps on lambda(alpha) - 1, every lambda on the
same (fine) rule.  The fixed-theta trace of :mod:`attnphase.numerics.continuation` looks for the
same end from the other side, where alpha(theta) is flat and the rule's noise decides the minimum
(docs/numerics.md, section 5).  Likewise in the m direction: the leading eigenvalue mu of the
m-block of the Jacobian falls through 1 where the positional branch, followed upward, rejoins the
agnostic one.

Away from the agnostic branch no direction decouples: :func:`se_jacobian` takes the whole Jacobian
dF/dx of the SE map by central differences, and :func:`stability_eigenvalue` is the leading
eigenvalue a fixed point's stability is judged by (``attnphase census``, docs/numerics.md section 12).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from attnphase.numerics.channel import prox_at_nodes
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.overlaps import Overlaps
from attnphase.numerics.quadrature import QuadratureRule, make_rule
from attnphase.numerics.se_map import admissible, model_rule, se_step
from attnphase.numerics.state_evolution import FixedPoint, solve
from attnphase.theory.correlated_kernels import model_kernels
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

def _g(params: ModelParams, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None) -> tuple[np.ndarray, int]:
    """g = (h_hat - w) / V at the rule's nodes (one full proximal search) and the failed solves."""
    w, V, res = prox_at_nodes(model_kernels(params), params, ov, rule, config)
    return (res.h - w) / V, int((~res.converged).sum())


def theta_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None
) -> tuple[float, int]:
    """(lambda, number of nodes whose proximal solve failed) at the th0 = 0 state ``ov``."""
    if ov.th0 != 0.0:
        raise ValueError(f"theta stability is defined at th0 = 0, got th0 = {ov.th0}")
    L = params.L
    xi, eta = rule.nodes[:, :L], rule.nodes[:, L:]
    g, failures = _g(params, ov, rule, config)
    S = eta * (xi * eta).sum(axis=1, keepdims=True) - xi
    E_gS = rule.weights @ (g * S)
    return theta_stability(alpha, ov.V0, ov.q0, params.rho0, params.sigma2, E_gS), failures


def m_stability_at(
    params: ModelParams, alpha: float, ov: Overlaps, rule: QuadratureRule, config: SolverConfig | None = None
) -> tuple[float, int]:
    """(mu, failed proximal solves): the leading eigenvalue (largest real part) of the m-block of the
    SE map's Jacobian at the agnostic state ``ov`` (m = 0, th0 = 0)."""
    if ov.th0 != 0.0 or np.any(ov.m != 0.0):
        raise ValueError(f"m stability is defined at an agnostic state (m = 0, th0 = 0), got m = {ov.m}, th0 = {ov.th0}")
    L = params.L
    xi = rule.nodes[:, :L]
    g, failures = _g(params, ov, rule, config)
    E_gxi = np.einsum("n,nl,nj->lj", rule.weights, g, xi)
    J = m_stability(alpha, ov.V0, ov.q0, params.sigma2, params.P_array, E_gxi)
    return float(np.max(np.linalg.eigvals(J).real)), failures


#: Per direction: the eigenvalue at a state, and the sign of its slope in alpha where the branch
#: ends (theta: lambda rises through 1 at the semantic branch's birth, which is its end when
#: followed downward; m: mu falls through 1 where the positional branch, followed upward, rejoins
#: the agnostic one).
_DIRECTIONS = {"theta": (theta_stability_at, 1.0), "m": (m_stability_at, -1.0)}


@dataclass(frozen=True, eq=False)
class Bifurcation:
    """Root of lambda(alpha) = 1 along the agnostic branch.

    Attributes:
        alpha: where lambda = 1 (NaN unless converged).
        converged: the secant steps reached ``tol``.
        message: how it ended.
        slope: d lambda / d alpha from the last two evaluations.
        points: the evaluations, (alpha, lambda) in order.
        prox_failures: failed proximal solves over all lambda evaluations.
        err: standard error of ``alpha`` from the rules' blocks (:func:`bifurcation_error`; NaN
            when not converged, without blocks, or with ``config.error_bars`` off).
    """

    alpha: float
    converged: bool
    message: str
    slope: float
    points: tuple[tuple[float, float], ...]
    prox_failures: int
    err: float = math.nan


def branch_bifurcation(
    params: ModelParams,
    alpha_guess: float,
    direction: str,
    *,
    config: SolverConfig | None = None,
    starts: Sequence[FixedPoint | None] = (None,),
    step: float = 0.05,
    tol: float = 1e-3,
    max_iter: int = 12,
) -> Bifurcation:
    """alpha where the agnostic branch's eigenvalue in ``direction`` ("theta" or "m") equals 1.

    Secant steps from ``alpha_guess``; each solves the agnostic fixed point (warm-started from the
    previous one; the first from each of ``starts`` in turn until one converges, None meaning a
    cold start) with ``config`` and evaluates the eigenvalue on the rule
    ``config.bifurcation_quadrature`` -- the same nodes at every alpha, so the rule's error varies smoothly along the
    secant.  Converged when a secant step is below ``tol``, or when the last two points bracket the
    root within ``tol`` (the rule's eigenvalue jumps by ~1e-3 where nodes switch basin, so steps
    near the root can wander; the rule's own error, 0.004-0.006 in alpha with sobol15, is larger).
    The second point assumes the eigenvalue proportional to alpha (|slope| ~ eig / alpha,
    rising for theta, falling for m), within 4 ``step`` of the first and at least 0.2 ``step`` away.
    """
    if direction not in _DIRECTIONS:
        raise ValueError(f"direction must be one of {tuple(_DIRECTIONS)}, got {direction!r}")
    eigenvalue, sign = _DIRECTIONS[direction]
    cfg = config or SolverConfig()
    rule = make_rule(params.L, cfg.bifurcation_quadrature)
    prev: FixedPoint | None = None
    pts: list[tuple[float, float]] = []
    failures = 0

    def f_at(alpha: float) -> float:
        nonlocal prev, failures
        for init in ((prev,) if prev is not None else tuple(starts)):
            fp = solve(params, alpha, "agnostic", init=None if init is None else init.overlaps,
                       memory=None if init is None else init.memory, config=cfg)
            if fp.status.converged and fp.branch == "agnostic":
                break
        else:
            raise _NoAgnosticPoint(f"no agnostic fixed point at alpha = {alpha:.4f} ({fp.status.message}, {fp.branch})")
        prev = fp
        value, bad = eigenvalue(params, alpha, fp.overlaps, rule, cfg)
        failures += bad
        pts.append((alpha, value))
        return value - 1.0

    def done(alpha: float, ok: bool, message: str) -> Bifurcation:
        slope = (pts[-1][1] - pts[-2][1]) / (pts[-1][0] - pts[-2][0]) if len(pts) >= 2 else math.nan
        err = bifurcation_error(params, prev, direction, slope, cfg) if ok and prev is not None else math.nan
        return Bifurcation(alpha if ok else math.nan, ok, message, slope, tuple(pts), failures, err)

    try:
        a0 = float(alpha_guess)
        f0 = f_at(a0)
        slope0 = sign * (f0 + 1.0) / a0  # 0 where the eigenvalue is exactly 0 (no direction: the longest step)
        move = float(np.clip(-f0 / slope0, -4 * step, 4 * step)) if slope0 else 4 * step * (1.0 if -f0 * sign > 0 else -1.0)
        if abs(move) < 0.2 * step:
            move = 0.2 * step * (1.0 if -f0 * sign > 0 else -1.0)
        a1 = a0 + move
        f1 = f_at(a1)
        for _ in range(max_iter):
            if f1 == f0:
                return done(a1, False, "the eigenvalue is flat between two steps")
            a2 = a1 - f1 * (a1 - a0) / (f1 - f0)
            a2 = float(np.clip(a2, a1 - 4 * step, a1 + 4 * step))  # a secant through noise can overshoot
            if a2 <= 0:
                return done(a2, False, "the secant left alpha > 0")
            if abs(a2 - a1) < tol or (f0 * f1 < 0 and abs(a1 - a0) < tol):
                return done(a2, True, "converged")
            a0, f0, a1, f1 = a1, f1, a2, f_at(a2)
    except _NoAgnosticPoint as exc:
        return done(math.nan, False, str(exc))
    return done(a1, False, f"not converged to {tol} in {max_iter} secant steps")


def bifurcation_error(params: ModelParams, agnostic: FixedPoint, direction: str, slope: float,
                      config: SolverConfig) -> float:
    """Standard error of a bifurcation located on pooled rules, from their blocks, linearised at the
    last agnostic point a (:mod:`attnphase.numerics.replicates`): on block j the agnostic fixed point
    (solve rule's block j, warm from ``agnostic``) and its eigenvalue e_j (bifurcation rule's block j)
    give the block's root a - (e_j - 1) / slope.  NaN without blocks or with ``config.error_bars`` off."""
    from attnphase.numerics.replicates import block_config, linearised_root_error, replicate_count

    R = replicate_count(config)
    if R < 2:
        return math.nan
    eigenvalue, _ = _DIRECTIONS[direction]
    values = []
    for j in range(R):
        cfg_j = block_config(config, j)
        fp = solve(params, agnostic.alpha, "agnostic", init=agnostic.overlaps, config=cfg_j)
        if fp.status.converged and fp.branch == "agnostic":
            values.append(eigenvalue(params, agnostic.alpha, fp.overlaps,
                                     make_rule(params.L, cfg_j.bifurcation_quadrature), cfg_j)[0] - 1.0)
    return linearised_root_error(agnostic.alpha, values, slope)


def semantic_bifurcation(params: ModelParams, alpha_guess: float, **kwargs) -> Bifurcation:
    """Where lambda (theta direction) = 1 on the agnostic branch: :func:`branch_bifurcation` with "theta"."""
    return branch_bifurcation(params, alpha_guess, "theta", **kwargs)


def positional_bifurcation(params: ModelParams, alpha_guess: float, **kwargs) -> Bifurcation:
    """Where mu (m direction) = 1 on the agnostic branch: :func:`branch_bifurcation` with "m"."""
    return branch_bifurcation(params, alpha_guess, "m", **kwargs)


class _NoAgnosticPoint(RuntimeError):
    """The agnostic fixed point was not found at some alpha."""


def se_jacobian(params: ModelParams, alpha: float, ov: Overlaps, config: SolverConfig | None = None,
                step: float = JACOBIAN_STEP) -> np.ndarray:
    """dF/dx at ``ov`` by central differences, x = (q0, V0, m_1..m_L, th0) and F the exact SE step
    (:func:`~attnphase.numerics.se_map.se_step`) on ``config.quadrature`` symmetrised over the model's
    group.  Every overlap is perturbed, so the directions that break the state's symmetry (m at a
    semantic or agnostic state, th0 at a positional one) are included: the perturbed state has the
    smaller symmetry group, and nothing is projected back.  The step in x_i is ``step`` max(|x_i|, s_i)
    (s = 1 for V0, 0.1 otherwise), one-sided where a side leaves the admissible region."""
    cfg = config or SolverConfig()
    rule = model_rule(params, cfg)
    x0 = ov.to_vector()

    def F(x: np.ndarray) -> np.ndarray:
        return se_step(params, alpha, Overlaps.from_vector(x), cfg, rule=rule)[0].to_vector()

    J = np.empty((x0.size, x0.size))
    for i in range(x0.size):
        h = step * max(abs(x0[i]), 1.0 if i == 1 else 0.1)
        sides = []
        for sign in (1.0, -1.0):
            x = x0.copy()
            x[i] += sign * h
            sides.append(x if admissible(x, params.rho0) else x0)
        xp, xm = sides
        J[:, i] = (F(xp) - F(xm)) / (xp[i] - xm[i])
    return J


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
    """
    cfg = config or SolverConfig()
    lead = float(np.median([np.max(np.linalg.eigvals(se_jacobian(params, alpha, ov, cfg, step)).real)
                            for step in STABILITY_STEPS]))
    if ov.th0 == 0.0 and not np.any(ov.m):
        rule = model_rule(params, cfg)
        lead = max(lead, theta_stability_at(params, alpha, ov, rule, cfg)[0],
                   m_stability_at(params, alpha, ov, rule, cfg)[0])
    return float(lead)
