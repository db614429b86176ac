"""The ridge prior (theory/priors/ridge.py) against a direct finite-d ridge solve, and its forms.

The prior side of the state evolution is the ridge problem (docs/derivation.md)

    min_Q  (lambda/2)|Q|^2 + sum_l [ (Vhat_l/2) Q^T Sigma_l Q
                                     - Q^T (sqrt(qhat_l) Sigma_l^{1/2} z_l + mhat_l sqrt(d) p_l + thhat_l Sigma_l Q*) ]

with Sigma_l = sigma_l^2 I_d and z_l ~ N(0, I_d) iid. We minimise it numerically (L-BFGS on
the objective as written) at d = 40000, measure q0 = |Q|^2/d, m_k = p_k.Q/sqrt(d),
th0 = Q.Q*/d and the linear response V0 = u.dQ/(eps |u|^2) to a tilt eps u, and compare
with RidgePrior.update. Finite-d fluctuations are O(1/sqrt(d)) on the natural scale of each
quantity; the stated tolerance is 5/sqrt(d) on that scale (q0: relative; m_k: sqrt(q0 P_kk);
th0: sqrt(q0 rho0); V0: relative).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from attnphase.theory.priors import RidgePrior
from attnphase.theory.priors.ridge import ridge_exprs, symbols

D = 40000


def _finite_d_ridge(L: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    d = D
    sig = rng.uniform(0.4, 1.2, L)
    s2 = sig**2
    R = rng.normal(size=(L, L))
    P = R @ R.T
    qhat, mhat = rng.uniform(0.1, 2, L), rng.normal(size=L)
    thhat, Vhat = 0.5 * rng.normal(size=L), rng.uniform(0.1, 1.5, L)
    lam, rho0 = 0.05, 1.3
    U, _ = np.linalg.qr(rng.normal(size=(d, L)))
    p = (U @ R.T).T  # p_l . p_k = (R R^T)_lk = P_lk
    Qstar = rng.normal(size=d)
    Qstar *= np.sqrt(rho0 * d) / np.linalg.norm(Qstar)
    z = rng.normal(size=(L, d))
    lin = np.sqrt(qhat)[:, None] * sig[:, None] * z + mhat[:, None] * np.sqrt(d) * p + (thhat * s2)[:, None] * Qstar
    u = rng.normal(size=d)

    def objective(Q: np.ndarray, tilt: float) -> tuple[float, np.ndarray]:
        val = 0.5 * lam * Q @ Q - tilt * Q @ u
        grad = lam * Q - tilt * u
        for l in range(L):
            val += 0.5 * Vhat[l] * s2[l] * Q @ Q - Q @ lin[l]
            grad = grad + Vhat[l] * s2[l] * Q - lin[l]
        return val, grad

    opts = dict(gtol=1e-12, ftol=1e-15, maxiter=500)
    res = minimize(objective, np.zeros(d), args=(0.0,), jac=True, method="L-BFGS-B", options=opts)
    assert res.success
    eps = 1e-3
    res_t = minimize(objective, res.x, args=(eps,), jac=True, method="L-BFGS-B", options=opts)
    assert res_t.success
    Q = res.x
    q0_d, m_d, th0_d = Q @ Q / d, p @ Q / np.sqrt(d), Q @ Qstar / d
    V0_d = (res_t.x - Q) @ u / (eps * u @ u)

    q0, V0, m, th0 = RidgePrior(lam, P, s2, rho0).update((qhat, mhat, thhat, Vhat))
    tol = 5 / np.sqrt(d)
    assert abs(q0_d - q0) <= tol * q0
    assert abs(V0_d - V0) <= tol * V0
    np.testing.assert_array_less(np.abs(m_d - m), tol * np.sqrt(q0 * np.diag(P)))
    assert abs(th0_d - th0) <= tol * np.sqrt(q0 * rho0)
    # the test can tell: independent z_l per token, not one shared z
    q0_shared = q0 + (np.sum(sig * np.sqrt(qhat)) ** 2 - np.sum(s2 * qhat)) * V0**2
    assert abs(q0_shared - q0) > 4 * tol * q0


@pytest.mark.parametrize(("L", "seed"), [(2, 0), (3, 1)])
def test_ridge_update_matches_finite_d_ridge_solve(L: int, seed: int) -> None:
    _finite_d_ridge(L, seed)


def test_ridge_update_scalar_and_matrix_forms_and_errors() -> None:
    s2 = np.full(2, 0.25)
    P = np.array([[1.0, -1.0], [-1.0, 1.0]])
    prior = RidgePrior(0.01, P, s2, 1.0)
    hats = ([0.3, 0.4], [0.1, -0.2], [0.2, 0.1], [0.5, 0.6])
    q0, V0, m, th0 = prior.update(hats)
    assert np.ndim(q0) == 0 and np.ndim(V0) == 0 and np.ndim(th0) == 0 and m.shape == (2,)
    Lam = 0.01 + 0.25 * 1.1
    assert V0 == pytest.approx(1 / Lam)
    np.testing.assert_allclose(m, P @ [0.1, -0.2] / Lam)
    # the scalar views are the r = r* = 1 matrices: the same numbers
    mats = [np.asarray(hats[0])[:, None, None], np.asarray(hats[1])[:, None], np.asarray(hats[2])[:, None, None],
            np.asarray(hats[3])[:, None, None]]
    q0m, V0m, mm, th0m = prior.update(mats)
    assert (q0m.shape, V0m.shape, mm.shape, th0m.shape) == ((1, 1), (1, 1), (2, 1), (1, 1))
    assert (q0m[0, 0], V0m[0, 0], th0m[0, 0]) == (q0, V0, th0) and np.array_equal(mm[:, 0], m)
    with pytest.raises(ValueError, match="Lam"):
        prior.update(([0.3, 0.4], [0, 0], [0, 0], [-1.0, -1.0]))
    with pytest.raises(ValueError, match="Lam"):  # a matrix Lam with one negative eigenvalue
        prior.update((np.zeros((2, 2, 2)), np.zeros((2, 2)), np.zeros((2, 2, 1)), np.array([np.diag([1.0, -1.0])] * 2)))
    with pytest.raises(ValueError, match="P must be"):
        RidgePrior(0.01, np.eye(3), s2, 1.0)
    with pytest.raises(ValueError, match="mhat"):
        prior.update((np.zeros((2, 2, 2)), np.zeros((3, 2)), np.zeros((2, 2, 1)), np.zeros((2, 2, 2))))


@pytest.mark.parametrize("L", [2, 3])
def test_ridge_update_is_its_sympy_statement_at_rank_1(L: int) -> None:
    """The numeric update on the scalar views is ridge_exprs (the r = 1 statement ``derive`` prints) to round-off,
    and so is the prior's term of Phi, N / (2 Lam)."""
    rng = np.random.default_rng(L)
    s2, R = rng.uniform(0.1, 1.5, L), rng.normal(size=(L, L))
    P, lam, rho0 = R @ R.T, 0.03, 1.4
    hats = (rng.uniform(0.1, 2, L), rng.normal(size=L), rng.normal(size=L), rng.uniform(0.1, 1.5, L))
    s, ex = symbols(L), ridge_exprs(L)
    vals = {s["lam"]: lam, s["rho0"]: rho0}
    for l in range(L):
        vals.update({s[k][l]: hats[i][l] for i, k in enumerate(("qhat", "mhat", "thhat", "Vhat"))})
        vals[s["sigma2"][l]] = s2[l]
        vals.update({s["P"][k, l]: P[k, l] for k in range(L)})
    num = lambda e: float(e.xreplace(vals))  # noqa: E731
    prior = RidgePrior(lam, P, s2, rho0)
    q0, V0, m, th0 = prior.update(hats)
    assert q0 == pytest.approx(num(ex["q0"]), rel=1e-14)
    assert V0 == pytest.approx(num(ex["V0"]), rel=1e-14)
    assert th0 == pytest.approx(num(ex["th0"]), rel=1e-13, abs=1e-15)
    np.testing.assert_allclose(m, [num(e) for e in ex["m"]], rtol=1e-13, atol=1e-15)
    assert prior.free_entropy_term(hats) == pytest.approx(num(ex["N"] / (2 * ex["Lam"])), rel=1e-14)


