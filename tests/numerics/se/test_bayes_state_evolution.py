"""The Bayes-optimal state evolution (numerics/se/bayes.py) and its thresholds (numerics/phase/bayes_thresholds.py):
the reduced integral K against a plain Monte Carlo over the 2L Gaussians, the Nishimori identities at a fixed
point, dPsi_out/dq0 = K / 2, alpha_WR against its closed form, eps_g's limits, the branches."""

import math

import numpy as np
import pytest

from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
from attnphase.numerics.se.bayes_curve import bayes_point, bayes_rules
from attnphase.numerics.se.bayes import (BayesModel, alpha_of_overlap, bayes_eps_g, channel_hats, hat_sum,
                                         invariant_rule, psi_out, se_step, sign_rule,
                                         solve_bayes)
from attnphase.numerics.se.observables import eps_lin
from attnphase.theory.params import ModelParams


@pytest.mark.parametrize("L, noise, x", [(1, 0.0, 0.6), (2, 0.0, 0.5), (3, 0.2, 0.8)])
def test_reduced_k_matches_a_monte_carlo_over_the_fields(L, noise, x):
    """K = sum_l sigma_l^2 E[g_out_l^2] with (w, Y) drawn directly (unequal sigma, rho0 != 1), within 4 standard errors."""
    model = BayesModel(tuple(np.linspace(0.16, 0.36, L)), rho0=1.5, noise=noise)
    q0 = x * model.rho0
    q, _, Ve = model.variances(q0)
    rng = np.random.default_rng(7)
    n = 400_000
    w = np.sqrt(q) * rng.standard_normal((n, L))
    Y = w + np.sqrt(Ve) * rng.standard_normal((n, L))
    samples = (model.channel.g_out(Y, w, Ve) ** 2) @ model.s2()
    se = samples.std() / math.sqrt(n)
    assert abs(hat_sum(model, sign_rule(L), q0) - samples.mean()) < 4 * se


@pytest.mark.parametrize("L, noise", [(1, 0.0), (2, 0.0), (3, 0.0), (2, 0.3)])
def test_weak_recovery_matches_the_closed_form(L, noise):
    model = BayesModel((0.25,) * L, noise=noise)
    th = bayes_thresholds(model)
    closed = (1 + noise) ** 2 / (L * (L + 1))
    assert th.alpha_weak_recovery.value == pytest.approx(closed, rel=1e-7)
    assert abs(th.alpha_weak_recovery.value - closed) <= 3 * th.alpha_weak_recovery.err


def test_nishimori_identities_at_the_fixed_point():
    """qhat = mhat = Vhat (three different estimators of the channel) and q0 = m0, V0 = rho0 - q0 from the
    general prior update, at the uninformative fixed point of L = 2, alpha = 0.4, within the rule's error bar."""
    model = BayesModel((0.25, 0.25))
    fp = solve_bayes(model, 0.4, "uninformative")
    assert fp.stable and 0.2 < fp.q0 < 0.9
    fine, coarse = channel_hats(model, invariant_rule(2, 48), fp.q0), channel_hats(model, invariant_rule(2, 32), fp.q0)
    bar = max(abs(fine.qhat - coarse.qhat), abs(fine.mhat - coarse.mhat), abs(fine.Vhat - coarse.Vhat), 1e-12)
    assert abs(fine.qhat - fine.mhat) <= 3 * bar
    assert abs(fine.qhat - fine.Vhat) <= 3 * bar
    assert bar < 1e-3 * fine.qhat
    a = fp.alpha
    q0, V0, m0 = model.prior.update([a * fine.qhat], [a * fine.mhat], [a * fine.Vhat], [1.0])
    assert q0 == pytest.approx(fp.q0, rel=1e-3)
    assert m0 == pytest.approx(q0, rel=1e-3)
    assert V0 == pytest.approx(model.rho0 - q0, rel=1e-3)


@pytest.mark.parametrize("L, noise", [(1, 0.0), (2, 0.0), (3, 1e-3)])
def test_psi_out_derivative_is_half_k(L, noise):
    """dPsi_out/dq0 = K / 2 (the stationarity of Phi in q0), the reduced Psi_out near perfect recovery too."""
    model = BayesModel(tuple(np.linspace(0.16, 0.36, L)), rho0=1.3, noise=noise)

    def both(order: int, q0: float, h: float = 1e-6) -> tuple[float, float]:
        rule = sign_rule(L, order)
        return (psi_out(model, rule, q0 + h) - psi_out(model, rule, q0 - h)) / (2 * h), 0.5 * hat_sum(model, rule, q0)

    for x in (0.4, 0.99):
        (d, k), (d0, k0) = both(48, x * model.rho0), both(32, x * model.rho0)
        bar = abs(d - d0) + abs(k - k0) + 1e-8 * abs(k)  # the rule's error bars (order 32 -> 48), the difference's step
        assert abs(d - k) <= 3 * bar and bar < 1e-4 * abs(k)


