"""Template of the compiled rank-r proximal solver: ``rank_prox.newton_minimize``, one row at a time.

    h_hat(w, T) = argmin_h  P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),  h in R^{L x r}
                                                                                    (docs/model.md section 7)

A template module, as :mod:`attnphase.numerics.prox.rows` is for r = 1: not imported by its own name
but instantiated once per (L, r, cse, parallel) by :func:`attnphase.numerics.prox.rank_compiled.instance`,
which imports a byte-identical copy (in the kernel cache directory, named after a hash of this text, of
the generated kernels' module and of :mod:`attnphase.numerics.prox.rank_linalg_compiled`) and hands it a
:class:`~attnphase.numerics.prox.rank_compiled.RankBinding` as ``__spec__.loader_state``. Every function
here is compiled with ``numba.njit(cache=True)``.

The loss, its gradient and Hessian are the generated one-point kernels ``loss_grad_hess`` / ``loss`` of
:attr:`attnphase.theory.rank_kernels.RankKernels.scalar` (the same sympy expressions as the numpy
kernels), evaluated on :func:`attention` (the one-point twin of
:func:`attnphase.theory.rank_kernels.attention`: the Gram matrix and the max-shifted row softmax in
the same order of operations). The quadratic term of P is :func:`quadratic` (the one-point twin of
``apply_blocks`` / ``prox_value`` of :mod:`attnphase.numerics.prox.rank_prox`), the Newton direction the
one-row Cholesky of :func:`attnphase.numerics.prox.rank_linalg_compiled.direction_row`. What is here is
the algorithm of ``newton_minimize`` (same direction, step cap, Armijo constants, convergence tests,
iteration limit) in loops, plus the merge of :func:`rows` (a start near a minimum an earlier start of the
same node converged to takes it, as in :mod:`attnphase.numerics.prox.rows`); the tests hold the two
backends' minimisers, values and converged flags equal to rounding.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from attnphase.numerics.prox.rank_linalg_compiled import direction_row

Array = np.ndarray
_binding: Any = __spec__.loader_state if __spec__ is not None else None
if _binding is None:
    raise ImportError("attnphase.numerics.prox.rank_rows is a template: instantiate it with "
                      "attnphase.numerics.prox.rank_compiled.instance")

#: Sequence length and student rank of this instance; n = L r unknowns per row.
L: int = _binding.L
r: int = _binding.r
n: int = L * r
#: Whether the loop over rows is a ``numba.prange`` loop (compiled with ``parallel=True``).
parallel: bool = _binding.parallel
prange = numba.prange if parallel else range
#: Rows per block of the parallel loop (work arrays are allocated once per block).
BLOCK = 64
# x / 0 gives inf or nan as in numpy (no ZeroDivisionError); machine code cached beside this file
jit = functools.partial(numba.njit, error_model="numpy", cache=True)
# the generated kernels (another module), compiled into the callers here (not cached on their own)
_callee = functools.partial(numba.njit, error_model="numpy")
_loss_grad_hess = _callee(_binding.scalar.functions["loss_grad_hess"])
_loss = _callee(_binding.scalar.functions["loss"])


@jit
def attention(h: Array, S: Array) -> None:
    """S(h)[l, k] = softmax_k(h_l . h_k) of one point h (L, r), max-shifted, into S (L, L).

    As the batched :func:`attnphase.theory.rank_kernels.attention`: h_l . h_k summed over b = 1..r in
    order, for k >= l and mirrored; then per row the max over k in order, exp(a_lk - max), the sum
    over k in order, the division."""
    for l in range(L):
        for k in range(l, L):
            acc = h[l, 0] * h[k, 0]
            for b in range(1, r):
                acc = acc + h[l, b] * h[k, b]
            S[l, k] = acc
            S[k, l] = acc
    for l in range(L):
        m = S[l, 0]
        for k in range(1, L):
            if S[l, k] > m:
                m = S[l, k]
        for k in range(L):
            S[l, k] = np.exp(S[l, k] - m)
        tot = S[l, 0]
        for k in range(1, L):
            tot += S[l, k]
        for k in range(L):
            S[l, k] /= tot


@jit
def quadratic(h: Array, w: Array, Vinv: Array, Vd: Array) -> float:
    """sum_l (h_l - w_l)^T Vinv_l (h_l - w_l), with Vd[l] = Vinv_l (h_l - w_l) written into Vd (L, r)."""
    q = 0.0
    for l in range(L):
        for a in range(r):
            acc = Vinv[l, a, 0] * (h[l, 0] - w[l, 0])
            for b in range(1, r):
                acc += Vinv[l, a, b] * (h[l, b] - w[l, b])
            Vd[l, a] = acc
            q += (h[l, a] - w[l, a]) * acc
    return q


@jit
def value_grad_hess(h: Array, w: Array, Vinv: Array, T: Array, s2: Array, S: Array, Vd: Array, g: Array,
                    H: Array) -> float:
    """P(h), with grad P into g (n,) and its Hessian into H (n, n) (entry (l, a) is slot l r + a):
    the generated ``loss_grad_hess`` at S(h) plus the quadratic term (Vd: work array (L, r))."""
    attention(h, S)
    out = _loss_grad_hess(h, S, T, s2)
    q = quadratic(h, w, Vinv, Vd)
    for l in range(L):
        for a in range(r):
            g[l * r + a] = out[1 + l * r + a] + Vd[l, a]
    k = 1 + n
    for i in range(n):
        for j in range(i, n):
            H[i, j] = out[k]
            H[j, i] = out[k]
            k += 1
    for l in range(L):
        for a in range(r):
            for b in range(r):
                H[l * r + a, l * r + b] += Vinv[l, a, b]
    return out[0] + 0.5 * q


@jit
def value_only(h: Array, w: Array, Vinv: Array, T: Array, s2: Array, S: Array, Vd: Array) -> float:
    """P(h) alone (line searches): 1/2 the quadratic term plus the generated ``loss`` at S(h)."""
    attention(h, S)
    return 0.5 * quadratic(h, w, Vinv, Vd) + _loss(S, T, s2)[0]


@jit
def newton_row(h: Array, w: Array, Vinv: Array, T: Array, s2: Array, delta: float, max_step: float, xtol: float,
               max_iter: int, max_halvings: int, S: Array, Vd: Array, g: Array, H: Array, g2: Array, H2: Array,
               d: Array, trial: Array, Lc: Array, y: Array, known: Array, kconv: Array, kdone: Array,
               merge: float) -> tuple[float, bool, int]:
    """Safeguarded Newton descent on P of one row, h (L, r) updated in place: (value, converged, merged).

    As :func:`attnphase.numerics.prox.rank_prox.newton_minimize` (see there): d = -(H + mu I)^{-1} grad P
    (``direction_row``, shift ``delta``), capped at ``max_step``, Armijo backtracking (the full step is
    tried with the derivatives at the trial point, which the next iteration then reuses); converged when
    H is positive definite and the step or its predicted decrease is negligible, or when no step
    decreases P and the gradient is at rounding level. ``merged`` is -1, or, with ``merge`` > 0, the
    j with ``kdone[j]`` and ``kconv[j]`` (a minimum ``known[j]`` an earlier start of the node converged
    to) that h came within ``merge`` of (relative, per entry) where H is positive definite: the descent
    stops there and the caller takes that minimum. The other arguments are work arrays.
    """
    f = value_grad_hess(h, w, Vinv, T, s2, S, Vd, g, H)
    for _ in range(max_iter):
        pd = direction_row(H, g, delta, Lc, y, d)
        if pd and merge > 0.0:
            for j in range(kdone.shape[0]):
                if kdone[j] and kconv[j]:
                    close = True
                    for k in range(n):
                        x = known[j, k // r, k % r]
                        if abs(h[k // r, k % r] - x) > merge * (1.0 + abs(x)):
                            close = False
                            break
                    if close:
                        return f, True, j
        dn = 0.0
        nrm2 = 0.0
        hmax = 0.0
        for k in range(n):
            dn = max(dn, abs(d[k]))
            nrm2 += d[k] * d[k]
            hmax = max(hmax, abs(h[k // r, k % r]))
        cap = min(1.0, max_step / max(np.sqrt(nrm2), 1e-300))
        slope = 0.0
        for k in range(n):
            d[k] *= cap
            slope += g[k] * d[k]
        near = dn < xtol * (1.0 + hmax) or abs(slope) <= 1e-13 * abs(f)
        tiny = pd and near
        accepted = tiny
        fresh = False  # g, H already hold the derivatives at the new h
        if tiny:
            for k in range(n):
                h[k // r, k % r] += d[k]
        else:
            for k in range(n):
                trial[k // r, k % r] = h[k // r, k % r] + d[k]
            ft = value_grad_hess(trial, w, Vinv, T, s2, S, Vd, g2, H2)
            if ft <= f + 1e-4 * slope:
                for k in range(n):
                    h[k // r, k % r] = trial[k // r, k % r]
                    g[k] = g2[k]
                    for j in range(n):
                        H[k, j] = H2[k, j]
                f = ft
                accepted = True
                fresh = True
            else:
                t = 0.5
                for _ in range(max_halvings - 1):
                    for k in range(n):
                        trial[k // r, k % r] = h[k // r, k % r] + t * d[k]
                    ft = value_only(trial, w, Vinv, T, s2, S, Vd)
                    if ft <= f + 1e-4 * t * slope:
                        for k in range(n):
                            h[k // r, k % r] = trial[k // r, k % r]
                        accepted = True
                        break
                    t *= 0.5
        if not fresh:
            f = value_grad_hess(h, w, Vinv, T, s2, S, Vd, g, H)
        else:
            quadratic(h, w, Vinv, Vd)
        scale = 0.0
        gmax = 0.0
        for k in range(n):
            scale = max(scale, abs(Vd[k // r, k % r]))
            gmax = max(gmax, abs(g[k]))
        stalled = (not accepted) and gmax <= 1e-8 * (1.0 + (scale + 1e-300))
        if tiny or stalled:
            return f, True, -1
        if not accepted:
            return f, False, -1
    return f, False, -1


@jit(parallel=parallel)
def rows(h: Array, w: Array, Vinv: Array, T: Array, s2: Array, delta: float, max_step: float, xtol: float,
         max_iter: int, max_halvings: int, value: Array, conv: Array, order: Array, merge: float) -> None:
    """Newton from every start of every node, in place: h (S, N, L, r) holds the starts (start s of node i
    at h[s, i]), w (N, L, r), T (N, L, L); Vinv (L, r, r) and s2 (L,) shared. Writes value and conv (S, N).

    The starts of a node run in the order ``order`` (a permutation of 0..S-1); with ``merge`` > 0 a start
    that comes near a minimum an earlier one converged to takes that minimum (:func:`newton_row`)."""
    S_, N = h.shape[0], h.shape[1]
    for blk in prange((N + BLOCK - 1) // BLOCK):
        S, Vd, trial = np.empty((L, L)), np.empty((L, r)), np.empty((L, r))
        g, g2, d, y = np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        H, H2, Lc = np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
        done = np.zeros(S_, dtype=np.bool_)
        kconv = np.zeros(S_, dtype=np.bool_)
        for i in range(blk * BLOCK, min(N, (blk + 1) * BLOCK)):
            done[:] = False
            for s in order:
                v, c, j = newton_row(h[s, i], w[i], Vinv, T[i], s2, delta, max_step, xtol, max_iter, max_halvings,
                                     S, Vd, g, H, g2, H2, d, trial, Lc, y, h[:, i], kconv, done, merge)
                if j >= 0:
                    h[s, i] = h[j, i]
                    v = value[j, i]
                value[s, i] = v
                conv[s, i] = c
                kconv[s] = c
                done[s] = True
