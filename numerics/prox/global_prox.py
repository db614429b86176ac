"""The proximal map of the channel at all quadrature nodes in one vectorised call, for every rank.

    h_hat(w, T) = argmin_h  P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),   h in R^{L x r}
                                                   (docs/model.md sections 3, 7; V_l = sigma_l^2 V0)

:func:`global_prox` finds the global minimiser per node (docs/method.md section 3): the Newton descent
(:func:`newton_minimize`) from the starts of :mod:`attnphase.numerics.prox.starts`, the lowest converged value
winning (:mod:`attnphase.numerics.prox.selection`), or a polish of the minima found last time.  Fields are vectors
(N, L) at r = 1 (the fast path: the refinement pass, every distinct minimum kept, the compiled and torch backends)
or matrices (N, L, r).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.prox.backends import resolve_backend
from attnphase.numerics.prox.descent import descend
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.prox.objective import BlockObjective, FieldObjective, step_constants
from attnphase.numerics.prox.selection import Candidates, best_per_node, distinct_minima
from attnphase.numerics.prox.starts import axis_starts, refinement_starts, starting_points

#: The descent's step tolerance (relative) and Armijo trial steps, and its iteration limit for vector (r = 1)
#: and matrix fields (defaults of :func:`newton_minimize`, and what :func:`global_prox` runs on every backend).
XTOL, MAX_HALVINGS = 1e-10, 30
MAX_ITER_FIELDS, MAX_ITER_BLOCKS = 60, 80


def check_fields(kernels: Any, h: np.ndarray) -> None:
    """ValueError unless ``h`` is a batch of fields the ``kernels`` evaluate P at: vectors (N, L) for kernels with the
    generated P (r = 1), matrices (N, L, r) for kernels of rank r."""
    vectors = np.ndim(h) == 2 and getattr(kernels, "r", 1) == 1 and hasattr(kernels, "prox_value_grad_hess")
    if not (vectors or np.ndim(h) == 3 and getattr(kernels, "r", None) == np.shape(h)[2]):
        raise ValueError(f"fields of shape {np.shape(h)} do not fit {type(kernels).__name__} (rank "
                         f"{getattr(kernels, 'r', '?')}): vector fields (N, L) need the r = 1 kernels with the "
                         f"generated P, matrix fields (N, L, r) kernels of rank r")


def newton_minimize(kernels: Any, h0: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, *,
                    xtol: float = XTOL, max_iter: int | None = None, max_halvings: int = MAX_HALVINGS,
                    backend: str = "auto") -> ProxResult:
    """Safeguarded Newton descent on P(h) from every row of ``h0`` (:func:`attnphase.numerics.prox.descent.descend`;
    the step rules: :mod:`attnphase.numerics.prox.newton_steps`): a :class:`ProxResult`.

    Rows h0, w (N, L) at r = 1 with ``V`` the variances V_l (L,), or (N, L, r) with ``V`` the precisions V_l^{-1}
    (L, r, r).  ``max_iter`` None: :data:`MAX_ITER_FIELDS` or :data:`MAX_ITER_BLOCKS`.  ``backend``: any of
    :data:`attnphase.numerics.config.BACKENDS` (torch at r = 1 only)."""
    h0 = np.asarray(h0, dtype=float)
    check_fields(kernels, h0)
    resolved = resolve_backend(backend, kernels)
    if h0.ndim == 3:
        return _newton_blocks(kernels, h0, w, V, T, sigma2, xtol, MAX_ITER_BLOCKS if max_iter is None else max_iter,
                              max_halvings, resolved)
    max_iter = MAX_ITER_FIELDS if max_iter is None else max_iter
    if resolved == "torch":
        from attnphase.numerics.prox import torch_backend as prox_torch

        return prox_torch.newton_minimize(kernels, h0, w, V, T, sigma2, xtol=xtol, max_iter=max_iter,
                                          max_halvings=max_halvings)
    if resolved == "numba":  # the compiled search from one start per node, without the refinement pass
        h, value, conv, iters, _ = prox_compiled.global_rows(kernels, h0[:, None, :], w, V, T, sigma2, refine=False,
                                                             xtol=xtol, max_iter=max_iter, max_halvings=max_halvings)
        return ProxResult(h[:, 0], value[:, 0], conv[:, 0], int(iters.max()) if len(h0) else 0)
    N, L = np.shape(h0)
    Vb = np.ascontiguousarray(np.broadcast_to(V, (N, L)))
    objective = FieldObjective(np, kernels.prox_value_grad_hess, kernels.prox_value, w, Vb, T, sigma2)
    h, value, converged, it = descend(np, objective, h0, cap=steps.max_step(V), xtol=xtol,
                                      max_iter=max_iter, max_halvings=max_halvings)
    return ProxResult(h, value, converged, it)


def _newton_blocks(k: Any, h0: np.ndarray, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                   xtol: float, max_iter: int, max_halvings: int, backend: str) -> ProxResult:
    """:func:`newton_minimize` on matrix fields h0 (N, L, r), precisions Vinv (L, r, r), on a resolved backend."""
    delta, max_step = step_constants(Vinv)
    if backend == "numba":
        h, value, conv, iters = prox_compiled.search_rows(
            k, h0[None], w, Vinv, T, sigma2, delta, max_step, np.zeros(1, dtype=np.int64), 0.0, xtol=xtol,
            max_iter=max_iter, max_halvings=max_halvings)
        return ProxResult(h[0], value[0], conv[0], int(iters.max()) if iters.size else 0)
    N, L, r = h0.shape
    h, value, converged, it = descend(np, BlockObjective(k, w, Vinv, T, sigma2, delta), h0.reshape(N, L * r),
                                      cap=max_step, xtol=xtol, max_iter=max_iter, max_halvings=max_halvings)
    return ProxResult(h.reshape(N, L, r), value, converged, it)


def global_prox(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                hstar: np.ndarray | None = None, *, candidates: Candidates | None = None, full_search: bool = True,
                frozen: bool = False, backend: str = "auto") -> tuple[ProxResult, Candidates]:
    """Global minimiser of P(h) at every node: Newton from every start, lowest converged value wins, the first
    start on ties.

    Fields w (N, L) with variances V (L,) (r = 1), or w (N, L, r) with the r x r V0 and the teacher's fields
    ``hstar`` (N, L, r*); T (N, L, L), sigma2 (L,).  With ``full_search`` the starts are
    :func:`~attnphase.numerics.prox.starts.starting_points` (at r = 1 then, at nodes with a large field,
    :func:`~attnphase.numerics.prox.starts.axis_starts`, then the refinement pass; on matrix fields the
    ``candidates`` too, run first); without it only the ``candidates`` are polished (on matrix fields from w too,
    unless ``frozen``: then every node stays in the basin of its candidate, as at r = 1).

    Returns the result and the candidates of the next calls: after a full search every distinct minimum per node at
    r = 1, the winner of each node on matrix fields; a polish returns the candidates it was given.  A node none of
    whose starts converged gets its first start's end point at r = 1, its least unconverged value on matrix fields."""
    check_fields(kernels, w)
    if w.ndim == 3:
        return _global_prox_blocks(kernels, w, V, T, sigma2, hstar, candidates, full_search,
                                   matrix_backend(backend, kernels), frozen)
    resolved = resolve_backend(backend, kernels)
    N, L = w.shape
    if not full_search and candidates is not None:
        idx = candidates.node
        res = newton_minimize(kernels, candidates.h, w[idx], V, T[idx], sigma2, backend=resolved)
        best = best_per_node(idx, res, N)
        return ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations), candidates
    if resolved == "numba":
        return _global_prox_compiled(kernels, w, V, T, sigma2)
    idx, res = _descend_from(kernels, starting_points(w, T, kernels=kernels), w, V, T, sigma2, resolved)
    axes, large = axis_starts(w, kernels)
    if large.any():  # w with one token's field zeroed, at the nodes with a large field (after every other start)
        sel = np.flatnonzero(large)
        idx_a, res_a = _descend_from(kernels, [a[sel] for a in axes], w[sel], V, T[sel], sigma2, resolved)
        idx, res = np.concatenate([idx, sel[idx_a]]), _joined(res, res_a)
    # refinement pass (starts.refinement_starts) from the best minimum found
    idx2, res2 = _descend_from(kernels, refinement_starts(res.h[best_per_node(idx, res, N)]), w, V, T, sigma2,
                               resolved)
    idx, res = np.concatenate([idx, idx2]), _joined(res, res2)
    return distinct_minima(idx, res, best_per_node(idx, res, N))


