"""The training objective e_t = -Phi at a fixed point, with E[M] from a finer rule (docs/method.md section 6).

Phi (docs/model.md section 4) is stationary at a fixed point, so a rule's error enters e_t at first order only
through E[M]: E[M] re-evaluated on a finer rule at the converged state gives e_t with that rule's accuracy, and
d e_t / d alpha = E[M] along a branch (the slope of alpha_c's Newton correction).
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
    """e_t = -Phi at a fixed point with E[M] (also d e_t / d alpha) on the rule named ``rule``, and the nodes of
    that rule whose proximal solve did not converge."""

    e_t: float
    E_M: float
    rule: str
    prox_failures: int


def refined_training_objective(
    params: ModelParams, alpha: float, ov: Overlaps, hat: HatOverlaps, rule: QuadratureRule,
    config: SolverConfig | None = None,
) -> RefinedObjective:
    """e_t = -Phi(x*, x_hat*; alpha) at a converged state x* with its hat overlaps x_hat*, E[M] on ``rule``.

    ``config.prox`` must be the fixed point's; away from a fixed point the result has first-order errors.
    """
    E_M, failures = envelope_mean(model_kernels(params), params, ov, rule, config)
    phi = free_entropy(
        ov.q0, ov.V0, ov.m, ov.th0, hat.qhat, hat.mhat, hat.thhat, hat.Vhat,
        params.sigma2, params.P_array, params.lam, params.rho0, alpha, E_M,
    )
    return RefinedObjective(e_t=float(-phi), E_M=E_M, rule=rule.name, prox_failures=failures)
