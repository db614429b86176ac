"""The theory in matrix overlaps (docs/model.md section 7): reduction to r = 1, the matrix-form kernels, prior, hats.

Checks of tests/theory/matrix_se_checks.py at small sizes; each tolerance is round-off or derived from the
method's error (Student-t over independent rules, Gaussian sampling error of a finite-d solve).
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.starts import with_ranks
from attnphase.theory.kernels import get_kernels
from attnphase.theory.params import ModelParams
from attnphase.theory.priors import RidgePrior
from attnphase.theory.softmax import target
import matrix_se_checks as rc

U = 2.0**-53


@pytest.mark.parametrize("params", [ModelParams(omega=0.3), ModelParams(L=3, sigma=(0.4, 0.5, 0.6), omega=0.2)])
def test_matrix_formulas_at_r1_are_the_scalar_formulas_to_round_off(params) -> None:
    diffs = rc.reduction_to_rank1(params)
    assert len(diffs) == 11
    for name, d in diffs.items():
        assert d <= 64 * U, (name, d)


def test_matrix_form_kernels_at_r1_are_the_fields_form_kernels() -> None:
    rng = np.random.default_rng(0)
    # one object, two generated modules: h (N, L, 1) runs the matrix form, h (N, L) the fields form
    k = get_kernels(2)
    h = rng.normal(size=(40, 2))
    T = k.target(rng.normal(size=(40, 2)), 0.3, [[0.6, 0.4], [0.4, 0.6]])
    s2 = np.array([0.25, 0.36])
    assert k.matrix_functions is not k.functions
    for a, b in zip(k.loss_grad_hess(h[..., None], T, s2), k.loss_grad_hess(h, T, s2)):
        np.testing.assert_allclose(a.reshape(b.shape), b, rtol=0, atol=16 * U * max(1.0, np.abs(b).max()))


@pytest.mark.parametrize("L,r,rs", [(2, 2, 1), (3, 2, 2)])
def test_matrix_form_kernels_against_torch_autograd_and_per_point_calls(L, r, rs) -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(1)
    k = get_kernels(L, r)
    n = 12
    h = rng.normal(size=(n, L, r)) * 1.5
    A = np.full((L, L), 1.0 / L)
    T = target(rng.normal(size=(n, L, rs)), 0.3, A)
    s2 = rng.uniform(0.2, 0.5, size=L)
    f, g, H = k.loss_grad_hess(h, T, s2)
    np.testing.assert_allclose(f, k.loss(h, T, s2), rtol=1e-13)  # generated vs the square loss's numpy form

    def loss(x, Ti):  # independent transcription of docs/model.md section 2
        S = torch.softmax(x @ x.T, dim=1)
        return 0.5 * (torch.tensor(s2)[None, :] * (S - Ti) ** 2).sum()

    for i in range(n):
        x = torch.tensor(h[i], dtype=torch.float64, requires_grad=True)
        Ti = torch.tensor(T[i])
        gt = torch.autograd.grad(loss(x, Ti), x)[0].numpy().ravel()
        Ht = torch.autograd.functional.hessian(lambda y: loss(y, Ti), x).numpy().reshape(L * r, L * r)
        np.testing.assert_allclose(g[i], gt, rtol=0, atol=1e-13 * max(1.0, np.abs(gt).max()))
        np.testing.assert_allclose(H[i], Ht, rtol=0, atol=1e-12 * max(1.0, np.abs(Ht).max()))
        one = k.loss_grad_hess(h[i:i + 1], T[i:i + 1], s2)  # vectorised vs one point
        for a, b in zip(one, (f, g, H)):
            np.testing.assert_allclose(a[0], b[i], rtol=0, atol=8 * U * max(1.0, np.abs(b[i]).max()))


def _random_hats(rng, L, r, rs):
    def spd(s):
        a = rng.normal(size=(r, r))
        return a @ a.T * s + np.eye(r) * s

    return (np.stack([spd(0.01) for _ in range(L)]), rng.normal(size=(L, r)) * 0.1,
            rng.normal(size=(L, r, rs)) * 0.1, np.stack([spd(0.05) for _ in range(L)]))


@pytest.mark.parametrize("L,r,rs", [(2, 2, 1), (3, 2, 2), (2, 3, 2)])
def test_matrix_prior_is_the_stationary_point_of_phi_in_the_hats(L, r, rs) -> None:
    pytest.importorskip("torch")
    params = with_ranks(ModelParams(L=L), r, rs)
    assert rc.prior_stationarity(params, _random_hats(np.random.default_rng(L + r), L, r, rs)) <= 1e-13


def test_matrix_prior_against_a_finite_d_ridge_solve() -> None:
    params = with_ranks(ModelParams(L=3), 2, 2)
    hats = _random_hats(np.random.default_rng(3), 3, 2, 2)
    res = rc.prior_vs_ridge(params, hats, 20_000)
    for name, (err, tol) in res.items():
        assert err <= tol, (name, err, tol)
    # and it is a real test: a wrong prior (th0 without rho0 Lam^{-1}) fails it
    q0, V0, m, th0 = RidgePrior.of(params).update(hats)
    Th = np.einsum("l,lab->ab", params.sigma2, hats[2])
    assert np.abs(Th - th0).max() > 5 * res["th0"][1]


@pytest.mark.parametrize("r,rs", [(2, 1), (2, 2)])
def test_hats_are_the_derivatives_of_alpha_E_M(r, rs) -> None:
    params = with_ranks(ModelParams(omega=0.3), r, rs)
    rng = np.random.default_rng(5)
    q0 = np.array([[0.4, 0.05], [0.05, 0.2]])
    V0 = np.array([[3.0, 0.5], [0.5, 2.0]])
    th0 = np.array([[0.3, 0.05], [0.1, 0.2]])[:, :rs]
    ov = Overlaps(q0, V0, rng.normal(size=(2, 2)) * 0.2, th0)
    res = rc.hats_vs_envelope_differences(params, 1.5, ov, [f"sobol8:1:{i}" for i in range(8)])
    assert len(res) == 6 + 4 + 2 * rs
    for name, (diff, tol, pred) in res.items():
        assert abs(diff) <= tol, (name, diff, tol, pred)
    for block in ("q0", "V0", "m", "th0"):  # the check resolves each block at its own scale: a wrong sign fails it
        items = [v for k, v in res.items() if k.startswith(block + "[")]
        assert max(t for _, t, _ in items) < max(abs(p) for _, _, p in items), (block, items)


def test_matrix_channel_on_scalar_views_is_the_generated_scalar_code() -> None:
    """q0 a number: channel_fields and free_entropy run the code generated from the scalar statement (the same
    numbers as theory/channel.py and theory/free_entropy.py); as 1 x 1 matrices, the matrix form, equal to
    round-off."""
    from attnphase.theory import channel, free_entropy
    from attnphase.theory import matrix_channel as mc

    params = ModelParams(L=3, sigma=(0.4, 0.5, 0.6), omega=0.2)
    rng = np.random.default_rng(3)
    L, s2, P = params.L, params.sigma2, params.P_array
    xi, eta = rng.normal(size=(2, 50, L))
    m = rng.normal(size=L) * 0.3
    scalar = mc.channel_fields(xi, eta, 0.7, m, 0.4, s2, params.rho0)
    for a, b in zip(scalar, channel.channel_fields(xi, eta, 0.7, m, 0.4, s2, params.rho0)):
        np.testing.assert_array_equal(a, b)
    matrix = mc.channel_fields(xi[..., None], eta[..., None], np.array([[0.7]]), m[:, None], np.array([[0.4]]), s2,
                               params.rho0)
    for a, b in zip(matrix, scalar):
        np.testing.assert_allclose(a[..., 0], b, rtol=0, atol=64 * U * np.abs(b).max())
    qh, mh, thh, Vh = rng.uniform(0.01, 0.1, L), rng.normal(size=L) * 0.1, rng.normal(size=L) * 0.1, rng.uniform(1, 2, L)
    args = (s2, P, params.lam, params.rho0, 1.3, 0.01)
    phi = mc.free_entropy(0.7, 3.0, m, 0.4, qh, mh, thh, Vh, *args)
    assert phi == float(free_entropy.free_entropy(0.7, 3.0, m, 0.4, qh, mh, thh, Vh, *args))
    phi_matrix = mc.free_entropy(np.array([[0.7]]), np.array([[3.0]]), m[:, None], np.array([[0.4]]), qh[:, None, None],
                                 mh[:, None], thh[:, None, None], Vh[:, None, None], *args)
    assert phi_matrix == pytest.approx(phi, rel=64 * U)
