"""The prior side of the state evolution: ridge penalty in closed form (docs/model.md section 3).

With Lam = lambda + sum_l sigma_l^2 Vhat_l:

    q0  = ( sum_l sigma_l^2 qhat_l + mhat^T P mhat + rho0 (sum_l sigma_l^2 thhat_l)^2 ) / Lam^2
    V0  = 1 / Lam
    m_k = sum_l P[k, l] mhat_l / Lam
    th0 = rho0 sum_l sigma_l^2 thhat_l / Lam

These are the overlaps of the minimiser of the finite-d ridge problem
(docs/derivation.md, "The prior side as a finite-d ridge problem")

    Q = argmin_Q (Lam / 2) |Q|^2 - Q . b,
    b = sum_l sigma_l sqrt(qhat_l) z_l + sqrt(d) sum_l mhat_l p_l + (sum_l sigma_l^2 thhat_l) Q*,

z_l ~ N(0, I_d) iid, so Q = b / Lam: q0 = |Q|^2 / d, m_k = p_k . Q / sqrt(d),
th0 = Q . Q* / d, and V0 = (1/d) tr (Hessian)^-1 = 1 / Lam. Lam > 0 is required
(ValueError otherwise); at Lam -> 0 (lambda = 0 and no curvature from the channel)
the ridge problem is unbounded.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, cached_namespace

ArrayLike = Any


def symbols(L: int) -> dict[str, Any]:
    """Sympy symbols of the prior side for L tokens."""
    import sympy as sp

    from attnphase.theory.symbols import pair_symbols, token_scalars

    return {
        "qhat": token_scalars("qhat", L, nonnegative=True),
        "mhat": token_scalars("mhat", L, real=True),
        "thhat": token_scalars("thetahat", L, real=True),
        "Vhat": token_scalars("Vhat", L, real=True),
        "sigma2": token_scalars("sigma", L, power="2", positive=True),
        "P": pair_symbols("P", L, real=True),
        "lam": sp.Symbol("lambda", nonnegative=True),
        "rho0": sp.Symbol("rho_0", positive=True),
    }


def ridge_exprs(L: int) -> dict[str, Any]:
    """Lam, the ridge numerator N (= Lam^2 q0), q0, V0, m (list), th0 in terms of :func:`symbols`."""
    s = symbols(L)
    s2, qh, mh, th, Vh, P = s["sigma2"], s["qhat"], s["mhat"], s["thhat"], s["Vhat"], s["P"]
    Lam = s["lam"] + sum(s2[l] * Vh[l] for l in range(L))
    sum_th = sum(s2[l] * th[l] for l in range(L))
    mPm = sum(mh[k] * P[k, l] * mh[l] for k in range(L) for l in range(L))
    N = sum(s2[l] * qh[l] for l in range(L)) + mPm + s["rho0"] * sum_th**2
    return {
        "Lam": Lam,
        "N": N,
        "q0": N / Lam**2,
        "V0": 1 / Lam,
        "m": [sum(P[k, l] * mh[l] for l in range(L)) / Lam for k in range(L)],
        "th0": s["rho0"] * sum_th / Lam,
    }


def _specs(L: int) -> list[FunctionSpec]:
    s = symbols(L)
    ex = ridge_exprs(L)
    from attnphase.theory.symbols import as_rows

    args = (
        Argument("qhat", s["qhat"], "qhat_l"), Argument("mhat", s["mhat"], "mhat_l"),
        Argument("thhat", s["thhat"], "thetahat_l"), Argument("Vhat", s["Vhat"], "Vhat_l"),
        Argument("sigma2", s["sigma2"], "sigma_l^2"), Argument("P", as_rows(s["P"]), "positional Gram P"),
        Argument("lam", s["lam"], "ridge penalty lambda"), Argument("rho0", s["rho0"], "teacher norm rho0"),
    )
    outs = [("Lam", ex["Lam"]), ("q0", ex["q0"]), ("V0", ex["V0"])]
    outs += [(f"m_{k + 1}", ex["m"][k]) for k in range(L)] + [("th0", ex["th0"])]
    return [FunctionSpec("ridge_update", args, tuple(outs), "Closed-form ridge prior update (docs/model.md section 3).")]


@lru_cache(maxsize=None)
def _functions(L: int) -> dict[str, Any]:
    return cached_namespace("prior", L, 1, True, lambda: _specs(L))


def ridge_update(
    qhat: ArrayLike, mhat: ArrayLike, thhat: ArrayLike, Vhat: ArrayLike,
    sigma2: ArrayLike, P: ArrayLike, lam: float, rho0: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(q0, V0, m, th0) from the hat overlaps (docs/model.md section 3, prior side).

    qhat, mhat, thhat, Vhat, sigma2: (..., L); P: (L, L); lam, rho0: scalars.
    Returns q0, V0, th0 of the broadcast batch shape (numpy float64 scalars for unbatched input)
    and m of shape (..., L). Raises ValueError unless Lam = lambda + sum sigma^2 Vhat > 0.
    """
    vecs = [np.asarray(x, dtype=float) for x in (qhat, mhat, thhat, Vhat, sigma2)]
    L = vecs[-1].shape[-1]
    for name, v in zip(("qhat", "mhat", "thhat", "Vhat", "sigma2"), vecs):
        if v.ndim < 1 or v.shape[-1] != L:
            raise ValueError(f"{name} must have trailing dimension L = {L}, got shape {v.shape}")
    P = np.asarray(P, dtype=float)
    if P.shape[-2:] != (L, L):
        raise ValueError(f"P must be L x L with L = {L}, got shape {P.shape}")
    out = _functions(L)["ridge_update"](*vecs, P, np.asarray(lam, float), np.asarray(rho0, float))
    shape = np.broadcast_shapes(*(v.shape[:-1] for v in vecs), P.shape[:-2])
    full = [np.broadcast_to(np.asarray(o, dtype=float), shape).copy() for o in out]
    Lam = full[0]
    if not np.all(Lam > 0):
        raise ValueError(f"Lam = lambda + sum_l sigma_l^2 Vhat_l must be > 0 (ridge problem bounded), got {Lam}")
    m = np.stack(full[3 : 3 + L], axis=-1)
    if shape == ():  # unbatched: numpy float64 scalars
        return full[1][()], full[2][()], m, full[3 + L][()]
    return full[1], full[2], m, full[3 + L]
