"""The two students of docs/model.md section 1 and their losses at finite d: the attention student
``f_l = sum_k softmax_k(h_l . h_k) z_k``, ``z_l = x_l + p_l``, ``h_l = Q^T z_l / sqrt(d)``, and the linear positional
baseline ``f_lin_l = sum_k B[l, k] x_k`` (docs/model.md section 5).

The per-sample loss ``(1 / 2d) |y - f(X)|^2`` is computed exactly from per-sample L x L Gram matrices, so a
gradient step costs one product with the tokens and one back.  With ``D = T - S``::

    (1 / 2d) |y - f|^2 = 1/2 sum_l [ D_l Gxx D_l^T - 2 D_l Gxp S_l^T + S_l (P / d) S_l^T ],
    Gxx[k, k'] = x_k . x_k' / d,   Gxp[k, k'] = x_k . p_k' / d,

whose d -> inf limit is the limit loss of docs/model.md section 2; written around ``D`` it avoids the
cancellation of the expanded form, so float32 is usable.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from .data import Dataset, Teacher


@dataclass(frozen=True)
class GramData:
    """A dataset prepared for fast loss evaluation (module docstring): tokens ``X`` ``(n, L, d)``, encodings
    ``positions`` ``(L, d)``, target attention ``T`` ``(n, L, L)``, the Grams ``Gxx`` and ``Gxp`` ``(n, L, L)`` and
    ``Pd = P / d`` ``(L, L)`` from the actual encodings."""

    X: torch.Tensor
    positions: torch.Tensor
    T: torch.Tensor
    Gxx: torch.Tensor
    Gxp: torch.Tensor
    Pd: torch.Tensor

    @property
    def d(self) -> int:
        return int(self.X.shape[-1])


def prepare(teacher: Teacher, data: Dataset) -> GramData:
    """Precompute the Gram matrices of ``data`` (one pass over the tokens)."""
    d = teacher.d
    X, p = data.X, teacher.positions
    return GramData(X=X, positions=p, T=data.T, Gxx=X @ X.transpose(-1, -2) / d, Gxp=X @ p.T / d, Pd=p @ p.T / d)


def fields(Q: torch.Tensor, X: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Student fields ``h_l = Q^T (x_l + p_l) / sqrt(d)``: ``(n, L, r)`` from ``Q`` ``(d, r)``."""
    return (X @ Q + positions @ Q) / math.sqrt(X.shape[-1])


def attention(h: torch.Tensor) -> torch.Tensor:
    """Row-softmax attention ``S[l, k] = softmax_k(h_l . h_k)``: ``(..., L, L)`` from ``(..., L, r)``."""
    return torch.softmax(h @ h.transpose(-1, -2), dim=-1)


def attention_output(Q: torch.Tensor, X: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
    """Student output ``f_l = sum_k S[l, k] (x_k + p_k)``: ``(n, L, d)``."""
    return attention(fields(Q, X, positions)) @ (X + positions)


def attention_losses(Q: torch.Tensor, g: GramData) -> torch.Tensor:
    """Per-sample losses ``(1 / 2d) |y^mu - f(X^mu)|^2``, ``(n,)``, exact (Gram form)."""
    return field_losses(fields(Q, g.X, g.positions), g)


def field_losses(h: torch.Tensor, g: GramData) -> torch.Tensor:
    """:func:`attention_losses` from the student fields ``h`` ``(n, L, r)`` (:func:`fields`) instead of ``Q``."""
    S = attention(h)
    D = g.T - S
    quad = ((D @ g.Gxx) * D).sum(dim=(-1, -2))
    cross = ((D @ g.Gxp) * S).sum(dim=(-1, -2))
    pos = ((S @ g.Pd) * S).sum(dim=(-1, -2))
    return 0.5 * (quad - 2.0 * cross + pos)


def transposed_tokens(g: GramData) -> torch.Tensor:
    """The tokens as one contiguous ``(d, n L)`` matrix, ``X^T``: the product of :func:`fields_gradient` with it is
    about twice as fast as with a transposed view of ``X``."""
    return g.X.reshape(-1, g.d).T.contiguous()


def fields_gradient(dh: torch.Tensor, g: GramData, Xt: torch.Tensor) -> torch.Tensor:
    """The chain rule through the fields ``h_l = Q^T (x_l + p_l) / sqrt(d)``: ``grad_Q F = sum_mu sum_l (x_l^mu + p_l)
    (dF/dh_l^mu)^T / sqrt(d)`` ``(d, r)`` from ``dh = dF/dh`` ``(n, L, r)``; ``Xt``: :func:`transposed_tokens`."""
    r = dh.shape[-1]
    return (Xt @ dh.reshape(-1, r) + g.positions.T @ dh.sum(dim=0)) / math.sqrt(g.d)


def risk(Q: torch.Tensor, g: GramData, lam: float) -> torch.Tensor:
    """Empirical risk ``R(Q) = sum_mu (1 / 2d) |y^mu - f(X^mu)|^2 + (lambda / 2) |Q|_F^2``, the penalty written out."""
    return fields_risk(fields(Q, g.X, g.positions), Q, g, lam)


def fields_risk(h: torch.Tensor, Q: torch.Tensor, g: GramData, lam: float) -> torch.Tensor:
    """:func:`risk` with the student fields ``h = h(Q)`` given (:func:`field_losses` summed, plus the penalty)."""
    return field_losses(h, g).sum() + 0.5 * lam * (Q * Q).sum()


def linear_losses(B: torch.Tensor, g: GramData) -> torch.Tensor:
    """Per-sample losses ``(1 / 2d) |y - f_lin(X)|^2`` of the linear baseline, ``(n,)``."""
    D = g.T - B
    return 0.5 * ((D @ g.Gxx) * D).sum(dim=(-1, -2))


def fit_linear(g: GramData) -> torch.Tensor:
    """Least-squares fit of the baseline's ``B`` on a training set.

    Minimises ``sum_mu (1 / 2d) |y^mu - B X^mu|^2`` exactly; the normal equations give
    ``B = (sum_mu T^mu Gxx^mu) (sum_mu Gxx^mu)^{-1}``, with the pseudo-inverse where that Gram matrix is singular
    (tokens equal across positions, a singular ``--token-cov``: every minimiser predicts the same, B X).
    """
    G = g.Gxx.sum(0)
    rhs = (g.T @ g.Gxx).sum(0)
    # B G = rhs  <=>  G^T B^T = rhs^T (G symmetric)
    try:
        return torch.linalg.solve(G, rhs.T).T
    except torch.linalg.LinAlgError:
        return (torch.linalg.pinv(G, hermitian=True) @ rhs.T).T
