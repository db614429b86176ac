"""The local proximal maps: one Newton descent per node from a fixed start, not the global minimiser.

    h_hat(w, T) = a local minimiser of P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)   (docs/model.md section 3)

* :func:`local_prox` -- from h = 0: the paper's own proximal step (``--prox local``);
* :func:`aligned_prox` -- from the loss zero aligned with the teacher field (L = 2): the basin gradient
  descent from the semantic start keeps (``--prox aligned``).

The descent, its backends and the loss zeros are :mod:`attnphase.numerics.prox`'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox import ProxResult, _mixing, loss_zeros_L2, newton_minimize


def aligned_prox(
    kernels: Any,
    w: np.ndarray,
    V: np.ndarray,
    T: np.ndarray,
    sigma2: np.ndarray,
    hstar: np.ndarray,
    backend: str = "auto",
) -> ProxResult:
    """Local minimiser of P(h) in the basin aligned with the teacher (L = 2).

    Newton from the exact zero of the loss, S(h) = T(h*), whose sign agrees with the teacher
    field, h_0 = sign(h_z . h*) h_z (:func:`loss_zeros_L2`; from h = 0 where the loss has no
    zero). Not the global minimiser: it models a student that picks, sample by sample, the
    mirror image of the attention pattern that matches the teacher's -- what gradient descent
    from the semantic start does (docs/validation.md, GPU check).
    """
    if w.shape[1] != 2:
        raise ValueError(f"the aligned proximal map is implemented for L = 2 only, got L = {w.shape[1]}")
    if _mixing(kernels) is not None:
        raise ValueError("the aligned proximal map is implemented for independent tokens only (a diagonal C)")
    hz, valid = loss_zeros_L2(T)
    sign = np.where(np.sum(hz * hstar, axis=1) < 0, -1.0, 1.0)
    start = np.where(valid[:, None], sign[:, None] * hz, 0.0)
    return newton_minimize(kernels, start, w, V, T, sigma2, backend=backend)


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
