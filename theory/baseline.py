"""The linear positional baseline (docs/model.md section 5; correlated tokens: section 7).

    eps_lin = 1/2 sum_{l,k} sigma_k^2 (1 - omega)^2 Var( softmax(h* h*^T)[l, k] ),   h*_l ~ N(0, rho_l I_{r*})
    eps_lin_C = 1/2 (1 - omega)^2 sum_l sum_{k,k'} C[k,k'] Cov(s[l,k], s[l,k']),     h* ~ N(0, rho0 C)

Both depend on the moments of s only through its covariance: they are evaluated with the moments of the
centred s - E[s] (:func:`softmax_centred`), never as E[s^2] - E[s]^2, which cancels catastrophically for a
weak teacher (rho0 -> 0: s -> 1/L); s - 1/L is taken from expm1 of the logit differences where they are small.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, generated_functions
from attnphase.theory.softmax import ArrayLike, scores


def symbols(L: int) -> dict[str, Any]:
    """Sympy symbols: E[s_lk], E[s_lk^2] (s = softmax_row(h* h*^T)), sigma_k^2, omega."""
    import sympy as sp

    from attnphase.theory.symbols import pair_symbols, token_scalars

    E = sp.Function("E")  # average over the teacher fields h*
    s = pair_symbols("s", L, positive=True)
    return {"s": s, "Es": s.applyfunc(E), "Es2": s.applyfunc(lambda x: E(x**2)),
            "sigma2": token_scalars("sigma", L, power="2", positive=True),
            "omega": sp.Symbol("omega", nonnegative=True)}


def eps_lin_expr(L: int) -> Any:
    """eps_lin in terms of the moments of the teacher's softmax (:func:`symbols`)."""
    import sympy as sp

    s = symbols(L)
    return sp.Rational(1, 2) * sum(s["sigma2"][k] * (1 - s["omega"]) ** 2 * (s["Es2"][l, k] - s["Es"][l, k] ** 2)
                                   for l in range(L) for k in range(L))


def _specs(L: int) -> list[FunctionSpec]:
    s = symbols(L)
    args = (
        Argument("mean_soft", s["Es"], "E[softmax(h* h*^T)[l,k]]"),
        Argument("mean_soft_sq", s["Es2"], "E[softmax(h* h*^T)[l,k]^2]"),
        Argument("sigma2", s["sigma2"], "sigma_k^2"),
        Argument("omega", s["omega"], "omega"),
    )
    return [FunctionSpec("eps_lin", args, (("eps_lin", eps_lin_expr(L)),), "Linear baseline test error (docs/model.md section 5).")]


def eps_lin_from_moments(mean_soft: ArrayLike, mean_soft_sq: ArrayLike, sigma2: ArrayLike, omega: float) -> np.ndarray:
    """eps_lin = 1/2 sum_{l,k} sigma_k^2 (1 - omega)^2 (E[s^2] - E[s]^2)[l, k], s = softmax_row(h* h*^T).

    mean_soft, mean_soft_sq: (..., L, L) moments; sigma2: (..., L); omega scalar.
    """
    Es, Es2 = np.asarray(mean_soft, float), np.asarray(mean_soft_sq, float)
    sigma2 = np.asarray(sigma2, float)
    L = sigma2.shape[-1]
    for name, x in (("mean_soft", Es), ("mean_soft_sq", Es2)):
        if x.shape[-2:] != (L, L):
            raise ValueError(f"{name} must have trailing shape (L, L) with L = {L}, got {x.shape}")
    omega = np.asarray(omega, float)
    if not np.all((omega >= 0) & (omega <= 1)):
        raise ValueError(f"omega (the positional weight of the target) must lie in [0, 1], got {omega!r}")
    (val,) = generated_functions("baseline", L, _specs)["eps_lin"](Es, Es2, sigma2, omega)
    shape = np.broadcast_shapes(Es.shape[:-2], Es2.shape[:-2], sigma2.shape[:-1], omega.shape)
    out = np.broadcast_to(np.asarray(val, dtype=float), shape).copy()
    return out[()] if shape == () else out


#: Rows of logits :func:`softmax_minus_uniform` takes at a time: its (rows, L, L) temporaries stay in the CPU's cache
#: (a tensor grid of 30^4 teacher fields at L = 4 has 3.2 million rows); each row's arithmetic does not depend on it.
SOFTMAX_ROWS = 2 ** 14


def softmax_minus_uniform(z: ArrayLike) -> np.ndarray:
    """s - 1/L for s = softmax over the last axis of the logits z (..., L), to relative round-off: with
    D_k = sum_j expm1(z_j - z_k), s_k - 1/L = -D_k / (L (L + D_k)) (the max-shifted softmax where a difference
    exceeds 1 in size).  Taken :data:`SOFTMAX_ROWS` rows at a time."""
    z = np.asarray(z, float)
    rows = z.reshape(-1, z.shape[-1])
    out = np.empty_like(rows)
    for i in range(0, rows.shape[0], SOFTMAX_ROWS):
        out[i:i + SOFTMAX_ROWS] = _softmax_minus_uniform_rows(rows[i:i + SOFTMAX_ROWS])
    return out.reshape(z.shape)


def _softmax_minus_uniform_rows(z: np.ndarray) -> np.ndarray:
    """:func:`softmax_minus_uniform` of the rows z (n, L)."""
    L = z.shape[-1]
    diff = z[..., None, :] - z[..., :, None]  # [..., k, j] = z_j - z_k
    small = np.all(np.abs(diff) <= 1.0, axis=(-2, -1))
    D = np.sum(np.expm1(np.where(small[..., None, None], diff, 0.0)), axis=-1)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    direct = e / e.sum(axis=-1, keepdims=True) - 1.0 / L
    return np.where(small[..., None], -D / (L * (L + D)), direct)


def softmax_centred(weights: ArrayLike, hstar: ArrayLike) -> np.ndarray:
    """s - E[s] at each node of a quadrature (``weights`` (n,), summing to 1) of the teacher fields ``hstar``
    (n, L, r*): s = softmax_row(h* h*^T), (n, L, L); computed as (s - 1/L) - E[s - 1/L] (:func:`softmax_minus_uniform`)."""
    w, h = np.asarray(weights, float), np.asarray(hstar, float)
    dev = softmax_minus_uniform(scores(h))
    return dev - np.einsum("n,nij->ij", w, dev)


def eps_lin_cov(mean_soft: ArrayLike, cross_soft: ArrayLike, C: ArrayLike, omega: float) -> float:
    """eps_lin_C = 1/2 (1 - omega)^2 sum_l sum_{k,k'} C[k,k'] (E[s_lk s_lk'] - E[s_lk] E[s_lk']) from E[s] (L, L)
    and E[s_lk s_lk'] (L, L, L): eps_lin of the rows rotated to C's eigenbasis (C = U diag(c) U^T, sigma_j^2 = c_j)."""
    Es, Ess, C = (np.asarray(x, float) for x in (mean_soft, cross_soft, C))
    L = C.shape[0]
    if Es.shape != (L, L) or Ess.shape != (L, L, L):
        raise ValueError(f"mean_soft must be (L, L) and cross_soft (L, L, L) with L = {L}, got {Es.shape}, {Ess.shape}")
    c, U = np.linalg.eigh(C)
    return float(eps_lin_from_moments(Es @ U, np.einsum("kj,lkm,mj->lj", U, Ess, U), c, omega))
