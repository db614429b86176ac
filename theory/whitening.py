"""Correlated tokens in whitened form (docs/model.md section 7): with C = B B^T, h = B v and h* = B v*, the model
in v is the independent-token one with sigma_l = 1, Ptilde = B^-1 P B^-T and the loss loss_C(B v, B v*). B is the
symmetric square root C^(1/2); B and Ptilde are made exactly invariant under the model's token symmetries.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from attnphase.theory.params import ModelParams

#: C counts as singular when its smallest eigenvalue is below this times its largest.
SINGULAR_RTOL = 1e-10


def token_mixing(C: np.ndarray) -> np.ndarray:
    """B = C^(1/2), the symmetric positive-definite square root of the token Gram C (C = B B^T); ValueError when
    C is singular (smallest eigenvalue <= SINGULAR_RTOL times the largest)."""
    C = np.asarray(C, dtype=float)
    e, U = np.linalg.eigh(0.5 * (C + C.T))
    if not e.min() > SINGULAR_RTOL * e.max():
        raise ValueError(f"the token covariance C is singular (eigenvalues {e.tolist()}): the state evolution "
                         "of correlated tokens needs C positive definite")
    B = (U * np.sqrt(e)) @ U.T
    return 0.5 * (B + B.T)


def _orbit_mean(M: np.ndarray, perms: list[list[int]]) -> np.ndarray:
    """M averaged over the permutations and the transpose, the same float on every entry of an orbit."""
    L = M.shape[0]
    out = np.empty_like(M)
    for i in range(L):
        for j in range(L):
            vals = [M[p[i], p[j]] for p in perms] + [M[p[j], p[i]] for p in perms]
            out[i, j] = math.fsum(sorted(vals)) / len(vals)
    return out


def whiten(params: ModelParams) -> ModelParams:
    """The whitened model: sigma = 1, P -> B^-1 P B^-T, loss loss_C(B v, B v*), B = C^(1/2) (module doc);
    a model already whitened as it is. Raises ValueError for a singular C."""
    if params.mixing is not None:
        return params
    if params.r != 1 or params.r_star != 1:
        raise ValueError("the whitened form of correlated tokens is implemented for r = r* = 1")
    perms = [list(perm) for perm in itertools.permutations(range(params.L)) if params.invariant_under(perm)]
    B = _orbit_mean(token_mixing(params.token_cov), perms)
    Binv = np.linalg.inv(B)
    Pt = _orbit_mean(Binv @ params.P_array @ Binv.T, perms)
    return ModelParams(L=params.L, sigma=1.0, P=Pt, A=params.A, omega=params.omega, lam=params.lam,
                       rho0=params.rho0, mixing=B)


def se_params(params: ModelParams) -> ModelParams:
    """The model the state evolution runs on: the whitened one for correlated tokens, else ``params`` itself."""
    return whiten(params) if params.correlated_tokens else params


def original(params: ModelParams) -> ModelParams:
    """The model in the tokens' own variables: C = B B^T, P = B Ptilde B^T (``params`` if not whitened),
    rounded to 12 significant digits (the user's C comes back as given)."""
    B = params.mixing_array
    if B is None:
        return params
    C = _round12(B @ B.T)
    P = _round12(B @ params.P_array @ B.T)
    offdiag = np.any(C - np.diag(np.diag(C)) != 0)
    return ModelParams(L=params.L, sigma=None if offdiag else tuple(np.sqrt(np.diag(C))), C=C if offdiag else None,
                       P=P, A=params.A, omega=params.omega, lam=params.lam, rho0=params.rho0)


def _round12(M: np.ndarray) -> np.ndarray:
    """A symmetric matrix's entries (averaged with the transpose) rounded to 12 significant digits, those below 1e-12
    of its largest set to 0 (a zero of the user's C comes back as 0, not as B B^T's round-off)."""
    M = 0.5 * (M + M.T)
    M = np.where(np.abs(M) < 1e-12 * np.abs(M).max(), 0.0, M)
    return np.vectorize(lambda x: float(f"{x:.12g}"))(M)


def positional_overlaps(params: ModelParams, m: np.ndarray) -> np.ndarray:
    """m_l = p_l . Q / sqrt(d) from the state's m: m_h = B m_v for a whitened model, else m itself."""
    B = params.mixing_array
    return np.asarray(m, dtype=float) if B is None else B @ np.asarray(m, dtype=float)
