"""The starting points of the global proximal search, per node (docs/model.md sections 3, 7).

    P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),   h in R^{L x r}

The loss is bounded and not convex, so P can have several local minima; the search runs the Newton
descent from each start below and keeps the lowest minimum.  The starts seed the basins the quadratic
term and the loss favour: the field w itself, the origin, points between, their mirror images (the loss
is even in h), and where the loss vanishes:

* r = 1 (fields h in R^L): w, 0, +-w / 2, -w and, for L = 2, the two exact zeros +-h_z of the loss,
  S(h) = T, in closed form (:func:`loss_zeros_L2`; for whitened correlated tokens in the variables
  v = B^{-1} h); then (:func:`refinement_starts`) the mirror image and the token permutations of the best
  minimum of those;
* any r (fields h in R^{L x r}): w, 0, -w, w / 2, the teacher's fields rotated onto w (orthogonal
  Procrustes, :func:`procrustes_teacher`: the loss vanishes at omega = 0 on their Gram matrix) and the mean
  of w and those.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np

from attnphase.theory.correlated_kernels import CorrelatedKernels


def loss_zeros_L2(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For L = 2, the two exact zeros of the loss, S(h) = T (docs/model.md section 3).

    With delta = h_1 - h_2: S_11 = sigmoid(h_1 delta), S_22 = sigmoid(-h_2 delta), so
    delta^2 = logit T_11 + logit T_22 and h_1 = logit T_11 / delta, h_2 = -logit T_22 / delta.
    Returns (h_plus, valid); the other zero is -h_plus.  ``valid`` is False where
    delta^2 <= 0 (no exact zero), and h_plus is then 0.
    """
    t11 = np.clip(T[:, 0, 0], 1e-300, 1 - 1e-16)
    t22 = np.clip(T[:, 1, 1], 1e-300, 1 - 1e-16)
    l11 = np.log(t11) - np.log1p(-t11)
    l22 = np.log(t22) - np.log1p(-t22)
    d2 = l11 + l22
    valid = d2 > 1e-12
    delta = np.sqrt(np.where(valid, d2, 1.0))
    h = np.stack([l11 / delta, -l22 / delta], axis=1)
    return np.where(valid[:, None], h, 0.0), valid


def mixing(kernels: Any) -> np.ndarray | None:
    """The mixing B of correlated-token kernels (fields h = B v), None for the independent-token ones."""
    return kernels.B if isinstance(kernels, CorrelatedKernels) else None


def procrustes_teacher(w: np.ndarray, hstar: np.ndarray) -> np.ndarray:
    """The teacher's fields as a student field with the same Gram matrix, rotated onto w.

    h0 = hstar padded (r* < r) or truncated to its top r singular directions (r* > r), then
    h0 O with O = argmin_{O in O(r)} |h0 O - w|_F (the polar factor of h0^T w).
    """
    N, L, r = w.shape
    rs = hstar.shape[2]
    if rs <= r:
        h0 = np.concatenate([hstar, np.zeros((N, L, r - rs))], axis=2)
    else:
        U, s, _ = np.linalg.svd(hstar, full_matrices=False)
        h0 = U[:, :, :r] * s[:, None, :r]
    M = np.einsum("nla,nlb->nab", h0, w)
    Um, _, Vt = np.linalg.svd(M)
    return np.einsum("nla,nab->nlb", h0, Um @ Vt)


def starting_points(w: np.ndarray, T: np.ndarray, *, kernels: Any = None,
                    hstar: np.ndarray | None = None) -> list[np.ndarray]:
    """The deterministic starts of the global search, each of w's shape (module doc).

    Fields w (N, L) (r = 1): w, 0, +-w/2, -w and, for L = 2, +-the zeros of the loss (in v = B^{-1} h for
    the whitened correlated-token ``kernels``, docs/model.md section 7).  Fields w (N, L, r): w, 0, -w, w / 2,
    the Procrustes teacher fields of ``hstar`` (N, L, r*) and (w + those) / 2.
    """
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


def refinement_starts(hb: np.ndarray) -> list[np.ndarray]:
    """The second pass of the r = 1 search from the best minima hb (N, L): -hb and hb with its tokens permuted
    (itertools order, identity left out) -- the loss is even in h and permutation-equivariant, so these seed
    basins the first pass can miss (asymmetric A, L > 2)."""
    L = hb.shape[1]
    return [-hb] + [hb[:, list(p)] for p in itertools.permutations(range(L)) if list(p) != list(range(L))]
