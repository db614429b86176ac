"""The two halves of a state-evolution step, at every rank (docs/model.md sections 3 and 7).

    hats  = update_hat(params, alpha, x, moments, invariance)   channel side: theory/hats.py's formulas
    F(x)  = update(params, hats)                                prior side: the ridge prior's closed form
"""

from __future__ import annotations

import numpy as np

from attnphase.numerics.quadrature.symmetry import SymmetryElement, symmetrize
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.theory.hats import hat_overlaps
from attnphase.theory.params import ModelParams
from attnphase.theory.priors import RidgePrior


def update_hat(params: ModelParams, alpha: float, ov: Overlaps, mom, invariance: list[SymmetryElement] | str,
               ) -> HatOverlaps:
    """Channel side of an SE step: the hat overlaps from the channel moments at ``ov``,

        qhat_l = alpha E[g_l g_l^T],   mhat_l = alpha E[g_l],
        thhat_l = alpha E[g_l eta_l^T] (rho0 I - theta_l^T q_l^-1 theta_l)^-1/2,
        Vhat_l = -alpha E[g_l xi_l^T] q_l^-1/2 + (the thhat term),

    (:func:`attnphase.theory.hats.hat_overlaps`; at r = r* = 1 on the scalar views: qhat_l = alpha E[g_l^2],
    thhat_l = alpha E[g_l eta_l] / sqrt(rho_l - theta_l^2 / q_l), Vhat_l = -alpha E[g_l xi_l] / sqrt(q_l) +
    thhat_l theta_l / q_l), kept on the state's invariant subspace: ``invariance`` is the scalar state's symmetry
    group (the hats averaged over it), or the matrix form's branch (``semantic`` sets mhat = 0, ``positional``
    thhat = 0, ``agnostic`` both, ``mixed`` nothing).  ``mom``: the :class:`ChannelMoments`.
    """
    qhat, mhat, thhat, Vhat = hat_overlaps(
        alpha, mom.E_ggT, mom.E_g, mom.E_geta, mom.E_gxi, ov.q0, ov.th0, params.sigma2, params.rho0
    )
    if not ov.is_matrix:
        return symmetrize(HatOverlaps(qhat=qhat, mhat=mhat, thhat=thhat, Vhat=Vhat), invariance)
    if invariance in ("semantic", "agnostic"):
        mhat = np.zeros_like(mhat)
    if invariance in ("positional", "agnostic"):
        thhat = np.zeros_like(thhat)
    return HatOverlaps(qhat, mhat, thhat, Vhat)


def update(params: ModelParams, hat: HatOverlaps) -> Overlaps:
    """Prior side of an SE step: the ridge prior's closed form (:class:`~attnphase.theory.priors.RidgePrior`,
    Lam, N and Th as in theory/priors/ridge.py): V0 = Lam^-1, q0 = V0 N V0, m = P mhat V0, th0 = rho0 V0 Th; at
    r = r* = 1, from the hats' scalar views, the scalar form (Lam = lambda + sum_l sigma_l^2 Vhat_l, V0 = 1 / Lam,
    m = P mhat / Lam, th0 = rho0 sum_l sigma_l^2 thhat_l / Lam, q0 = N / Lam^2)."""
    q0, V0, m, th0 = RidgePrior.of(params).update(hat)
    return Overlaps(q0=q0, V0=V0, m=m, th0=th0)
