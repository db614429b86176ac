"""The Gaussian prior of the Bayes-optimal state evolution (docs/model.md section 9; docs/bayes-optimal.md).

The teacher's iid N(0, rho0) coordinates are seen through the scalar channel b = Mhat Q*_i + sqrt(Qhat) z with the
token-summed hats Qhat = sum_l sigma_l^2 qhat_l (Mhat, Vhat_tot alike) and estimated by their posterior mean,
the ridge minimiser at lambda = 1 / rho0: the overlaps are those of :class:`RidgePrior` (the one place of that
formula) at lambda = 1 / rho0 and P = 0. On the Nishimori line (qhat = mhat = Vhat) they reduce to

    q0 = m0 = rho0^2 Qhat / (1 + rho0 Qhat),   V0 = rho0 - q0,

(:meth:`GaussianPrior.overlap`), and the prior's free entropy is psi(Qhat) = 1/2 [rho0 Qhat - log(1 + rho0 Qhat)].
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.theory.priors.ridge import RidgePrior


@dataclass(frozen=True)
class GaussianPrior:
    """Q* ~ N(0, rho0 I_d) as the prior of the Bayes-optimal state evolution (module doc), rho0 > 0."""

    rho0: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "rho0", float(self.rho0))
        if not (math.isfinite(self.rho0) and self.rho0 > 0.0):
            raise ValueError(f"rho0 must be finite and > 0, got {self.rho0}")

    def overlap(self, Qhat: float) -> float:
        """q0 = rho0^2 Qhat / (1 + rho0 Qhat) on the Nishimori line, Qhat = sum_l sigma_l^2 qhat_l >= 0."""
        x = self.rho0 * float(Qhat)
        return self.rho0 * x / (1.0 + x)

    def hat_of_overlap(self, q0: float) -> float:
        """The inverse of :meth:`overlap`: Qhat = q0 / (rho0 (rho0 - q0)), 0 <= q0 < rho0."""
        return float(q0) / (self.rho0 * (self.rho0 - float(q0)))

    def update(self, qhat: Any, mhat: Any, Vhat: Any, sigma2: Any) -> tuple[float, float, float]:
        """(q0, V0, m0) from per-token hats (L,) off the Nishimori line (module doc): the ridge update at
        lambda = 1 / rho0, P = 0.  At the Bayes-optimal fixed point q0 = m0 and V0 = rho0 - q0."""
        sigma2 = np.asarray(sigma2, dtype=float)
        L = sigma2.shape[0]
        ridge = RidgePrior(1.0 / self.rho0, np.zeros((L, L)), sigma2, self.rho0)
        q0, V0, _, m0 = ridge.update((np.asarray(qhat, float), np.zeros(L), np.asarray(mhat, float), np.asarray(Vhat, float)))
        return q0, V0, m0

    def free_entropy_term(self, Qhat: float) -> float:
        """psi(Qhat) = 1/2 [rho0 Qhat - log(1 + rho0 Qhat)]."""
        x = self.rho0 * float(Qhat)
        return 0.5 * (x - math.log1p(x))
