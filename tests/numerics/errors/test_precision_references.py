"""The double-precision numerics against 30-digit mpmath reference values (attnphase.numerics.errors.precision).

Measured (paper parameters, omega = 0.3, sigma = 0.5):

* eps_lin: 30-digit value 1.97138433466932960966262026373e-3 (Gauss--Hermite orders 240 and
  280 agree to 2.5e-30 relative); the double-precision eps_lin (order 80) is within 4.3e-14.
* eps_g at the theta = 0 state (q0, m) = (0.2, [0.26, -0.26]): 3.45308516497929492241582461659e-3;
  the double-precision channel quadrature ``ghN`` has relative error
  N = 6: 2.0e-3, 8: 3.0e-4, 10: 4.4e-6, 12: 5.0e-6, 14: 1.2e-6, 16: 1.9e-7
  (geometric on average, not monotone from 10 to 12: the error of the teacher's softmax
  average changes sign).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from attnphase.numerics import eps_lin
from attnphase.numerics.se.channel import channel_moments
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.errors.precision import eps_g_theta0_mp, eps_lin_mp, gauss_hermite_mp, softmax_rows_mp
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams

PAPER = ModelParams(omega=0.3)
#: 30 significant digits of eps_lin at the paper's parameters (orders 240 and 280 agree to 2.5e-30).
EPS_LIN_30 = "1.97138433466932960966262026373e-3"
POS_STATE = dict(q0=0.2, m=[0.26, -0.26])


def test_gauss_hermite_nodes_match_golub_welsch_to_30_digits() -> None:
    """Newton-refined nodes equal mpmath's eigenvalue-based Hermite rule, and integrate moments exactly."""
    n = 20
    X, W = gauss_hermite_mp(n, 30)
    with mpmath.workdps(40):
        Xr, Wr = mpmath.mp.gauss_quadrature(n, "hermite")  # physicists': weight exp(-x^2)
        xr = sorted(mpmath.sqrt(2) * x for x in Xr)
        wr = [w / mpmath.sqrt(mpmath.pi) for _, w in sorted(zip(Xr, Wr))]
        assert max(abs(a - b) for a, b in zip(X, xr)) < mpmath.mpf(10) ** -32
        assert max(abs(a - b) for a, b in zip(W, wr)) < mpmath.mpf(10) ** -32
        # E[Z^2k] = (2k - 1)!! exactly for 2k < 2n
        for k in (0, 1, 5, 19):
            moment = mpmath.fsum(w * x ** (2 * k) for x, w in zip(X, W))
            assert abs(moment / mpmath.fac2(2 * k - 1) - 1) < mpmath.mpf(10) ** -30


def test_mp_softmax_is_the_row_softmax() -> None:
    with mpmath.workdps(30):
        h = [mpmath.mpf("0.7"), mpmath.mpf("-1.3")]
        S = softmax_rows_mp(h)
        for l in range(2):
            assert abs(mpmath.fsum(S[l]) - 1) < mpmath.mpf(10) ** -29
            z = mpmath.fsum(mpmath.exp(h[l] * hk) for hk in h)
            for k in range(2):
                assert abs(S[l][k] - mpmath.exp(h[l] * h[k]) / z) < mpmath.mpf(10) ** -29
    np.testing.assert_allclose(np.array(S, dtype=float), get_kernels(2).attention(np.array([0.7, -1.3])), rtol=1e-15)


def test_eps_lin_double_precision_agrees_with_30_digits() -> None:
    """Paper point: eps_lin (double, order 80) within 1e-12 of the 30-digit value (measured 4.3e-14)."""
    ref = eps_lin_mp(PAPER, dps=30)
    with mpmath.workdps(40):
        assert abs(ref / mpmath.mpf(EPS_LIN_30) - 1) < mpmath.mpf(10) ** -28
    assert abs(eps_lin(PAPER) / float(ref) - 1) <= 1e-12
    assert float(ref) == pytest.approx(1.971384e-3, rel=1e-6)  # docs/model.md section 6


def test_eps_lin_unequal_sigma_and_asymmetric_A() -> None:
    """A parameter set with no token symmetry (sigma_1 != sigma_2, A not swap-invariant)."""
    p = ModelParams(sigma=(0.5, 0.7), A=((0.3, 0.7), (0.8, 0.2)), omega=0.6)
    ref = eps_lin_mp(p, dps=20)
    assert abs(eps_lin(p) / float(ref) - 1) <= 1e-12


def test_eps_g_gauss_hermite_error_shrinks_with_order() -> None:
    """eps_g at a theta = 0 state: ghN errors against the 30-digit value, measured (see module doc)."""
    ref = float(eps_g_theta0_mp(PAPER, POS_STATE["q0"], POS_STATE["m"], dps=30))
    assert ref == pytest.approx(3.453085164979295e-3, rel=1e-14)
    k = get_kernels(2)
    ov = Overlaps(q0=POS_STATE["q0"], V0=44.0, m=POS_STATE["m"], th0=0.0)
    err = {}
    for n in (6, 8, 10, 12):
        mom = channel_moments(k, PAPER, ov, make_rule(2, f"gh{n}"))
        err[n] = abs(mom.eps_g / ref - 1)
    assert err[6] < 3e-3
    assert err[8] < err[6] / 4 and err[8] < 5e-4
    assert max(err[10], err[12]) < err[8] / 20
    assert max(err[10], err[12]) < 1.5e-5


def test_eps_g_mp_factorises_consistently_with_a_direct_double_sum() -> None:
    """eps_g_theta0_mp with unequal sigma / asymmetric A against a fine double tensor rule (gh24)."""
    p = ModelParams(sigma=(0.5, 0.7), A=((0.3, 0.7), (0.8, 0.2)), omega=0.5)
    q0, m = 0.3, [0.2, -0.1]
    ref = float(eps_g_theta0_mp(p, q0, m, dps=20))
    k = get_kernels(2)
    x, w = np.polynomial.hermite_e.hermegauss(24)
    w = w / w.sum()
    g1, g2 = np.meshgrid(x, x, indexing="ij")
    z = np.stack([g1.ravel(), g2.ravel()], axis=1)
    wt = np.outer(w, w).ravel()
    S = k.attention(np.asarray(m) + np.sqrt(p.sigma2 * q0) * z)
    T = k.target(np.sqrt(p.sigma2 * p.rho0) * z, p.omega, p.A_array)
    ES, ES2 = np.einsum("n,nij->ij", wt, S), np.einsum("n,nij->ij", wt, S * S)
    ET, ET2 = np.einsum("n,nij->ij", wt, T), np.einsum("n,nij->ij", wt, T * T)
    direct = 0.5 * np.sum(p.sigma2[None, :] * (ES2 - 2 * ES * ET + ET2))
    assert direct == pytest.approx(ref, rel=2e-6)  # gh24's own error on the teacher average
