"""The proximal objective of the channel (docs/model.md section 3) and its derivatives in h.

    prox(h; w, V, h*) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, h*)
    g_l = (h_hat_l - w_l) / V_l,   h_hat = argmin_h prox

Derived by sympy with the softmax kept as :class:`~attnphase.theory.attention.SoftmaxEntry`, each entry then
replaced by a symbol S_lk: polynomials in (h, S, T, sigma^2) and 1 / V_l.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import sympy as sp

from attnphase.theory.attention import attention
from attnphase.theory.channels import default_channel
from attnphase.theory.loss import limit_loss_cov
from attnphase.theory.symbols import pair_symbols, token_scalars, token_symbols


@dataclass(frozen=True)
class Derivation:
    """A sympy expression ``value`` with its gradient ``grad`` (row-major over the entries of its variables) and
    its Hessian ``hess``."""

    value: sp.Expr
    grad: tuple[sp.Expr, ...]
    hess: sp.Matrix


@dataclass(frozen=True)
class LossDerivation(Derivation):
    """The limit loss ``value`` = loss(h, T) in terms of the symbols S = S(h), T = T(h*), sigma2, and its
    ``grad`` (row-major over the L r entries of h) and ``hess`` in the student fields h, for given (L, r)."""

    L: int
    r: int
    h: sp.Matrix
    S: sp.Matrix
    T: sp.Matrix
    sigma2: tuple[sp.Symbol, ...]


@dataclass(frozen=True)
class ProxDerivation(Derivation):
    """The proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss and its gradient and Hessian in h (r = 1),
    built on the :class:`LossDerivation` ``loss``, with the field means w_l and variances V_l > 0."""

    loss: LossDerivation
    w: tuple[sp.Symbol, ...]
    V: tuple[sp.Symbol, ...]


def derive_loss(L: int, r: int = 1, channel: Any = None) -> LossDerivation:
    """Derive ``channel``'s loss (default: the square loss, docs/model.md section 2), its gradient and Hessian
    in h by the softmax chain rule (see module doc)."""
    return _derive_loss(L, r, default_channel(channel))


@lru_cache(maxsize=None)
def _derive_loss(L: int, r: int, channel: Any) -> LossDerivation:
    h = token_symbols("h", L, r, real=True)
    S = pair_symbols("S", L, positive=True)
    T = pair_symbols("T", L, nonnegative=True)
    sigma2 = tuple(token_scalars("sigma", L, power="2", positive=True))
    grad, hess = _chain_rule(channel.loss_of(attention(h), T, sigma2), h, S)
    return LossDerivation(channel.loss_of(S, T, sigma2), grad, hess, L, r, h, S, T, sigma2)


def _chain_rule(value_fun: sp.Expr, h: sp.Matrix, S: sp.Matrix) -> tuple[tuple[sp.Expr, ...], sp.Matrix]:
    """Gradient and Hessian in h's entries (row-major) of a loss written in S(h) = attention(h), with the
    softmax entries then replaced by the symbols S (see module doc)."""
    A = attention(h)
    to_symbols = {A[l, k]: S[l, k] for l in range(A.rows) for k in range(A.cols)}
    flat = list(h)
    grad_fun = [sp.diff(value_fun, x) for x in flat]
    n = len(flat)
    hess = sp.zeros(n, n)
    for i in range(n):
        for j in range(i, n):
            hess[i, j] = hess[j, i] = sp.diff(grad_fun[i], flat[j]).xreplace(to_symbols)
    return tuple(g.xreplace(to_symbols) for g in grad_fun), hess


def derive_prox(L: int, channel: Any = None) -> ProxDerivation:
    """The proximal objective (docs/model.md section 3) of ``channel``'s loss and its derivatives; r = 1 (scalar
    V_l per token)."""
    return _derive_prox(L, default_channel(channel))


@lru_cache(maxsize=None)
def _derive_prox(L: int, channel: Any) -> ProxDerivation:
    ld = derive_loss(L, 1, channel)
    w = tuple(token_scalars("w", L, real=True))
    V = tuple(token_scalars("V", L, positive=True))
    return ProxDerivation(*_with_moreau_term(list(ld.h), w, V, ld), ld, w, V)


def _with_moreau_term(x: list[sp.Symbol], w: tuple[sp.Symbol, ...], V: tuple[sp.Symbol, ...], f: Derivation
                      ) -> tuple[sp.Expr, tuple[sp.Expr, ...], sp.Matrix]:
    """sum_l (x_l - w_l)^2 / (2 V_l) + f(x), its gradient and Hessian, from f's derivation in x."""
    L = len(x)
    quad = sum((x[l] - w[l]) ** 2 / (2 * V[l]) for l in range(L))
    return (quad + f.value, tuple(f.grad[l] + (x[l] - w[l]) / V[l] for l in range(L)),
            f.hess + sp.diag(*[1 / V[l] for l in range(L)]))


