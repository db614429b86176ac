"""The proximal map of the channel, solved for all quadrature nodes in one vectorised call.

    h_hat(w, T) = argmin_h  P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)      (docs/model.md section 3)

The loss is bounded but not convex in h, so ``P`` can have several local minima.
The descent itself is :func:`attnphase.numerics.prox.descent.descend` (numpy, torch) and the compiled
template :mod:`attnphase.numerics.prox.rows`; here are the starts and the selection.  Three modes:

* ``global_prox`` -- the GLOBAL minimiser: safeguarded Newton from several starting
  points per node (``w``, ``0``, ``+-w/2``, ``-w``, for L = 2 the exact zeros of the
  loss ``S(h) = T``), then from the mirror image and token permutations of the best
  minimum, keeping the lowest value; or, between full searches, a polish of the
  distinct minima found last time (``Candidates``).
* ``local_prox`` -- the paper's own choice: the local minimiser reached from
  ``h = 0`` by the same descent method;
* ``aligned_prox`` -- the local minimiser reached from the loss zero aligned with the
  teacher field (L = 2): the basin gradient descent from the semantic start keeps
  (both in :mod:`attnphase.numerics.prox.local_prox`).

The value, gradient and Hessian of ``P`` come from the generated kernels
``kernels.prox_value_grad_hess`` / ``kernels.prox_value`` of
:mod:`attnphase.theory.kernels`; nothing here spells the loss out.

Backends (argument ``backend`` of every solver, one of
:data:`attnphase.numerics.config.BACKENDS`, normally ``SolverConfig.backend``): ``"numpy"`` runs
the whole batch as numpy operations; ``"numba"`` runs the same algorithm one node at a time,
compiled (:mod:`attnphase.numerics.prox.compiled`: the template
:mod:`attnphase.numerics.prox.rows` on the one-point twins of the same generated kernels;
equal to the numpy results to rounding); ``"auto"`` (the default) is numba when it can be
imported, else numpy; ``"torch"`` runs the Newton descent batched on a torch device (a GPU when
present; :mod:`attnphase.numerics.prox.torch_backend`) and the starts and selection here, on its results.
:func:`~attnphase.numerics.prox.backends.resolve_backend` decides; ``$ATTNPHASE_PROX_BACKEND``
(:func:`attnphase.numerics.config.backend_override`) replaces ``"auto"`` only, e.g. to spare a
short run the one-off JIT compilation (about 3-7 s per L, once per machine: it is cached on
disk).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.prox import compiled as prox_compiled
from attnphase.numerics.prox.backends import resolve_backend
from attnphase.numerics.prox.descent import FieldObjective, descend
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.theory.correlated_kernels import CorrelatedKernels


def newton_minimize(
    kernels: Any,
    h0: np.ndarray,
    w: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    sigma2: np.ndarray,
    *,
    xtol: float = 1e-10,
    max_iter: int = 60,
    max_halvings: int = 30,
    backend: str = "auto",
) -> ProxResult:
    """Safeguarded (modified) Newton descent on P(h) for every row of ``h0`` (:func:`attnphase.numerics.prox.descent.descend`).

    Direction d = -(H + mu I)^{-1} grad, with mu = 0 where the Hessian H is positive
    definite and mu = -lambda_min(H) + SHIFT_REL / V_min otherwise; the step is capped at
    ``max_step(V)`` and chosen by Armijo backtracking, so P decreases monotonically (the
    rules and their constants: :mod:`attnphase.numerics.prox.newton_steps`).  A node
    has converged when H is positive definite and either the pure Newton step is below
    ``xtol (1 + |h|)`` or its predicted decrease is below the rounding of P (the step
    is then taken: quadratic convergence makes the result accurate to rounding), or when no step decreases P any more and the gradient is
    at rounding level.  Only unconverged nodes are iterated (active set).

    ``backend``: see the module doc (the compiled backend iterates each row on its own; the torch
    backend iterates the batch on its device, :func:`attnphase.numerics.prox.torch_backend.newton_minimize`).
    """
    resolved = resolve_backend(backend, kernels)
    if resolved == "torch":
        from attnphase.numerics.prox import torch_backend as prox_torch

        return prox_torch.newton_minimize(
            kernels, h0, w, V, T, sigma2, xtol=xtol, max_iter=max_iter, max_halvings=max_halvings
        )
    if resolved == "numba":
        hc, vc, cc, itc = prox_compiled.newton_rows(
            kernels, h0, w, V, T, sigma2, xtol=xtol, max_iter=max_iter, max_halvings=max_halvings
        )
        return ProxResult(hc, vc, cc, itc)
    N, L = np.shape(h0)
    Vb = np.ascontiguousarray(np.broadcast_to(V, (N, L)))
    objective = FieldObjective(np, kernels.prox_value_grad_hess, kernels.prox_value, w, Vb, T, sigma2)
    h, value, converged, it = descend(np, objective, np.asarray(h0, dtype=float), cap=steps.max_step(V), xtol=xtol,
                                      max_iter=max_iter, max_halvings=max_halvings)
    return ProxResult(h, value, converged, it)


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


@dataclass(frozen=True, eq=False)
class Candidates:
    """Distinct local minima found per node, kept to warm-start the next proximal solve.

    Attributes:
        node: index of the node each candidate belongs to, shape (K,).
        h: the candidate minimisers, shape (K, L).
    """

    node: np.ndarray
    h: np.ndarray


def starting_points(w: np.ndarray, T: np.ndarray, mixing: np.ndarray | None = None) -> list[np.ndarray]:
    """Deterministic multi-start set for the global search: w, 0, +-w/2, -w and, for L = 2, +-zeros of the loss.

    The loss is even in h, so the mirror images -w, -w/2 seed the mirror basin. For a whitened
    correlated-token model (``mixing`` B, fields h = B v; docs/model.md section 7) the zeros of the
    loss in v are B^-1 h_z.
    """
    starts = [w, np.zeros_like(w), 0.5 * w, -0.5 * w, -w]
    if w.shape[1] == 2:
        hz, _ = loss_zeros_L2(T)
        if mixing is not None:
            hz = np.linalg.solve(mixing, hz.T).T
        starts += [hz, -hz]
    return starts


def _mixing(kernels: Any) -> np.ndarray | None:
    """The mixing B of correlated-token kernels (fields h = B v), None for the independent-token ones."""
    return kernels.B if isinstance(kernels, CorrelatedKernels) else None


def _best_per_node(idx: np.ndarray, res: ProxResult, N: int) -> np.ndarray:
    """Index of the lowest converged value for each node 0..N-1 (sort by (node, value), first of each)."""
    vals = np.where(res.converged, res.value, np.inf)
    if idx.size and idx.size % N == 0 and np.array_equal(idx.reshape(-1, N), np.broadcast_to(np.arange(N), (idx.size // N, N))):
        # rows in blocks of one start for every node (a full search): the first row, in block
        # order, of each node's least value, NaN last -- the sort's first row, without the sort
        v = vals.reshape(-1, N)
        nan = np.isnan(v)
        least = ~nan & (v == np.where(nan, np.inf, v).min(axis=0))
        return np.where(least.any(axis=0), least.argmax(axis=0), 0) * N + np.arange(N)
    if idx.size and np.all(idx[1:] >= idx[:-1]):
        # rows already grouped by node (polishing candidates): per-node minimum without a sort
        starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
        counts = np.diff(np.r_[starts, idx.size])
        rows = np.flatnonzero(vals == np.repeat(np.minimum.reduceat(vals, starts), counts))
        best = rows[np.r_[True, idx[rows][1:] != idx[rows][:-1]]]
        if best.size != N:
            raise RuntimeError("global_prox lost a node: every node needs at least one start")
        return best
    order = np.lexsort((vals, idx))
    first = np.ones(order.size, dtype=bool)
    first[1:] = idx[order][1:] != idx[order][:-1]
    best = order[first]
    if best.size != N:
        raise RuntimeError("global_prox lost a node: every node needs at least one start")
    return best


def global_prox(
    kernels: Any,
    w: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    sigma2: np.ndarray,
    *,
    candidates: Candidates | None = None,
    full_search: bool = True,
    backend: str = "auto",
) -> tuple[ProxResult, Candidates]:
    """Global minimiser of P(h) at every node: Newton from every start, lowest value wins.

    With ``full_search`` the starts are :func:`starting_points`, followed by a
    refinement pass from the mirror image and the token permutations of the best
    minimum found (the full search is a function of the node alone, independent of
    any history); without it only the candidates (the distinct minima of a previous,
    nearby solve) are polished -- a few Newton steps each.  The state evolution uses
    the cheap mode between periodic full searches and always verifies a converged
    fixed point with a full search.  Returns the result and the distinct local minima
    found by a full search (the next calls' candidates); a polish returns the candidates
    it was given, unchanged (polishing can merge basins, so its own minima would lose some).

    Ties (mirror-image minima of equal value at symmetric nodes) are broken by the
    start order; the state evolution removes their effect by symmetrising the hat
    overlaps over the symmetry group of the current state.

    ``backend``: see the module doc; all give the same result and candidates (to rounding). The
    torch backend runs the two Newton passes on its device and everything else here.
    """
    N, L = w.shape
    resolved = resolve_backend(backend, kernels)
    if resolved == "numba":
        return _global_prox_compiled(kernels, w, V, T, sigma2, candidates, full_search)
    idx_parts, h_parts = [], []
    if full_search or candidates is None:
        for st in starting_points(w, T, _mixing(kernels)):
            idx_parts.append(np.arange(N))
            h_parts.append(st)
    else:
        idx_parts.append(candidates.node)
        h_parts.append(candidates.h)
    idx = np.concatenate(idx_parts)
    h0 = np.concatenate(h_parts, axis=0)
    res = newton_minimize(kernels, h0, w[idx], V, T[idx], sigma2, backend=resolved)
    if full_search or candidates is None:
        # refinement pass: the loss is even in h and permutation-equivariant, so the mirror
        # image and the token permutations of the best minimum found seed basins the first
        # pass can miss (asymmetric A, L > 2)
        best = _best_per_node(idx, res, N)
        hb = res.h[best]
        extra = [-hb] + [hb[:, list(p)] for p in itertools.permutations(range(L)) if list(p) != list(range(L))]
        idx2 = np.concatenate([np.arange(N)] * len(extra))
        res2 = newton_minimize(kernels, np.concatenate(extra, axis=0), w[idx2], V, T[idx2], sigma2, backend=resolved)
        idx = np.concatenate([idx, idx2])
        res = ProxResult(
            np.concatenate([res.h, res2.h]), np.concatenate([res.value, res2.value]),
            np.concatenate([res.converged, res2.converged]), max(res.iterations, res2.iterations),
        )
    best = _best_per_node(idx, res, N)
    if not (full_search or candidates is None):
        return ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations), candidates
    return _select(idx, res, best)


def _select(idx: np.ndarray, res: ProxResult, best: np.ndarray) -> tuple[ProxResult, Candidates]:
    """The winners ``best`` of all starts ``res`` (node ``idx``), and the distinct converged minima per node."""
    # distinct converged minima per node, for warm starts
    hr = np.round(res.h, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    # most starts end on their node's winner: drop those first (cheap), then deduplicate the rest
    keep = res.converged & ~np.all(hr == hr[best][idx], axis=1)
    keep[best] = True
    key = np.concatenate([idx[:, None].astype(float), hr], axis=1)
    _, uniq = np.unique(key[keep], axis=0, return_index=True)
    sel = np.flatnonzero(keep)[uniq]
    out = ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations)
    return out, Candidates(idx[sel], res.h[sel])


def _global_prox_compiled(
    kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
    candidates: Candidates | None, full_search: bool,
) -> tuple[ProxResult, Candidates]:
    """:func:`global_prox` on the compiled backend (same starts, same order, same selection)."""
    N, L = w.shape
    if not full_search and candidates is not None:
        idx = candidates.node
        res = newton_minimize(kernels, candidates.h, w[idx], V, T[idx], sigma2, backend="numba")
        best = prox_compiled.best_rows(kernels, idx, res.value, res.converged, N)
        return ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations), candidates
    starts = np.stack(starting_points(w, T, _mixing(kernels)), axis=1)
    h, value, conv, iters, best = prox_compiled.global_rows(kernels, starts, w, V, T, sigma2)
    # the distinct minima per node, as _select finds them (the same rows, in the same order:
    # by node, then by the rounded minimiser)
    keep = prox_compiled.distinct_minima(kernels, h, conv, best)
    node, start = np.nonzero(keep)
    hk = h[node, start]
    hr = np.round(hk, 6) + 0.0
    order = np.lexsort(tuple(hr[:, k] for k in range(L - 1, -1, -1)) + (node,))
    nodes = np.arange(N)
    out = ProxResult(h[nodes, best], value[nodes, best], conv[nodes, best], int(iters.max()) if N else 0)
    return out, Candidates(node[order], hk[order])
