"""Compiled (numba) twin of the proximal solvers of :mod:`attnphase.numerics.prox`.

The algorithm is that of :func:`~attnphase.numerics.prox.newton_minimize` and
:func:`~attnphase.numerics.prox.global_prox` -- same starts in the same order, same
refinement pass, same regularisation, step cap, Armijo constants and convergence tests,
same tie-breaking (lowest converged value, first start on ties) -- run one node at a
time in a compiled loop instead of as whole-batch numpy operations (whose per-call
overhead and temporaries dominate at N ~ 4096 nodes). The formulas are the generated
one-point kernels of :func:`attnphase.theory.kernels.get_scalar_kernels` (the same sympy
derivation as the numpy kernels), compiled with ``numba.njit``; the softmax S(h) is
computed max-shifted here, exactly as the numpy kernels do. Results agree with the numpy
path to rounding (the exponential and ``pow`` of numba and numpy may differ in the last
bit), not bit for bit.

The loop over nodes is a ``numba.prange`` (compiled with ``parallel=True``) on numba's
default thread count, which is the number of cores this process may run on
(``os.sched_getaffinity``), so it never oversubscribes them; ``NUMBA_NUM_THREADS`` lowers
it. Measured on 2 cores (L = 2, 4096 nodes, benchmarks/bench_kernels.py): serial loop
38 ms, the same loop compiled parallel on 1 thread 30 ms (numba compiles a parfor body
differently; not investigated further), on 2 threads 15 ms. ``ATTNPHASE_NUMBA_PARALLEL=0`` compiles a plain
serial loop instead. All compiled code uses numba's ``error_model="numpy"`` (x / 0 gives
inf or nan as in numpy, never ZeroDivisionError).

The solver is rendered, per (L, cse, parallel), into one module file in the kernel cache
directory (the one-point kernels, a header, and :data:`_SOLVER_SOURCE`) and compiled with
``numba.njit(cache=True)``: numba keeps the machine code beside that file, so only the first
process pays the JIT (about 3-4 s for L = 2); later ones load it (measured: 0.36 s for the
first call of a fresh process). A closure over the kernels could not be cached (numba does not
cache closures, nor functions taking compiled functions as arguments).
Importing this module does not import numba; :func:`available` says whether it can be.
"""

from __future__ import annotations

import hashlib
import itertools
import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np


@lru_cache(maxsize=None)
def available() -> bool:
    """Whether numba can be imported (the compiled backend can be used)."""
    try:
        import numba  # noqa: F401
    except Exception:  # pragma: no cover - depends on the environment
        return False
    return True


def _parallel_default() -> bool:
    return os.environ.get("ATTNPHASE_NUMBA_PARALLEL", "1").strip().lower() in ("1", "true", "yes")


