"""Approximate message passing (GAMP) for the Bayes-optimal channel at finite d (docs/model.md section 9;
docs/bayes-optimal.md, "AMP at finite d": the observation, damping, start, stopping rule and why).

The observation is ``Y^mu = s^mu h*^mu``, the fields with an independent fair sign per sample
(:func:`revealed_fields`); ``g_out`` and ``dg_out`` are even in ``Y``, so every iterate is the same for any signs.
With ``F[mu l, i] = x_{l,i}^mu / sqrt(d)``, ``c_l^mu = |x_l^mu|^2 / d`` and the prior ``Q*_i ~ N(0, rho0)``, one
iteration from ``(Qhat, v, g)`` (estimate, its per-coordinate variance, last output) is

    V_l^mu   = c_l^mu v                                             (the L x L block is diagonal: independent tokens)
    w^mu     = F^mu Qhat - V^mu g^mu                               (g of the last iteration: the Onsager term)
    g^mu     = g_out(Y^mu; w^mu, V^mu) = (tanh(a) Y^mu - w^mu) / V^mu,   a = sum_l Y_l w_l / V_l
    Ahat     = -(1/d) sum_{mu, l} c_l^mu dg_out[l, l]^mu,   dg_out[l, l] = (1 - tanh(a)^2) Y_l^2 / V_l^2 - 1 / V_l
    B_i      = sum_{mu, l} F[mu l, i] g_l^mu + Ahat Qhat_i
    Qhat'    = B / (1 / rho0 + Ahat),   v' = 1 / (1 / rho0 + Ahat)            (the Gaussian prior's posterior)

damped with one step size ``gamma`` (:class:`AmpConfig`): ``g`` and ``Ahat`` mixed as ``gamma new + (1 - gamma)
old`` from the second iteration, ``Qhat' = Qhat + gamma D`` with ``D = B / (1 / rho0 + Ahat) - Qhat`` and ``v' =
gamma / (1 / rho0 + Ahat) + (1 - gamma) v``.  Where ``1 / rho0 + Ahat <= 0`` (no posterior variance: at the defaults,
alpha = 2, 3 of 8 undamped runs at d = 200 and 1000 met it by their fourth iteration) the iteration is taken again
with gamma halved, the iterate unchanged, down to ``GAMMA_MIN`` (on the first iteration mixed with the start's
``g = 0``, ``Ahat = 0``, which ``v = rho0`` is the posterior variance of).  Stop when ``|D| / sqrt(d rho0) <= tol``
(``"converged"``), after ``max_iter`` iterations (``"budget"``), or at a non-finite iterate or ``1 / rho0 + Ahat
<= 0`` at ``GAMMA_MIN`` (``"diverged"``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

#: Adaptive damping (docs/bayes-optimal.md): the cosine below -OSCILLATION_COS that halves gamma, the factor
#: gamma grows by otherwise, and its floor.
OSCILLATION_COS = 0.3
GROWTH = 1.25
GAMMA_MIN = 1.0 / 32

#: AMP's starts (:class:`AmpConfig`): a random vector of small norm, or the spectral estimator's direction.
STARTS = ("random", "spectral")


#: The default ``tol`` per torch dtype name: float32's round-off keeps |D_t| / sqrt(d rho0) above 1e-7 (the runs
#: recover the teacher and stop on their budget), as gradient descent's tolerance is loosened there.
AMP_TOL = {"float64": 1e-7, "float32": 1e-5}


@dataclass(frozen=True)
class AmpConfig:
    """The stopping rule, damping and start of :func:`gamp` (module doc; docs/bayes-optimal.md).

    Attributes:
        damping: in [0, 1): the largest step is gamma = 1 - damping.
        adaptive: gamma halves on oscillation and grows back to 1 - damping otherwise (default: the fixed step).
        damp_after: >= 0, the iterations run undamped (gamma = 1) before the damping applies (default 0).
        tol: > 0, stop when the proposed step |D_t| / sqrt(d rho0) <= tol; max_iter: >= 1, the iteration budget.
        init_scale: > 0, q_0 = init_scale rho0 (the start's norm).
        start: ``"random"`` (Qhat_0 = sqrt(init_scale rho0) z) or ``"spectral"`` (validation/amp_spectral.py, at the
            same norm; chosen in :func:`attnphase.validation.amp_run.run_amp`).
    """

    damping: float = 0.0
    adaptive: bool = False
    damp_after: int = 0
    tol: float = 1e-7
    max_iter: int = 500
    init_scale: float = 1e-4
    start: str = "random"

    def __post_init__(self) -> None:
        if not 0.0 <= self.damping < 1.0:
            raise ValueError(f"damping must lie in [0, 1), got {self.damping}")
        if not (self.tol > 0 and math.isfinite(self.tol)):
            raise ValueError(f"tol must be a finite number > 0, got {self.tol}")
        if isinstance(self.max_iter, bool) or int(self.max_iter) != self.max_iter or self.max_iter < 1:
            raise ValueError(f"max_iter must be an integer >= 1, got {self.max_iter}")
        if isinstance(self.damp_after, bool) or int(self.damp_after) != self.damp_after or self.damp_after < 0:
            raise ValueError(f"damp_after must be an integer >= 0, got {self.damp_after}")
        if not (self.init_scale > 0 and math.isfinite(self.init_scale)):
            raise ValueError(f"init_scale must be a finite number > 0, got {self.init_scale}")
        if self.start not in STARTS:
            raise ValueError(f"start must be one of {', '.join(STARTS)}, got {self.start!r}")


@dataclass(frozen=True)
class AmpResult:
    """One run of :func:`gamp`: the final estimate ``Q`` (d,), its overlaps ``theta = Qhat . Q* / d`` (the
    semantic overlap) and ``q = |Qhat|^2 / d`` with their paths (start, then every iteration), the ``iterations``
    run, ``status`` (``"converged"``, ``"budget"`` or ``"diverged"``), the last proposed step ``change`` =
    |D_t| / sqrt(d rho0), the final step size ``step`` (gamma) and how often it was halved."""

    Q: torch.Tensor
    theta: float
    q: float
    theta_path: tuple[float, ...]
    q_path: tuple[float, ...]
    iterations: int
    converged: bool
    status: str
    change: float
    step: float = 1.0
    halvings: int = 0


def g_out(Y: torch.Tensor, w: torch.Tensor, V: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(g_out, diagonal of dg_out) of the sign-blind channel, shapes of Y (..., L): g_l = (tanh(a) Y_l - w_l) / V_l,
    dg[l, l] = (1 - tanh(a)^2) Y_l^2 / V_l^2 - 1 / V_l, a = sum_l Y_l w_l / V_l (torch form of
    :class:`attnphase.theory.channels.bayes_optimal.BayesOptimalChannel` at Delta = 0)."""
    t = torch.tanh((Y * w / V).sum(dim=-1, keepdim=True))
    u = Y / V
    return t * Y / V - w / V, (1.0 - t * t) * u * u - 1.0 / V


def revealed_fields(hstar: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """Y^mu = s^mu h*^mu, s^mu = +-1 fair and independent per sample (module doc); hstar (n, L) or (n, L, 1)."""
    h = hstar.reshape(hstar.shape[0], -1)
    s = torch.randint(0, 2, (h.shape[0], 1), generator=generator, device=generator.device).to(h.device, h.dtype)
    return (2.0 * s - 1.0) * h


def gamp(X: torch.Tensor, Y: torch.Tensor, rho0: float, Qstar: torch.Tensor, generator: torch.Generator,
         config: AmpConfig = AmpConfig(), start: torch.Tensor | None = None) -> AmpResult:
    """GAMP of the module doc on tokens X (n, L, d) and revealed fields Y (n, L); Qstar (d,) or (d, 1) only
    measures the overlaps.  The start is drawn from ``generator`` (float64 on its device, then moved), or is
    ``start`` (d,) where given (an informed start: which fixed points a data set has, whatever their basins)."""
    n, L, d = X.shape
    Qs = Qstar.reshape(-1).to(X)
    F = X.reshape(n * L, d) / math.sqrt(d)
    c = (X * X).sum(dim=-1) / d
    z = torch.randn((d,), generator=generator, device=generator.device, dtype=torch.float64).to(X)
    Q = math.sqrt(config.init_scale * rho0) * z if start is None else start.reshape(-1).to(X)
    v = torch.tensor(float(rho0), dtype=X.dtype, device=X.device)
    g = torch.zeros((n, L), dtype=X.dtype, device=X.device)
    theta_path, q_path = [float(Q @ Qs) / d], [float(Q @ Q) / d]
    status, change, it = "budget", math.inf, 0
    gamma_max = 1.0 if config.damp_after > 0 else 1.0 - config.damping
    gamma, halvings, D_prev, Ahat = gamma_max, 0, None, None
    for it in range(1, int(config.max_iter) + 1):
        if it == config.damp_after + 1 and config.damp_after > 0:  # settling: the damping starts here
            gamma_max = gamma = 1.0 - config.damping
        V = c * v
        w = (F @ Q).reshape(n, L) - V * g
        g_new, dg = g_out(Y, w, V)
        Ahat_new = -(c * dg).sum() / d
        if Ahat is None:  # the first iteration has no memory to damp
            g_next, Ahat_next = g_new, Ahat_new
        else:
            g_next = gamma * g_new + (1.0 - gamma) * g
            Ahat_next = gamma * Ahat_new + (1.0 - gamma) * Ahat
        prec = 1.0 / rho0 + Ahat_next
        if not bool(torch.isfinite(prec)) or float(prec) <= 0.0:
            if gamma <= GAMMA_MIN:
                status = "diverged"
                break
            if Ahat is None:  # the first step's memory is the start's: g = 0 and Ahat = 0 (v = rho0 = 1 / (1 / rho0))
                Ahat = torch.zeros_like(Ahat_new)
            # no posterior variance: the step was too long for this data set; taken again, halved (the iterate stays)
            gamma, halvings = max(gamma / 2.0, GAMMA_MIN), halvings + 1
            theta_path.append(theta_path[-1])
            q_path.append(q_path[-1])
            continue
        g, Ahat = g_next, Ahat_next
        proposed = (F.T @ g.reshape(-1) + Ahat * Q) / prec
        D = proposed - Q
        if not bool(torch.isfinite(D).all()):
            status = "diverged"
            break
        norm = float(torch.linalg.vector_norm(D))
        if config.adaptive and D_prev is not None:
            cos = float(D @ D_prev) / (norm * float(torch.linalg.vector_norm(D_prev)) + 1e-300)
            if cos < -OSCILLATION_COS:
                halvings += gamma > GAMMA_MIN
                gamma = max(gamma / 2.0, GAMMA_MIN)
            else:
                gamma = min(gamma_max, gamma * GROWTH)
        D_prev = D
        change = norm / math.sqrt(d * rho0)
        if gamma == 1.0:  # the undamped iteration, as written in the module doc
            Q, v = proposed, 1.0 / prec
        else:
            Q, v = Q + gamma * D, gamma / prec + (1.0 - gamma) * v
        theta_path.append(float(Q @ Qs) / d)
        q_path.append(float(Q @ Q) / d)
        if change <= config.tol:
            status = "converged"
            break
    return AmpResult(Q=Q, theta=theta_path[-1], q=q_path[-1], theta_path=tuple(theta_path), q_path=tuple(q_path),
                     iterations=it, converged=status == "converged", status=status, change=change, step=float(gamma),
                     halvings=halvings)


__all__ = ["GAMMA_MIN", "GROWTH", "OSCILLATION_COS", "STARTS", "AmpConfig", "AmpResult", "g_out", "revealed_fields",
           "gamp"]