@pytest.mark.parametrize(("kw", "needle"), [({"lam": -1.0}, "lam"), ({"lam": float("nan")}, "lam"),
                                            ({"rho0": 0.0}, "rho0"), ({"rho0": float("inf")}, "rho0")])
def test_the_ridge_prior_refuses_a_negative_penalty_and_a_teacher_norm_that_is_not_positive(kw, needle) -> None:
    """RidgePrior(lam=-1, ..., rho0=0) was built without a word (its free entropy then meaningless)."""
    from attnphase.theory.priors.ridge import RidgePrior

    args = {"lam": 0.01, "P": np.eye(2), "sigma2": np.full(2, 0.25), "rho0": 1.0} | kw
    with pytest.raises(ValueError, match=needle):
        RidgePrior(**args)


def test_eps_lin_from_moments_refuses_an_omega_outside_0_1() -> None:
    """eps_lin_from_moments(omega=2) returned a number (inconsistent moments even gave a negative eps_lin)."""
    from attnphase.theory.baseline import eps_lin_from_moments

    Es, Es2 = np.full((2, 2), 0.5), np.full((2, 2), 0.3)
    assert eps_lin_from_moments(Es, Es2, np.full(2, 0.25), 1.0) == 0.0
    with pytest.raises(ValueError, match="omega"):
        eps_lin_from_moments(Es, Es2, np.full(2, 0.25), 2.0)
