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
    """Channel side of an SE step: the hat overlaps from the channel moments ``mom`` (:class:`ChannelMoments`) at
    ``ov``, by the formulas of :mod:`attnphase.theory.hats` (:func:`~attnphase.theory.hats.hat_overlaps`; on the
    scalar views at r = r* = 1), kept on the state's invariant subspace: ``invariance`` is the scalar state's
    symmetry group (the hats averaged over it), or the matrix form's branch (``semantic`` sets mhat = 0,
    ``positional`` thhat = 0, ``agnostic`` both, ``mixed`` nothing)."""
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
    """Prior side of an SE step: the ridge prior's closed form (:class:`~attnphase.theory.priors.RidgePrior`; Lam,
    N and Th as in theory/priors/ridge.py's module doc): V0 = Lam^-1, q0 = V0 N V0, m = P mhat V0, th0 = rho0 V0 Th;
    at r = r* = 1 the scalar form, from the hats' scalar views."""
    q0, V0, m, th0 = RidgePrior.of(params).update(hat)
    return Overlaps(q0=q0, V0=V0, m=m, th0=th0)