def matrix_backend(backend: str, kernels: Any) -> str:
    """The backend a descent on matrix fields runs on: ``backend`` resolved, torch (vector fields only; also
    $ATTNPHASE_PROX_BACKEND=torch) replaced by numba where it imports, else numpy; TypeError for an explicit
    ``backend="torch"``."""
    resolved = resolve_backend(backend, kernels)
    if resolved != "torch":
        return resolved
    if backend == "torch":
        raise TypeError("backend='torch' runs vector fields (N, L) only; matrix fields need numba or numpy")
    return "numba" if prox_compiled.available() else "numpy"


def _joined(a: ProxResult, b: ProxResult) -> ProxResult:
    """The rows of ``a``, then those of ``b``."""
    return ProxResult(np.concatenate([a.h, b.h]), np.concatenate([a.value, b.value]),
                      np.concatenate([a.converged, b.converged]), max(a.iterations, b.iterations))


def _descend_from(kernels: Any, starts: list[np.ndarray], w: np.ndarray, V: np.ndarray, T: np.ndarray,
                  sigma2: np.ndarray, backend: str) -> tuple[np.ndarray, ProxResult]:
    """The descent from every start in one batch, in blocks of one start per node: (node of each row, result)."""
    idx = np.tile(np.arange(w.shape[0]), len(starts))
    return idx, newton_minimize(kernels, np.concatenate(starts, axis=0), w[idx], V, T[idx], sigma2, backend=backend)


