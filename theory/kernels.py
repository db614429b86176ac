"""Lambdified, cached numpy kernels of the channel (MODEL.md sections 2-3).

    from attnphase.theory.kernels import get_kernels
    k = get_kernels(L, r=1, cse=True)
    S = k.attention(h)                                # (..., L) -> (..., L, L)
    T = k.target(hstar, omega, A)                     # (..., L) -> (..., L, L)
    loss = k.loss(h, T, sigma2)                       # (...)
    loss, grad, hess = k.loss_grad_hess(h, T, sigma2)
    value, grad, hess = k.prox_value_grad_hess(h, w, V, T, sigma2)

Every input broadcasts against the others; every output is a float64 array
of the broadcast batch shape (plus (L,) or (L, L)). The formulas come from the
sympy derivations of :mod:`attnphase.theory.prox` and :mod:`attnphase.theory.attention`,
generated once by :mod:`attnphase.theory.codegen` (with or without common
subexpression elimination) and cached in memory (``functools.lru_cache``) and on
disk. The softmax is evaluated max-shifted, once per point; the generated
functions are polynomials in (h, S, T, sigma^2) and 1 / V, so no exponential of a
field is ever taken and no overflow can occur at any finite h. Batches are
evaluated in blocks of :data:`CHUNK` points (a Python loop over blocks, never
over points) so that the generated code's temporaries stay in cache.

The same derivations are also rendered one point per call (:func:`get_scalar_kernels`):
plain Python functions of arrays of one point (``h[0]``, ``S[0, 1]``) returning a tuple
of floats, for compiled callers (``numba.njit``, see :mod:`attnphase.numerics.prox_compiled`).

Importing this module imports neither sympy nor torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from attnphase.theory.codegen import Argument, FunctionSpec, cached_namespace, cached_source

ArrayLike = Any


#: Points per block in the batched kernels: small enough that the temporaries of the
#: generated code stay in cache (about twice as fast as one call on 1e5 points).
CHUNK = 4096


def _softmax_inplace(a: np.ndarray) -> np.ndarray:
    # max and sum over the short last axis as explicit slices: numpy's reductions over
    # an axis of length L = 2..4 are several times slower than elementwise maximum/add
    L = a.shape[-1]
    m = a[..., 0].copy()
    for k in range(1, L):
        np.maximum(m, a[..., k], out=m)
    a -= m[..., None]
    np.exp(a, out=a)
    tot = a[..., 0].copy()
    for k in range(1, L):
        tot += a[..., k]
    a /= tot[..., None]
    return a


def row_softmax(a: ArrayLike) -> np.ndarray:
    """softmax over the last axis, max-shifted: exp(a_k - max a) / sum_j exp(a_j - max a)."""
    return _softmax_inplace(np.array(a, dtype=float))


def _outer_softmax(h: np.ndarray) -> np.ndarray:
    """S[..., l, k] = softmax_k(a_lk), a_lk = h_l h_k (r = 1; the generated ``scores``, as one numpy product)."""
    return _softmax_inplace(h[..., :, None] * h[..., None, :])


def _build_specs(L: int, r: int) -> list[FunctionSpec]:
    """The generated functions of the kernel module (sympy is imported here only)."""
    import sympy as sp

    from attnphase.theory.attention import scores, teacher
    from attnphase.theory.prox import derive_prox
    from attnphase.theory.symbols import as_rows, pair_symbols

    pd = derive_prox(L, r)
    ld = pd.loss
    h = list(ld.h)
    S, T, s2 = as_rows(ld.S), as_rows(ld.T), list(ld.sigma2)
    iu = [(i, j) for i in range(L) for j in range(i, L)]
    a = scores(ld.h)
    Sstar = pair_symbols("s", L, positive=True)
    A = pair_symbols("A", L, nonnegative=True)
    omega = sp.Symbol("omega", nonnegative=True)
    Tex = teacher(Sstar, omega, A)
    arg_h = Argument("h", h, "student fields h_l")
    arg_S = Argument("S", S, "attention S(h)[l, k] = softmax_k(h_l h_k), computed max-shifted")
    arg_T = Argument("T", T, "target attention T(h*)[l, k]")
    arg_s2 = Argument("sigma2", s2, "per-token variances sigma_k^2")

    # sympy's "basic" cse optimisations save ~20 % of the operations (L = 2: 299 -> 233) but take
    # ~10 s on the L = 4 Hessian; beyond L = 3 plain cse keeps the one-off generation short.
    opt = "basic" if L <= 3 else None

    def outputs(value: Any, grad: Sequence[Any], hess: Any, name: str) -> tuple[tuple[str, Any], ...]:
        out = [(name, value)]
        out += [(f"d {name} / d {h[j]}", grad[j]) for j in range(L)]
        out += [(f"d2 {name} / d {h[i]} d {h[j]}", hess[i, j]) for i, j in iu]
        return tuple(out)

    return [
        FunctionSpec(
            "scores", (arg_h,), tuple((f"a_{l + 1}{k + 1} = h_{l + 1} h_{k + 1}", a[l, k]) for l in range(L) for k in range(L)),
            "Attention scores a_lk = h_l . h_k, row-major.",
        ),
        FunctionSpec(
            "target",
            (Argument("Sstar", as_rows(Sstar), "teacher softmax s = softmax_row(h* h*^T)"), Argument("omega", omega, "mixing weight"),
             Argument("A", as_rows(A), "row-stochastic positional attention A")),
            tuple((f"T_{l + 1}{k + 1}", Tex[l, k]) for l in range(L) for k in range(L)),
            "Target attention T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A, row-major.",
        ),
        FunctionSpec(
            "loss", (arg_S, arg_T, arg_s2), (("loss", ld.value),),
            "Limit loss 1/2 sum_{l,k} sigma_k^2 (S(h) - T(h*))[l, k]^2 (MODEL.md section 2).",
        ),
        FunctionSpec(
            "loss_grad_hess", (arg_h, arg_S, arg_T, arg_s2), outputs(ld.value, ld.grad, ld.hess, "loss"),
            "Limit loss, its gradient and Hessian (upper triangle, row-major) in h.",
            opt,
        ),
        FunctionSpec(
            "prox_value_grad_hess",
            (arg_h, Argument("w", list(pd.w), "field means w_l"), Argument("V", list(pd.V), "variances V_l > 0"),
             arg_S, arg_T, arg_s2),
            outputs(pd.value, pd.grad, pd.hess, "prox"),
            "Proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T), gradient and Hessian "
            "(upper triangle, row-major) in h (MODEL.md section 3).",
            opt,
        ),
    ]


def _vec(x: ArrayLike, L: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim < 1 or x.shape[-1] != L:
        raise ValueError(f"{name} must have trailing dimension L = {L}, got shape {x.shape}")
    return x


def _mat(x: ArrayLike, L: int, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim < 2 or x.shape[-2:] != (L, L):
        raise ValueError(f"{name} must have trailing shape (L, L) = ({L}, {L}), got shape {x.shape}")
    return x


@dataclass(frozen=True, eq=False)
class Kernels:
    """Numpy kernels of the channel for sequence length L and rank r (see module doc).

    Attributes:
        L: sequence length.
        r: student rank (r = 1).
        cse: whether the generated code used common subexpression elimination.
        functions: the generated numpy functions by name (``scores``, ``target``, ``loss``,
            ``loss_grad_hess``, ``prox_value_grad_hess``); their docstrings state the argument slots.
    """

    L: int
    r: int
    cse: bool
    functions: dict[str, Callable[..., tuple[Any, ...]]] = field(repr=False)

    # --- attention ----------------------------------------------------------
    def attention(self, h: ArrayLike) -> np.ndarray:
        """S(h)[..., l, k] = softmax_k(h_l h_k) (max-shifted), h: (..., L) -> (..., L, L)."""
        return _outer_softmax(_vec(h, self.L, "h"))

    def target(self, hstar: ArrayLike, omega: float, A: ArrayLike) -> np.ndarray:
        """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A, hstar: (..., L) -> (..., L, L)."""
        Sstar = self.attention(hstar)
        A = _mat(A, self.L, "A")
        omega = np.asarray(omega, dtype=float)
        shape = np.broadcast_shapes(Sstar.shape[:-2], omega.shape, A.shape[:-2])
        return self._pairs(self.functions["target"](Sstar, omega, A), shape)

    # --- loss ---------------------------------------------------------------
    def loss(self, h: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """loss(h, T) = 1/2 sum_{l,k} sigma_k^2 (S(h) - T)[l, k]^2 -> (...)."""
        h = _vec(h, self.L, "h")
        T, sigma2 = _mat(T, self.L, "T"), _vec(sigma2, self.L, "sigma2")
        shape = np.broadcast_shapes(h.shape[:-1], T.shape[:-2], sigma2.shape[:-1])
        return self._run("loss", h, [], [(T, 2), (sigma2, 1)], shape, with_h=False)[0]

    def prox_value(self, h: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """Proximal objective alone, sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T) -> (...) (for line searches)."""
        h, w, V = _vec(h, self.L, "h"), _vec(w, self.L, "w"), _vec(V, self.L, "V")
        return self.loss(h, T, sigma2) + 0.5 * np.sum((h - w) ** 2 / V, axis=-1)

    def loss_grad_hess(self, h: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss (...), grad (..., L), hess (..., L, L)) of the limit loss in h, one cse'd evaluation."""
        h = _vec(h, self.L, "h")
        T, sigma2 = _mat(T, self.L, "T"), _vec(sigma2, self.L, "sigma2")
        shape = np.broadcast_shapes(h.shape[:-1], T.shape[:-2], sigma2.shape[:-1])
        return self._run("loss_grad_hess", h, [], [(T, 2), (sigma2, 1)], shape)  # type: ignore[return-value]

    def prox_value_grad_hess(
        self, h: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T): (value, grad, hess) in h.

        Shapes: h, w, V, sigma2 (..., L); T (..., L, L); outputs (...), (..., L), (..., L, L).
        """
        h = _vec(h, self.L, "h")
        w, V = _vec(w, self.L, "w"), _vec(V, self.L, "V")
        T, sigma2 = _mat(T, self.L, "T"), _vec(sigma2, self.L, "sigma2")
        shape = np.broadcast_shapes(h.shape[:-1], w.shape[:-1], V.shape[:-1], T.shape[:-2], sigma2.shape[:-1])
        return self._run("prox_value_grad_hess", h, [(w, 1), (V, 1)], [(T, 2), (sigma2, 1)], shape)  # type: ignore[return-value]

    # --- evaluation and assembly ----------------------------------------------
    def _pairs(self, flat: Sequence[Any], shape: tuple[int, ...]) -> np.ndarray:
        L = self.L
        out = np.empty(shape + (L, L))
        for i in range(L):
            for j in range(L):
                out[..., i, j] = flat[i * L + j]
        return out

    def _run(
        self, name: str, h: np.ndarray, pre: list[tuple[np.ndarray, int]], post: list[tuple[np.ndarray, int]],
        shape: tuple[int, ...], with_h: bool = True,
    ) -> tuple[np.ndarray, ...]:
        """Evaluate the generated ``name`` as f([h,] *pre, S(h), *post) block-wise over the flattened batch.

        Each argument is paired with its number of trailing (non-batch) axes. Arguments
        without batch axes are passed whole; the others are broadcast to the batch shape,
        flattened, and sliced into blocks of CHUNK points. Outputs: (value,) when the
        function returns one value, else (value, grad, hess) with the Hessian mirrored
        from its upper triangle.
        """
        L = self.L
        N = int(np.prod(shape, dtype=np.int64))
        flat = [_flatten(x, t, shape, N) for x, t in [(h, 1), *pre, *post]]
        fn = self.functions[name]
        vgh = name != "loss"
        value = np.empty(N)
        grad = np.empty((N, L)) if vgh else None
        hess = np.empty((N, L, L)) if vgh else None
        iu = [(i, j) for i in range(L) for j in range(i, L)]
        for start in range(0, max(N, 1), CHUNK):
            sl = slice(start, start + CHUNK)
            a = [x[sl] if batched else x for x, batched in flat]
            S = _outer_softmax(a[0])
            args = ([a[0]] if with_h else []) + a[1 : 1 + len(pre)] + [S] + a[1 + len(pre) :]
            out = fn(*args)
            value[sl] = out[0]
            if vgh:
                for j in range(L):
                    grad[sl, j] = out[1 + j]  # type: ignore[index]
                for n, (i, j) in enumerate(iu):
                    hess[sl, i, j] = out[1 + L + n]  # type: ignore[index]
                    if i != j:
                        hess[sl, j, i] = out[1 + L + n]  # type: ignore[index]
        if not vgh:
            return (value.reshape(shape),)
        return value.reshape(shape), grad.reshape(shape + (L,)), hess.reshape(shape + (L, L))  # type: ignore[union-attr]


def _flatten(x: np.ndarray, trailing: int, shape: tuple[int, ...], N: int) -> tuple[np.ndarray, bool]:
    """(x broadcast to the batch ``shape`` and flattened to (N, ...), True), or (x, False) if x has no batch axes."""
    tail = x.shape[x.ndim - trailing :]
    if x.ndim == trailing:
        return x, False
    return np.broadcast_to(x, shape + tail).reshape((N,) + tail), True


@lru_cache(maxsize=None)
def _get_kernels(L: int, r: int, cse: bool) -> Kernels:
    ns = cached_namespace("kernels", L, r, cse, lambda: _build_specs(L, r))
    names = ("scores", "target", "loss", "loss_grad_hess", "prox_value_grad_hess")
    return Kernels(L, r, cse, {n: ns[n] for n in names})


def _check_Lr(L: int, r: int) -> None:
    if isinstance(L, bool) or int(L) != L or L < 2:
        raise ValueError(f"L must be an integer >= 2, got {L!r}")
    if isinstance(r, bool) or int(r) != r or r < 1:
        raise ValueError(f"r (student rank) must be an integer >= 1, got {r!r}")
    if r != 1:
        raise NotImplementedError(f"kernels are implemented for rank r = 1 only, got r = {r}")


def get_kernels(L: int, r: int = 1, cse: bool = True) -> Kernels:
    """The numpy kernels for sequence length L >= 2 and rank r (only r = 1), cached in memory and on disk."""
    _check_Lr(L, r)
    return _get_kernels(int(L), int(r), bool(cse))


#: The generated functions rendered in the scalar (one point per call) variant.
SCALAR_FUNCTIONS = ("loss", "prox_value_grad_hess")


@dataclass(frozen=True, eq=False)
class ScalarKernels:
    """One-point variants of the generated functions, for compiled callers (see module doc).

    Attributes:
        L: sequence length.
        r: student rank (r = 1).
        cse: whether the generated code used common subexpression elimination.
        functions: plain Python functions by name (:data:`SCALAR_FUNCTIONS`), with the
            argument order and slots of their batched twins but one point per call:
            ``loss(S, T, sigma2)`` and ``prox_value_grad_hess(h, w, V, S, T, sigma2)``
            with h, w, V, sigma2 of shape (L,) and S, T of shape (L, L); S must be the
            max-shifted softmax S(h)[l, k] = softmax_k(h_l h_k) of the same h. They return
            a tuple of floats: (loss,) or (value, grad_1..grad_L, hess upper triangle row-major).
    """

    L: int
    r: int
    cse: bool
    functions: dict[str, Callable[..., tuple[float, ...]]] = field(repr=False)


def _scalar_specs(L: int, r: int) -> list[FunctionSpec]:
    return [s for s in _build_specs(L, r) if s.name in SCALAR_FUNCTIONS]


@lru_cache(maxsize=None)
def _get_scalar_kernels(L: int, r: int, cse: bool) -> ScalarKernels:
    ns = cached_namespace("kernels", L, r, cse, lambda: _scalar_specs(L, r), scalar=True)
    return ScalarKernels(L, r, cse, {n: ns[n] for n in SCALAR_FUNCTIONS})


def scalar_kernel_source(L: int, r: int = 1, cse: bool = True) -> str:
    """Python source of the one-point kernels (:data:`SCALAR_FUNCTIONS`, see :class:`ScalarKernels`),
    for compiled callers that render them into a module of their own (numba caches compiled code
    per source file)."""
    _check_Lr(L, r)
    return cached_source("kernels", int(L), int(r), bool(cse), lambda: _scalar_specs(int(L), int(r)), scalar=True)[0]


def get_scalar_kernels(L: int, r: int = 1, cse: bool = True) -> ScalarKernels:
    """The one-point kernels for sequence length L >= 2 and rank r (only r = 1), cached in memory and on disk."""
    _check_Lr(L, r)
    return _get_scalar_kernels(int(L), int(r), bool(cse))
