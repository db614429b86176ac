"""The training objective e_t = -Phi at a fixed point, with E[M] from a finer rule.

Phi(x, x_hat; alpha) of docs/model.md section 4 is stationary in every overlap x = (q_l, V_l, m_l,
theta_l) and every hat overlap at a fixed point: the SE equations are its stationarity
conditions.  A rule's error moves the fixed point by dx, which moves e_t only by O(dx^2); the
rule's error on the one integral in Phi, E[M], enters at first order, as alpha (E_rule[M] - E[M]).
So re-evaluating E[M] alone on a finer rule at the converged state -- overlaps and hat overlaps
kept -- gives e_t with the finer rule's accuracy, at the cost of one proximal search, no re-solve
(derivation and measurements: docs/method.md, section 6, e_t and alpha_c from a finer rule).

The only explicit alpha in Phi is -alpha E[M], so along a branch (envelope theorem)

    d e_t / d alpha = E[M],

which gives the slope of Delta e_t = e_t(semantic) - e_t(positional) for a Newton correction of
alpha_c (:func:`attnphase.numerics.phase.boundaries.phase_boundaries`).
"""

from __future__ import annotations

from dataclasses import dataclass

from attnphase.numerics.se.channel import envelope_mean
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.quadrature.rules import QuadratureRule
from attnphase.theory.free_entropy import free_entropy
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams


@dataclass(frozen=True)
class RefinedObjective:
    """e_t = -Phi at a fixed point with E[M] from ``rule``.

    Attributes:
        e_t: the training objective per dimension.
        E_M: E[M] on the finer rule; also d e_t / d alpha along the branch.
        rule: name of the rule E[M] was evaluated on.
        prox_failures: nodes of that rule whose proximal solve did not converge.
    """

    e_t: float
    E_M: float
    rule: str
    prox_failures: int


def refined_training_objective(
    params: ModelParams, alpha: float, ov: Overlaps, hat: HatOverlaps, rule: QuadratureRule,
    config: SolverConfig | None = None,
) -> RefinedObjective:
    """e_t = -Phi(x*, x_hat*; alpha) at a converged state x* with its hat overlaps x_hat*, E[M] on ``rule``.

    The proximal map is ``config.prox`` (it must be the fixed point's).  At a state that is not a
    fixed point the result carries first-order errors.
    """
    E_M, failures = envelope_mean(model_kernels(params), params, ov, rule, config)
    phi = free_entropy(
        ov.q0, ov.V0, ov.m, ov.th0, hat.qhat, hat.mhat, hat.thhat, hat.Vhat,
        params.sigma2, params.P_array, params.lam, params.rho0, alpha, E_M,
    )
    return RefinedObjective(e_t=float(-phi), E_M=E_M, rule=rule.name, prox_failures=failures)
