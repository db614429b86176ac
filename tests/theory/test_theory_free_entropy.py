"""Free entropy Phi (docs/model.md section 4): the formula, and e_t = -Phi = lambda q0 / 2 + alpha E[loss]
at a prior-side fixed point (derivation in docs/derivation.md)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnphase.theory.free_entropy import free_entropy, training_objective
from attnphase.theory.priors import RidgePrior

FLOAT = dict(allow_nan=False, allow_infinity=False)


def _phi_by_hand(q0, V0, m, th0, qhat, mhat, thhat, Vhat, s2, P, lam, rho0, alpha, E_M):
    """docs/model.md section 4, transcribed independently in numpy."""
    q, V, theta = s2 * q0, s2 * V0, s2 * th0
    Lam = lam + s2 @ Vhat
    ridge = (s2 @ qhat + mhat @ P @ mhat + rho0 * (s2 @ thhat) ** 2) / (2 * Lam)
    return np.sum((Vhat * q - qhat * V) / 2 - m * mhat - theta * thhat) + ridge - alpha * E_M


@settings(max_examples=30, deadline=None)
@given(L=st.sampled_from([2, 3]), seed=st.integers(0, 2**31), alpha=st.floats(0.1, 5.0, **FLOAT))
def test_free_entropy_formula_and_fixed_point_identity(L: int, seed: int, alpha: float) -> None:
    """Phi equals docs/model.md's formula, and through the ridge prior's update e_t = -Phi = lambda q0 / 2 + alpha E[loss]."""
    rng = np.random.default_rng(seed)
    s2 = rng.uniform(0.1, 2.0, L)
    R = rng.normal(size=(L, L))
    P = R @ R.T
    lam, rho0 = rng.uniform(0.0, 0.5), rng.uniform(0.5, 2.0)
    E_g2 = rng.uniform(0.01, 1.0, L)
    qhat, mhat, thhat, Vhat = alpha * E_g2, rng.normal(size=L), rng.normal(size=L), rng.uniform(0.1, 2.0, L)
    E_loss = rng.uniform(0.0, 0.1)
    q0, V0, m, th0 = RidgePrior(lam, P, s2, rho0).update((qhat, mhat, thhat, Vhat))
    E_M = E_loss + np.sum(s2 * V0 * E_g2) / 2  # M = sum_l V_l g_l^2 / 2 + loss(h_hat)
    phi = free_entropy(q0, V0, m, th0, qhat, mhat, thhat, Vhat, s2, P, lam, rho0, alpha, E_M)
    args = (q0, V0, m, th0, qhat, mhat, thhat, Vhat, s2, P, lam, rho0, alpha, E_M)
    assert phi == pytest.approx(_phi_by_hand(*args), rel=1e-12, abs=1e-12)
    assert training_objective(*args) == pytest.approx(lam * q0 / 2 + alpha * E_loss, rel=1e-9, abs=1e-12)


def test_free_entropy_vanishes_without_data_and_checks_Lam() -> None:
    s2, P = np.full(2, 0.25), np.eye(2)
    z = np.zeros(2)
    q0, V0, m, th0 = RidgePrior(0.01, P, s2, 1.0).update((z, z, z, z))
    assert q0 == 0 and th0 == 0 and np.all(m == 0)
    assert free_entropy(q0, V0, m, th0, z, z, z, z, s2, P, 0.01, 1.0, 0.0, 0.0) == 0.0
    with pytest.raises(ValueError, match="Lam"):
        free_entropy(q0, V0, m, th0, z, z, z, np.full(2, -1.0), s2, P, 0.01, 1.0, 1.0, 0.0)