def _global_prox_compiled(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray,
                          sigma2: np.ndarray) -> tuple[ProxResult, Candidates]:
    """:func:`global_prox`'s full search at r = 1 on the compiled backend (same starts, order and selection)."""
    N, L = w.shape
    base = starting_points(w, T, kernels=kernels)
    axes, large = axis_starts(w, kernels)  # run last, at the nodes with a large field
    starts = np.stack(base + axes, axis=1)
    count = np.where(large, len(base) + len(axes), len(base))
    h, value, conv, iters, best = prox_compiled.global_rows(kernels, starts, w, V, T, sigma2, count=count)
    # the distinct minima per node (rows.distinct), in selection.distinct_minima's order: by node, then minimiser
    keep = np.zeros(conv.shape, dtype=np.bool_)
    prox_compiled.instance(kernels).distinct(h, conv, best, keep)
    node, start = np.nonzero(keep)
    hk = h[node, start]
    hr = np.round(hk, 6) + 0.0
    order = np.lexsort(tuple(hr[:, k] for k in range(L - 1, -1, -1)) + (node,))
    nodes = np.arange(N)
    out = ProxResult(h[nodes, best], value[nodes, best], conv[nodes, best], int(iters.max()) if N else 0)
    return out, Candidates(node[order], hk[order])


def _global_prox_blocks(
    kernels: Any, w: np.ndarray, V0: np.ndarray, T: np.ndarray, sigma2: np.ndarray, hstar: np.ndarray | None,
    candidates: Candidates | None, full_search: bool, backend: str, frozen: bool = False,
) -> tuple[ProxResult, Candidates]:
    """:func:`global_prox` on matrix fields w (N, L, r) on a resolved backend: every start run in blocks of one
    per node (the compiled search: a node's starts in one loop, the minima handed in first); a polish runs from
    the candidates and w, or (``frozen``) from the candidates alone."""
    N = w.shape[0]
    if candidates is not None and not np.array_equal(candidates.node, np.arange(N)):
        raise ValueError("on matrix fields the candidates are one minimiser per node, in node order")
    polish = candidates is not None and not full_search
    if polish:
        starts, known = ([candidates.h] if frozen else [candidates.h, w]), 1
    else:
        base = starting_points(w, T, hstar=hstar)
        starts, known = base + ([] if candidates is None else [candidates.h]), len(base)
    # the minima handed in (candidates) run first: the other starts merge into them
    order = np.arange(len(starts)) if polish else np.r_[np.arange(known, len(starts)), np.arange(known)]
    res = matrix_descents(kernels, starts, w, V0, T, sigma2, backend, order)
    best = best_per_node(np.tile(np.arange(N), len(starts)), res, N, lowest_unconverged=True)
    out = ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations)
    return out, candidates if polish else Candidates(np.arange(N), out.h)


def matrix_descents(kernels: Any, starts: list[np.ndarray], w: np.ndarray, V0: np.ndarray, T: np.ndarray,
                    sigma2: np.ndarray, backend: str, order: np.ndarray | None = None) -> ProxResult:
    """The descent on matrix fields w (N, L, r) from each of ``starts`` (each (N, L, r)) on a resolved backend: the
    rows of every start in turn (S N rows, start-major).  On the compiled backend a node's starts run in ``order``
    (default: as given), and a start that comes within ``MERGE_RADIUS`` of a minimum an earlier one converged to
    takes that minimum."""
    N, L, r = w.shape
    S = len(starts)
    Vinv = np.linalg.inv(V0)[None] / np.asarray(sigma2, dtype=float)[:, None, None]
    if backend == "numba":
        delta, max_step = step_constants(Vinv)
        h, value, conv, iters = prox_compiled.search_rows(
            kernels, np.stack(starts), w, Vinv, T, sigma2, delta, max_step, np.arange(S) if order is None else order,
            prox_compiled.MERGE_RADIUS, xtol=XTOL, max_iter=MAX_ITER_BLOCKS, max_halvings=MAX_HALVINGS)
        return ProxResult(h.reshape(S * N, L, r), value.reshape(-1), conv.reshape(-1), int(iters.max()) if N else 0)
    return _descend_from(kernels, starts, w, Vinv, T, sigma2, backend)[1]


def compile_global_prox(kernels: Any, sigma2: np.ndarray, backend: str = "auto") -> None:
    """The proximal map's compiled loops at r = 1 (full search, polish, selection) run once on two nodes, so that numba
    compiles them into its disk cache before a job's workers start; nothing where the cache holds them already or
    ``backend`` does not resolve to numba."""
    if prox_compiled.machine_code_cached(kernels) or resolve_backend(backend, kernels) != "numba":
        return
    L = int(np.asarray(sigma2).size)
    w = np.linspace(-1.0, 1.0, 2 * L).reshape(2, L)
    T = np.full((2, L, L), 1.0 / L)
    res, candidates = global_prox(kernels, w, np.ones(L), T, sigma2, backend="numba")
    global_prox(kernels, w, np.ones(L), T, sigma2, candidates=candidates, full_search=False, backend="numba")
