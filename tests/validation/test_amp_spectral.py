"""The spectral start of GAMP (validation/amp_spectral.py): the preprocessing's eigenvalues, the direction's
correlation with Q* well above alpha_WR, and the start's norm and use in run_amp."""

import math

import pytest
import torch

from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig, revealed_fields
from attnphase.validation.amp_run import AmpSpec, run_amp
from attnphase.validation.amp_spectral import spectral_direction, spectral_start, spectral_weights
from attnphase.validation.data import make_teacher, n_samples, sample
from attnphase.validation.experiments import generator


def test_the_preprocessing_is_g_over_g_plus_c():
    """T = G (G + c I)^-1, G = u u^T - I: eigenvalue (|u|^2 - 1) / (c - 1 + |u|^2) along u, -1 / (c - 1) across it."""
    Y = torch.tensor([[0.3, -1.2, 0.7]], dtype=torch.float64)
    c = torch.tensor([[0.25, 0.36, 0.16]], dtype=torch.float64)
    rho0, shift = 1.5, 2.5
    T = spectral_weights(Y, c, rho0, shift)[0]
    u = (Y / torch.sqrt(c * rho0))[0]
    G = torch.outer(u, u) - torch.eye(3, dtype=torch.float64)
    assert torch.allclose(T, G @ torch.linalg.inv(G + shift * torch.eye(3, dtype=torch.float64)), atol=1e-12)
    n2 = float(u @ u)
    assert float(u @ T @ u) / n2 == pytest.approx((n2 - 1) / (shift - 1 + n2))
    with pytest.raises(ValueError, match="shift"):
        spectral_weights(Y, c, rho0, 1.0)


def test_the_spectral_direction_correlates_with_the_teacher():
    """At alpha = 0.6 (3.6 alpha_WR), d = 600: cosine with Q* above 0.5 for three seeds, where a random direction's is
    ~1/sqrt(d) = 0.04; the start has norm q_0 = scale rho0."""
    p, d, alpha = ModelParams(), 600, 0.6
    for seed in range(3):
        teacher = make_teacher(p, d, generator(seed, "teacher"), device=torch.device("cpu"), dtype=torch.float64)
        data = sample(teacher, n_samples(alpha, d), generator(seed, "train"))
        Y = revealed_fields(data.hstar, generator(seed, "amp"))
        e, _ = spectral_direction(data.X, Y, p.rho0)
        Qs = teacher.Qstar.reshape(-1)
        assert abs(float(e @ Qs)) / float(Qs.norm()) > 0.5
        Q0 = spectral_start(data.X, Y, p.rho0, 0.01)
        assert float(Q0 @ Q0) / d == pytest.approx(0.01 * p.rho0)


def test_run_amp_takes_the_spectral_start():
    """``AmpConfig(start="spectral")``: the first recorded overlap is the spectral start's (|m_0| ~ cos sqrt(q_0 rho0),
    far above the random start's ~1e-2 / sqrt(d) scale); an unknown start is refused."""
    spec = AmpSpec(d=400, alpha=0.6, seed=1, amp=AmpConfig(max_iter=3, init_scale=0.01, start="spectral"), device="cpu")
    r = run_amp(spec)
    assert abs(r.theta_path[0]) > 0.3 * math.sqrt(0.01) and r.q_path[0] == pytest.approx(0.01)
    rand = run_amp(AmpSpec(d=400, alpha=0.6, seed=1, amp=AmpConfig(max_iter=3, init_scale=0.01), device="cpu"))
    assert abs(rand.theta_path[0]) < 0.2 * math.sqrt(0.01)
    with pytest.raises(ValueError, match="start"):
        AmpConfig(start="informed")
