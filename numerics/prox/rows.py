"""Template of the compiled proximal solver: the Newton descent of :mod:`attnphase.numerics.prox.descent` one row at a
time, on P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T) (docs/model.md sections 3, 7).

Imported only as a copy per (L, r, kernels, parallel) by :func:`attnphase.numerics.prox.compiled.instance`, with a
:class:`~attnphase.numerics.prox.compiled.Binding` as ``__spec__.loader_state``.  A row's unknowns are h flattened
to n = L r entries.  Chosen once per instance: the rank-1 kernels (V_l scalars, the generated P, the
eigenvalue-shift direction; the whitened correlated-token ones in the variables v, :func:`attention`) or the
rank-r ones (V_l^{-1} blocks, the generated loss plus :func:`quadratic`, the shifted Cholesky direction).
"""

from __future__ import annotations

import functools
from typing import Any

import numba
import numpy as np

from attnphase.numerics.prox.newton_steps import ARMIJO, FLAT_REL, STALL_REL
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


#: The one-point algebra of this (L, r) (the template :mod:`attnphase.numerics.prox.row_algebra`).
softmax = _binding.algebra.softmax
gram_softmax = _binding.algebra.gram_softmax
unpack = _binding.algebra.unpack
eigen_shift_direction = _binding.algebra.eigen_shift_direction


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
    """Safeguarded Newton descent on P of one row, h (n,) updated in place, as
    :func:`attnphase.numerics.prox.descent.descend` (the full step tried with its derivatives, reused when accepted):
    (value, converged, iterations, merged).  ``merged``: -1, or with ``merge > 0`` the j of a known minimum
    ``known[j]`` (``kok[j]``) h came within ``merge`` of where H is positive definite (the caller takes it).
    S, g, H, M, d, y, trial, g2, H2 are work arrays."""
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
        if tiny or stalled or not accepted:  # converged, or no step decreases P
            return f, tiny or stalled, it, -1
    return f, False, it, -1


@jit(parallel=parallel)
def rows(
    starts: Array, w: Array, V: Array, T: Array, s2: Array, shift: Array, order: Array, count: Array, perms: Array,
    refine: bool, max_step: float, xtol: float, max_iter: int, max_halvings: int, h: Array, value: Array, conv: Array,
    iters: Array, best: Array, merge: float,
) -> None:
    """Newton from the first count[i] starts of every node i (``starts`` (N, S0, n) in the order ``order``; a start
    past count[i] is recorded unconverged, value inf, 0 iterations); with ``refine`` then from the refinement starts
    of the best minimum (``perms`` (P, L) the token permutations).  Per node i: w[i], V[i] (the V_l, or the
    V_l^{-1}), T[i], s2[i] and the direction's scale shift[i].  Writes h (N, S, n), value, conv, iters (N, S) and
    best (N,) (the lowest converged value, the first start on ties); a start merged into a known minimum
    (:func:`newton_row`) is recorded with 0 iterations."""
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
                    if q >= count[i]:  # not run at this node
                        value[i, s] = inf
                        conv[i, s] = False
                        iters[i, s] = 0
                        kok[s] = False
                        continue
                else:
                    s = q
                    if s == n0:  # refinement pass from the best minimum of the first
                        for k in range(n):
                            hb[k] = h[i, b, k]
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
    """keep[i, j]: row j of node i is kept as a distinct minimum -- the winner's own row, or a converged row that
    differs (rounded to 6 decimals) from the winner and from every kept row before it (as
    :func:`attnphase.numerics.prox.selection.distinct_minima`, which keeps the first of equal rows)."""
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
