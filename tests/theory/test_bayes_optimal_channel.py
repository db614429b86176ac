"""The Bayes-optimal channel and Gaussian prior (theory/channels/bayes_optimal.py, theory/priors/gaussian.py):
g_out and dg_out against finite differences of log Z_out, Z_out a normalised density of the sign-blind
observation, the fields read back from the teacher attention, the prior's Nishimori form."""

import numpy as np
import pytest

from attnphase.theory.channels.bayes_optimal import BayesOptimalChannel, fields_from_attention
from attnphase.theory.priors.gaussian import GaussianPrior


@pytest.mark.parametrize("noise", [0.0, 0.3])
@pytest.mark.parametrize("L", [1, 2, 3])
def test_g_out_is_the_gradient_of_log_z_out(L, noise):
    rng = np.random.default_rng(L)
    ch = BayesOptimalChannel(noise)
    Y, w = rng.standard_normal((2, 50, L))
    Ve = ch.effective_variance(rng.uniform(0.2, 1.5, L), np.full(L, 0.25))
    h = 1e-6
    fd = np.stack([(ch.log_z_out(Y, w + h * e, Ve) - ch.log_z_out(Y, w - h * e, Ve)) / (2 * h) for e in np.eye(L)], axis=-1)
    np.testing.assert_allclose(ch.g_out(Y, w, Ve), fd, rtol=1e-6, atol=1e-7)
    fd2 = np.stack([(ch.g_out(Y, w + h * e, Ve) - ch.g_out(Y, w - h * e, Ve)) / (2 * h) for e in np.eye(L)], axis=-1)
    np.testing.assert_allclose(ch.dg_out(Y, w, Ve), fd2, rtol=1e-5, atol=1e-6)


def test_z_out_is_a_density_of_y_modulo_the_sign():
    """Integrated over the half-line Y > 0 (one representative per sign class), Z_out(Y; w, V) is 1 (L = 1)."""
    ch = BayesOptimalChannel()
    y = np.linspace(0, 40, 400001)[:, None]
    for w, V in [(0.3, 0.5), (-1.2, 2.0)]:
        z = np.exp(ch.log_z_out(y, np.full_like(y, w), np.array([V])))
        assert np.trapezoid(z, y[:, 0]) == pytest.approx(1.0, abs=1e-8)


def test_the_sign_posterior_is_blind_to_the_representative():
    rng = np.random.default_rng(0)
    ch = BayesOptimalChannel(0.1)
    Y, w = rng.standard_normal((2, 20, 3))
    Ve = np.array([0.3, 0.5, 0.7])
    np.testing.assert_allclose(ch.log_z_out(Y, w, Ve), ch.log_z_out(-Y, w, Ve), rtol=1e-12)
    np.testing.assert_allclose(ch.g_out(Y, w, Ve), ch.g_out(-Y, w, Ve), rtol=1e-12)


@pytest.mark.parametrize("omega", [0.0, 0.3, 0.9])
def test_the_attention_reveals_the_fields_up_to_their_sign(omega):
    """T(h*) -> h* is 2-to-1 at L = 2: the inverse map gives back +-h*."""
    rng = np.random.default_rng(1)
    A = np.array([[0.3, 0.7], [0.8, 0.2]])
    h = rng.standard_normal((200, 2)) * 0.7
    logits = h[:, :, None] * h[:, None, :]
    S = np.exp(logits - logits.max(-1, keepdims=True))
    S /= S.sum(-1, keepdims=True)
    T = (1 - omega) * S + omega * A
    back = fields_from_attention(T, omega, A)
    flip = np.where(h[:, 0] > h[:, 1], 1.0, -1.0)[:, None]
    np.testing.assert_allclose(back, flip * h, atol=1e-8)


