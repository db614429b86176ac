"""GAMP for the Bayes-optimal channel at finite d (validation/amp.py) against the channel and its state evolution."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from attnphase.numerics.se.bayes import BayesModel, solve_bayes
from attnphase.theory.channels.bayes_optimal import BayesOptimalChannel, fields_from_attention
from attnphase.theory.params import ModelParams
from attnphase.validation.amp import AmpConfig, g_out, gamp, revealed_fields
from attnphase.validation.data import make_teacher, n_samples, sample
from attnphase.validation.experiments import generator

PARAMS = ModelParams()


def _run(d: int, alpha: float, seed: int, config: AmpConfig = AmpConfig(max_iter=1000), Y=None):
    teacher = make_teacher(PARAMS, d, generator(seed, "teacher"))
    data = sample(teacher, n_samples(alpha, d), generator(seed, "train"))
    g = generator(seed, "amp")
    fields = revealed_fields(data.hstar, g)  # drawn either way: the start comes next from the same stream
    if Y is not None:
        fields = Y(data)
    return gamp(data.X, fields, PARAMS.rho0, teacher.Qstar, g, config), data


def test_torch_channel_is_the_theory_channel():
    rng = np.random.default_rng(0)
    Y, w, V = rng.normal(size=(50, 3)), rng.normal(size=(50, 3)), rng.uniform(0.1, 2.0, size=(50, 3))
    g, dg = g_out(*(torch.as_tensor(a) for a in (Y, w, V)))
    ch = BayesOptimalChannel()
    np.testing.assert_allclose(g.numpy(), ch.g_out(Y, w, V), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dg.numpy(), np.diagonal(ch.dg_out(Y, w, V), axis1=-2, axis2=-1), rtol=1e-12, atol=1e-12)


def test_fields_from_the_attention_give_the_same_run():
    """Y inverted from T(h*) is +-h* per sample, and AMP's iterates do not depend on those signs."""
    d, alpha = 200, 0.4
    A = torch.tensor(PARAMS.A, dtype=torch.float64)

    def from_T(data):
        return torch.as_tensor(fields_from_attention(data.T.numpy(), PARAMS.omega, A.numpy()))

    r_sign, data = _run(d, alpha, 3, AmpConfig(max_iter=40))
    Y_T = from_T(data)
    h = data.hstar.flatten(1)
    signs = torch.sign((Y_T * h).sum(dim=1, keepdim=True))
    torch.testing.assert_close(Y_T, signs * h, rtol=1e-7, atol=1e-7)
    r_T, _ = _run(d, alpha, 3, AmpConfig(max_iter=40), Y=from_T)
    np.testing.assert_allclose(r_T.theta_path, r_sign.theta_path, rtol=1e-6, atol=1e-9)


def test_recovers_the_teacher_above_one_over_L():
    """alpha = 0.8 > 1/L: the teacher is recovered (up to its sign): m / sqrt(q rho0) -> 1, q -> rho0."""
    for seed in (0, 1):
        r, _ = _run(400, 0.8, seed)
        assert r.converged
        assert abs(r.theta) / math.sqrt(r.q * PARAMS.rho0) > 0.999
        assert abs(r.q - PARAMS.rho0) < 1e-3


def test_a_step_that_leaves_no_posterior_variance_is_taken_again_halved():
    """``simulate --algorithm amp`` at its defaults (alpha = 2, d = 200, seed 0): the undamped iteration met
    1 / rho0 + Ahat <= 0 at its third iteration and stopped as diverged (3 of 8 seeds at d = 200 and 1000).  The
    iteration is taken again with the step halved: the run recovers the teacher, saying how often it halved."""
    from attnphase.validation.amp_run import AmpSpec, run_amp

    r = run_amp(AmpSpec(d=200, alpha=2.0, seed=0, params=PARAMS, device="cpu", dtype="float64"))
    assert r.converged and r.status == "converged" and r.halvings >= 1 and r.step < 1.0
    assert abs(r.theta) / math.sqrt(r.q * PARAMS.rho0) > 0.999 and r.iterations == len(r.theta_path) - 1


