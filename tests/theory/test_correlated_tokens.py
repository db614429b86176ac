"""Tokens correlated across positions (docs/model.md section 7): the whitened model, its loss and kernels,
the diagonal-C equivalence with the independent-token state evolution, eps_lin_C and the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest

from attnphase.cli import main
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.observables import eps_lin
from attnphase.numerics.prox.backends import resolve_backend
from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.se.state_evolution import solve
from attnphase.numerics.quadrature.symmetry import model_symmetry_group
from attnphase.theory.baseline import eps_lin_cov
from attnphase.theory.correlated_kernels import get_correlated_kernels, model_kernels
from attnphase.theory.kernels import Kernels
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import original, positional_overlaps, token_mixing, whiten

C_EXAMPLE = ((0.25, 0.075), (0.075, 0.25))  # correlation 0.3, sigma 0.5


def _spd(rng: np.random.Generator, L: int) -> np.ndarray:
    G = rng.normal(size=(L, L))
    return G @ G.T / L + 0.2 * np.eye(L)


def _softmax_rows(h: np.ndarray) -> np.ndarray:
    a = h[..., :, None] * h[..., None, :]
    e = np.exp(a - a.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("L", [2, 3])
def test_generated_loss_C_is_the_formula(L):
    """loss_C(h, h*) = 1/2 sum_l sum_{k,k'} C[k,k'] (S - T)[l,k] (S - T)[l,k'], at random h, h*, C."""
    rng = np.random.default_rng(L)
    C = _spd(rng, L)
    B = token_mixing(C)
    k = get_correlated_kernels(B)
    A = np.full((L, L), 0.4 / (L - 1)) + np.eye(L) * (0.6 - 0.4 / (L - 1))
    h, hstar = rng.normal(size=(7, L)), rng.normal(size=(7, L))
    T = 0.7 * _softmax_rows(hstar) + 0.3 * A
    D = _softmax_rows(h) - T
    direct = 0.5 * np.einsum("nlk,kj,nlj->n", D, C, D)
    v, vstar = np.linalg.solve(B, h.T).T, np.linalg.solve(B, hstar.T).T
    np.testing.assert_allclose(k.target(vstar, 0.3, A), T, rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(k.loss(v, T, np.ones(L)), direct, rtol=1e-12, atol=1e-16)
    assert np.all(direct > 0)


@pytest.mark.parametrize("L", [2, 3])
def test_proximal_gradient_and_hessian_match_finite_differences(L):
    """grad_v = (v - w) / V + B^T grad_h and hess_v = diag(1 / V) + B^T hess_h B against central differences."""
    rng = np.random.default_rng(10 + L)
    k = get_correlated_kernels(token_mixing(_spd(rng, L)))
    v, w = rng.normal(size=(5, L)), rng.normal(size=(5, L))
    V, ones = np.full(L, 0.8), np.ones(L)
    T = k.target(rng.normal(size=(5, L)), 0.3, np.full((L, L), 1.0 / L))
    f, g, H = k.prox_value_grad_hess(v, w, V, T, ones)
    np.testing.assert_allclose(k.prox_value(v, w, V, T, ones), f, rtol=1e-14)
    eps = 1e-6
    for j in range(L):
        dv = np.zeros(L)
        dv[j] = eps
        fp, gp, _ = k.prox_value_grad_hess(v + dv, w, V, T, ones)
        fm, gm, _ = k.prox_value_grad_hess(v - dv, w, V, T, ones)
        np.testing.assert_allclose((fp - fm) / (2 * eps), g[:, j], atol=1e-8)
        np.testing.assert_allclose((gp - gm) / (2 * eps), H[:, :, j], atol=1e-8)
    np.testing.assert_array_equal(H, np.swapaxes(H, 1, 2))


def test_whitening_maps_the_model_and_back():
    p = ModelParams(C=C_EXAMPLE)
    w = whiten(p)
    B = w.mixing_array
    np.testing.assert_allclose(B @ B.T, np.array(C_EXAMPLE), atol=1e-15)
    np.testing.assert_allclose(B @ w.P_array @ B.T, p.P_array, atol=1e-14)
    assert w.sigma == (1.0, 1.0) and not w.correlated_tokens and isinstance(model_kernels(w), type(get_correlated_kernels(B)))
    assert isinstance(model_kernels(ModelParams()), Kernels)
    with pytest.raises(ValueError, match="whitened"):
        model_kernels(p)  # the plain kernels would ignore C
    assert eps_lin(p) == eps_lin(w)
    back = original(w)
    assert back.C == C_EXAMPLE and back.P == p.P and back.sigma == (0.5, 0.5)
    # the swap symmetry of C, P and A survives exactly (the state evolution symmetrises over it)
    assert len(model_symmetry_group(w)) == len(model_symmetry_group(ModelParams())) == 8
    skew = ModelParams(C=((0.25, 0.1), (0.1, 0.36)))
    assert len(model_symmetry_group(skew)) == len(model_symmetry_group(whiten(skew))) == 4
    with pytest.raises(ValueError, match="singular"):
        whiten(ModelParams(C=((0.25, 0.25), (0.25, 0.25))))
    with pytest.raises(ValueError, match="sigma = 1"):
        ModelParams(sigma=0.5, mixing=((1.0, 0.0), (0.0, 1.0)))


def test_eps_lin_C_reduces_to_eps_lin_for_a_diagonal_C():
    p = ModelParams(sigma=(0.4, 0.6))
    assert eps_lin(whiten(p)) == pytest.approx(eps_lin(p), rel=1e-12)  # eps_lin_cov against eps_lin_from_moments
    # and with a correlated C it is the direct formula: 1/2 (1 - omega)^2 sum_l Tr(C Cov(s_l))
    rng = np.random.default_rng(3)
    s = _softmax_rows(rng.normal(size=(4000, 2)) @ token_mixing(np.array(C_EXAMPLE)).T)
    cross = np.einsum("nlk,nlj->lkj", s, s) / len(s)
    mean = s.mean(axis=0)
    cov = np.stack([np.cov(s[:, l, :].T, bias=True) for l in range(2)])
    assert eps_lin_cov(mean, cross, C_EXAMPLE, 0.3) == pytest.approx(
        0.5 * 0.49 * sum(np.trace(np.array(C_EXAMPLE) @ cov[l]) for l in range(2)), rel=1e-10)


@pytest.mark.parametrize("L", [2, 3])
def test_compiled_proximal_map_is_the_numpy_one(L):
    """The global proximal map of the whitened model in v: the compiled backend (generated one-point kernels in
    v, softmax of the generated fields B v) finds the numpy backend's minimisers, values and candidates."""
    rng = np.random.default_rng(20 + L)
    k = get_correlated_kernels(token_mixing(_spd(rng, L)))
    w, V, ones = 1.5 * rng.normal(size=(300, L)), np.full(L, 0.8), np.ones(L)
    T = k.target(rng.normal(size=(300, L)), 0.3, np.full((L, L), 1.0 / L))
    (a, ca), (b, cb) = (global_prox(k, w, V, T, ones, backend=be) for be in ("numpy", "numba"))
    assert a.converged.all() and b.converged.all()
    np.testing.assert_allclose(b.h, a.h, rtol=0, atol=1e-9)
    np.testing.assert_allclose(b.value, a.value, rtol=1e-13)
    np.testing.assert_array_equal(cb.node, ca.node)
    np.testing.assert_allclose(cb.h, ca.h, rtol=0, atol=1e-9)
    c = newton_minimize(k, np.zeros_like(w), w, V, T, ones, backend="numba")  # the local map from v = 0
    d = newton_minimize(k, np.zeros_like(w), w, V, T, ones, backend="numpy")
    np.testing.assert_allclose(c.h, d.h, rtol=0, atol=1e-9)
    with pytest.raises(TypeError, match="torch"):
        resolve_backend("torch", k)


@pytest.mark.parametrize("branch", ["semantic", "positional"])
def test_compiled_and_numpy_backends_reach_the_same_correlated_fixed_point(branch):
    """The correlated example (C_EXAMPLE) solved on both backends with the same rule: the same fixed point."""
    p = ModelParams(C=C_EXAMPLE)
    alpha = 2.0 if branch == "semantic" else 0.3
    fps = [solve(p, alpha, branch, config=SolverConfig(backend=be, quadrature="sobol10", e_t_quadrature=None))
           for be in ("numpy", "numba")]
    assert all(fp.status.converged and fp.branch == branch for fp in fps)
    np.testing.assert_allclose(fps[1].overlaps.to_vector(), fps[0].overlaps.to_vector(), rtol=0, atol=1e-9)
    np.testing.assert_allclose(fps[1].observables.eps_g, fps[0].observables.eps_g, rtol=1e-8)


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("branch", ["semantic", "positional"])
def test_diagonal_C_in_whitened_form_is_the_independent_solve(branch, backend):
    """C = diag(sigma^2), B = diag(sigma): the v-model's fixed point is today's, to round-off on the same rule
    (on either backend).

    q0, V0, th0, eps_g, e_t, eps_lin equal; m_h = B m_v; hats: qhat, thhat, Vhat scale by sigma^2, mhat by sigma
    (g_v = sigma g_h)."""
    p = ModelParams(sigma=0.5)
    cfg = SolverConfig(backend=backend, quadrature="sobol10", e_t_quadrature=None)
    alpha = 2.0 if branch == "semantic" else 0.3  # (the positional cold start above 0.3 is a continuation)
    a = solve(p, alpha, branch, config=cfg)
    b = solve(whiten(p), alpha, branch, config=cfg)
    assert a.status.converged and b.status.converged and a.branch == b.branch == branch
    tol = dict(rtol=1e-9, atol=1e-12)
    for x, y in ((a.overlaps.q0, b.overlaps.q0), (a.overlaps.V0, b.overlaps.V0), (a.overlaps.th0, b.overlaps.th0),
                 (a.observables.eps_g, b.observables.eps_g), (a.observables.e_t, b.observables.e_t)):
        np.testing.assert_allclose(y, x, **tol)
    np.testing.assert_allclose(b.observables.eps_lin, a.observables.eps_lin, rtol=1e-12)
    np.testing.assert_allclose(positional_overlaps(b.params, b.overlaps.m), a.overlaps.m, **tol)
    s2 = p.sigma2
    np.testing.assert_allclose(b.hat.qhat, s2 * a.hat.qhat, **tol)
    np.testing.assert_allclose(b.hat.Vhat, s2 * a.hat.Vhat, **tol)
    np.testing.assert_allclose(b.hat.thhat, s2 * a.hat.thhat, **tol)
    np.testing.assert_allclose(b.hat.mhat, np.sqrt(s2) * a.hat.mhat, **tol)
    ra, rb = a.record, b.record
    assert rb["branch"] == ra["branch"] and rb["sigma"] == ra["sigma"] == 0.5
    for key in ("q", "m", "V", "theta", "eps_g", "e_t"):
        assert rb[key] == pytest.approx(ra[key], rel=1e-9, abs=1e-12), key


def test_cli_solve_accepts_token_cov(capsys):
    rc = main(["solve", "--alpha", "2", "--token-cov", "0.25,0.075;0.075,0.25", "--quadrature", "sobol10",
               "--error-estimate", "0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["branch"] == "semantic" and out["C"] == [[0.25, 0.075], [0.075, 0.25]]
    assert out["sigma"] == 0.5 and out["P"] == [[1.0, -1.0], [-1.0, 1.0]] and out["theta"] > 0.3


def test_branch_end_eigenvalues_of_the_whitened_model_are_the_independent_ones():
    """lambda (theta direction) and mu (m direction) at the agnostic point: the v-model's (sigma = 1, Ptilde,
    loss_C(B v)) equal today's for C = diag(sigma^2) -- their derivation uses only the fields' Gaussian law."""
    from attnphase.numerics.quadrature.rules import make_rule
    from attnphase.numerics.se.stability import m_stability_at, theta_stability_at

    p = ModelParams(sigma=0.5)
    cfg = SolverConfig(backend="numpy", quadrature="sobol10", e_t_quadrature=None)
    rule = make_rule(2, "sobol10")
    got = []
    for q in (p, whiten(p)):
        fp = solve(q, 0.7, "agnostic", config=cfg)
        assert fp.status.converged and fp.branch == "agnostic"
        got.append((theta_stability_at(q, 0.7, fp.overlaps, rule, cfg)[0], m_stability_at(q, 0.7, fp.overlaps, rule, cfg)[0]))
    np.testing.assert_allclose(got[1], got[0], rtol=1e-8)
    assert 0.5 < got[0][0] < 1.5 and got[0][1] > 1  # not trivially equal (zero)


def test_a_zero_of_the_users_token_covariance_comes_back_as_zero():
    """C = B B^T of the whitened model gave C[0][2] = 8.6e-18 for the user's 0 (L = 3, a tridiagonal C); the echo
    rounds entries below 1e-12 of the largest to 0."""
    from attnphase.theory.params import ModelParams
    from attnphase.theory.whitening import original, whiten

    C = ((0.25, 0.05, 0.0), (0.05, 0.25, 0.05), (0.0, 0.05, 0.25))
    back = original(whiten(ModelParams(L=3, C=C, A=((0.6, 0.2, 0.2), (0.2, 0.6, 0.2), (0.2, 0.2, 0.6)),
                                       P=((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))))
    assert np.array_equal(np.array(back.C), np.array(C))
