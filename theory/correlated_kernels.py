"""Kernels of the whitened correlated-token model (docs/model.md section 7), numpy and one-point (compiled).

In the whitened variables v (:mod:`attnphase.theory.whitening`), h = B v and

    prox(v; w, V, T) = sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T),   C = B B^T,

generated with its derivatives in v from :func:`attnphase.theory.prox.derive_prox_cov`; the model's matrices
are one flat argument ``CB`` = (C, B row-major). :class:`CorrelatedKernels` has the methods of
:class:`attnphase.theory.kernels.Kernels` the state evolution calls; the torch backend does not run it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, load_module
from attnphase.theory.kernel_specs import _outputs
from attnphase.theory.kernels import ArrayLike, Kernels, ScalarKernels, _mat, _vec, get_kernels
from attnphase.theory.params import ModelParams

#: The generated functions rendered one point per call (for the compiled proximal solver).
SCALAR_FUNCTIONS = ("fields", "prox_value", "prox_value_grad_hess")


def _build_specs(L: int) -> list[FunctionSpec]:
    """The generated functions: fields h = B v, loss_C(S, T, C), and in v: loss_C(B v) and the proximal
    objective, each alone or with its gradient and Hessian (upper triangle, row-major)."""
    from attnphase.theory.prox import derive_prox_cov

    pd = derive_prox_cov(L)
    ld = pd.loss
    v = list(pd.v)
    arg_v = Argument("v", v, "whitened fields v_l (h = B v)")
    arg_w = Argument("w", list(pd.w), "field means w_l of v")
    arg_V = Argument("V", list(pd.V), "variances V_l > 0 of v")
    arg_S = Argument("S", ld.S, "attention S(B v)[l, k] = softmax_k(h_l h_k), computed max-shifted")
    arg_T = Argument("T", ld.T, "target attention T(h*)[l, k]")
    arg_C = Argument("C", ld.C, "token Gram C[k, k'] (symmetric)")
    arg_CB = Argument("CB", list(ld.C) + list(pd.B), "token Gram C (row-major), then the mixing B (row-major), C = B B^T")
    # "basic" cse on the chain-ruled Hessian: 74 s against 4 s at L = 3 for 13 % shorter code
    opt = "basic" if L <= 2 else None
    return [
        FunctionSpec("fields", (arg_v, arg_CB), tuple((f"h_{l + 1}", pd.fields[l]) for l in range(L)),
                     "Fields h = B v of the whitened model (docs/model.md section 7)."),
        FunctionSpec("loss", (arg_S, arg_T, arg_C), (("loss", ld.value),),
                     "Correlated-token limit loss 1/2 sum_l sum_{k,k'} C[k,k'] (S - T)[l,k] (S - T)[l,k'] "
                     "(docs/model.md section 7)."),
        FunctionSpec("loss_grad_hess", (arg_v, arg_S, arg_T, arg_CB),
                     _outputs(pd.loss_v, "loss", v),
                     "loss_C(B v, T), its gradient and Hessian in v (B^T grad_h, B^T hess_h B).", opt),
        FunctionSpec("prox_value", (arg_v, arg_w, arg_V, arg_S, arg_T, arg_CB), (("prox", pd.value),),
                     "Whitened proximal objective sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T) alone (line searches)."),
        FunctionSpec("prox_value_grad_hess", (arg_v, arg_w, arg_V, arg_S, arg_T, arg_CB),
                     _outputs(pd, "prox", v),
                     "Whitened proximal objective sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T), its gradient and "
                     "Hessian in v (docs/model.md section 7).", opt),
    ]


@dataclass(frozen=True, eq=False)
class CorrelatedKernels:
    """The channel's kernels of a whitened model (see module doc): fields v, mixing B, token Gram C = B B^T.

    ``CB``: the generated functions' argument (C, B row-major); ``generated``: the ``kernels_cov`` functions run
    through a :class:`Kernels`; ``plain``: the independent-token kernels (attention, target of h* = B v*).
    """

    L: int
    B: np.ndarray = field(repr=False)
    C: np.ndarray = field(repr=False)
    CB: np.ndarray = field(repr=False)
    generated: Kernels = field(repr=False)
    plain: Kernels = field(repr=False)

    def fields(self, v: ArrayLike) -> np.ndarray:
        """h = B v (the generated ``fields``), (..., L)."""
        v = _vec(v, self.L, "v")
        out = self.generated.functions["fields"](v, self.CB)
        return np.stack(np.broadcast_arrays(*out), axis=-1) if v.ndim > 1 else np.array(out, dtype=float)

    def attention(self, v: ArrayLike) -> np.ndarray:
        """S(B v)[..., l, k] = softmax_k(h_l h_k), h = B v."""
        return self.plain.attention(self.fields(v))

    def target(self, vstar: ArrayLike, omega: float, A: ArrayLike) -> np.ndarray:
        """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A with h* = B v*."""
        return self.plain.target(self.fields(vstar), omega, A)

    def loss_arguments(self, sigma2: ArrayLike) -> np.ndarray:
        """The last argument of the generated functions in v: :attr:`CB` (``sigma2`` must be the whitened model's ones)."""
        if not np.all(np.asarray(sigma2) == 1.0):
            raise ValueError("the correlated-token kernels belong to the whitened model, whose sigma_l^2 are 1")
        return self.CB

    def loss(self, v: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """loss_C(B v, T) -> (...)."""
        self.loss_arguments(sigma2)
        h, T = self.fields(v), _mat(T, self.L, "T")
        shape = np.broadcast_shapes(h.shape[:-1], T.shape[:-2])
        return self.generated._run("loss", h, [], [(T, 2), (self.C, 2)], shape, with_h=False)[0]

    def loss_grad_hess(self, v: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss_C(B v, T), B^T grad_h, B^T hess_h B): value (...), gradient (..., L), Hessian (..., L, L) in v."""
        return self._in_v("loss_grad_hess", T, sigma2, v=v)  # type: ignore[return-value]

    def prox_value(self, v: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """sum_l (v_l - w_l)^2 / (2 V_l) + loss_C(B v, T) -> (...)."""
        return self._in_v("prox_value", T, sigma2, v=v, w=w, V=V)[0]

    def prox_value_grad_hess(
        self, v: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The proximal objective in v, its gradient (v - w) / V + B^T grad_h and Hessian diag(1 / V) + B^T hess_h B."""
        return self._in_v("prox_value_grad_hess", T, sigma2, v=v, w=w, V=V)  # type: ignore[return-value]

    def _in_v(self, name: str, T: ArrayLike, sigma2: ArrayLike, **vectors: ArrayLike) -> tuple[np.ndarray, ...]:
        """The generated ``name`` at (v[, w, V], S(B v), T, CB): ``vectors`` (..., L) in that order, v first."""
        pre = [_vec(x, self.L, key) for key, x in vectors.items()]
        T = _mat(T, self.L, "T")
        shape = np.broadcast_shapes(*(x.shape[:-1] for x in pre), T.shape[:-2])
        return self.generated._run(name, self.fields(pre[0]), [(x, 1) for x in pre],
                                   [(T, 2), (self.loss_arguments(sigma2), 1)], shape, with_h=False)

    @cached_property
    def scalar(self) -> ScalarKernels:
        """The one-point variants of ``fields``, ``prox_value`` and ``prox_value_grad_hess`` (in v, last argument
        :attr:`CB`), for the compiled proximal solver; see :class:`~attnphase.theory.kernels.ScalarKernels`."""
        L, cse = self.L, self.generated.cse
        specs = lambda: [s for s in _build_specs(L) if s.name in SCALAR_FUNCTIONS]  # noqa: E731
        module = load_module("kernels_cov", L, 1, cse, specs, scalar=True)
        return ScalarKernels(L, 1, cse, vars(module), module.__name__)


def get_correlated_kernels(B: ArrayLike, cse: bool = True) -> CorrelatedKernels:
    """The kernels of the whitened model with mixing B (L x L, invertible); the generated module is
    imported once per process (:func:`attnphase.theory.codegen.load_module`)."""
    B = np.array(B, dtype=float)
    L = B.shape[0]
    module = load_module("kernels_cov", L, 1, bool(cse), lambda: _build_specs(L))
    C = B @ B.T
    CB = np.concatenate([C.ravel(), B.ravel()])
    return CorrelatedKernels(L, B, C, CB, Kernels(L, 1, bool(cse), vars(module)), get_kernels(L, cse=cse))


def model_kernels(params: ModelParams) -> Kernels | CorrelatedKernels:
    """The channel's kernels of a model the state evolution runs on: :class:`Kernels`, or
    :class:`CorrelatedKernels` for a whitened model; a model with correlated tokens not whitened is refused."""
    if params.correlated_tokens:
        raise ValueError("correlated tokens run in their whitened form: pass attnphase.theory.whitening.se_params(params)")
    B = params.mixing_array
    if B is None:
        return get_kernels(params.L, channel=params.channel)
    if params.loss != "square":
        raise ValueError(f"correlated tokens take the square loss only, got loss {params.loss!r}")
    return get_correlated_kernels(B)
