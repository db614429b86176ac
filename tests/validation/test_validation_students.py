"""Finite-d data, students and losses (attnphase.validation): exact identities, seeded."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.data import Dataset, Teacher, make_teacher, n_samples, sample, target_attention  # noqa: E402
from attnphase.validation.experiments import generator  # noqa: E402
from attnphase.validation.students import (  # noqa: E402
    attention_losses,
    attention_output,
    fit_linear,
    linear_losses,
    prepare,
    risk,
)


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def _setup(d=40, n=30, seed=0, **kw):
    p = ModelParams(**kw)
    t = make_teacher(p, d, generator(seed, "teacher"))
    data = sample(t, n, generator(seed, "train"))
    return p, t, data


def test_default_positions_and_teacher_norm():
    p, t, data = _setup(d=50)
    assert torch.allclose(t.positions[0], torch.full((50,), 1 / math.sqrt(50), dtype=torch.float64))
    assert torch.allclose(t.positions[1], -t.positions[0])
    assert t.Qstar.shape == (50, 1) and float(t.Qstar[:, 0] @ t.Qstar[:, 0]) / 50 == pytest.approx(1.0, abs=1e-12)
    assert data.X.shape == (30, 2, 50) and data.T.shape == (30, 2, 2)
    assert torch.allclose(data.T.sum(-1), torch.ones(30, 2, dtype=torch.float64))


def test_general_P_gram_is_exact():
    P = ((2.0, 0.5, 0.0), (0.5, 1.0, 0.2), (0.0, 0.2, 0.3))
    p = ModelParams(L=3, P=P)
    t = make_teacher(p, 20, generator(1, "teacher"))
    np.testing.assert_allclose((t.positions @ t.positions.T).numpy(), np.array(P), atol=1e-12)


def test_seeded_data_is_reproducible_and_dtype_independent():
    p = ModelParams()
    a = sample(make_teacher(p, 30, generator(3, "teacher")), 5, generator(3, "train"))
    b = sample(make_teacher(p, 30, generator(3, "teacher")), 5, generator(3, "train"))
    c = sample(make_teacher(p, 30, generator(3, "teacher"), dtype=torch.float32), 5, generator(3, "train"))
    assert torch.equal(a.X, b.X)
    assert torch.allclose(a.X, c.X.double(), atol=1e-6)


def test_gram_loss_equals_direct_loss():
    p, t, data = _setup(d=37, n=25, omega=0.4, sigma=(0.5, 0.8))
    g = prepare(t, data)
    Q = torch.randn(37, 2, generator=generator(5, "init"), dtype=torch.float64)
    direct = ((data.Y - attention_output(Q, data.X, t.positions)) ** 2).sum(dim=(-1, -2)) / (2 * t.d)
    torch.testing.assert_close(attention_losses(Q, g), direct, rtol=1e-11, atol=1e-14)


def test_risk_penalty_convention():
    """R(Q) = sum_mu (1/2d)|y - f|^2 + (lambda/2)|Q|_F^2, and grad R = grad(data) + lambda Q."""
    p, t, data = _setup(d=30, n=20)
    g = prepare(t, data)
    Q = torch.randn(30, 1, generator=generator(2, "init"), dtype=torch.float64).requires_grad_(True)
    R = risk(Q, g, 0.37)
    expected = attention_losses(Q, g).sum() + 0.5 * 0.37 * (Q * Q).sum()
    assert float(R.detach()) == pytest.approx(float(expected.detach()), rel=1e-14)
    (G,) = torch.autograd.grad(R, Q)
    Q2 = Q.detach().clone().requires_grad_(True)
    (G0,) = torch.autograd.grad(attention_losses(Q2, g).sum(), Q2)
    torch.testing.assert_close(G, G0 + 0.37 * Q.detach())


def _orthogonal_data(d, n, sigma, omega, A, seed):
    """Tokens with exactly diagonal Gram x_k . x_k' / d = sigma_k^2 delta_kk' (and no positions)."""
    gen = generator(seed, "train")
    L = len(sigma)
    raw = torch.randn(n, d, L, generator=gen, dtype=torch.float64)
    U, _ = torch.linalg.qr(raw)  # (n, d, L) orthonormal columns
    X = (U * math.sqrt(d) * torch.tensor(sigma, dtype=torch.float64)).transpose(-1, -2)  # (n, L, d)
    Qstar = torch.randn(d, generator=gen, dtype=torch.float64)
    hstar = (X @ Qstar / math.sqrt(d)).unsqueeze(-1)  # (n, L, r* = 1)
    return X, Qstar, hstar, target_attention(hstar, omega, torch.tensor(A, dtype=torch.float64))


def test_gradient_equals_theory_kernel_chain_rule():
    """With exact token Gram sigma^2 I and P = 0, the finite-d loss IS the limit loss of docs/model.md section 2.

    Then R(Q) = sum_mu loss(h^mu, h*^mu) + (lambda/2)|Q|^2 with h_l = Q . x_l / sqrt(d), and the chain rule
    dR/dQ = sum_mu sum_l grad_h_l x_l / sqrt(d) + lambda Q (no further 1/d: the 1/2d of the risk is
    already inside the limit loss) holds to round-off.
    """
    kernels = pytest.importorskip("attnphase.theory.kernels")
    k = kernels.get_kernels(2)
    d, n, lam, omega = 64, 40, 0.01, 0.3
    sigma = (0.5, 0.7)
    params = ModelParams(sigma=sigma, P=((0.0, 0.0), (0.0, 0.0)), omega=omega, lam=lam)
    X, Qstar, hstar, T = _orthogonal_data(d, n, sigma, omega, params.A, seed=11)
    teacher = Teacher(params, d, torch.zeros(2, d, dtype=torch.float64), Qstar)
    g = prepare(teacher, Dataset(X, hstar, T))
    Q = (0.8 * Qstar + torch.randn(d, generator=generator(4, "init"), dtype=torch.float64)).reshape(d, 1)
    Qv = Q.clone().requires_grad_(True)
    R = risk(Qv, g, lam)
    (G,) = torch.autograd.grad(R, Qv)

    h = (X @ Q)[..., 0].numpy() / math.sqrt(d)  # (n, L)
    loss, grad_h, _ = k.loss_grad_hess(h, T.numpy(), np.array(sigma) ** 2)
    R_theory = loss.sum() + 0.5 * lam * float((Q * Q).sum())
    G_theory = np.einsum("nl,nld->d", grad_h, X.numpy()) / math.sqrt(d) + lam * Q[:, 0].numpy()
    assert float(R.detach()) == pytest.approx(R_theory, rel=1e-12)
    np.testing.assert_allclose(G[:, 0].numpy(), G_theory, rtol=1e-9, atol=1e-13)


def test_gradient_close_to_theory_kernel_at_large_d():
    """With the default positions and Gaussian tokens the two differ by O(1/sqrt(d)) (stated tolerance)."""
    kernels = pytest.importorskip("attnphase.theory.kernels")
    k = kernels.get_kernels(2)
    d, n = 1000, 200
    p, t, data = _setup(d=d, n=n)
    g = prepare(t, data)
    Q = (0.8 * t.Qstar).clone().requires_grad_(True)
    (G,) = torch.autograd.grad(risk(Q, g, p.lam), Q)
    h = (g.X @ Q.detach() + g.positions @ Q.detach())[..., 0].numpy() / math.sqrt(d)
    _, grad_h, _ = k.loss_grad_hess(h, data.T.numpy(), p.sigma2)
    Z = (g.X + g.positions).numpy()
    G_theory = np.einsum("nl,nld->d", grad_h, Z) / math.sqrt(d) + p.lam * Q.detach()[:, 0].numpy()
    rel = np.linalg.norm(G[:, 0].numpy() - G_theory) / np.linalg.norm(G_theory)
    assert rel < 1 / math.sqrt(d)  # measured 0.0019 at d = 4000


def test_linear_fit_recovers_exact_B_without_noise():
    """When every sample has the same T (omega = 1), least squares returns B = A exactly."""
    p, t, data = _setup(d=20, n=15, omega=1.0)
    g = prepare(t, data)
    B = fit_linear(g)
    np.testing.assert_allclose(B.numpy(), p.A_array, atol=1e-12)
    assert float(linear_losses(B, g).max()) < 1e-25
    assert torch.allclose(B @ data.X, data.Y)


def test_linear_fit_is_least_squares_minimum():
    p, t, data = _setup(d=25, n=40)
    g = prepare(t, data)
    B = fit_linear(g)
    base = float(linear_losses(B, g).sum())
    gen = generator(9, "init")
    for _ in range(5):
        dB = 1e-3 * torch.randn(2, 2, generator=gen, dtype=torch.float64)
        assert float(linear_losses(B + dB, g).sum()) > base


def test_linear_fit_of_tokens_equal_across_positions_is_a_least_squares_minimum():
    """A singular token covariance (x_1 = x_2): the normal equations' Gram matrix is singular (simulate
    --token-cov "0.25,0.25;0.25,0.25" stopped on torch's LinAlgError after training); its pseudo-inverse gives a
    minimiser, and here y = x exactly, so the fit is perfect."""
    p, t, data = _setup(d=20, n=15, C=((0.25, 0.25), (0.25, 0.25)))
    g = prepare(t, data)
    with pytest.raises(torch.linalg.LinAlgError):
        torch.linalg.solve(g.Gxx.sum(0), g.Gxx.sum(0))
    B = fit_linear(g)
    assert torch.isfinite(B).all() and float(linear_losses(B, g).max()) < 1e-25


def test_bad_arguments():
    p = ModelParams()
    with pytest.raises(ValueError, match="d \\(embedding dimension\\)"):
        make_teacher(p, 1, generator(0, "teacher"))
    with pytest.raises(ValueError, match="alpha"):
        n_samples(-0.5, 100)
    with pytest.raises(ValueError, match="alpha"):
        n_samples(0.0, 100)


@pytest.mark.parametrize("seed", [-1, 1.5, True, "0"])
def test_a_simulation_or_amp_run_refuses_a_seed_that_is_not_a_non_negative_integer(seed):
    """seed = -1 failed deep in numpy ('expected non-negative integer'), 1.5 and True ran silently as seed 1."""
    from attnphase.validation.amp_run import AmpSpec
    from attnphase.validation.experiments import SimSpec

    for spec in (lambda: SimSpec(d=100, alpha=2.0, init="semantic", seed=seed),
                 lambda: AmpSpec(d=100, alpha=0.4, seed=seed)):
        with pytest.raises(ValueError, match="seed must be an integer >= 0"):
            spec()


@pytest.mark.parametrize("kw, needle", [(dict(params={}), "params must be a ModelParams, got dict"),
                                        (dict(train={}), "train must be a TrainConfig, got dict"),
                                        (dict(alpha="2"), "alpha .* must be a number, got '2'")])
def test_a_simulation_spec_refuses_what_its_run_cannot_use(kw, needle) -> None:
    """SimSpec(params={...}) and SimSpec(train={...}) were taken and the run failed with AttributeError ('dict' object
    has no attribute 'loss'); alpha="2" was a TypeError."""
    from attnphase.validation.experiments import SimSpec

    with pytest.raises(ValueError, match=needle):
        SimSpec(**(dict(d=50, alpha=2.0, init="semantic") | kw))


@pytest.mark.parametrize("kw, needle", [(dict(n_test=0), "n_test must be"), (dict(n_test=1), "n_test must be"),
                                        (dict(chunk=0), "chunk must be")])
def test_test_errors_refuse_sizes_that_give_no_error_bar(kw, needle) -> None:
    """n_test = 0 failed in torch.cat, chunk = 0 in range(), n_test = 1 returned a NaN standard error."""
    from attnphase.validation.measure import test_errors

    p, t, data = _setup(d=20, n=15)
    g = prepare(t, data)
    Q = torch.zeros(20, 1, dtype=torch.float64)
    with pytest.raises(ValueError, match=needle):
        test_errors(Q, fit_linear(g), t, generator(0, "test"), **kw)


def test_a_teacher_is_checked_against_its_model() -> None:
    """Teacher(ModelParams(r_star=2), 10, positions, ones(10, 1)) and positions of 3 rows at L = 2 were taken;
    make_teacher(dtype=torch.int64) gave an integer Q*, dtype="float32" failed deep in torch."""
    p, t, _ = _setup(d=10, n=5)
    with pytest.raises(ValueError, match=r"Qstar must have shape \(d, r\*\) = \(10, 2\)"):
        Teacher(ModelParams(r_star=2), 10, t.positions, t.Qstar)
    with pytest.raises(ValueError, match=r"positions must have shape \(L, d\) = \(2, 10\)"):
        Teacher(p, 10, torch.zeros(3, 10, dtype=torch.float64), t.Qstar)
    for dtype in (torch.int64, "float32"):
        with pytest.raises(ValueError, match="dtype must be"):
            make_teacher(p, 10, generator(0, "teacher"), dtype=dtype)
