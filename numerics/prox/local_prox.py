"""The proximal maps that keep a chosen local minimiser per node rather than the global one (docs/method.md
section 3, variants): :func:`local_prox` (``--prox local``, r = 1) and :func:`aligned_prox` (``--prox aligned``, every
rank).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox.global_prox import (check_fields, global_prox, matrix_backend, matrix_descents,
                                                 newton_minimize)
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.prox.selection import best_per_node
from attnphase.numerics.prox.starts import mirrored, mixing, starting_points


def aligned_prox(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, reference: np.ndarray,
                 backend: str = "auto", hstar: np.ndarray | None = None,
                 previous: np.ndarray | None = None, full_search: bool = True) -> ProxResult:
    """The lowest local minimiser of P(h) on the side of the reference field: the basin a student keeps.

        h_hat = argmin { P(h) : h a distinct minimum of the global search's full search, <h, r> > 0 },

    <h, r> = sum_l h_l . r_l, the global minimiser where none has <h, r> > 0.  The state evolution passes r_l =
    E[w_l | h*] = m_l + th0 h*_l / rho0 (:func:`attnphase.theory.channel.student_mean_field`); docs/validation.md
    says why.  Fields w (N, L) at r = 1; matrix fields w (N, L, r) with V the r x r V0, the teacher's ``hstar``, the
    last full search's minimisers ``previous`` (N, L, r) or None, and without ``full_search`` those polished
    (:func:`_aligned_matrix`)."""
    if mixing(kernels) is not None:
        raise ValueError("the aligned proximal map is implemented for independent tokens only (a diagonal C)")
    if np.ndim(w) == 3:
        return _aligned_matrix(kernels, w, V, T, sigma2, reference, backend, hstar, previous, full_search)
    res, minima = global_prox(kernels, w, V, T, sigma2, backend=backend)
    node, h = minima.node, minima.h
    value = kernels.prox_value(h, w[node], V, T[node], sigma2)
    aligned = np.sum(h * reference[node], axis=1) > 0.0
    best = best_per_node(node, ProxResult(h, value, aligned, 0), w.shape[0])  # least aligned value per node
    best = best[aligned[best]]  # nodes none of whose minima is aligned keep the global minimiser
    out_h, out_value = res.h.copy(), res.value.copy()
    out_h[node[best]], out_value[node[best]] = h[best], value[best]
    return ProxResult(out_h, out_value, res.converged, res.iterations)


def _aligned_matrix(kernels: Any, w: np.ndarray, V0: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                    reference: np.ndarray, backend: str, hstar: np.ndarray | None,
                    previous: np.ndarray | None, full_search: bool = True) -> ProxResult:
    """:func:`aligned_prox` on matrix fields: the descents from the global search's starts (and ``previous``) and
    their mirror images -h (:func:`~attnphase.numerics.prox.starts.mirrored`: the loss is even in h, so each minimum
    on one side of r has a counterpart the other side), the lowest converged one with <h, r> > 0 per node, else the
    lowest converged one, else the least unconverged value.  Without ``full_search`` (a polish between full searches,
    as the global map's) the descents start from ``previous`` and its mirror image only."""
    check_fields(kernels, w)
    resolved = matrix_backend(backend, kernels)
    if hstar is None:
        raise ValueError("the aligned proximal map on matrix fields needs the teacher's fields hstar")
    if not full_search and previous is not None:
        starts = [previous, -previous]
    else:
        starts = mirrored(starting_points(w, T, hstar=hstar) + ([] if previous is None else [previous]))
    res = matrix_descents(kernels, starts, w, V0, T, sigma2, resolved)
    N = w.shape[0]
    node = np.tile(np.arange(N), len(starts))
    side = np.einsum("nla,nla->n", res.h, reference[node]) > 0.0
    best = best_per_node(node, res, N, lowest_unconverged=True)  # the global map's pick
    aligned = best_per_node(node, ProxResult(res.h, res.value, res.converged & side, 0), N)
    best = np.where(res.converged[aligned] & side[aligned], aligned, best)
    return ProxResult(res.h[best], res.value[best], res.converged[best], res.iterations)


def local_prox(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, *,
               backend: str = "auto") -> ProxResult:
    """The local minimiser of P(h) the Newton descent reaches from h = 0 (the paper's own proximal step)."""
    return newton_minimize(kernels, np.zeros_like(w), w, V, T, sigma2, backend=backend)