#: Source of the compiled solver: the algorithm of prox.newton_minimize / prox.global_prox, one
#: node per iteration of ``rows``. Rendered by :func:`_compiled` into a module of its own (see there).
_SOLVER_SOURCE = r'''
# ---- the compiled solver (rendered below the one-point kernels and a header binding
# ---- L, parallel, prange, inf, jit, prox_value_grad_hess_1 and loss_1)
@jit
def softmax(h, S):
    # S[l, k] = softmax_k(h_l h_k), max-shifted; max and sum in the order of the numpy kernels
    for l in range(L):
        m = h[l] * h[0]
        for k in range(1, L):
            a = h[l] * h[k]
            if a > m:
                m = a
        for k in range(L):
            S[l, k] = np.exp(h[l] * h[k] - m)
        tot = S[l, 0]
        for k in range(1, L):
            tot += S[l, k]
        for k in range(L):
            S[l, k] /= tot

@jit
def value_grad_hess(h, w, V, T, s2, S, g, H):
    softmax(h, S)
    out = prox_value_grad_hess_1(h, w, V, S, T, s2)
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
def value_only(h, w, V, T, s2, S):
    # as Kernels.prox_value: loss(h, T) + 0.5 * sum_l (h_l - w_l)^2 / V_l
    softmax(h, S)
    q = (h[0] - w[0]) ** 2 / V[0]
    for k in range(1, L):
        q += (h[k] - w[k]) ** 2 / V[k]
    return loss_1(S, T, s2)[0] + 0.5 * q

@jit
def min_eig(H, M):
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
def shifted_cholesky_ok(H, tau, M):
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
def solve(M, g, x):
    """x = M^{-1} g; M is overwritten for L > 2 (Gaussian elimination, partial pivoting)."""
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
def newton_row(h, w, V, T, s2, max_step, xtol, max_iter, max_halvings, S, g, H, M, d, trial):
    """Newton descent of one row, h updated in place; returns (value, converged, iterations)."""
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
        if tiny:
            for k in range(L):
                h[k] = h[k] + d[k]
            accepted = True
        else:
            t = 1.0
            for _ in range(max_halvings):
                for k in range(L):
                    trial[k] = h[k] + t * d[k]
                ft = value_only(trial, w, V, T, s2, S)
                if ft <= f + 1e-4 * t * slope:
                    for k in range(L):
                        h[k] = trial[k]
                    accepted = True
                    break
                t *= 0.5
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
def rows(starts, w, V, T, s2, perms, refine, max_step, xtol, max_iter, max_halvings, h, value, conv, iters, best):
    """Newton from every start of every node; with ``refine``, then from -best and its permutations."""
    N, n0 = starts.shape[0], starts.shape[1]
    n_all = n0 + 1 + perms.shape[0] if refine else n0
    for i in prange(N):
        S, H, M = np.empty((L, L)), np.empty((L, L)), np.empty((L, L))
        g, d, trial, hb = np.empty(L), np.empty(L), np.empty(L), np.empty(L)
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
                                   S, g, H, M, d, trial)
            value[i, s] = v
            conv[i, s] = c
            iters[i, s] = its
            if c and v < bv:
                b, bv = s, v
        best[i] = b


@jit
def _same_rounded(a, b):
    """a and b equal after rounding every entry to 6 decimals (as numpy's round: rint(x 1e6) / 1e6)."""
    for k in range(a.shape[0]):
        if np.rint(a[k] * 1e6) / 1e6 != np.rint(b[k] * 1e6) / 1e6:
            return False
    return True


@jit(parallel=parallel)
def distinct(h, conv, best, keep):
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
def best_rows(node, value, conv, best):
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
'''


