"""Template of the compiled proximal solver: the Newton descent of :mod:`attnphase.numerics.prox.descent`, one row at a time.

    h_hat(w, T) = argmin_h  P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),   h in R^{L x r}
                                                       (docs/model.md sections 3 and 7; at r = 1, V_l^{-1} = 1 / V_l)

This file is a template module, one file on purpose (about 500 lines, above the project's ~400): numba
caches machine code per file, so each instance is a copy of this one text; splitting it would multiply
the copies and their caches.  It is not imported by its own name, but instantiated once per
(L, r, kernels, parallel) by :func:`attnphase.numerics.prox.compiled.instance`, which imports a
byte-identical copy of it (a file named after a hash of this text, of the generated kernels, of the
step rules :mod:`attnphase.numerics.prox.newton_steps` and of the Cholesky of
:mod:`attnphase.numerics.prox.shifted_cholesky`, in the kernel cache directory) and hands it a
:class:`~attnphase.numerics.prox.compiled.Binding` as ``__spec__.loader_state``: L, r, the compile option
``parallel`` and the one-point generated kernels. Every function here is compiled with
``numba.njit(cache=True)``; numba stores the machine code beside the copy (numba keys its cache by
file, so each instance needs a file of its own).

One descent (:func:`newton_row`) and one driver (:func:`rows`) for every (L, r); a row's unknowns are h
flattened to n = L r entries (entry (l, a) at l r + a).  What depends on the kernels is chosen once per
instance, at import:

* the rank-1 kernels (:class:`~attnphase.theory.kernels.Kernels` and the whitened correlated-token
  :class:`~attnphase.theory.correlated_kernels.CorrelatedKernels`: V_l scalars, the generated P itself,
  ``prox_value_grad_hess`` / ``prox_value``, on the softmax S(h)[l, k] = softmax_k(h_l h_k) of
  :func:`softmax`) -- the fast path of r = 1: the eigenvalue-shift direction rule with lambda_min and the
  solve in closed form at L = 2 (:func:`eigen_shift_direction`, the one-point twin of
  :func:`attnphase.numerics.prox.newton_steps.eigen_shift_direction`);
* the rank-r kernels (:class:`~attnphase.theory.kernels.Kernels`: V_l^{-1} r x r matrices, the
  generated ``loss_grad_hess`` / ``loss`` on the softmax of the Gram matrix, plus the quadratic term of
  :func:`quadratic`): the Cholesky-shift rule of
  :func:`attnphase.numerics.prox.shifted_cholesky.direction_row` (the one-row twin of
  :func:`attnphase.numerics.prox.newton_steps.cholesky_shift_direction`).

Nothing here spells the loss out; the step constants are those of ``newton_steps``.  (About 500 lines: the
one compiled algorithm with the small linear algebra of its rank-1 rule -- lambda_min, a Cholesky test, a
solve -- whose loops run to the instance's constant n, which only code in this file can see.)  For the whitened
correlated-token model the variables are v, the attention that of the generated fields h = B v, with the
kernels' (C, B) argument in place of sigma^2 (:func:`attention`).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from attnphase.numerics.prox.newton_steps import ARMIJO, FLAT_REL, PD_REL, SHIFT_REL, STALL_REL
from attnphase.numerics.prox.shifted_cholesky import direction_row

Array = np.ndarray
_binding: Any = __spec__.loader_state if __spec__ is not None else None
if _binding is None:
    raise ImportError("attnphase.numerics.prox.rows is a template: instantiate it with attnphase.numerics.prox.compiled.instance")

#: Sequence length and rank of this instance; n = L r unknowns per row.
L: int = _binding.L
r: int = _binding.r
n: int = L * r
#: Whether the loops over nodes are ``numba.prange`` loops (compiled with ``parallel=True``).
parallel: bool = _binding.parallel
#: The rank-1 kernels (the generated P, V_l scalars) rather than the rank-r ones (the generated loss, V_l^{-1} matrices).
fields_form: bool = "prox_value_grad_hess" in _binding.scalar.functions
#: Nodes per block of the parallel loop (work arrays are allocated once per block).
BLOCK = 64
inf = np.inf
prange = numba.prange if parallel else range
# x / 0 gives inf or nan as in numpy (no ZeroDivisionError); machine code cached beside this file
jit = functools.partial(numba.njit, error_model="numpy", cache=True)
# the generated kernels (another module), compiled into the callers here (not cached on their own)
_callee = functools.partial(numba.njit, error_model="numpy")
#: Whitened correlated tokens (docs/model.md section 7): the variables are v, the attention is that of the
#: generated fields h = B v, and ``s2`` is the generated functions' (C, B) argument instead of sigma^2.
whitened: bool = "fields" in _binding.scalar.functions
_fields = _callee(_binding.scalar.functions["fields"]) if whitened else None


@jit
def row_softmax(S: Array) -> None:
    """S[l, k] <- softmax_k(S[l, k]) in place, max-shifted: for each row l the max m_l over k = 1..L in
    order, exp(S_lk - m_l), their sum over k in order, the division (the order of the batched softmax of
    the kernels).  Its loops run to the instance's constant L (unrolled; a loop to ``S.shape[0]`` made
    the solver 20 % slower)."""
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


if fields_form:
    _prox_value = _callee(_binding.scalar.functions["prox_value"])
    _prox_value_grad_hess = _callee(_binding.scalar.functions["prox_value_grad_hess"])

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
        return unpack(_prox_value_grad_hess(h, w, V, S, T, s2), g, H)

    @jit
    def value_only(h: Array, w: Array, V: Array, T: Array, s2: Array, S: Array) -> float:
        """P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T): the generated ``prox_value`` at S(h)."""
        attention(h, s2, S)
        return _prox_value(h, w, V, S, T, s2)[0]

    @jit
    def stall_scale(h: Array, w: Array, V: Array) -> float:
        """max_l |h_l - w_l| / V_l."""
        gs = 0.0
        for k in range(n):
            e = abs(h[k] - w[k]) / V[k]
            if e > gs or k == 0:
                gs = e
        return gs

    direction = eigen_shift_direction
else:
    _loss_grad_hess = _callee(_binding.scalar.functions["loss_grad_hess"])
    _loss = _callee(_binding.scalar.functions["loss"])

    @jit
    def precision_times(Vinv: Array, h: Array, w: Array, l: int, a: int) -> float:
        """(Vinv_l (h_l - w_l))_a, summed over b = 1..r in order."""
        acc = Vinv[l, a, 0] * (h[l * r] - w[l * r])
        for b in range(1, r):
            acc += Vinv[l, a, b] * (h[l * r + b] - w[l * r + b])
        return acc

    @jit
    def quadratic(h: Array, w: Array, Vinv: Array) -> float:
        """sum_l (h_l - w_l)^T Vinv_l (h_l - w_l)."""
        q = 0.0
        for l in range(L):
            for a in range(r):
                q += (h[l * r + a] - w[l * r + a]) * precision_times(Vinv, h, w, l, a)
        return q

    @jit
    def value_grad_hess(h: Array, w: Array, V: Array, T: Array, s2: Array, S: Array, g: Array, H: Array) -> float:
        """P(h), with grad P into g (n,) and its Hessian into H (n, n): the generated ``loss_grad_hess`` at
        S(h) plus the quadratic term (V holds V_l^{-1}, (L, r, r))."""
        hm = h.reshape((L, r))
        gram_softmax(hm, S)
        f = unpack(_loss_grad_hess(hm, S, T, s2), g, H)
        q = 0.0  # the quadratic term, with its gradient Vinv_l (h_l - w_l) added to g
        for l in range(L):
            for a in range(r):
                acc = precision_times(V, h, w, l, a)
                g[l * r + a] = g[l * r + a] + acc
                q += (h[l * r + a] - w[l * r + a]) * acc
                for b in range(r):
                    H[l * r + a, l * r + b] += V[l, a, b]
        return f + 0.5 * q

    @jit
    def value_only(h: Array, w: Array, V: Array, T: Array, s2: Array, S: Array) -> float:
        """P(h) alone (line searches): 1/2 the quadratic term plus the generated ``loss`` at S(h)."""
        gram_softmax(h.reshape((L, r)), S)
        return 0.5 * quadratic(h, w, V) + _loss(S, T, s2)[0]

    @jit
    def stall_scale(h: Array, w: Array, V: Array) -> float:
        """max over entries of |Vinv_l (h_l - w_l)|."""
        gs = 0.0
        for l in range(L):
            for a in range(r):
                gs = max(gs, abs(precision_times(V, h, w, l, a)))
        return gs

    @jit
    def direction(H: Array, g: Array, delta: float, M: Array, y: Array, d: Array) -> bool:
        """The rank-r rule: d = -(H + mu I)^{-1} g by the shifted Cholesky (``direction_row``, shift delta)."""
        return direction_row(H, g, delta, M, y, d)


@jit
def newton_row(
    h: Array, w: Array, V: Array, T: Array, s2: Array, shift: float, max_step: float, xtol: float, max_iter: int,
    max_halvings: int, S: Array, g: Array, H: Array, M: Array, d: Array, y: Array, trial: Array, g2: Array,
    H2: Array, known: Array, kok: Array, merge: float,
) -> tuple[float, bool, int, int]:
    """Safeguarded Newton descent on P of one row, h (n,) updated in place: (value, converged, iterations, merged).

    As :func:`attnphase.numerics.prox.descent.descend` (see there): d from :func:`direction` (``shift``: its
    scale, 1 / V_min or delta), step capped at ``max_step``, Armijo backtracking (the full step is tried with
    the derivatives at the trial point, which the next iteration then reuses).  ``merged`` is -1, or, with
    ``merge > 0``, the j with ``kok[j]`` (a minimum ``known[j]`` an earlier start converged to) that h came
    within ``merge`` of (relative, per entry) where H is positive definite: the descent stops there and the
    caller takes that minimum.  S, g, H, M, d, y, trial, g2, H2 are work arrays.
    """
    f = value_grad_hess(h, w, V, T, s2, S, g, H)
    it = 0
    while it < max_iter:
        it += 1
        pd = direction(H, g, shift, M, y, d)
        if pd and merge > 0.0:
            for j in range(kok.shape[0]):
                if kok[j]:
                    close = True
                    for k in range(n):
                        if abs(h[k] - known[j, k]) > merge * (1.0 + abs(known[j, k])):
                            close = False
                            break
                    if close:
                        return f, True, it, j
        dn = 0.0
        nrm2 = 0.0
        for k in range(n):
            if abs(d[k]) > dn or k == 0:
                dn = abs(d[k])
            nrm2 = nrm2 + d[k] * d[k] if k else d[k] * d[k]
        scale = min(1.0, max_step / max(np.sqrt(nrm2), 1e-300))
        slope = 0.0
        hmax = 0.0
        for k in range(n):
            d[k] *= scale
            slope = slope + g[k] * d[k] if k else g[k] * d[k]
            if abs(h[k]) > hmax or k == 0:
                hmax = abs(h[k])
        near = (dn < xtol * (1.0 + hmax)) or (abs(slope) <= FLAT_REL * abs(f))
        tiny = pd and near
        accepted = False
        fresh = False  # g, H already hold the derivatives at the new h
        if tiny:
            for k in range(n):
                h[k] = h[k] + d[k]
            accepted = True
        else:
            # the full step first, with its derivatives (kept if Armijo accepts it: the usual case)
            for k in range(n):
                trial[k] = h[k] + d[k]
            ft = value_grad_hess(trial, w, V, T, s2, S, g2, H2)
            if ft <= f + ARMIJO * slope:
                for k in range(n):
                    h[k] = trial[k]
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
                        trial[k] = h[k] + t * d[k]
                    ft = value_only(trial, w, V, T, s2, S)
                    if ft <= f + ARMIJO * t * slope:
                        for k in range(n):
                            h[k] = trial[k]
                        accepted = True
                        break
                    t *= 0.5
        if not fresh:
            f = value_grad_hess(h, w, V, T, s2, S, g, H)
        gmax = 0.0
        for k in range(n):
            if abs(g[k]) > gmax or k == 0:
                gmax = abs(g[k])
        stalled = (not accepted) and gmax <= STALL_REL * (1.0 + (stall_scale(h, w, V) + 1e-300))
        if tiny or stalled:
            return f, True, it, -1
        if not accepted:
            return f, False, it, -1
    return f, False, it, -1


@jit(parallel=parallel)
def rows(
    starts: Array, w: Array, V: Array, T: Array, s2: Array, shift: Array, order: Array, perms: Array, refine: bool,
    max_step: float, xtol: float, max_iter: int, max_halvings: int, h: Array, value: Array, conv: Array, iters: Array,
    best: Array, merge: float,
) -> None:
    """Newton from every start of every node (``starts`` (N, S0, n), run in the order ``order``, a permutation
    of 0..S0-1); with ``refine``, then from the mirror image -h_b of the best minimum h_b and its token
    permutations ``perms`` (P, L).  Per node i: w[i] (n,), V[i] (the V_l, or the V_l^{-1}), T[i], s2[i] and
    the direction's scale shift[i].

    Writes h (N, S, n), value, conv, iters (N, S) and best (N,): the lowest converged value per node, the
    first start run on ties.  With ``merge`` > 0 a start that comes near a minimum an earlier one converged to
    takes that minimum (:func:`newton_row`), recorded with 0 iterations.
    """
    N, n0 = starts.shape[0], starts.shape[1]
    n_all = n0 + 1 + perms.shape[0] if refine else n0
    for blk in prange((N + BLOCK - 1) // BLOCK):
        S, H, M, H2 = np.empty((L, L)), np.empty((n, n)), np.empty((n, n)), np.empty((n, n))
        g, d, y, trial, hb, g2 = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        kok = np.zeros(n_all, dtype=np.bool_)
        for i in range(blk * BLOCK, min(N, (blk + 1) * BLOCK)):
            kok[:] = False
            b, bv = 0, inf
            for q in range(n_all):
                if q < n0:
                    s = order[q]
                    for k in range(n):
                        h[i, s, k] = starts[i, s, k]
                else:
                    s = q
                    if s == n0:  # refinement pass from the best minimum of the first
                        for k in range(n):
                            hb[k] = h[i, b, k]
                        for k in range(n):
                            h[i, s, k] = -hb[k]
                    else:  # token permutation: block l of the row takes block perm[l] of h_b
                        for l in range(L):
                            for a in range(r):
                                h[i, s, l * r + a] = hb[perms[s - n0 - 1, l] * r + a]
                v, c, its, j = newton_row(h[i, s], w[i], V[i], T[i], s2[i], shift[i], max_step, xtol, max_iter,
                                          max_halvings, S, g, H, M, d, y, trial, g2, H2, h[i], kok, merge)
                if j >= 0:
                    for k in range(n):
                        h[i, s, k] = h[i, j, k]
                    v = value[i, j]
                    its = 0
                value[i, s] = v
                conv[i, s] = c
                iters[i, s] = its
                kok[s] = c
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
    N, m = conv.shape
    for i in prange(N):
        bi = best[i]
        for j in range(m):
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
    row of the node if none converged; -1 if the node has no row) -- selection.best_per_node."""
    bv = np.full(best.shape[0], inf)
    best[:] = -1
    for q in range(node.shape[0]):
        i = node[q]
        v = value[q] if conv[q] else inf
        if best[i] < 0 or v < bv[i]:
            best[i] = q
            bv[i] = v
