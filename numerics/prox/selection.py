"""The choice of the global minimiser among a node's Newton minima (:func:`best_per_node`: least converged value,
first start on ties), and the distinct minima kept for the next, nearby solve to polish (:func:`distinct_minima`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from attnphase.numerics.prox.newton_steps import ProxResult


@dataclass(frozen=True, eq=False)
class Candidates:
    """Distinct local minima per node, kept to warm-start the next proximal solve: ``node`` (K,) and ``h`` (K, L) or
    (K, L, r)."""

    node: np.ndarray
    h: np.ndarray


def best_per_node(idx: np.ndarray, res: ProxResult, N: int, *, lowest_unconverged: bool = False) -> np.ndarray:
    """Index of the lowest converged value for each node 0..N-1 among the rows ``res`` (node ``idx``), the first row on
    ties; a node none of whose rows converged gets its first row, or with ``lowest_unconverged`` (rows in blocks of one
    start per node) its row of least value."""
    vals = np.where(res.converged, res.value, np.inf)
    if idx.size and idx.size % N == 0 and np.array_equal(idx.reshape(-1, N), np.broadcast_to(np.arange(N), (idx.size // N, N))):
        # rows in blocks of one start per node (a full search): the sort's first row, without the sort
        v = vals.reshape(-1, N)
        nan = np.isnan(v)
        least = ~nan & (v == np.where(nan, np.inf, v).min(axis=0))
        best = np.where(least.any(axis=0), least.argmax(axis=0), 0)
        if lowest_unconverged:
            none = ~np.isfinite(v[best, np.arange(N)])
            best[none] = np.argmin(res.value.reshape(-1, N)[:, none], axis=0)
        return best * N + np.arange(N)
    if lowest_unconverged:
        raise ValueError("lowest_unconverged needs the rows in blocks of one start per node")
    if idx.size and np.all(idx[1:] >= idx[:-1]):
        # rows already grouped by node (polishing candidates): per-node minimum without a sort
        starts = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
        counts = np.diff(np.r_[starts, idx.size])
        rows = np.flatnonzero(vals == np.repeat(np.minimum.reduceat(vals, starts), counts))
        best = rows[np.r_[True, idx[rows][1:] != idx[rows][:-1]]]
    else:
        order = np.lexsort((vals, idx))
        first = np.ones(order.size, dtype=bool)
        first[1:] = idx[order][1:] != idx[order][:-1]
        best = order[first]
    if best.size != N:
        raise RuntimeError("global_prox lost a node: every node needs at least one start")
    return best


def distinct_minima(idx: np.ndarray, res: ProxResult, best: np.ndarray) -> tuple[ProxResult, Candidates]:
    """The winners ``best`` of all starts ``res`` (node ``idx``), and the distinct converged minima per node
    (minimisers equal when rounded to 6 decimals count once; sorted by node, then by the rounded minimiser)."""
    hr = np.round(res.h, 6) + 0.0  # + 0.0 turns -0.0 into 0.0
    # most starts end on their node's winner: drop those first (cheap), then deduplicate the rest
    keep = res.converged & ~np.all(hr == hr[best][idx], axis=1)
    keep[best] = True
    key = np.concatenate([idx[:, None].astype(float), hr], axis=1)
    _, uniq = np.unique(key[keep], axis=0, return_index=True)
    sel = np.flatnonzero(keep)[uniq]
    out = ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations)
    return out, Candidates(idx[sel], res.h[sel])