@lru_cache(maxsize=None)
def _compiled(L: int, r: int, cse: bool, parallel: bool) -> dict[str, Any]:
    """The compiled solvers for (L, r, cse), from a module rendered once into the kernel cache.

    The module is the one-point kernels' source, a header binding ``L`` and the compile
    options, and :data:`_SOLVER_SOURCE`; its file name carries a hash of the whole text.
    numba compiles it with ``cache=True``, so its machine code is stored beside the file and
    a fresh process loads it instead of compiling (about 3 s for L = 2).  Where the cache
    directory cannot be written, a temporary directory is used (no reuse across processes).
    """
    import importlib.util
    import sys
    import tempfile

    from attnphase.theory.codegen import cache_dir, write_atomic
    from attnphase.theory.kernels import scalar_kernel_source

    header = (
        "import functools\n\nimport numba as nb\nimport numpy as np\n\n"
        f"L = {int(L)}\nparallel = {bool(parallel)}\n"
        "prange = nb.prange if parallel else range\ninf = np.inf\n"
        "# x / 0 gives inf/nan as in numpy, no ZeroDivisionError; machine code cached beside this file\n"
        "jit = functools.partial(nb.njit, error_model='numpy', cache=True)\n"
        "prox_value_grad_hess_1 = jit(prox_value_grad_hess)\nloss_1 = jit(loss)\n"
    )
    source = scalar_kernel_source(L, r, cse) + "\n\n" + header + _SOLVER_SOURCE
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    name = f"prox_solver_L{L}_r{r}_{'cse' if cse else 'nocse'}_{'par' if parallel else 'ser'}_{digest}"
    path = cache_dir() / f"{name}.py"
    if not (path.exists() and path.read_text() == source) and not write_atomic(path, source):
        path = Path(tempfile.mkdtemp(prefix="attnphase-")) / f"{name}.py"
        path.write_text(source)
    modname = f"attnphase._generated.{name}"
    module = sys.modules.get(modname)
    if module is None:
        spec = importlib.util.spec_from_file_location(modname, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[modname] = module  # numba's cache reloads the module by name
        spec.loader.exec_module(module)
    return {"rows": module.rows, "distinct": module.distinct, "best_rows": module.best_rows}


def _rows(x: np.ndarray, N: int, tail: tuple[int, ...]) -> np.ndarray:
    return np.ascontiguousarray(np.broadcast_to(np.asarray(x, dtype=float), (N,) + tail))


def _solvers(kernels: Any, parallel: bool | None) -> dict[str, Any]:
    return _compiled(int(kernels.L), int(kernels.r), bool(kernels.cse), _parallel_default() if parallel is None else parallel)


def newton_rows(
    kernels: Any, h0: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
    *, xtol: float, max_iter: int, max_halvings: int, parallel: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Compiled :func:`~attnphase.numerics.prox.newton_minimize`: (h, value, converged, iterations)."""
    h0 = np.asarray(h0, dtype=float)
    N, L = h0.shape
    h, value, conv, iters, _ = _run(kernels, h0[:, None, :], w, V, T, sigma2, False, xtol, max_iter, max_halvings, parallel)
    return h[:, 0], value[:, 0], conv[:, 0], int(iters.max()) if N else 0


def global_rows(
    kernels: Any, starts: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
    *, xtol: float = 1e-10, max_iter: int = 60, max_halvings: int = 30, parallel: bool | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The full global search of every node: Newton from ``starts`` (N, n0, L), then from the mirror
    image and the token permutations of the best minimum (itertools order, identity left out).

    Returns (h, value, converged, iterations) of every start, shapes (N, n, L) and (N, n) with
    n = n0 + L!, and the index of the winning start per node, shape (N,).
    """
    return _run(kernels, np.asarray(starts, dtype=float), w, V, T, sigma2, True, xtol, max_iter, max_halvings, parallel)


def distinct_minima(kernels: Any, h: np.ndarray, conv: np.ndarray, best: np.ndarray, parallel: bool | None = None) -> np.ndarray:
    """Mask (N, n) of the rows of :func:`global_rows` that are distinct minima of their node."""
    keep = np.zeros(conv.shape, dtype=np.bool_)
    _solvers(kernels, parallel)["distinct"](h, conv, best, keep)
    return keep


def best_rows(kernels: Any, node: np.ndarray, value: np.ndarray, conv: np.ndarray, N: int) -> np.ndarray:
    """Per node 0..N-1, the row of the lowest converged value (first on ties), as prox._best_per_node."""
    best = np.empty(N, dtype=np.int64)
    _solvers(kernels, None)["best_rows"](np.ascontiguousarray(node, dtype=np.int64), value, conv, best)
    if np.any(best < 0):
        raise RuntimeError("global_prox lost a node: every node needs at least one start")
    return best


def _run(
    kernels: Any, starts: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
    refine: bool, xtol: float, max_iter: int, max_halvings: int, parallel: bool | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    N, n0, L = starts.shape
    perms = np.array([p for p in itertools.permutations(range(L)) if list(p) != list(range(L))], dtype=np.int64)
    perms = perms.reshape(-1, L)
    n = n0 + 1 + perms.shape[0] if refine else n0
    max_step = 4.0 * np.sqrt(float(np.max(V))) + 1.0
    h = np.empty((N, n, L))
    value, conv = np.empty((N, n)), np.zeros((N, n), dtype=np.bool_)
    iters, best = np.zeros((N, n), dtype=np.int64), np.zeros(N, dtype=np.int64)
    _solvers(kernels, parallel)["rows"](
        np.ascontiguousarray(starts), _rows(w, N, (L,)), _rows(V, N, (L,)), _rows(T, N, (L, L)),
        _rows(sigma2, N, (L,)), perms, bool(refine), max_step, float(xtol), int(max_iter), int(max_halvings),
        h, value, conv, iters, best,
    )
    return h, value, conv, iters, best
