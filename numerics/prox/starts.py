"""The starting points of the global proximal search, per node (docs/method.md section 3; docs/model.md sections 3, 7).

The loss is bounded and even in h, not convex: the starts seed the basins the quadratic term and the loss favour.
At r = 1: w, 0, +-w / 2, -w and, for L = 2, the two exact zeros of the loss (:func:`loss_zeros_L2`); where a
token's field is large, w with one token's field set to 0 (:func:`axis_starts`); then the refinement pass
(:func:`refinement_starts`).  At any r: w, 0, -w, w / 2, the teacher's fields rotated onto w
(:func:`procrustes_teacher`: the loss vanishes at omega = 0 on their Gram matrix) and the mean of w and those.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from attnphase.theory.correlated_kernels import CorrelatedKernels


def loss_zeros_L2(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For L = 2, the two exact zeros of the loss, S(h) = T: with delta = h_1 - h_2, delta^2 = logit T_11 + logit T_22,
    h_1 = logit T_11 / delta, h_2 = -logit T_22 / delta.  Returns (h_plus, valid), the other zero -h_plus; where
    delta^2 <= 0 (no exact zero) ``valid`` is False and h_plus 0."""
    t = np.clip(np.diagonal(T, axis1=1, axis2=2), 1e-300, 1 - 1e-16)  # (T_11, T_22) per node
    l11, l22 = (np.log(t) - np.log1p(-t)).T
    d2 = l11 + l22
    valid = d2 > 1e-12
    delta = np.sqrt(np.where(valid, d2, 1.0))
    h = np.stack([l11 / delta, -l22 / delta], axis=1)
    return np.where(valid[:, None], h, 0.0), valid


def mixing(kernels: Any) -> np.ndarray | None:
    """The mixing B of correlated-token kernels (fields h = B v), None for the independent-token ones."""
    return kernels.B if isinstance(kernels, CorrelatedKernels) else None


def procrustes_teacher(w: np.ndarray, hstar: np.ndarray) -> np.ndarray:
    """The teacher's fields hstar padded (r* < r) or cut to their top r singular directions (r* > r), rotated onto w:
    h0 O with O = argmin_{O in O(r)} |h0 O - w|_F (the polar factor of h0^T w); at r* = 1, h* b / |b| with
    b = sum_l h*_l w_l (h0^T w's one non-zero row), by SVD where some b is 0."""
    N, L, r = w.shape
    rs = hstar.shape[2]
    if rs == 1:  # h0 = (h*, 0): h0^T w has one non-zero row b = sum_l h*_l w_l, whose polar factor's row is b / |b|
        b = np.einsum("nl,nlb->nb", hstar[:, :, 0], w)
        norm = np.linalg.norm(b, axis=1, keepdims=True)
        if np.all(norm > 0):
            return hstar * (b / norm)[:, None, :]
    if rs <= r:
        h0 = np.concatenate([hstar, np.zeros((N, L, r - rs))], axis=2)
    else:
        U, s, _ = np.linalg.svd(hstar, full_matrices=False)
        h0 = U[:, :, :r] * s[:, None, :r]
    M = np.einsum("nla,nlb->nab", h0, w)
    Um, _, Vt = np.linalg.svd(M)
    return np.einsum("nla,nab->nlb", h0, Um @ Vt)


#: A node whose largest |h_l| at h = w (the fields, h = B v for whitened correlated tokens) exceeds this also starts
#: from :func:`axis_starts`.  There the attention of a large field saturates and P can have a minimum with one
#: token's field near 0 that no other start reaches: over 3,456,000 random nodes (V0 0.5-1500, omega 0-1, four A,
#: q sigma^2 up to 9) the other starts missed such a minimum at 3,876 nodes, every one with a field |w_l| >= 1.51
#: (`python benchmarks/axis_starts.py`); at the paper's fixed points (alpha 0.6-3) |w_l| > 1 at 0-3.5 % of the nodes.
AXIS_FIELD = 1.0


def axis_starts(w: np.ndarray, kernels: Any = None) -> tuple[list[np.ndarray], np.ndarray]:
    """(the L starts w with token l's field set to 0, whether each node runs them: max_l |h_l| > AXIS_FIELD at
    h = w), in the fields of ``kernels`` (for whitened correlated tokens h = B v is zeroed, then mapped back)."""
    B = mixing(kernels)
    h = w if B is None else w @ B.T
    starts = []
    for l in range(w.shape[1]):
        a = h.copy()
        a[:, l] = 0.0
        starts.append(a if B is None else np.linalg.solve(B, a.T).T)
    return starts, np.abs(h).max(axis=1) > AXIS_FIELD


def starting_points(w: np.ndarray, T: np.ndarray, *, kernels: Any = None,
                    hstar: np.ndarray | None = None) -> list[np.ndarray]:
    """The deterministic starts of the global search, each of w's shape (module doc): fields w (N, L) (the loss zeros
    in v = B^{-1} h for the whitened correlated-token ``kernels``), or w (N, L, r) with the teacher's ``hstar``
    (N, L, r*)."""
    if w.ndim == 3:
        if hstar is None:
            raise ValueError("the starts of matrix fields h (N, L, r) need the teacher's fields hstar")
        t = procrustes_teacher(w, hstar)
        return [w, np.zeros_like(w), -w, 0.5 * w, t, 0.5 * (w + t)]
    starts = [w, np.zeros_like(w), 0.5 * w, -0.5 * w, -w]
    if w.shape[1] == 2:
        hz, _ = loss_zeros_L2(T)
        B = mixing(kernels)
        if B is not None:
            hz = np.linalg.solve(B, hz.T).T
        starts += [hz, -hz]
    return starts


def mirrored(starts: list[np.ndarray]) -> list[np.ndarray]:
    """``starts`` and the mirror image -h of each, every array once (the loss is even in h, so -h seeds the basin
    on the other side of any reference field: what the aligned map chooses among)."""
    out = list(starts)
    for s in starts:
        if not any(np.array_equal(-s, o) for o in out):
            out.append(-s)
    return out


def refinement_starts(hb: np.ndarray) -> list[np.ndarray]:
    """The second pass of the r = 1 search from the best minima hb (N, L): -hb and hb with its tokens permuted
    (itertools order, identity left out) -- the loss is even in h and permutation-equivariant, so these seed
    basins the first pass can miss (asymmetric A, L > 2)."""
    L = hb.shape[1]
    return [-hb] + [hb[:, list(p)] for p in itertools.permutations(range(L)) if list(p) != list(range(L))]
