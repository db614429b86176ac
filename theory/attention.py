"""Attention maps in sympy (docs/model.md sections 1-2): scores a_lk = h_l . h_k, the row softmax S(h) and the
target T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A.

The softmax is kept as an unevaluated :class:`SoftmaxEntry` whose derivative is written through itself, so every
derivative of the loss is a polynomial in (h, S, T, sigma^2) (S computed by :mod:`attnphase.theory.softmax`).
"""

from __future__ import annotations

import sympy as sp
from sympy.core.function import ArgumentIndexError


class SoftmaxEntry(sp.Function):
    """``SoftmaxEntry(k, a_1, ..., a_L)`` = exp(a_{k+1}) / sum_j exp(a_j) (k is 0-based), kept unevaluated; its
    partial derivative in a_j is ``SoftmaxEntry(k, a) * (delta_kj - SoftmaxEntry(j, a))``."""

    def fdiff(self, argindex: int = 1) -> sp.Expr:
        if argindex == 1:  # the integer index k
            raise ArgumentIndexError(self, argindex)
        k = int(self.args[0])
        a = self.args[1:]
        j = argindex - 2
        return self * (sp.Integer(1 if j == k else 0) - SoftmaxEntry(j, *a))

    def _latex(self, printer: sp.printing.latex.LatexPrinter) -> str:
        args = ", ".join(printer.doprint(a) for a in self.args[1:])
        return rf"\operatorname{{softmax}}_{{{int(self.args[0]) + 1}}}\left({args}\right)"

    def _sympystr(self, printer: sp.printing.str.StrPrinter) -> str:
        args = ", ".join(printer.doprint(a) for a in self.args[1:])
        return f"softmax_{int(self.args[0]) + 1}({args})"


def scores(h: sp.Matrix) -> sp.Matrix:
    """Attention scores a_lk = h_l . h_k (h: L x r, per-token rows) -> L x L."""
    L = h.rows
    return sp.Matrix(L, L, lambda l, k: sum(h[l, a] * h[k, a] for a in range(h.cols)))


def attention(h: sp.Matrix) -> sp.Matrix:
    """S(h)[l, k] = softmax_k(h_l . h_k) as unevaluated :class:`SoftmaxEntry` functions."""
    a = scores(h)
    L = a.rows
    return sp.Matrix(L, L, lambda l, k: SoftmaxEntry(k, *a.row(l)))


def attention_explicit(h: sp.Matrix) -> sp.Matrix:
    """S(h) written with exponentials (for display only; overflows numerically)."""
    a = scores(h)
    L = a.rows
    return sp.Matrix(L, L, lambda l, k: sp.exp(a[l, k]) / sum(sp.exp(a[l, j]) for j in range(L)))


def teacher(Sstar: sp.Matrix, omega: sp.Basic, A: sp.Matrix) -> sp.Matrix:
    """T(h*) = (1 - omega) S* + omega A, with S* = softmax_row(h* h*^T)."""
    return (1 - omega) * Sstar + omega * A