def test_weak_recovery_closed_form_matches_a_monte_carlo_of_the_posterior_factor():
    """E_Y ||E[u u^T - I | Y]||_F^2 = L (L + 1) / (1 + Delta)^2, by sampling u and the noise."""
    rng = np.random.default_rng(2)
    for L, noise in [(1, 0.0), (2, 0.0), (3, 0.5)]:
        ch = BayesOptimalChannel(noise)
        u = rng.standard_normal((400000, L))
        Y = u + np.sqrt(noise) * rng.standard_normal(u.shape)
        post = Y[:, :, None] * Y[:, None, :] / (1 + noise) ** 2 - np.eye(L) / (1 + noise)
        factor = np.mean(np.sum(post ** 2, axis=(1, 2)))
        assert 1.0 / factor == pytest.approx(ch.weak_recovery_alpha(L), rel=1e-2)


def test_gaussian_prior_nishimori_form_is_the_general_update_on_the_line():
    prior = GaussianPrior(rho0=1.7)
    s2 = np.array([0.25, 0.16])
    qh = np.array([0.8, 1.3])
    q0, V0, m0 = prior.update(qh, qh, qh, s2)
    Qhat = float(s2 @ qh)
    assert q0 == pytest.approx(prior.overlap(Qhat), rel=1e-12)
    assert m0 == pytest.approx(q0, rel=1e-12)
    assert V0 == pytest.approx(prior.rho0 - q0, rel=1e-12)
    assert prior.hat_of_overlap(prior.overlap(Qhat)) == pytest.approx(Qhat, rel=1e-12)
    # psi'(Qhat) = q0 / 2 (the prior's stationarity)
    h = 1e-6
    assert (prior.free_entropy_term(Qhat + h) - prior.free_entropy_term(Qhat - h)) / (2 * h) == pytest.approx(q0 / 2, rel=1e-7)


def test_bad_noise_is_refused():
    with pytest.raises(ValueError, match="Delta"):
        BayesOptimalChannel(-0.1)


@pytest.mark.parametrize("L", [1, 2, 3])
def test_derived_equations_are_the_channel_and_prior_computed(L):
    """``derive``'s Bayes-optimal equations (sympy) are the numbers the state evolution uses: log Z_out, sympy's
    derivative of it, its tanh form and the second derivatives against BayesOptimalChannel; q0 and psi against
    GaussianPrior; the derivative and the tanh form one expression (simplified to 0)."""
    import sympy as sp

    from attnphase.theory.channels.bayes_optimal import bayes_exprs

    ex = bayes_exprs(L)
    args = [*ex["Y"], *ex["w"], *ex["Ve"]]
    ch, rng = BayesOptimalChannel(), np.random.default_rng(7 + L)
    for _ in range(5):
        Y, w = rng.standard_normal((2, L))
        Ve = rng.uniform(0.2, 2.0, L)
        vals = [*Y, *w, *Ve]
        np.testing.assert_allclose(float(sp.lambdify(args, sp.log(ex["z_out"]))(*vals)), ch.log_z_out(Y, w, Ve),
                                   rtol=1e-12)
        for form in ("g_out_derived", "g_out"):
            got = [float(sp.lambdify(args, e)(*vals)) for e in ex[form]]
            np.testing.assert_allclose(got, ch.g_out(Y, w, Ve), rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(np.array(sp.lambdify(args, ex["dg_out"])(*vals), dtype=float),
                                   ch.dg_out(Y, w, Ve), rtol=1e-10, atol=1e-14)
    assert sp.simplify((ex["g_out_derived"][0] - ex["g_out"][0]).rewrite(sp.exp)) == 0
    prior = GaussianPrior(1.7)
    for Qhat in (0.0, 0.4, 3.0):
        sub = {ex["rho0"]: 1.7, ex["Qhat"]: Qhat}
        assert float(ex["q0"].subs(sub)) == pytest.approx(prior.overlap(Qhat), rel=1e-12)
        assert float(ex["psi"].subs(sub)) == pytest.approx(prior.free_entropy_term(Qhat), rel=1e-12, abs=1e-15)
