"""Stability of a theta = 0 fixed point in the theta and m directions: where the branches are born
(docs/derivation.md, "Stability of theta = 0"):

    lambda    = d th0_new / d th0 |_{th0 = 0} = alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l],
    S_l       = eta_l sum_k xi_k eta_k - xi_l,
    J_m[k, j] = alpha V0 sum_l P[k, l] E[g_l xi_j] / sqrt(sigma_j^2 q0)   (at m = 0, th0 = 0).

A branch leaves where lambda (the leading eigenvalue of J_m) crosses 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, generated_functions

ArrayLike = Any


def covariance_score_expr() -> Any:
    """d/dc log N((x, y); 0, [[a, c], [c, b]]) at c = 0, derived by sympy (= x y / (a b))."""
    import sympy as sp

    x, y, c = sp.symbols("x y c", real=True)
    a, b = sp.symbols("a b", positive=True)
    cov = sp.Matrix([[a, c], [c, b]])
    v = sp.Matrix([x, y])
    log_density = -(v.T * cov.inv() * v)[0, 0] / 2 - sp.log(cov.det()) / 2
    return sp.simplify(sp.diff(log_density, c).subs(c, 0))


def mean_score_expr() -> Any:
    """d/dmu log N(x; mu, q) at mu = 0, derived by sympy (= x / q)."""
    import sympy as sp

    x, mu = sp.symbols("x mu", real=True)
    q = sp.Symbol("q", positive=True)
    log_density = -((x - mu) ** 2) / (2 * q) - sp.log(2 * sp.pi * q) / 2
    return sp.simplify(sp.diff(log_density, mu).subs(mu, 0))


def symbols(L: int) -> dict[str, Any]:
    """Sympy symbols of lambda for L tokens."""
    import sympy as sp

    from attnphase.theory.symbols import token_scalars

    return {
        "alpha": sp.Symbol("alpha", positive=True), "V0": sp.Symbol("V_0", positive=True),
        "q0": sp.Symbol("q_0", positive=True), "rho0": sp.Symbol("rho_0", positive=True),
        "th0": sp.Symbol("theta_0", real=True),
        "sigma2": token_scalars("sigma", L, power="2", positive=True),
        # E[g_l S_l], the channel average the derivative of E[g_l eta_l] reduces to
        "E_gS": [sp.Function("E")(sp.Symbol(f"g_{l + 1} S_{l + 1}", real=True)) for l in range(L)],
        # E[g_l xi_j], the channel averages the derivative of mhat_l in m_j reduces to
        "E_gxi": sp.Matrix(L, L, lambda l, j: sp.Function("E")(sp.Symbol(f"g_{l + 1} xi_{j + 1}", real=True))),
        "P": sp.Matrix(L, L, lambda k, l: sp.Symbol(f"P_{k + 1}{l + 1}", real=True)),
    }


def m_stability_exprs(L: int) -> Any:
    """J_m[k, j] = d m_new_k / d m_j at an agnostic state, as an L x L sympy Matrix: m_new_k = sum_l P[k, l]
    mhat_l V0, mhat_l = alpha E[g_l](m), E[g_l](m) = sum_j m_j E[g_l xi_j] / sqrt(q_j) to first order in m."""
    import sympy as sp

    s = symbols(L)
    m = sp.symbols(f"m_1:{L + 1}", real=True)
    score = mean_score_expr()  # x / q with x = w_j - m_j = sqrt(q_j) xi_j, q = q_j
    q_sym, x_sym = sp.Symbol("q", positive=True), sp.Symbol("x", real=True)
    E_g = [
        sum(m[j] * score.subs({x_sym: sp.sqrt(s["sigma2"][j] * s["q0"]), q_sym: s["sigma2"][j] * s["q0"]})
            * s["E_gxi"][l, j] for j in range(L))
        for l in range(L)
    ]
    m_new = [sum(s["P"][k, l] * s["alpha"] * E_g[l] for l in range(L)) * s["V0"] for k in range(L)]
    return sp.Matrix(L, L, lambda k, j: sp.simplify(sp.diff(m_new[k], m[j])))


def theta_stability_expr(L: int) -> Any:
    """lambda = d th0_new / d th0 at th0 = 0 as a sympy expression: th0_new = rho0 sum_l sigma_l^2 thhat_l / Lam,
    thhat_l = alpha th0 (E[g_l S_l] / sqrt(q0 rho0)) / sqrt(rho_l) to first order, Lam = 1 / V0."""
    import sympy as sp

    s = symbols(L)
    th0 = s["th0"]
    thhat = [
        s["alpha"] * th0 * (s["E_gS"][l] / sp.sqrt(s["q0"] * s["rho0"])) / sp.sqrt(s["sigma2"][l] * s["rho0"])
        for l in range(L)
    ]
    th0_new = s["rho0"] * sum(s["sigma2"][l] * thhat[l] for l in range(L)) * s["V0"]
    return sp.simplify(sp.diff(th0_new, th0))


def _specs(L: int) -> list[FunctionSpec]:
    s = symbols(L)
    common = tuple(Argument(name, s[name], name) for name in ("alpha", "V0", "q0"))
    args = (*common, Argument("rho0", s["rho0"], "rho0"), Argument("sigma2", s["sigma2"], "sigma_l^2"),
            Argument("E_gS", s["E_gS"], "E[g_l (eta_l sum_k xi_k eta_k - xi_l)]"))
    J = m_stability_exprs(L)
    m_args = (*common, Argument("sigma2", s["sigma2"], "sigma_l^2"),
              Argument("P", s["P"], "positional Gram P"),
              Argument("E_gxi", s["E_gxi"], "E[g_l xi_j]"))
    return [
        FunctionSpec("theta_stability", args, (("lambda", theta_stability_expr(L)),),
                     "Eigenvalue of the SE map in the theta direction at th0 = 0."),
        FunctionSpec("m_stability", m_args, tuple((f"J_{k + 1}{j + 1}", J[k, j]) for k in range(L) for j in range(L)),
                     "m-block of the SE map's Jacobian at an agnostic state, row by row."),
    ]


def theta_stability(alpha: float, V0: float, q0: float, rho0: float, sigma2: ArrayLike, E_gS: ArrayLike) -> float:
    """lambda = alpha V0 / sqrt(q0) sum_l sigma_l E[g_l S_l] (module doc), sigma2 and E_gS of shape (L,) taken
    at a state with th0 = 0; > 1: theta = 0 is unstable."""
    sigma2, E_gS = (np.asarray(x, dtype=float).reshape(-1) for x in (sigma2, E_gS))
    if sigma2.shape != E_gS.shape:
        raise ValueError(f"sigma2 and E_gS must both have shape (L,), got {sigma2.shape} and {E_gS.shape}")
    if not q0 > 0:
        raise ValueError(f"q0 must be > 0, got {q0}")
    lambda_of = generated_functions("stability", sigma2.size, _specs)["theta_stability"]
    (lam,) = lambda_of(float(alpha), float(V0), float(q0), float(rho0), sigma2, E_gS)
    return float(lam)


def m_stability(alpha: float, V0: float, q0: float, sigma2: ArrayLike, P: ArrayLike, E_gxi: ArrayLike) -> np.ndarray:
    """J_m (L x L) = alpha V0 P G, G[l, j] = E[g_l xi_j] / sqrt(sigma_j^2 q0), at an agnostic state (leading
    eigenvalue above 1: unstable towards m != 0)."""
    sigma2 = np.asarray(sigma2, dtype=float).reshape(-1)
    L = sigma2.size
    P, E_gxi = np.asarray(P, dtype=float), np.asarray(E_gxi, dtype=float)
    if P.shape != (L, L) or E_gxi.shape != (L, L):
        raise ValueError(f"P and E_gxi must be {L} x {L}, got {P.shape} and {E_gxi.shape}")
    if not q0 > 0:
        raise ValueError(f"q0 must be > 0, got {q0}")
    m_of = generated_functions("stability", L, _specs)["m_stability"]
    out = m_of(float(alpha), float(V0), float(q0), sigma2, P, E_gxi)
    return np.array([float(x) for x in out]).reshape(L, L)
