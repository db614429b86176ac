"""The per-sample limit loss (docs/model.md section 2; why the positional terms vanish: docs/derivation.md).

    loss(h, h*) = 1/2 sum_{l,k} sigma_k^2 (S(h) - T(h*))[l, k]^2

With tokens correlated across positions, x_k . x_k' / d -> C[k, k'] (docs/model.md section 7):

    loss_C(h, h*) = 1/2 sum_l sum_{k,k'} C[k,k'] (S(h) - T(h*))[l,k] (S(h) - T(h*))[l,k']
"""

from __future__ import annotations

from collections.abc import Sequence

import sympy as sp


def limit_loss_cov(S: sp.Matrix, T: sp.Matrix, C: sp.Matrix) -> sp.Expr:
    """1/2 sum_l sum_{k,k'} C[k,k'] (S - T)[l,k] (S - T)[l,k'] for L x L matrices S, T and token Gram C."""
    L = S.rows
    D = S - T
    return sp.Rational(1, 2) * sum(C[k, j] * D[l, k] * D[l, j] for l in range(L) for k in range(L) for j in range(L))


def limit_loss(S: sp.Matrix, T: sp.Matrix, sigma2: Sequence[sp.Basic]) -> sp.Expr:
    """1/2 sum_{l,k} sigma_k^2 (S - T)[l, k]^2: :func:`limit_loss_cov` with C = diag(sigma_k^2)."""
    return limit_loss_cov(S, T, sp.diag(*sigma2))
