"""The proximal maps that keep a chosen local minimiser per node rather than the global one (docs/method.md
section 3, variants): :func:`local_prox` (``--prox local``) and :func:`aligned_prox` (``--prox aligned``), r = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.prox.selection import best_per_node
from attnphase.numerics.prox.starts import mixing


def aligned_prox(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, reference: np.ndarray,
                 backend: str = "auto") -> ProxResult:
    """The lowest local minimiser of P(h) on the side of the reference field: the basin a student keeps.

        h_hat = argmin { P(h) : h a distinct minimum of the global search's full search, h . r > 0 },

    the global minimiser where none has h . r > 0.  The state evolution passes r_l = E[w_l | h*] = m_l + (th0 / rho0)
    h*_l (:func:`attnphase.theory.channel.student_mean_field`); docs/validation.md says why."""
    if mixing(kernels) is not None:
        raise ValueError("the aligned proximal map is implemented for independent tokens only (a diagonal C)")
    res, minima = global_prox(kernels, w, V, T, sigma2, backend=backend)
    node, h = minima.node, minima.h
    value = kernels.prox_value(h, w[node], V, T[node], sigma2)
    aligned = np.sum(h * reference[node], axis=1) > 0.0
    best = best_per_node(node, ProxResult(h, value, aligned, 0), w.shape[0])  # least aligned value per node
    best = best[aligned[best]]  # nodes none of whose minima is aligned keep the global minimiser
    out_h, out_value = res.h.copy(), res.value.copy()
    out_h[node[best]], out_value[node[best]] = h[best], value[best]
    return ProxResult(out_h, out_value, res.converged, res.iterations)


def local_prox(kernels: Any, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, *,
               backend: str = "auto") -> ProxResult:
    """The local minimiser of P(h) the Newton descent reaches from h = 0 (the paper's own proximal step)."""
    return newton_minimize(kernels, np.zeros_like(w), w, V, T, sigma2, backend=backend)
