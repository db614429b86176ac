"""How positional versus semantic a learned attention is (docs/histogram.md, "Score")::

    r_sem = mean_n corr_offdiag(A(x^n), E(x^n)),   E(x)_ij = 1[x_i = x_j],
    r_pos = mean_n corr_offdiag(A(x^n), Abar_{-n}),   Abar_{-n} = mean_{m != n} A(x^(m)),
    score = r_sem - r_pos  in [-2, 2],

Pearson correlations over the off-diagonal entries, each mean over the inputs whose reference is not constant
off the diagonal; an attention constant off the diagonal counts as correlation 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from attnphase.validation.histogram.data import token_equality

_EPS = 1e-6
"""Centred rows with a smaller norm count as constant (attention is computed in float32)."""


@dataclass(frozen=True)
class AttentionScore:
    """Positional/semantic character of an attention over ``n_inputs`` inputs (module doc): ``r_sem`` over the
    ``n_sem`` inputs where some token repeats, ``r_pos`` over ``n_pos``, ``score = r_sem - r_pos`` (positive:
    semantic)."""

    r_sem: float
    r_pos: float
    score: float
    n_inputs: int
    n_sem: int
    n_pos: int


def _offdiag(m: torch.Tensor) -> torch.Tensor:
    """The off-diagonal entries of ``(N, L, L)`` as ``(N, L * (L - 1))``."""
    return m[:, ~torch.eye(m.shape[-1], dtype=torch.bool, device=m.device)]


def rowwise_correlation(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Pearson correlation of matching rows of ``a`` and ``b`` (both ``(N, K)``): ``(corr, defined)``, ``corr`` 0
    where either row is constant, ``defined`` False where ``b``'s row is (the reference carries no pattern)."""
    a = a - a.mean(dim=1, keepdim=True)
    b = b - b.mean(dim=1, keepdim=True)
    na, nb = a.norm(dim=1), b.norm(dim=1)
    ok = (na > _EPS) & (nb > _EPS)
    denom = torch.where(ok, na * nb, torch.ones_like(na))
    corr = torch.where(ok, (a * b).sum(dim=1) / denom, torch.zeros_like(na)).clamp(-1.0, 1.0)  # round-off past 1
    return corr, nb > _EPS


def attention_score(attn: torch.Tensor, tokens: torch.Tensor) -> AttentionScore:
    """The score of attention matrices ``attn`` ``(N, L, L)`` for inputs ``tokens`` ``(N, L)``; ValueError for
    mismatched shapes, ``N < 2`` or ``L < 3`` (an off-diagonal correlation needs three entries per row)."""
    if attn.ndim != 3 or attn.shape[1] != attn.shape[2] or attn.shape[:2] != tokens.shape:
        raise ValueError(f"need attn (N, L, L) and tokens (N, L), got {tuple(attn.shape)} and {tuple(tokens.shape)}")
    n, L = tokens.shape
    if n < 2 or L < 3:
        raise ValueError(f"need at least 2 inputs and L >= 3, got N={n}, L={L}")
    a = _offdiag(attn.double())
    eq = _offdiag(token_equality(tokens, torch.float64).to(a.device))
    mean_loo = (a.sum(dim=0, keepdim=True) - a) / (n - 1)
    c_sem, d_sem = rowwise_correlation(a, eq)
    c_pos, d_pos = rowwise_correlation(a, mean_loo)
    r_sem = float(c_sem[d_sem].mean()) if bool(d_sem.any()) else 0.0
    r_pos = float(c_pos[d_pos].mean()) if bool(d_pos.any()) else 0.0
    return AttentionScore(r_sem, r_pos, r_sem - r_pos, n, int(d_sem.sum()), int(d_pos.sum()))


@torch.no_grad()
def collect_attention(model: torch.nn.Module, x: torch.Tensor, batch_size: int = 4096) -> torch.Tensor:
    """Attention weights of ``model`` (a ``HistogramTransformer``) on tokens ``x``, on the CPU."""
    return torch.cat([model.forward_with_attention(x[start : start + batch_size])[1].cpu()
                      for start in range(0, x.shape[0], batch_size)])


def score_model(model: torch.nn.Module, x: torch.Tensor) -> AttentionScore:
    """:func:`attention_score` of ``model``'s attention on tokens ``x``."""
    return attention_score(collect_attention(model, x), x.cpu())
