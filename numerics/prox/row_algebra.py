"""Template of the compiled proximal solver's one-point algebra, to the instance's constant L, r and n = L r.

    S(h)[l, k] = softmax_k(h_l . h_k)                       (docs/model.md sections 2 and 7)
    d = -(H + mu I)^{-1} g,  mu = 0 if lambda_min(H) > PD_REL / V_min, else -lambda_min(H) + SHIFT_REL / V_min

Instantiated once per (L, r) by :func:`attnphase.numerics.prox.compiled.instance` and bound into the instances of
:mod:`attnphase.numerics.prox.rows`: its loops run to the constants L, r, n (unrolled; a loop to an array's shape
made the solver 20 % slower).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from attnphase.numerics.prox.newton_steps import PD_REL, SHIFT_REL

Array = np.ndarray
_binding: Any = __spec__.loader_state if __spec__ is not None else None
if _binding is None:
    raise ImportError("attnphase.numerics.prox.row_algebra is a template: instantiate it with "
                      "attnphase.numerics.prox.compiled.instance")

#: Sequence length and rank of this instance; n = L r unknowns per row.
L: int = _binding.L
r: int = _binding.r
n: int = L * r
# x / 0 gives inf or nan as in numpy (no ZeroDivisionError); machine code cached beside this file
jit = functools.partial(numba.njit, error_model="numpy", cache=True)


@jit
def row_softmax(S: Array) -> None:
    """S[l, k] <- softmax_k(S[l, k]) in place, max-shifted, in the order of the kernels' batched softmax."""
    for l in range(L):
        m = S[l, 0]
        for k in range(1, L):
            if S[l, k] > m:
                m = S[l, k]
        for k in range(L):
            x = S[l, k] - m
            # exp(0) = 1 exactly: the row's maximum (one of L entries) needs no exponential
            S[l, k] = 1.0 if x == 0.0 else np.exp(x)
        tot = S[l, 0]
        for k in range(1, L):
            tot += S[l, k]
        for k in range(L):
            S[l, k] /= tot


@jit
def softmax(h: Array, S: Array) -> None:
    """S(h)[l, k] = softmax_k(h_l h_k) of one point h (L,) (r = 1), into S: the one-point twin of the batched
    softmax of the kernels (:meth:`attnphase.theory.kernels.Kernels.attention`)."""
    for l in range(L):
        for k in range(L):
            S[l, k] = h[l] * h[k]
    row_softmax(S)


@jit
def gram_softmax(h: Array, S: Array) -> None:
    """S(h)[l, k] = softmax_k(h_l . h_k) of one point h (L, r), into S (L, L): the one-point twin of
    :func:`attnphase.theory.softmax.attention` (h_l . h_k summed over b = 1..r in order, for k >= l
    and mirrored)."""
    for l in range(L):
        for k in range(l, L):
            acc = h[l, 0] * h[k, 0]
            for b in range(1, r):
                acc = acc + h[l, b] * h[k, b]
            S[l, k] = acc
            S[k, l] = acc
    row_softmax(S)


@jit
def min_eig(H: Array, M: Array) -> float:
    """lambda_min(H) of the symmetric n x n matrix H (closed form for n = 2; else Jacobi rotations in M)."""
    if n == 2:
        a, b, c = H[0, 0], H[0, 1], H[1, 1]
        return 0.5 * (a + c) - np.sqrt(0.25 * (a - c) ** 2 + b * b)
    # cyclic Jacobi rotations (Golub & Van Loan 8.5) on a copy: accurate to rounding, no LAPACK
    for i in range(n):
        for j in range(n):
            M[i, j] = H[i, j]
    for _ in range(50):
        off = 0.0
        dia = 0.0
        for p in range(n):
            dia += M[p, p] * M[p, p]
            for q in range(p + 1, n):
                off += M[p, q] * M[p, q]
        if off <= 1e-36 * dia:  # off-diagonal below 1e-18 of the diagonal: eigenvalues at rounding
            break
        for p in range(n):
            for q in range(p + 1, n):
                if M[p, q] == 0.0:
                    continue
                tau = (M[q, q] - M[p, p]) / (2.0 * M[p, q])
                t = (1.0 if tau >= 0 else -1.0) / (abs(tau) + np.sqrt(1.0 + tau * tau))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = t * c
                for k in range(n):
                    mkp, mkq = M[k, p], M[k, q]
                    M[k, p] = c * mkp - sn * mkq
                    M[k, q] = sn * mkp + c * mkq
                for k in range(n):
                    mpk, mqk = M[p, k], M[q, k]
                    M[p, k] = c * mpk - sn * mqk
                    M[q, k] = sn * mpk + c * mqk
    lam = M[0, 0]
    for k in range(1, n):
        if M[k, k] < lam:
            lam = M[k, k]
    return lam


