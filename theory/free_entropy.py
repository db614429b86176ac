"""The free entropy Phi and the training objective e_t = -Phi (docs/model.md section 4).

    Phi = sum_l [ (Vhat_l q_l - qhat_l V_l) / 2 - m_l mhat_l - theta_l thhat_l ]
          + ( sum_l sigma_l^2 qhat_l + mhat^T P mhat + rho0 (sum_l sigma_l^2 thhat_l)^2 ) / (2 Lam) - alpha E[M],

with Lam = lambda + sum_l sigma_l^2 Vhat_l and M the Moreau envelope min_h prox(h) (docs/model.md section 4).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, generated_functions
from attnphase.theory.kernels import ArrayLike, _vec


def symbols(L: int) -> dict[str, Any]:
    """Sympy symbols of Phi: the prior-side ones of :func:`attnphase.theory.priors.ridge.symbols` plus overlaps."""
    import sympy as sp

    from attnphase.theory.priors.ridge import symbols as prior_symbols
    from attnphase.theory.symbols import token_scalars

    s = prior_symbols(L)
    s.update(
        q0=sp.Symbol("q_0", positive=True), V0=sp.Symbol("V_0", positive=True), th0=sp.Symbol("theta_0", real=True),
        m=token_scalars("m", L, real=True), alpha=sp.Symbol("alpha", positive=True), E_M=sp.Function("E")(sp.Symbol("M", real=True)),
    )
    return s


def free_entropy_expr(L: int) -> Any:
    """Phi of docs/model.md section 4 as a sympy expression in :func:`symbols` (L)."""
    from attnphase.theory.priors.ridge import ridge_exprs

    s = symbols(L)
    s2 = s["sigma2"]
    ex = ridge_exprs(L)
    per_token = sum(
        (s["Vhat"][l] * s2[l] * s["q0"] - s["qhat"][l] * s2[l] * s["V0"]) / 2
        - s["m"][l] * s["mhat"][l]
        - s2[l] * s["th0"] * s["thhat"][l]
        for l in range(L)
    )
    return per_token + ex["N"] / (2 * ex["Lam"]) - s["alpha"] * s["E_M"]


def _specs(L: int) -> list[FunctionSpec]:
    s = symbols(L)
    args = (
        Argument("q0", s["q0"], "q0"), Argument("V0", s["V0"], "V0"), Argument("m", s["m"], "m_l"),
        Argument("th0", s["th0"], "th0"), Argument("qhat", s["qhat"], "qhat_l"), Argument("mhat", s["mhat"], "mhat_l"),
        Argument("thhat", s["thhat"], "thetahat_l"), Argument("Vhat", s["Vhat"], "Vhat_l"),
        Argument("sigma2", s["sigma2"], "sigma_l^2"), Argument("P", s["P"], "positional Gram P"),
        Argument("lam", s["lam"], "lambda"), Argument("rho0", s["rho0"], "rho0"),
        Argument("alpha", s["alpha"], "alpha"), Argument("E_M", s["E_M"], "channel average of the Moreau envelope M"),
    )
    return [FunctionSpec("free_entropy", args, (("Phi", free_entropy_expr(L)),), "Free entropy Phi (docs/model.md section 4).")]


def free_entropy(
    q0: ArrayLike, V0: ArrayLike, m: ArrayLike, th0: ArrayLike,
    qhat: ArrayLike, mhat: ArrayLike, thhat: ArrayLike, Vhat: ArrayLike,
    sigma2: ArrayLike, P: ArrayLike, lam: float, rho0: float, alpha: float, E_M: ArrayLike,
) -> np.ndarray:
    """Phi of docs/model.md section 4 (e_t = -Phi): m, qhat, mhat, thhat, Vhat, sigma2 (..., L); P (L, L); the
    rest scalar or batch-shaped -> a float64 of the batch shape. ValueError unless Lam > 0."""
    L = np.shape(sigma2)[-1]
    m, qhat, mhat, thhat, Vhat, sigma2 = vecs = [_vec(x, L, name) for x, name in zip(
        (m, qhat, mhat, thhat, Vhat, sigma2), ("m", "qhat", "mhat", "thhat", "Vhat", "sigma2"))]
    Lam = np.asarray(lam, float) + np.sum(sigma2 * Vhat, axis=-1)
    if not np.all(Lam > 0):
        raise ValueError(f"Lam = lambda + sum_l sigma_l^2 Vhat_l must be > 0, got {Lam}")
    q0, V0, th0, lam, rho0, alpha, E_M = sc = [np.asarray(x, dtype=float) for x in (q0, V0, th0, lam, rho0, alpha, E_M)]
    P = np.asarray(P, dtype=float)
    if P.shape[-2:] != (L, L):
        raise ValueError(f"P must be L x L with L = {L}, got shape {P.shape}")
    phi_of = generated_functions("free_entropy", L, _specs)["free_entropy"]
    (phi,) = phi_of(q0, V0, m, th0, qhat, mhat, thhat, Vhat, sigma2, P, lam, rho0, alpha, E_M)
    shape = np.broadcast_shapes(*(v.shape[:-1] for v in vecs), *(x.shape for x in sc), P.shape[:-2])
    out = np.broadcast_to(np.asarray(phi, dtype=float), shape).copy()
    return out[()] if shape == () else out


def training_objective(*args: Any, **kwargs: Any) -> np.ndarray:
    """e_t = -Phi (same arguments as :func:`free_entropy`)."""
    return -free_entropy(*args, **kwargs)
