"""The attention maps in numpy (docs/model.md sections 1-2, 7), the one numeric evaluation for every rank:

    a_lk = h_l . h_k,   S(h)[l, k] = exp(a_lk - max_j a_lj) / sum_j exp(a_lj - max_j a_lj),
    T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A.

Max-shifted: no overflow at any finite h. Imports neither sympy nor torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np

ArrayLike = Any


def softmax_inplace(a: np.ndarray) -> np.ndarray:
    """Row softmax of ``a`` over its last axis, in place: exp(a_k - max a) / sum_j exp(a_j - max a), summed over
    k in order as in its one-point twin ``row_softmax`` of :mod:`attnphase.numerics.prox.rows`."""
    L = a.shape[-1]
    m = a[..., 0].copy()
    for k in range(1, L):
        np.maximum(m, a[..., k], out=m)
    a -= m[..., None]
    np.exp(a, out=a)
    tot = a[..., 0].copy()
    for k in range(1, L):
        tot += a[..., k]
    a /= tot[..., None]
    return a


def row_softmax(a: ArrayLike) -> np.ndarray:
    """softmax over the last axis, max-shifted: exp(a_k - max a) / sum_j exp(a_j - max a)."""
    return softmax_inplace(np.array(a, dtype=float))


def scores(h: np.ndarray) -> np.ndarray:
    """a_lk = h_l . h_k, h: (..., L, r) -> (..., L, L), symmetric bit for bit (for r >= 2 the sum over b in
    order for k >= l, mirrored, as in the compiled solver's one-point twin)."""
    L, r = h.shape[-2], h.shape[-1]
    if r == 1:
        v = h[..., 0]
        return v[..., :, None] * v[..., None, :]
    a = np.empty(h.shape[:-2] + (L, L))
    for l in range(L):
        for k in range(l, L):
            acc = h[..., l, 0] * h[..., k, 0]
            for b in range(1, r):
                acc = acc + h[..., l, b] * h[..., k, b]
            a[..., l, k] = acc
            a[..., k, l] = acc
    return a


def attention(h: ArrayLike) -> np.ndarray:
    """S(h)[..., l, k] = softmax_k(h_l . h_k), max-shifted; h: (..., L, r) -> (..., L, L)."""
    h = np.asarray(h, dtype=float)
    if h.ndim < 2:
        raise ValueError(f"h must have trailing shape (L, r), got shape {h.shape}")
    return softmax_inplace(scores(h))


def target(hstar: ArrayLike, omega: ArrayLike, A: ArrayLike) -> np.ndarray:
    """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A; hstar: (..., L, r*) -> (..., L, L), omega and A
    ((L, L) or (..., L, L)) broadcast against the batch shape."""
    Sstar = attention(hstar)
    L = Sstar.shape[-1]
    A = np.asarray(A, dtype=float)
    if A.ndim < 2 or A.shape[-2:] != (L, L):
        raise ValueError(f"A must have trailing shape (L, L) = ({L}, {L}), got shape {A.shape}")
    omega = np.asarray(omega, dtype=float)[..., None, None]
    return (1.0 - omega) * Sstar + omega * A