def test_reduced_psi_out_matches_the_direct_average():
    model = BayesModel((0.25, 0.16), rho0=1.3)
    q0 = 0.4
    assert psi_out(model, sign_rule(2), q0) == pytest.approx(channel_hats(model, invariant_rule(2, 48), q0).psi_out, rel=1e-7)


def test_fixed_points_are_fixed_and_branches_ordered():
    model = BayesModel((0.25,))
    rule = sign_rule(1)
    low, high = solve_bayes(model, 1.05, "uninformative"), solve_bayes(model, 1.05, "informative")
    assert low.q0 < 0.9 and high.perfect and high.q0 == model.rho0
    assert se_step(model, rule, 1.05, low.q0) == pytest.approx(low.q0, rel=1e-10)
    # below alpha_WR only q0 = 0; between 1/L and alpha_amp both branches
    assert solve_bayes(model, 0.4, "informative").q0 == 0.0


def test_the_state_evolution_depends_on_sigma_and_rho0_only_through_units():
    a = BayesModel((0.25, 0.25))
    b = BayesModel((0.5, 0.16), rho0=2.0)
    ra = sign_rule(2)
    for x in (0.1, 0.5, 0.95):
        assert alpha_of_overlap(a, ra, x * a.rho0) == pytest.approx(alpha_of_overlap(b, ra, x * b.rho0), rel=1e-12)


def test_phase_retrieval_algorithmic_threshold():
    """L = 1 is noiseless real phase retrieval with a Gaussian prior: alpha_WR = 1/2, alpha_IT = 1, and the
    algorithmic threshold 1.128 of the literature (Barbier, Krzakala, Macris, Miolane, Zdeborova 2019)."""
    th = bayes_thresholds(BayesModel((0.25,)))
    assert th.alpha_it.value == 1.0
    assert th.alpha_amp.value == pytest.approx(1.128, abs=1e-3)
    assert th.alpha_amp.err < 1e-5


@pytest.mark.parametrize("L", [2, 3])
def test_no_algorithmic_gap_beyond_one_token(L):
    """alpha*(q0) increases to 1 / L: the uninformative branch reaches perfect recovery at alpha_IT."""
    model = BayesModel((0.25,) * L)
    rule = sign_rule(L)
    xs = 1 - np.logspace(-6, -0.1, 60)[::-1] + 0.0
    a = np.array([alpha_of_overlap(model, rule, x) for x in np.sort(xs)])
    assert np.all(np.diff(a) > 0) and a[-1] < 1 / L
    th = bayes_thresholds(model)
    assert th.alpha_amp.value == th.alpha_it.value == 1 / L


def test_eps_g_limits():
    params = ModelParams(omega=0.3)
    model = BayesModel.of(params)
    e0 = bayes_eps_g(model, 0.3, 0.0)
    assert e0 == pytest.approx(eps_lin(params), rel=1e-6)
    e = [bayes_eps_g(model, 0.3, q) for q in (0.2, 0.6, 0.95)]
    assert e0 > e[0] > e[1] > e[2] > 0
    assert bayes_eps_g(model, 0.3, model.rho0) == 0.0


def test_eps_g_matches_a_nested_monte_carlo():
    """eps_g = (1 - omega)^2 / 2 sum sigma_k^2 E_w Var(softmax(h h^T)[l, k] | w), h ~ N(w, Ve): w and h drawn."""
    model = BayesModel((0.36, 0.16), rho0=1.2)
    omega, q0 = 0.2, 0.6
    q, _, Ve = model.variances(q0)
    rng = np.random.default_rng(3)
    nw, nh = 2000, 400
    w = np.sqrt(q) * rng.standard_normal((nw, 1, 2))
    h = w + np.sqrt(Ve) * rng.standard_normal((nw, nh, 2))
    logits = h[..., :, None] * h[..., None, :]
    S = np.exp(logits - logits.max(-1, keepdims=True))
    S /= S.sum(-1, keepdims=True)
    per_w = 0.5 * (1 - omega) ** 2 * np.einsum("nlk,k->n", S.var(axis=1, ddof=1), model.s2())
    se = per_w.std(ddof=1) / np.sqrt(nw)
    assert abs(bayes_eps_g(model, omega, q0) - per_w.mean()) < 4 * se


def test_a_rounding_wiggle_of_the_alpha_curve_is_not_a_local_maximum():
    """alpha*(x) near x = 0 wiggles at its rounding level (L = 1, noiseless, sign32: 0.5000000207 between
    0.5000000090 and 0.5000000160); that is not alpha_amp, a fall of 0.13 is."""
    from attnphase.numerics.phase.bayes_thresholds import _prominent

    a = np.array([0.500000008986, 0.500000020699, 0.50000001599, 0.500000023691, 0.9, 1.128, 1.0, 1.05])
    assert not _prominent(a, 1)
    assert _prominent(a, 5)


