"""The proximal maps that are not the global minimiser: a chosen local minimiser per node.

    h_hat(w, T) = a local minimiser of P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)   (docs/model.md section 3)

* :func:`local_prox` -- the one Newton descent reaches from h = 0: the paper's own proximal step (``--prox local``);
* :func:`aligned_prox` -- the lowest of the global search's minimisers on the side of the student's mean field:
  the basin gradient descent keeps from its start (``--prox aligned``).

The descent, the global search and its backends are :mod:`attnphase.numerics.prox.global_prox`'s (fields h in R^L:
r = 1).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox.global_prox import global_prox, newton_minimize
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.prox.selection import best_per_node
from attnphase.numerics.prox.starts import mixing


def aligned_prox(
    kernels: Any,
    w: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    sigma2: np.ndarray,
    reference: np.ndarray,
    backend: str = "auto",
) -> ProxResult:
    """The lowest local minimiser of P(h) on the side of the reference field: the basin a student keeps.

        h_hat = argmin { P(h) : h a local minimiser of P found by the global search, h . r > 0 },

    the global minimiser where no minimiser found has h . r > 0 or r = 0.  The local minimisers are
    those of :func:`attnphase.numerics.prox.global_prox.global_prox`'s full search (its distinct minima per node).
    The SE passes r_l = E[w_l | h*] = m_l + (th0 / rho0) h*_l (:func:`attnphase.theory.channel.
    student_mean_field`): the teacher's mirror image on the semantic branch, the positional one on the
    positional branch, the global minimiser at the agnostic state.  At L = 2 this is the local minimiser
    reached from the loss zero S(h) = T(h*) on r's side (tests/numerics/prox/test_global_prox.py checks the two agree
    on every node of SE batches).  Not the global minimiser: it models a student that keeps, sample by
    sample, the mirror image of the attention pattern its start set -- what gradient descent does
    where the global-prox SE has no such point (docs/validation.md).
    """
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


def local_prox(
    kernels: Any,
    w: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    sigma2: np.ndarray,
    *,
    backend: str = "auto",
) -> ProxResult:
    """Local minimiser of P(h) reached from h = 0 (the paper's own proximal step); ``backend`` as in the module doc."""
    return newton_minimize(kernels, np.zeros_like(w), w, V, T, sigma2, backend=backend)
