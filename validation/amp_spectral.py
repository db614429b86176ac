"""A spectral start for GAMP (validation/amp.py): the leading eigenvector of a preprocessed sample covariance
(docs/bayes-optimal.md, "Not the start: a spectral start lands on the same points", which derives it)::

    M = (1/n) sum_mu sum_{l,k} (x_l^mu / sqrt(c_l^mu d)) T(Y^mu)_{lk} (x_k^mu / sqrt(c_k^mu d))^T,
    T(Y) = G (G + c I)^-1 = -1/(c - 1) I + c/(c - 1) u u^T / (c - 1 + |u|^2),     c > 1,
    G(Y) = u u^T - I,     u_l = Y_l / sqrt(c_l rho0),     c_l = |x_l|^2 / d.

Its leading eigenvector ``e`` (Lanczos on the products ``M v``, never forming M; sign arbitrary) gives the start
``Qhat_0 = sqrt(scale rho0 d) e`` (``q_0 = scale rho0``; GAMP's ``v_0 = rho0`` and ``g = 0`` as from its random
start).
"""

from __future__ import annotations

import math

import numpy as np
import torch

#: The default shift c of T = G (G + c I)^-1 (module doc): > 1 keeps T bounded; 1.5 chosen by measurement (the largest
#: cosine with Q* of c = 1.5, 2, 4 at d = 1000, alpha = 0.4; docs/bayes-optimal.md), not derived as optimal.
SPECTRAL_SHIFT = 1.5


def spectral_weights(Y: torch.Tensor, c: torch.Tensor, rho0: float, shift: float = SPECTRAL_SHIFT) -> torch.Tensor:
    """T(Y^mu) of the module doc, (n, L, L), for revealed fields Y (n, L) and token norms c (n, L) (c_l = |x_l|^2 / d)."""
    if not shift > 1.0:
        raise ValueError(f"shift must be > 1, got {shift}")
    u = Y / torch.sqrt(c * rho0)
    norm2 = (u * u).sum(dim=-1)
    L = Y.shape[-1]
    eye = torch.eye(L, dtype=Y.dtype, device=Y.device)
    outer = u[:, :, None] * u[:, None, :] / (shift - 1.0 + norm2)[:, None, None]
    return -eye / (shift - 1.0) + shift / (shift - 1.0) * outer


def spectral_direction(X: torch.Tensor, Y: torch.Tensor, rho0: float, shift: float = SPECTRAL_SHIFT,
                       tol: float = 1e-6) -> tuple[torch.Tensor, float]:
    """The unit leading eigenvector (d,) of M (module doc) for tokens X (n, L, d) and revealed fields Y (n, L), and its
    eigenvalue.  Deterministic (Lanczos from a fixed start vector)."""
    from scipy.sparse.linalg import LinearOperator, eigsh  # here: simulate --algorithm gd does not pay for scipy

    n, L, d = X.shape
    c = (X * X).sum(dim=-1) / d
    Z = (X / torch.sqrt(c * d)[..., None]).reshape(n * L, d).to(torch.float64).cpu().numpy()  # rows x_l / sqrt(c_l d)
    T = spectral_weights(Y, c, rho0, shift).to(torch.float64).cpu().numpy()

    def matvec(v: np.ndarray) -> np.ndarray:
        p = (Z @ v.reshape(-1)).reshape(n, L, 1)  # each row's projection
        return Z.T @ (T @ p).reshape(-1) / n

    op = LinearOperator((d, d), matvec=matvec, dtype=np.float64)
    v0 = np.ones(d) / math.sqrt(d)
    vals, vecs = eigsh(op, k=1, which="LA", v0=v0, tol=tol)
    return torch.from_numpy(vecs[:, 0].copy()).to(X), float(vals[0])


def spectral_start(X: torch.Tensor, Y: torch.Tensor, rho0: float, scale: float) -> torch.Tensor:
    """Qhat_0 = sqrt(scale rho0 d) e, e = :func:`spectral_direction` (module doc, shift :data:`SPECTRAL_SHIFT`)."""
    e, _ = spectral_direction(X, Y, rho0)
    return math.sqrt(scale * rho0 * X.shape[-1]) * e