@dataclass(frozen=True)
class CovLossDerivation(Derivation):
    """The correlated-token limit loss loss_C (docs/model.md section 7) and its derivatives in h (r = 1):
    value = 1/2 sum_l sum_{k,j} C_kj (S - T)[l,k] (S - T)[l,j], with h, S, T as in :class:`LossDerivation`
    and C the L x L symbols of the token Gram; grad and hess are polynomials in (h, S, T, C)."""

    L: int
    h: sp.Matrix
    S: sp.Matrix
    T: sp.Matrix
    C: sp.Matrix


@lru_cache(maxsize=None)
def derive_loss_cov(L: int) -> CovLossDerivation:
    """loss_C, its gradient and Hessian in h by the softmax chain rule (as :func:`derive_loss`), r = 1."""
    h = token_symbols("h", L, 1, real=True)
    S = pair_symbols("S", L, positive=True)
    T = pair_symbols("T", L, nonnegative=True)
    C = pair_symbols("C", L, real=True)
    grad, hess = _chain_rule(limit_loss_cov(attention(h), T, C), h, S)
    return CovLossDerivation(limit_loss_cov(S, T, C), grad, hess, L, h, S, T, C)


@dataclass(frozen=True)
class WhitenedProxDerivation(Derivation):
    """The whitened proximal objective prox(v; w, V, T) = sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T)
    (docs/model.md section 7, r = 1) and its derivatives in v: grad_v = B^T grad_h, hess_v = B^T hess_h B;
    ``fields``: h = B v; ``loss_v``: loss_C(B v, T) and its derivatives in v.
    """

    loss: CovLossDerivation
    v: tuple[sp.Symbol, ...]
    w: tuple[sp.Symbol, ...]
    V: tuple[sp.Symbol, ...]
    B: sp.Matrix
    fields: tuple[sp.Expr, ...]
    loss_v: Derivation


@lru_cache(maxsize=None)
def derive_prox_cov(L: int) -> WhitenedProxDerivation:
    """The whitened proximal objective in v and its derivatives (see :class:`WhitenedProxDerivation`)."""
    ld = derive_loss_cov(L)
    v = tuple(token_scalars("v", L, real=True))
    w = tuple(token_scalars("w", L, real=True))
    V = tuple(token_scalars("V", L, positive=True))
    B = pair_symbols("B", L, real=True)
    h = B * sp.Matrix(v)
    at_Bv = {ld.h[l]: h[l] for l in range(L)}
    grad = B.T * sp.Matrix(ld.grad)
    hess = B.T * ld.hess * B
    loss_v = Derivation(ld.value, tuple(grad[j].xreplace(at_Bv) for j in range(L)), hess.xreplace(at_Bv))
    return WhitenedProxDerivation(*_with_moreau_term(list(v), w, V, loss_v), ld, v, w, V, B, tuple(h), loss_v)
