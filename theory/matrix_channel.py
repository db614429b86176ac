"""The channel and the free entropy in matrix overlaps: a rank-r student, a rank-r* teacher (docs/model.md section 7).

The overlaps q0 (r x r), V0, th0 (r x r*), m_l (r) and the fields (docs/derivation.md, "Rank r student, rank r*
teacher"), with symmetric square roots:

    w_l  = m_l + q_l^{1/2} xi_l,   h*_l = theta_l^T q_l^{-1/2} xi_l + rho_tilde_l^{1/2} eta_l,
    Phi  = sum_l [ 1/2 Tr(Vhat_l q_l) - 1/2 Tr(qhat_l V_l) - m_l . mhat_l - Tr(theta_l^T thhat_l) ]
           + 1/2 Tr[ Lam^{-1} N ] - alpha E[M]   (:class:`~attnphase.theory.priors.RidgePrior`).

Given the scalar views (q0 a number), the functions evaluate the code generated for r = 1.
"""

from __future__ import annotations

import numpy as np

from attnphase.theory.channel import channel_fields as scalar_channel_fields
from attnphase.theory.free_entropy import free_entropy as scalar_free_entropy
from attnphase.theory.priors import RidgePrior


def sym_sqrt(a: np.ndarray, inverse: bool = False) -> np.ndarray:
    """Symmetric square root a^{1/2} (or a^{-1/2}) of a symmetric positive-definite matrix."""
    a = 0.5 * (a + np.swapaxes(a, -1, -2))
    lam, U = np.linalg.eigh(a)
    if np.any(lam <= 0):
        raise ValueError(f"matrix must be positive definite, eigenvalues {lam}")
    f = lam ** (-0.5 if inverse else 0.5)
    return (U * f[..., None, :]) @ np.swapaxes(U, -1, -2)


def residual_teacher_covariance(q0: np.ndarray, th0: np.ndarray, rho0: float) -> np.ndarray:
    """rho_tilde / sigma_l^2 = rho0 I - th0^T q0^{-1} th0 (r* x r*): the teacher variance not explained by xi."""
    rs = th0.shape[1]
    return rho0 * np.eye(rs) - th0.T @ np.linalg.solve(q0, th0)


def check_state(q0: np.ndarray, th0: np.ndarray, rho0: float) -> None:
    """ValueError unless q0 is positive definite and rho0 I - th0^T q0^{-1} th0 is positive definite."""
    if np.linalg.eigvalsh(0.5 * (q0 + q0.T)).min() <= 0:
        raise ValueError(f"q0 must be positive definite, got eigenvalues {np.linalg.eigvalsh(q0)}")
    rt = residual_teacher_covariance(q0, th0, rho0)
    if np.linalg.eigvalsh(0.5 * (rt + rt.T)).min() <= 0:
        raise ValueError("rho0 I - th0^T q0^{-1} th0 must be positive definite (student not fully aligned)")


def channel_fields(xi: np.ndarray, eta: np.ndarray, q0: np.ndarray, m: np.ndarray, th0: np.ndarray,
                   sigma2: np.ndarray, rho0: float) -> tuple[np.ndarray, np.ndarray]:
    """(w, h*) of the module doc at nodes: xi (N, L, r), eta (N, L, r*), m (L, r) -> w (N, L, r), h* (N, L, r*);
    scalar views (q0, th0 numbers): :func:`attnphase.theory.channel.channel_fields`."""
    if np.ndim(q0) == 0:
        return scalar_channel_fields(xi, eta, q0, m, th0, sigma2, rho0)
    check_state(q0, th0, rho0)
    s = np.sqrt(np.asarray(sigma2, dtype=float))
    A = sym_sqrt(q0)
    B = th0.T @ sym_sqrt(q0, inverse=True)  # r* x r
    R = sym_sqrt(residual_teacher_covariance(q0, th0, rho0))
    w = m[None] + s[None, :, None] * np.einsum("ab,nlb->nla", A, xi)
    hstar = s[None, :, None] * (np.einsum("ab,nlb->nla", B, xi) + np.einsum("ab,nlb->nla", R, eta))
    return w, hstar


def free_entropy(q0: np.ndarray, V0: np.ndarray, m: np.ndarray, th0: np.ndarray,
                 qhat: np.ndarray, mhat: np.ndarray, thhat: np.ndarray, Vhat: np.ndarray,
                 sigma2: np.ndarray, P: np.ndarray, lam: float, rho0: float, alpha: float, E_M: float) -> float:
    """Phi of the module doc (e_t = -Phi); the prior's term from :class:`~attnphase.theory.priors.RidgePrior`.
    Scalar views (q0, V0, th0 numbers; m and the hats (L,)): :func:`attnphase.theory.free_entropy.free_entropy`."""
    if np.ndim(q0) == 0:
        return float(scalar_free_entropy(q0, V0, m, th0, qhat, mhat, thhat, Vhat, sigma2, P, lam, rho0,
                                        alpha, E_M))
    s2 = np.asarray(sigma2, dtype=float)
    prior_term = RidgePrior(lam, P, s2, rho0).free_entropy_term((qhat, mhat, thhat, Vhat))
    per_token = (0.5 * np.einsum("l,lab,ba->", s2, Vhat, q0) - 0.5 * np.einsum("l,lab,ba->", s2, qhat, V0)
                 - np.einsum("la,la->", m, mhat) - np.einsum("l,ab,lab->", s2, th0, thhat))
    return float(per_token + prior_term - alpha * E_M)
