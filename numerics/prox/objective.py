"""The proximal objective P, its gradient and Hessian, in the two forms the Newton descent
(:func:`attnphase.numerics.prox.descent.descend`) evaluates.

    P(h) = sum_l 1/2 (h_l - w_l)^T V_l^{-1} (h_l - w_l) + loss(h, T),   h in R^{L x r}   (docs/model.md sections 3, 7)

:class:`FieldObjective` (r = 1: V_l scalars, the generated P, the eigenvalue-shift direction; numpy or torch) and
:class:`BlockObjective` (any r: V_l^{-1} blocks, the generated loss plus the quadratic term, the shifted Cholesky
direction); each gives the descent its stall scale max_l |V_l^{-1} (h_l - w_l)|.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.prox.descent import rowmax


class FieldObjective:
    """P at r = 1 on numpy or torch rows: h, w (N, L), V (N, L), T (N, L, L), sigma2 (L,); ``value_grad_hess`` /
    ``value`` the generated ``prox_value_grad_hess`` / ``prox_value`` (numpy, or their torch rendering)."""

    def __init__(self, xp: Any, value_grad_hess: Any, value: Any, w: Any, V: Any, T: Any, sigma2: Any) -> None:
        self.xp, self._vgh, self._value = xp, value_grad_hess, value
        self.w, self.V, self.T, self.sigma2 = w, V, T, sigma2
        self.v_min = -rowmax(-V, xp)

    def value_grad_hess(self, h: Any, rows: Any) -> tuple[Any, Any, Any]:
        if rows is None:
            return self._vgh(h, self.w, self.V, self.T, self.sigma2)
        return self._vgh(h, self.w[rows], self.V[rows], self.T[rows], self.sigma2)

    def value(self, h: Any, rows: Any) -> Any:
        return self._value(h, self.w[rows], self.V[rows], self.T[rows], self.sigma2)

    def direction(self, H: Any, g: Any, rows: Any) -> tuple[Any, Any]:
        return steps.eigen_shift_direction(H, g, self.v_min[rows], self.xp)

    def stall_scale(self, h: Any, rows: Any) -> Any:
        return rowmax(abs(h - self.w[rows]) / self.V[rows], self.xp)


def apply_blocks(Vinv: np.ndarray, d: np.ndarray) -> np.ndarray:
    """(Vinv_l d_l) for every row: Vinv (L, r, r), d (N, L, r) -> (N, L, r) (explicit loops over the
    small axes: several times faster than einsum at r <= 3)."""
    L, r = Vinv.shape[0], Vinv.shape[1]
    out = np.empty_like(d)
    for l in range(L):
        for a in range(r):
            acc = Vinv[l, a, 0] * d[:, l, 0]
            for b in range(1, r):
                acc += Vinv[l, a, b] * d[:, l, b]
            out[:, l, a] = acc
    return out


def prox_value(kernels: Any, h: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray,
               sigma2: np.ndarray) -> np.ndarray:
    """P(h) at every row of matrix fields (N, L, r), V the precisions V_l^{-1} (L, r, r): the quadratic term plus
    the generated loss.  Vector fields (N, L) with the variances V_l are not taken here: the generated
    ``kernels.prox_value`` computes their P(h)."""
    d = h - w
    q = (d * apply_blocks(V, d)).reshape(d.shape[0], -1).sum(axis=1)
    return 0.5 * q + kernels.loss(h, T, sigma2)


class BlockObjective:
    """P on rows h (m, L r) flattened from (m, L, r): w (N, L, r), Vinv (L, r, r), T (N, L, L), sigma2 (L,);
    the shifted Cholesky direction rule (least pivot ``delta``); stall scale max |Vinv_l (h_l - w_l)|."""

    def __init__(self, k: Any, w: np.ndarray, Vinv: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
                 delta: float) -> None:
        self.k, self.w, self.Vinv, self.T, self.sigma2, self.delta = k, w, Vinv, T, sigma2, delta
        self.shape = w.shape[1:]

    def _rows(self, h: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hr = h.reshape((-1,) + self.shape)
        return (hr, self.w, self.T) if rows is None else (hr, self.w[rows], self.T[rows])

    def value_grad_hess(self, h: np.ndarray, rows: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(P, grad P, Hessian of P): the generated loss plus the quadratic term."""
        hr, w, T = self._rows(h, rows)
        N, L, r = hr.shape
        f, g, H = self.k.loss_grad_hess(hr, T, self.sigma2)
        d = hr - w
        Vd = apply_blocks(self.Vinv, d)
        f = f + 0.5 * (d * Vd).reshape(N, L * r).sum(axis=1)
        g = g + Vd.reshape(N, L * r)
        for l in range(L):
            H[:, l * r:(l + 1) * r, l * r:(l + 1) * r] += self.Vinv[l]
        return f, g, H

    def value(self, h: np.ndarray, rows: np.ndarray) -> np.ndarray:
        hr, w, T = self._rows(h, rows)
        return prox_value(self.k, hr, w, self.Vinv, T, self.sigma2)

    def direction(self, H: np.ndarray, g: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return steps.cholesky_shift_direction(H, g, self.delta)

    def stall_scale(self, h: np.ndarray, rows: np.ndarray) -> np.ndarray:
        hr, w, _ = self._rows(h, rows)
        return np.abs(apply_blocks(self.Vinv, hr - w)).reshape(h.shape[0], -1).max(axis=1)


def step_constants(Vinv: np.ndarray) -> tuple[float, float]:
    """(delta, max_step) of the block form: delta = SHIFT_REL lambda_min(V^{-1}) (the least pivot of the shifted
    Cholesky), max_step = 4 / sqrt(lambda_min(V^{-1})) + 1 = 4 sqrt(|V|) + 1; Vinv (L, r, r)."""
    Vmin_inv = min(float(np.linalg.eigvalsh(Vinv[l]).min()) for l in range(Vinv.shape[0]))
    return steps.SHIFT_REL * Vmin_inv, 4.0 / np.sqrt(Vmin_inv) + 1.0
