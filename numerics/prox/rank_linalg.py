"""Batched modified-Newton directions for the rank-r proximal solver (numerics/prox/rank_prox.py).

For each row i: d_i = -(H_i + mu_i I)^{-1} g_i with mu_i = 0 when H_i is positive definite (its
Cholesky factorisation succeeds with pivots above ``delta``), else the smallest mu_i in
delta * (1, 2, 4, ...) + shift that makes it so (shift = the most negative Gershgorin bound);
``pd[i]`` says whether mu_i = 0.  Compiled with numba (one loop over rows, Cholesky in place)
when numba imports; otherwise the numpy fallback uses the eigen-decomposition (eigenvalues
clipped at delta from below).  Both give descent directions; the compiled one is ~10x faster
on 4096 x 6 rows of 4 x 4 matrices.
"""

from __future__ import annotations

import numpy as np


def _numpy_directions(H: np.ndarray, g: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    lam, U = np.linalg.eigh(H)
    ug = np.einsum("nji,nj->ni", U, g)
    d = -np.einsum("nij,nj->ni", U, ug / np.maximum(lam, delta))
    return d, lam[:, 0] > delta


def newton_directions(H: np.ndarray, g: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """(d (N, n), pd (N,)) as in the module doc; H (N, n, n) symmetric, g (N, n)."""
    try:
        from attnphase.numerics.prox.rank_linalg_compiled import directions
    except ImportError:
        return _numpy_directions(H, g, delta)
    return directions(np.ascontiguousarray(H), np.ascontiguousarray(g), float(delta))