@pytest.mark.parametrize("rho0", [1e-8, 1e-150])
def test_eps_g_at_a_tiny_teacher_norm_is_eps_lin_not_negative(rho0):
    """At q0 = 0 the posterior mean's eps_g is eps_lin at every rho0.  E[S^2] - E[S]^2 cancelled to round-off where
    the softmax is nearly constant: solve --estimator bayes-optimal --rho0 1e-8 printed eps_g = -7.7e-17."""
    params = ModelParams(rho0=rho0)
    model = BayesModel.of(params)
    e, lin = bayes_eps_g(model, 0.3, 0.0), eps_lin(params.replace(omega=0.3))
    assert e >= 0.0
    assert e == pytest.approx(lin, rel=1e-6)


def test_just_below_alpha_it_the_informative_point_is_not_perfect_recovery():
    """alpha*(1-) = 1/L: just below it q0 < rho0 (1 - q0 / rho0 ~ 4.5 (1/2 - alpha) at L = 2); the grid's last point
    (alpha* = 0.4999995) decided before, and alpha = 0.4999999 was reported as perfect recovery, eps_g = 0."""
    model = BayesModel.of(ModelParams())
    below = solve_bayes(model, 0.4999999)
    assert not below.perfect and 0.0 < 1.0 - below.q0 < 1e-6
    assert bayes_eps_g(model, 0.3, below.q0) > 0.0
    assert solve_bayes(model, 0.5).perfect and solve_bayes(model, 0.5).q0 == 1.0


@pytest.mark.parametrize("kwargs", [dict(sigma2=(math.nan, 0.25)), dict(sigma2=(math.inf, 0.25)), dict(sigma2=0.25),
                                    dict(sigma2=(0.25, 0.25), rho0=-1.0), dict(sigma2=(0.25, 0.25), rho0=math.inf),
                                    dict(sigma2=(0.25, 0.25), noise=-1.0), dict(sigma2=(0.25, 0.25), noise=math.nan)])
def test_a_model_with_a_bad_variance_prior_or_noise_is_refused_when_built(kwargs):
    with pytest.raises(ValueError, match="sigma2|rho0|noise"):
        BayesModel(**kwargs)


@pytest.mark.parametrize("omega, q0", [(0.3, math.nan), (0.3, 5.0), (0.3, -0.1), (2.0, 0.3), (-1.0, 0.3)])
def test_eps_g_refuses_an_overlap_or_omega_outside_its_range(omega, q0):
    # a NaN or q0 > rho0 once returned 0.0, the value of perfect recovery
    with pytest.raises(ValueError, match="q0|omega"):
        bayes_eps_g(BayesModel((0.25, 0.25)), omega, q0)


@pytest.mark.parametrize("alpha", [math.inf, math.nan, 0.0, -1.0])
def test_solve_bayes_refuses_a_non_finite_or_non_positive_alpha(alpha):
    with pytest.raises(ValueError, match="alpha"):
        solve_bayes(BayesModel((0.25, 0.25)), alpha)


@pytest.mark.parametrize("kwargs", [dict(rho0=1e4), dict(sigma=2.0), dict(L=4)])
def test_eps_g_of_a_sharp_softmax_or_coarse_grid_is_eps_lin_at_q0_zero_within_a_small_bar(kwargs):
    """At q0 = 0 eps_g is eps_lin (docs/model.md section 9).  The Gauss-Hermite grids gave 0.034944 +- 1.0e-3 at
    rho0 = 1e4 (eps_lin 0.045697), 0.336765 +- 1.4e-3 at sigma = 2 (0.331625), 0.00332 +- 0.00137 at L = 4."""
    import warnings

    p = ModelParams(omega=0.3, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # eps_lin from its Sobol rule says so
        lin = eps_lin(p)
    pt = bayes_point(BayesModel.of(p), 0.3, 0.02, "informative", bayes_rules(BayesModel.of(p)))
    assert pt.q0 == 0.0
    assert abs(pt.eps_g - lin) <= 3 * pt.err_eps_g and pt.err_eps_g <= 1e-3 * lin, (pt.eps_g, pt.err_eps_g, lin)


def test_eps_g_of_a_strong_teacher_does_not_rise_with_alpha():
    """More data cannot make the posterior mean worse: at rho0 = 100 the grids' eps_g rose from 0.03467 (alpha 0.15)
    to 0.03674 (0.2), above eps_lin."""
    m = BayesModel.of(ModelParams(omega=0.3, rho0=100.0))
    rules = bayes_rules(m)
    pts = [bayes_point(m, 0.3, a, "informative", rules) for a in (0.15, 0.2, 0.25)]
    for a, b in zip(pts, pts[1:]):
        assert b.eps_g <= a.eps_g + 2 * math.hypot(a.err_eps_g, b.err_eps_g), [(x.eps_g, x.err_eps_g) for x in pts]