@jit
def shifted_cholesky_ok(H: Array, tau: float, M: Array) -> bool:
    """Whether H - tau I is positive definite: its Cholesky factorisation (in M) has positive pivots."""
    for i in range(n):
        for j in range(i + 1):
            acc = H[i, j] - tau if i == j else H[i, j]
            for k in range(j):
                acc -= M[i, k] * M[j, k]
            if i == j:
                if not acc > 0.0:
                    return False
                M[i, i] = np.sqrt(acc)
            else:
                M[i, j] = acc / M[j, j]
    return True


@jit
def solve(M: Array, g: Array, x: Array) -> None:
    """x = M^{-1} g (closed form for n = 2; else Gaussian elimination with partial pivoting, M overwritten)."""
    if n == 2:
        a, b, c = M[0, 0], M[0, 1], M[1, 1]
        det = a * c - b * b
        x[0] = (c * g[0] - b * g[1]) / det
        x[1] = (a * g[1] - b * g[0]) / det
        return
    for k in range(n):
        x[k] = g[k]
    for k in range(n):
        piv = k
        for i in range(k + 1, n):
            if abs(M[i, k]) > abs(M[piv, k]):
                piv = i
        if piv != k:
            for j in range(n):
                M[k, j], M[piv, j] = M[piv, j], M[k, j]
            x[k], x[piv] = x[piv], x[k]
        for i in range(k + 1, n):
            f = M[i, k] / M[k, k]
            for j in range(k, n):
                M[i, j] -= f * M[k, j]
            x[i] -= f * x[k]
    for k in range(n - 1, -1, -1):
        acc = x[k]
        for j in range(k + 1, n):
            acc -= M[k, j] * x[j]
        x[k] = acc / M[k, k]


@jit
def unpack(out: Any, g: Array, H: Array) -> float:
    """The generated (value, gradient, upper triangle of the Hessian row by row) into g (n,) and H (n, n); returns the value."""
    for j in range(n):
        g[j] = out[1 + j]
    k = 1 + n
    for i in range(n):
        for j in range(i, n):
            H[i, j] = out[k]
            H[j, i] = out[k]
            k += 1
    return out[0]


@jit
def eigen_shift_direction(H: Array, g: Array, diag_scale: float, M: Array, y: Array, d: Array) -> bool:
    """The rank-1 rule: d = -(H + mu I)^{-1} g, mu = 0 where lambda_min(H) > PD_REL diag_scale (returns
    that), else -lambda_min(H) + SHIFT_REL diag_scale; diag_scale = 1 / V_min.  ``y`` unused."""
    if n == 2:
        lam_min = min_eig(H, M)
        pd = lam_min > PD_REL * diag_scale
    else:  # lambda_min(H) > tau  <=>  H - tau I has a Cholesky factor (to rounding); the
        # eigenvalue itself (Jacobi, ~10x dearer) is needed only when it does not
        pd = shifted_cholesky_ok(H, PD_REL * diag_scale, M)
        lam_min = 0.0 if pd else min_eig(H, M)
    mu = 0.0 if pd else -lam_min + SHIFT_REL * diag_scale
    for i in range(n):
        for j in range(n):
            M[i, j] = H[i, j] + mu if i == j else H[i, j]
    solve(M, g, d)
    for k in range(n):
        d[k] = -d[k]
    return pd
