"""Channel side (fields, hat overlaps) and linear baseline of attnphase.theory."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attnphase.theory.baseline import eps_lin_from_moments
from attnphase.theory.channel import (
    channel_fields,
    teacher_residual_variance,
    token_overlaps,
    token_variances,
)
from attnphase.theory.hats import hat_overlaps
from attnphase.theory.kernels import get_kernels

FLOAT = dict(allow_nan=False, allow_infinity=False)


def test_channel_fields_have_the_covariances_of_section_2() -> None:
    """E w = m, Cov w = q, Var h* = rho, Cov(w, h*) = theta, per token, independent across tokens."""
    rng = np.random.default_rng(0)
    n = 400_000
    sigma2 = np.array([0.25, 0.64])
    q0, th0, rho0 = 1.7, 0.9, 1.2
    m = np.array([0.3, -0.3])
    xi, eta = rng.normal(size=(2, n, 2))
    w, hs = channel_fields(xi, eta, q0, m, th0, sigma2, rho0)
    assert w.shape == hs.shape == (n, 2)
    q, theta, _, rho = token_overlaps(q0, th0, 1.0, rho0, sigma2)
    se = 5 / np.sqrt(n)
    np.testing.assert_array_less(np.abs(w.mean(0) - m), se * np.sqrt(q))
    np.testing.assert_allclose(((w - m) ** 2).mean(0), q, rtol=3 * se)
    np.testing.assert_allclose((hs**2).mean(0), rho, rtol=3 * se)
    np.testing.assert_array_less(np.abs(((w - m) * hs).mean(0) - theta), 2 * se * np.sqrt(q * rho))
    assert abs(((w[:, 0] - m[0]) * hs[:, 1]).mean()) < se


def test_token_overlaps_and_variances() -> None:
    s2 = np.array([0.25, 0.5, 2.0])
    q, th, V, rho = token_overlaps(2.0, 0.5, 0.1, 1.5, s2)
    np.testing.assert_allclose(q, 2.0 * s2)
    np.testing.assert_allclose(th, 0.5 * s2)
    np.testing.assert_allclose(V, 0.1 * s2)
    np.testing.assert_allclose(rho, 1.5 * s2)
    np.testing.assert_allclose(token_variances(0.1, s2), 0.1 * s2)
    np.testing.assert_allclose(teacher_residual_variance(2.0, 0.5, 1.5, s2), s2 * (1.5 - 0.25 / 2.0))


def test_degenerate_channel_raises() -> None:
    xi = np.zeros((3, 2))
    s2 = np.full(2, 0.25)
    with pytest.raises(ValueError, match="q0"):
        channel_fields(xi, xi, 0.0, [0, 0], 0.0, s2, 1.0)
    with pytest.raises(ValueError, match="th0"):
        channel_fields(xi, xi, 1.0, [0, 0], 1.5, s2, 1.0)  # th0^2 > q0 rho0
    # exactly aligned teacher: fields exist (rho_tilde clipped to 0) but thhat is undefined
    w, hs = channel_fields(np.ones((1, 2)), np.ones((1, 2)), 1.0, [0, 0], 1.0, s2, 1.0)
    np.testing.assert_allclose(hs, w)
    with pytest.raises(ValueError, match="thhat is undefined"):
        hat_overlaps(1.0, [1, 1], [0, 0], [0, 0], [0, 0], 1.0, 1.0, s2, 1.0)


@settings(max_examples=30, deadline=None)
@given(
    q0=st.floats(0.1, 3.0, **FLOAT),
    frac=st.floats(-0.9, 0.9, **FLOAT),
    rho0=st.floats(0.3, 2.0, **FLOAT),
    c=st.tuples(st.floats(-2, 2, **FLOAT), st.floats(-2, 2, **FLOAT), st.floats(-1, 1, **FLOAT)),
    alpha=st.floats(0.1, 5.0, **FLOAT),
)
def test_hat_overlaps_satisfy_stein_identities(q0, frac, rho0, c, alpha) -> None:
    """thhat_l = alpha E[d g / d h*_l], Vhat_l = -alpha E[d g / d w_l] (g a function of (w, h*)).

    Expectations by a tensor Gauss-Hermite rule over (xi, eta), exact to round-off for this g.
    """
    th0 = frac * np.sqrt(q0 * rho0)
    sigma2 = np.array([0.25, 0.81])
    m = np.array([0.2, -0.1])
    x, wts = np.polynomial.hermite_e.hermegauss(40)
    wts = wts / wts.sum()
    XI, ETA = np.meshgrid(x, x, indexing="ij")
    W2 = np.outer(wts, wts)
    xi = np.repeat(XI[..., None], 2, axis=-1)
    eta = np.repeat(ETA[..., None], 2, axis=-1)
    w, hs = channel_fields(xi, eta, q0, m, th0, sigma2, rho0)
    a, b, e = c
    g = a * np.sin(hs) + b * (w - m) + e * (w - m) * hs  # smooth test function of (w, h*)
    dg_dhs = a * np.cos(hs) + e * (w - m)
    dg_dw = b + e * hs
    E = lambda f: np.einsum("ij,ijl->l", W2, f)  # noqa: E731
    qhat, mhat, thhat, Vhat = hat_overlaps(alpha, E(g**2), E(g), E(g * eta), E(g * xi), q0, th0, sigma2, rho0)
    np.testing.assert_allclose(qhat, alpha * E(g**2))
    np.testing.assert_allclose(mhat, alpha * E(g))
    np.testing.assert_allclose(thhat, alpha * E(dg_dhs), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(Vhat, -alpha * E(dg_dw), rtol=1e-8, atol=1e-10)


@pytest.mark.parametrize("L", [2, 3])
def test_eps_lin_is_the_test_error_of_the_mean_attention(L: int) -> None:
    """eps_lin(moments) = E[1/2 sum sigma_k^2 (B - T(h*))^2] with B = E[T], on the same samples."""
    rng = np.random.default_rng(L)
    k = get_kernels(L)
    s2 = rng.uniform(0.1, 1.0, L)
    A = rng.dirichlet(np.ones(L), size=L)
    omega = 0.3
    hs = rng.normal(size=(20000, L)) * np.sqrt(s2)  # h*_l ~ N(0, rho_l), rho0 = 1
    s = k.attention(hs)
    T = k.target(hs, omega, A)
    B = T.mean(axis=0)
    direct = np.mean(0.5 * np.einsum("k,nlk->n", s2, (B - T) ** 2))
    eps = eps_lin_from_moments(s.mean(0), (s**2).mean(0), s2, omega)
    assert eps == pytest.approx(direct, rel=1e-9)
    assert np.ndim(eps) == 0
