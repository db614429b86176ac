"""The hat overlaps from the channel moments: the Stein forms of docs/model.md sections 3 and 7, for every rank.

    qhat_l  = alpha E[g_l g_l^T]
    mhat_l  = alpha E[g_l]
    thhat_l = alpha E[g_l eta_l^T] rho_tilde_l^{-1/2}                          (= alpha E[d g_l / d h*_l])
    Vhat_l  = -alpha E[g_l xi_l^T] q_l^{-1/2} + thhat_l theta_l^T q_l^{-1}     (= -alpha E[d g_l / d w_l])

qhat_l and Vhat_l are symmetrised; at r = r* = 1 the moments may be given as their scalar views (sympy:
:func:`attnphase.theory.channel.hat_overlap_exprs`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.theory.matrix_channel import residual_teacher_covariance, sym_sqrt

ArrayLike = Any


def _positive_definite(a: np.ndarray) -> bool:
    if a.shape == (1, 1):
        return bool(a[0, 0] > 0)
    return bool(np.linalg.eigvalsh(0.5 * (a + a.T)).min() > 0)


def hat_overlaps(alpha: float, E_ggT: ArrayLike, E_g: ArrayLike, E_geta: ArrayLike, E_gxi: ArrayLike,
                 q0: ArrayLike, th0: ArrayLike, sigma2: ArrayLike, rho0: float
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(qhat (L, r, r), mhat (L, r), thhat (L, r, r*), Vhat (L, r, r)) from the channel averages (module doc).

    E_ggT (L, r, r), E_g (L, r), E_geta (L, r, r*), E_gxi (L, r, r); q0 (r, r), th0 (r, r*); sigma2 (L,).
    Scalar views at r = r* = 1: E_ggT, E_g, E_geta, E_gxi (L,), q0 and th0 numbers -> four (L,) arrays.
    """
    E_g = np.asarray(E_g, dtype=float)
    scalar = E_g.ndim == 1
    if scalar:
        E_ggT, E_geta, E_gxi = (np.asarray(x, dtype=float)[:, None, None] for x in (E_ggT, E_geta, E_gxi))
        E_g = E_g[:, None]
        q0, th0 = np.array([[float(q0)]]), np.array([[float(th0)]])
    else:
        E_ggT, E_geta, E_gxi, q0, th0 = (np.asarray(x, dtype=float) for x in (E_ggT, E_geta, E_gxi, q0, th0))
    if not _positive_definite(q0):
        raise ValueError(f"q0 (student norm Q^T Q / d) must be positive definite in the channel, got {q0.tolist()}")
    rt = residual_teacher_covariance(q0, th0, rho0)
    if not _positive_definite(rt):
        raise ValueError("thhat is undefined where rho0 I - th0^T q0^{-1} th0 is not positive definite (the student "
                         f"aligned with the teacher: E[g eta] / sqrt(rho_tilde) is 0 / 0); got q0 = {q0.tolist()}, "
                         f"th0 = {th0.tolist()}, rho0 = {rho0}")
    s = np.sqrt(np.asarray(sigma2, dtype=float))[:, None, None]
    qhat = alpha * E_ggT
    mhat = alpha * E_g
    # the order of these operations is part of the rank-2 golden records (tests/numerics/test_golden.py)
    thhat = alpha * np.einsum("lab,bc->lac", E_geta, sym_sqrt(rt, inverse=True)) / s
    Vhat = (-alpha * np.einsum("lab,bc->lac", E_gxi, sym_sqrt(q0, inverse=True)) / s
            + np.einsum("lab,cb,cd->lad", thhat, th0, np.linalg.inv(q0)))  # theta_l^T q_l^{-1} = th0^T q0^{-1}
    Vhat = 0.5 * (Vhat + np.swapaxes(Vhat, -1, -2))
    qhat = 0.5 * (qhat + np.swapaxes(qhat, -1, -2))
    if scalar:
        return qhat[:, 0, 0], mhat[:, 0], thhat[:, 0, 0], Vhat[:, 0, 0]
    return qhat, mhat, thhat, Vhat
