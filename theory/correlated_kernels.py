"""Kernels of the whitened correlated-token model (docs/model.md section 7), numpy backend only.

In the whitened variables v (:mod:`attnphase.theory.whitening`) the fields are h = B v, h* = B v*
and the proximal objective of the channel (sigma = 1, V_l = V0) is

    prox(v; w, V, T) = sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T),
    loss_C(h, T)     = 1/2 sum_l sum_{k,k'} C[k,k'] (S(h) - T)[l,k] (S(h) - T)[l,k'],   C = B B^T,

with T = T(B v*). loss_C, its gradient and Hessian in h are generated from sympy
(:func:`attnphase.theory.prox.derive_loss_cov`, cached on disk as the module ``kernels_cov``); the
chain rule of the linear map h = B v gives

    grad_v = B^T grad_h,   hess_v = B^T hess_h B          (h is linear in v: no other term).

:class:`CorrelatedKernels` has the methods of :class:`attnphase.theory.kernels.Kernels` that the
state evolution calls, with the same arguments: ``sigma2`` must be the whitened model's ones (the
token scales live in B). It has no one-point twin, so the proximal solvers run it on the numpy
backend (:func:`attnphase.numerics.prox.resolve_backend` picks it for any kernels object other
than a :class:`~attnphase.theory.kernels.Kernels`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, load_module
from attnphase.theory.kernels import Kernels, _mat, _vec, get_kernels
from attnphase.theory.params import ModelParams

ArrayLike = Any


def _build_specs(L: int) -> list[FunctionSpec]:
    """The generated functions: loss_C(S, T, C) and loss_C with its gradient and Hessian in h."""
    from attnphase.theory.prox import derive_loss_cov
    from attnphase.theory.symbols import as_rows

    ld = derive_loss_cov(L)
    h = list(ld.h)
    iu = [(i, j) for i in range(L) for j in range(i, L)]
    arg_S = Argument("S", as_rows(ld.S), "attention S(h)[l, k] = softmax_k(h_l h_k), computed max-shifted")
    arg_T = Argument("T", as_rows(ld.T), "target attention T(h*)[l, k]")
    arg_C = Argument("C", as_rows(ld.C), "token Gram C[k, k'] (symmetric)")
    outputs = [("loss", ld.value)] + [(f"d loss / d {h[j]}", ld.grad[j]) for j in range(L)]
    outputs += [(f"d2 loss / d {h[i]} d {h[j]}", ld.hess[i, j]) for i, j in iu]
    return [
        FunctionSpec("loss", (arg_S, arg_T, arg_C), (("loss", ld.value),),
                     "Correlated-token limit loss 1/2 sum_l sum_{k,k'} C[k,k'] (S - T)[l,k] (S - T)[l,k'] "
                     "(docs/model.md section 7)."),
        FunctionSpec("loss_grad_hess", (Argument("h", h, "student fields h_l"), arg_S, arg_T, arg_C), tuple(outputs),
                     "Correlated-token limit loss, its gradient and Hessian (upper triangle, row-major) in h.",
                     "basic" if L <= 3 else None),
    ]


def _quadratic(v: np.ndarray, w: np.ndarray, V: np.ndarray) -> np.ndarray:
    """sum_l (v_l - w_l)^2 / (2 V_l), summed over the short last axis in order (no reduction call)."""
    q = (v - w) ** 2 / (2 * V)
    out = q[..., 0].copy()
    for k in range(1, q.shape[-1]):
        out += q[..., k]
    return out


def _check_unit(sigma2: ArrayLike) -> None:
    if not np.all(np.asarray(sigma2) == 1.0):
        raise ValueError("the correlated-token kernels belong to the whitened model, whose sigma_l^2 are 1")


@dataclass(frozen=True, eq=False)
class CorrelatedKernels:
    """The channel's kernels of a whitened model (see module doc): fields v, mixing B, token Gram C = B B^T.

    Attributes:
        L: sequence length.
        B: the mixing, (L, L); h = B v.
        C: B B^T, (L, L).
        generated: the generated ``kernels_cov`` functions, run through a :class:`Kernels` (its block-wise
            evaluation with the max-shifted softmax of h).
        plain: the independent-token kernels (attention and the target T(h*) of h* = B v*).
    """

    L: int
    B: np.ndarray = field(repr=False)
    C: np.ndarray = field(repr=False)
    generated: Kernels = field(repr=False)
    plain: Kernels = field(repr=False)

    def fields(self, v: ArrayLike) -> np.ndarray:
        """h = B v, (..., L)."""
        return _vec(v, self.L, "v") @ self.B.T

    def attention(self, v: ArrayLike) -> np.ndarray:
        """S(B v)[..., l, k] = softmax_k(h_l h_k), h = B v."""
        return self.plain.attention(self.fields(v))

    def target(self, vstar: ArrayLike, omega: float, A: ArrayLike) -> np.ndarray:
        """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A with h* = B v*."""
        return self.plain.target(self.fields(vstar), omega, A)

    def loss(self, v: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """loss_C(B v, T) -> (...)."""
        _check_unit(sigma2)
        h, T = self.fields(v), _mat(T, self.L, "T")
        shape = np.broadcast_shapes(h.shape[:-1], T.shape[:-2])
        return self.generated._run("loss", h, [], [(T, 2), (self.C, 2)], shape, with_h=False)[0]

    def loss_grad_hess(self, v: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss_C(B v, T), B^T grad_h, B^T hess_h B): value (...), gradient (..., L), Hessian (..., L, L) in v."""
        _check_unit(sigma2)
        h, T = self.fields(v), _mat(T, self.L, "T")
        shape = np.broadcast_shapes(h.shape[:-1], T.shape[:-2])
        f, g, H = self.generated._run("loss_grad_hess", h, [], [(T, 2), (self.C, 2)], shape)
        Hv = self.B.T @ H @ self.B
        return f, g @ self.B, 0.5 * (Hv + np.swapaxes(Hv, -1, -2))  # exactly symmetric

    def prox_value(self, v: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T) -> (...)."""
        v, w, V = _vec(v, self.L, "v"), _vec(w, self.L, "w"), _vec(V, self.L, "V")
        return _quadratic(v, w, V) + self.loss(v, T, sigma2)

    def prox_value_grad_hess(
        self, v: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The proximal objective in v, its gradient (v - w) / V + B^T grad_h and Hessian diag(1 / V) + B^T hess_h B."""
        v, w, V = _vec(v, self.L, "v"), _vec(w, self.L, "w"), _vec(V, self.L, "V")
        f, g, H = self.loss_grad_hess(v, T, sigma2)
        Vb = np.broadcast_to(V, np.broadcast_shapes(V.shape, v.shape))
        eye = np.eye(self.L)
        return f + _quadratic(v, w, V), g + (v - w) / V, H + eye * (1.0 / Vb)[..., None, :]


def get_correlated_kernels(B: ArrayLike, cse: bool = True) -> CorrelatedKernels:
    """The kernels of the whitened model with mixing B (L x L, invertible); the generated module is
    imported once per process (:func:`attnphase.theory.codegen.load_module`)."""
    B = np.array(B, dtype=float)
    L = B.shape[0]
    module = load_module("kernels_cov", L, 1, bool(cse), lambda: _build_specs(L))
    return CorrelatedKernels(L, B, B @ B.T, Kernels(L, 1, bool(cse), vars(module)), get_kernels(L, cse=cse))


def model_kernels(params: ModelParams) -> Kernels | CorrelatedKernels:
    """The channel's kernels of a model the state evolution runs on: the generated independent-token
    :class:`Kernels`, or :class:`CorrelatedKernels` for a whitened model (``params.mixing`` set).
    A model with correlated tokens not whitened is refused (its plain kernels would ignore C)."""
    if params.correlated_tokens:
        raise ValueError("correlated tokens run in their whitened form: pass attnphase.theory.whitening.se_params(params)")
    B = params.mixing_array
    return get_kernels(params.L) if B is None else get_correlated_kernels(B)