def test_a_first_step_that_leaves_no_posterior_variance_is_halved_against_the_start():
    """``simulate --algorithm amp --d 200 --alpha 10`` (seed 0): the first iteration's Ahat, a sum of n L terms of mean
    zero at the start, fell below -1 / rho0 and the run ended "diverged" after 1 iteration (the first step had no
    memory to mix with).  Its memory is the start's (g = 0, Ahat = 0): the halved step recovers the teacher."""
    from attnphase.validation.amp_run import AmpSpec, run_amp

    r = run_amp(AmpSpec(d=200, alpha=10.0, seed=0, params=PARAMS, device="cpu", dtype="float64"))
    assert r.converged and r.halvings >= 1 and abs(r.theta) / math.sqrt(r.q * PARAMS.rho0) > 0.999


def test_stays_uninformative_below_weak_recovery():
    """alpha = 0.1 < alpha_WR = 1/6: no overlap grows; m stays at the start's 1/sqrt(d) scale."""
    d = 1000
    for seed in (0, 1, 2):
        r, _ = _run(d, 0.1, seed)
        assert abs(r.theta) < 3.0 / math.sqrt(d) * math.sqrt(AmpConfig().init_scale) + 1e-3
        assert r.q < 0.01


def test_tracks_the_state_evolution_at_an_intermediate_alpha():
    """alpha = 0.4 (between 1/6 and 1/2): the mean final |m| over 8 seeds at d = 1000 agrees with the
    state evolution's q0 (the uninformative branch, AMP's; at L = 2 also the informative one) within 2 standard
    errors plus a finite-size allowance of 1/sqrt(d) ~ 0.03, the scale of one run's overlap fluctuation."""
    d, alpha = 1000, 0.4
    ms = np.array([abs(_run(d, alpha, seed)[0].theta) for seed in range(8)])
    q0 = solve_bayes(BayesModel.of(PARAMS), n_samples(alpha, d) / d, "uninformative").q0
    se = ms.std(ddof=1) / math.sqrt(ms.size)
    assert abs(ms.mean() - q0) <= 2 * se + 1 / math.sqrt(d), (ms, q0)
    assert ms.min() > 0.3  # every run left the uninformative start


def test_the_adaptive_step_does_not_move_a_fixed_point():
    """Where the undamped iteration converges (d = 1000, alpha = 0.35, seed 1), the adaptive step converges to the
    same estimate up to the sign the data cannot tell: damping changes the path, never the fixed point."""
    fixed, _ = _run(1000, 0.35, 1)
    adaptive, _ = _run(1000, 0.35, 1, AmpConfig(max_iter=1000, adaptive=True))
    assert fixed.converged and adaptive.converged and adaptive.halvings > 0
    # the same fixed point, or its mirror image: the data do not tell Q* from -Q*
    gap = min(float(torch.linalg.vector_norm(fixed.Q - s * adaptive.Q)) for s in (1.0, -1.0))
    assert gap / math.sqrt(1000) < 1e-5


def test_halving_the_step_on_oscillation_lets_a_run_converge():
    """d = 2000, alpha = 0.4, seed 8: the undamped iteration is caught in the alternating mode (consecutive steps
    against each other) and runs out of budget; halving the step on it converges
    (docs/bayes-optimal.md)."""
    fixed, _ = _run(2000, 0.4, 8)
    adaptive, _ = _run(2000, 0.4, 8, AmpConfig(max_iter=1000, adaptive=True))
    assert fixed.status == "budget" and adaptive.converged and adaptive.halvings > 0 and adaptive.change <= 1e-7


def test_settling_runs_undamped_first_then_damps():
    """damp_after = k: the first k iterates are the undamped run's bit for bit; from iteration k + 1 the damped
    step moves Q by theta = 1 - damping times the undamped proposal (d = 300, alpha = 0.35, seed 2)."""
    k = 7
    free, _ = _run(300, 0.35, 2, AmpConfig(max_iter=k + 3))
    settled, _ = _run(300, 0.35, 2, AmpConfig(max_iter=k + 3, damping=0.8, damp_after=k))
    assert settled.theta_path[:k + 1] == free.theta_path[:k + 1]
    assert settled.theta_path[k + 1] != free.theta_path[k + 1]
    assert settled.step == pytest.approx(0.2)
    never, _ = _run(300, 0.35, 2, AmpConfig(max_iter=k + 3, damping=0.8, damp_after=k + 3))
    assert never.theta_path == free.theta_path and never.step == 1.0


def test_bad_config_is_refused():
    for kw in ({"damping": 1.0}, {"tol": 0.0}, {"max_iter": 0}, {"init_scale": -1.0}, {"damp_after": -1},
               {"damp_after": 1.5}):
        with pytest.raises(ValueError):
            AmpConfig(**kw)
