"""Template of the compiled proximal solver: the algorithm of :mod:`attnphase.numerics.prox.global_prox`, one node at a time.

    h_hat(w, T) = argmin_h  P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)      (docs/model.md section 3)

This file is a template module: it is not imported by its own name, but instantiated once per
(L, r, cse, parallel) by :func:`attnphase.numerics.prox.compiled.instance`, which imports a
byte-identical copy of it (a file named after a hash of this text and of the generated
kernels, in the kernel cache directory) and hands it its parameters as
``__spec__.loader_state`` (a :class:`~attnphase.numerics.prox.compiled.Binding`): the sequence
length ``L``, the compile option ``parallel`` and the one-point generated kernels. Every
function here is compiled with ``numba.njit(cache=True)``; numba stores the machine code
beside the copy (numba keys its cache by file, so each instance needs a file of its own).

Nothing here spells out the objective: P, its gradient and Hessian are the generated
one-point kernels ``prox_value`` / ``prox_value_grad_hess`` of
:func:`attnphase.theory.kernels.get_scalar_kernels` (the same sympy derivation as the numpy
kernels), evaluated on the softmax S(h)[l, k] = softmax_k(h_l h_k) of :func:`softmax` (the
one-point twin of the batched softmax of the kernels, the only helper of the model defined in
both forms; the tests check that they agree).
For the whitened correlated-token model (one-point kernels with a generated ``fields``:
:attr:`attnphase.theory.correlated_kernels.CorrelatedKernels.scalar`) the same algorithm runs in the
variables v, on the softmax of the generated fields h = B v, with the kernels' (C, B) argument in
place of sigma^2 (:func:`attention`); nothing else differs.
What is here is the algorithm of :func:`~attnphase.numerics.prox.global_prox.newton_minimize` and
:func:`~attnphase.numerics.prox.global_prox.global_prox` (same starts, regularisation, step cap, Armijo
constants, convergence tests and tie-breaking) and its small linear algebra, in loops.
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

Array = np.ndarray
_binding: Any = __spec__.loader_state if __spec__ is not None else None
if _binding is None:
    raise ImportError("attnphase.numerics.prox.rows is a template: instantiate it with attnphase.numerics.prox.compiled.instance")

#: Sequence length of this instance.
L: int = _binding.L
#: Whether the loops over nodes are ``numba.prange`` loops (compiled with ``parallel=True``).
parallel: bool = _binding.parallel
inf = np.inf
prange = numba.prange if parallel else range
# x / 0 gives inf or nan as in numpy (no ZeroDivisionError); machine code cached beside this file
jit = functools.partial(numba.njit, error_model="numpy", cache=True)
# the generated kernels (another module), compiled into the callers here (not cached on their own)
_callee = functools.partial(numba.njit, error_model="numpy")
_prox_value = _callee(_binding.scalar.functions["prox_value"])
_prox_value_grad_hess = _callee(_binding.scalar.functions["prox_value_grad_hess"])
#: Whitened correlated tokens (docs/model.md section 7): the variables are v, the attention is that of the
#: generated fields h = B v, and ``s2`` is the generated functions' (C, B) argument instead of sigma^2.
whitened: bool = "fields" in _binding.scalar.functions
_fields = _callee(_binding.scalar.functions["fields"]) if whitened else None


@jit
def softmax(h: Array, S: Array) -> None:
    """S(h)[l, k] = softmax_k(a_lk) of the generated ``scores`` a_lk = h_l h_k (r = 1), one point, into S.

    The one-point twin of the batched softmax of the kernels
    (:meth:`attnphase.theory.kernels.Kernels.attention`): for each row l the max
    m_l = max_k a_lk, then exp(a_lk - m_l) and their sum, each over k = 1..L in the batched
    order, then the division. Defined here, not imported, so that its loops run to the
    instance's constant L (unrolled; a loop to ``h.shape[0]`` made the solver 20 % slower).
    """
    for l in range(L):
        m = h[l] * h[0]
        for k in range(1, L):
            a = h[l] * h[k]
            if a > m:
                m = a
        for k in range(L):
            x = h[l] * h[k] - m
            # exp(0) = 1 exactly: the row's maximum (one of L entries) needs no exponential
            S[l, k] = 1.0 if x == 0.0 else np.exp(x)
        tot = S[l, 0]
        for k in range(1, L):
            tot += S[l, k]
        for k in range(L):
            S[l, k] /= tot


if whitened:
    @jit
    def attention(h: Array, s2: Array, S: Array) -> None:
        """S(B v) into S: the softmax of the generated fields B v (``h`` holds v, ``s2`` the (C, B) argument)."""
        softmax(_fields(h, s2), S)
else:
    @jit
    def attention(h: Array, s2: Array, S: Array) -> None:
        """S(h) into S (``s2`` unused: the attention of independent tokens is that of h itself)."""
        softmax(h, S)


@jit
def value_grad_hess(h: Array, w: Array, V: Array, T: Array, s2: Array, S: Array, g: Array, H: Array) -> float:
    """P(h), with grad P into g and the Hessian of P into H: the generated ``prox_value_grad_hess`` at S(h)."""
    attention(h, s2, S)
    out = _prox_value_grad_hess(h, w, V, S, T, s2)
    for j in range(L):
        g[j] = out[1 + j]
    n = 1 + L
    for i in range(L):
        for j in range(i, L):
            H[i, j] = out[n]
            H[j, i] = out[n]
            n += 1
    return out[0]


@jit
def value_only(h: Array, w: Array, V: Array, T: Array, s2: Array, S: Array) -> float:
    """P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T): the generated ``prox_value`` at S(h)."""
    attention(h, s2, S)
    return _prox_value(h, w, V, S, T, s2)[0]


@jit
def min_eig(H: Array, M: Array) -> float:
    """lambda_min(H) of the symmetric L x L matrix H (closed form for L = 2; else Jacobi rotations in M)."""
    if L == 2:
        a, b, c = H[0, 0], H[0, 1], H[1, 1]
        return 0.5 * (a + c) - np.sqrt(0.25 * (a - c) ** 2 + b * b)
    # cyclic Jacobi rotations (Golub & Van Loan 8.5) on a copy: accurate to rounding, no LAPACK
    for i in range(L):
        for j in range(L):
            M[i, j] = H[i, j]
    for _ in range(50):
        off = 0.0
        dia = 0.0
        for p in range(L):
            dia += M[p, p] * M[p, p]
            for q in range(p + 1, L):
                off += M[p, q] * M[p, q]
        if off <= 1e-36 * dia:  # off-diagonal below 1e-18 of the diagonal: eigenvalues at rounding
            break
        for p in range(L):
            for q in range(p + 1, L):
                if M[p, q] == 0.0:
                    continue
                tau = (M[q, q] - M[p, p]) / (2.0 * M[p, q])
                t = (1.0 if tau >= 0 else -1.0) / (abs(tau) + np.sqrt(1.0 + tau * tau))
                c = 1.0 / np.sqrt(1.0 + t * t)
                sn = t * c
                for k in range(L):
                    mkp, mkq = M[k, p], M[k, q]
                    M[k, p] = c * mkp - sn * mkq
                    M[k, q] = sn * mkp + c * mkq
                for k in range(L):
                    mpk, mqk = M[p, k], M[q, k]
                    M[p, k] = c * mpk - sn * mqk
                    M[q, k] = sn * mpk + c * mqk
    lam = M[0, 0]
    for k in range(1, L):
        if M[k, k] < lam:
            lam = M[k, k]
    return lam


@jit
def shifted_cholesky_ok(H: Array, tau: float, M: Array) -> bool:
    """Whether H - tau I is positive definite: its Cholesky factorisation (in M) has positive pivots."""
    for i in range(L):
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
    """x = M^{-1} g (closed form for L = 2; else Gaussian elimination with partial pivoting, M overwritten)."""
    if L == 2:
        a, b, c = M[0, 0], M[0, 1], M[1, 1]
        det = a * c - b * b
        x[0] = (c * g[0] - b * g[1]) / det
        x[1] = (a * g[1] - b * g[0]) / det
        return
    for k in range(L):
        x[k] = g[k]
    for k in range(L):
        piv = k
        for i in range(k + 1, L):
            if abs(M[i, k]) > abs(M[piv, k]):
                piv = i
        if piv != k:
            for j in range(L):
                M[k, j], M[piv, j] = M[piv, j], M[k, j]
            x[k], x[piv] = x[piv], x[k]
        for i in range(k + 1, L):
            f = M[i, k] / M[k, k]
            for j in range(k, L):
                M[i, j] -= f * M[k, j]
            x[i] -= f * x[k]
    for k in range(L - 1, -1, -1):
        acc = x[k]
        for j in range(k + 1, L):
            acc -= M[k, j] * x[j]
        x[k] = acc / M[k, k]


@jit
def newton_row(
    h: Array, w: Array, V: Array, T: Array, s2: Array, max_step: float, xtol: float, max_iter: int, max_halvings: int,
    S: Array, g: Array, H: Array, M: Array, d: Array, trial: Array, g2: Array, H2: Array,
    known: Array, kconv: Array, nk: int, merge: float,
) -> tuple[float, bool, int]:
    """Safeguarded Newton descent on P of one row, h updated in place: (value, converged, iterations).

    As :func:`attnphase.numerics.prox.global_prox.newton_minimize` (see there): d = -(H + mu I)^{-1} grad P,
    step capped at ``max_step``, Armijo backtracking (the full step is tried with the derivatives
    at the trial point, which the next iteration then reuses); S, g, H, M, d, trial, g2, H2 are work arrays.
    Merging (``merge > 0``): where H is positive definite and h lies within ``merge`` (relative, per
    coordinate) of row j < ``nk`` of ``known`` with ``kconv[j]`` (a minimum of an earlier start),
    the descent stops and returns iterations = -1 - j (the caller copies that minimum).
    """
    f = value_grad_hess(h, w, V, T, s2, S, g, H)
    vmin = V[0]
    for k in range(1, L):
        if V[k] < vmin:
            vmin = V[k]
    diag_scale = 1.0 / vmin
    it = 0
    while it < max_iter:
        it += 1
        if L == 2:
            lam_min = min_eig(H, M)
            pd = lam_min > 1e-10 * diag_scale
        else:  # lambda_min(H) > tau  <=>  H - tau I has a Cholesky factor (to rounding); the
            # eigenvalue itself (Jacobi, ~10x dearer) is needed only when it does not
            pd = shifted_cholesky_ok(H, 1e-10 * diag_scale, M)
            lam_min = 0.0 if pd else min_eig(H, M)
        if pd and nk > 0 and merge > 0.0:
            for j in range(nk):
                if kconv[j]:
                    close = True
                    for k in range(L):
                        if abs(h[k] - known[j, k]) > merge * (1.0 + abs(known[j, k])):
                            close = False
                            break
                    if close:
                        return f, True, -1 - j
        mu = 0.0 if pd else -lam_min + 1e-3 * diag_scale
        for i in range(L):
            for j in range(L):
                M[i, j] = H[i, j] + mu if i == j else H[i, j]
        solve(M, g, d)
        dn = 0.0
        nrm2 = 0.0
        for k in range(L):
            d[k] = -d[k]
            if abs(d[k]) > dn or k == 0:
                dn = abs(d[k])
            nrm2 = nrm2 + d[k] * d[k] if k else d[k] * d[k]
        scale = min(1.0, max_step / max(np.sqrt(nrm2), 1e-300))
        slope = 0.0
        hmax = 0.0
        for k in range(L):
            d[k] *= scale
            slope = slope + g[k] * d[k] if k else g[k] * d[k]
            if abs(h[k]) > hmax or k == 0:
                hmax = abs(h[k])
        near = (dn < xtol * (1.0 + hmax)) or (abs(slope) <= 1e-13 * abs(f))
        tiny = pd and near
        accepted = False
        fresh = False  # g, H already hold the derivatives at the new h
        if tiny:
            for k in range(L):
                h[k] = h[k] + d[k]
            accepted = True
        else:
            # the full step first, with its derivatives (kept if Armijo accepts it: the usual case)
            for k in range(L):
                trial[k] = h[k] + d[k]
            ft = value_grad_hess(trial, w, V, T, s2, S, g2, H2)
            if ft <= f + 1e-4 * slope:
                for k in range(L):
                    h[k] = trial[k]
                    g[k] = g2[k]
                    for j in range(L):
                        H[k, j] = H2[k, j]
                f = ft
                accepted = True
                fresh = True
            else:
                t = 0.5
                for _ in range(max_halvings - 1):
                    for k in range(L):
                        trial[k] = h[k] + t * d[k]
                    ft = value_only(trial, w, V, T, s2, S)
                    if ft <= f + 1e-4 * t * slope:
                        for k in range(L):
                            h[k] = trial[k]
                        accepted = True
                        break
                    t *= 0.5
        if not fresh:
            f = value_grad_hess(h, w, V, T, s2, S, g, H)
        gs = 0.0
        gmax = 0.0
        for k in range(L):
            e = abs(h[k] - w[k]) / V[k]
            if e > gs or k == 0:
                gs = e
            if abs(g[k]) > gmax or k == 0:
                gmax = abs(g[k])
        stalled = (not accepted) and gmax <= 1e-8 * (1.0 + (gs + 1e-300))
        if tiny or stalled:
            return f, True, it
        if not accepted:
            return f, False, it
    return f, False, it


@jit(parallel=parallel)
def rows(
    starts: Array, w: Array, V: Array, T: Array, s2: Array, perms: Array, refine: bool, max_step: float, xtol: float,
    max_iter: int, max_halvings: int, h: Array, value: Array, conv: Array, iters: Array, best: Array, merge: float,
) -> None:
    """Newton from every start of every node (``starts`` (N, n0, L)); with ``refine``, then from
    the mirror image -h_b of the best minimum h_b and its token permutations ``perms``.

    Writes h (N, n, L), value, conv, iters (N, n) and best (N,): the lowest converged value
    per node, the first start on ties (as :func:`attnphase.numerics.prox.global_prox.global_prox`).
    """
    N, n0 = starts.shape[0], starts.shape[1]
    n_all = n0 + 1 + perms.shape[0] if refine else n0
    for i in prange(N):
        S, H, M = np.empty((L, L)), np.empty((L, L)), np.empty((L, L))
        g, d, trial, hb = np.empty(L), np.empty(L), np.empty(L), np.empty(L)
        g2, H2 = np.empty(L), np.empty((L, L))
        b, bv = 0, inf
        for s in range(n_all):
            if s < n0:
                for k in range(L):
                    h[i, s, k] = starts[i, s, k]
            else:
                if s == n0:  # refinement pass from the best minimum of the first
                    for k in range(L):
                        hb[k] = h[i, b, k]
                for k in range(L):
                    h[i, s, k] = -hb[k] if s == n0 else hb[perms[s - n0 - 1, k]]
            v, c, its = newton_row(h[i, s], w[i], V[i], T[i], s2[i], max_step, xtol, max_iter, max_halvings,
                                   S, g, H, M, d, trial, g2, H2, h[i], conv[i], s, merge)
            if its < 0:
                j = -1 - its
                for k in range(L):
                    h[i, s, k] = h[i, j, k]
                v = value[i, j]
                its = 0
            value[i, s] = v
            conv[i, s] = c
            iters[i, s] = its
            if c and v < bv:
                b, bv = s, v
        best[i] = b


@jit
def _same_rounded(a: Array, b: Array) -> bool:
    """a and b equal after rounding every entry to 6 decimals (as numpy's round: rint(x 1e6) / 1e6)."""
    for k in range(a.shape[0]):
        if np.rint(a[k] * 1e6) / 1e6 != np.rint(b[k] * 1e6) / 1e6:
            return False
    return True


@jit(parallel=parallel)
def distinct(h: Array, conv: Array, best: Array, keep: Array) -> None:
    """keep[i, j]: row j of node i is kept as a distinct minimum -- the winner's own row, or a
    converged row that differs (rounded to 6 decimals) from the winner and from every kept row
    before it (prox._select on the same rows, which keeps the first of equal rows)."""
    N, n = conv.shape
    for i in prange(N):
        bi = best[i]
        for j in range(n):
            if j == bi:
                keep[i, j] = True
                continue
            ok = conv[i, j] and not _same_rounded(h[i, j], h[i, bi])
            if ok:
                for k in range(j):
                    if keep[i, k] and _same_rounded(h[i, j], h[i, k]):
                        ok = False
                        break
            keep[i, j] = ok


@jit
def best_rows(node: Array, value: Array, conv: Array, best: Array) -> None:
    """best[i]: the row of node i with the lowest converged value, the first on ties (the first
    row of the node if none converged; -1 if the node has no row) -- prox._best_per_node."""
    bv = np.full(best.shape[0], inf)
    best[:] = -1
    for r in range(node.shape[0]):
        i = node[r]
        v = value[r] if conv[r] else inf
        if best[i] < 0 or v < bv[i]:
            best[i] = r
            bv[i] = v
