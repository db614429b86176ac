"""Numpy kernels of the channel for every (L, r), generated from the sympy derivations (docs/model.md sections 2-3, 7).

    k = get_kernels(L, r, cse=True)
    S = k.attention(h)                                # (..., L, r) -> (..., L, L)
    loss, grad, hess = k.loss_grad_hess(h, T, sigma2) # (...), (..., L r), (..., L r, L r)
    value, grad, hess = k.prox_value_grad_hess(h, w, V, T, sigma2)  # r = 1 only

Gradients and Hessians are in the L r entries of h, entry (l, a) at slot l r + a; at r = 1 h may also be
(..., L) (the fields form of :mod:`attnphase.theory.kernel_specs`). Inputs broadcast; batches are evaluated in
blocks of :data:`CHUNK` points, with S the max-shifted softmax of :mod:`attnphase.theory.softmax` (no overflow
at any finite h). :attr:`Kernels.scalar`: the same, one point per call, for compiled callers. Imports neither
sympy nor torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from attnphase.theory.channels import default_channel
from attnphase.theory.kernel_specs import field_specs, matrix_specs, scalar_field_specs
from attnphase.theory.codegen import cached_source, load_module
from attnphase.theory.softmax import ArrayLike, attention, target

#: Points per block in the batched kernels (the generated code's temporaries stay in cache).
CHUNK = 4096


def _kind(channel: Any, matrix: bool) -> str:
    """The cache kind of a channel's kernels: ``kernels_<tag>`` (fields form) or ``matrix_kernels_<tag>``."""
    return f"{'matrix_' if matrix else ''}kernels_{channel.cache_tag}"


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
class ScalarKernels:
    """One-point variants of the generated functions, for compiled callers (see module doc).

    ``functions``: the generated module's namespace, with the arguments of their batched twins but one point per
    call, each returning a tuple of floats; ``module``: its name in ``sys.modules``.
    """

    L: int
    r: int
    cse: bool
    functions: dict[str, Callable[..., tuple[float, ...]]] = field(repr=False)
    module: str = ""


@dataclass(frozen=True, eq=False)
class Kernels:
    """Numpy kernels of the channel for sequence length L and rank r (see module doc).

    ``functions``: the generated module's namespace (the fields form at r = 1, the matrix form at r >= 2), shared
    by every Kernels of the same (L, r, cse); ``channel``: the loss they are generated from.
    """

    L: int
    r: int
    cse: bool
    functions: dict[str, Callable[..., tuple[Any, ...]]] = field(repr=False)
    channel: Any = None

    def attention(self, h: ArrayLike) -> np.ndarray:
        """S(h)[..., l, k] = softmax_k(h_l . h_k) (max-shifted), h: (..., L, r) (or (..., L) at r = 1) -> (..., L, L)."""
        h, matrix = self._fields(h)
        return attention(h if matrix else h[..., None])

    def target(self, hstar: ArrayLike, omega: ArrayLike, A: ArrayLike) -> np.ndarray:
        """T(h*) = (1 - omega) softmax_row(h* h*^T) + omega A for a rank-1 teacher, hstar: (..., L) -> (..., L, L)
        (any teacher rank: :func:`attnphase.theory.softmax.target`)."""
        return target(_vec(hstar, self.L, "hstar")[..., None], omega, _mat(A, self.L, "A"))

    def loss(self, h: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """The channel's loss(h, T) -> (...) (square loss: 1/2 sum_{l,k} sigma_k^2 (S(h) - T)[l, k]^2); in the
        matrix form the channel's numpy form where it has one (``Channel.loss_values``)."""
        h, matrix = self._fields(h)
        T, sigma2 = _mat(T, self.L, "T"), _vec(sigma2, self.L, "sigma2")
        shape = np.broadcast_shapes(h.shape[: h.ndim - (2 if matrix else 1)], T.shape[:-2], sigma2.shape[:-1])
        if matrix:
            S = attention(h)
            fast = self.channel.loss_values(np.broadcast_to(S, shape + S.shape[-2:]), np.broadcast_to(T, shape + T.shape[-2:]),
                                            sigma2)
            if fast is not None:
                return fast
        return self._run("loss", h, [], [(T, 2), (sigma2, 1)], shape, with_h=False, matrix=matrix)[0]

    def loss_grad_hess(self, h: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(loss (...), grad (..., L r), hess (..., L r, L r)) of the limit loss in the entries of h (row-major
        (l, a)), one cse'd evaluation; h: (..., L, r) (or (..., L) at r = 1), T (..., L, L), sigma2 (..., L)."""
        h, matrix = self._fields(h)
        T, sigma2 = _mat(T, self.L, "T"), _vec(sigma2, self.L, "sigma2")
        shape = np.broadcast_shapes(h.shape[: h.ndim - (2 if matrix else 1)], T.shape[:-2], sigma2.shape[:-1])
        return self._run("loss_grad_hess", h, [], [(T, 2), (sigma2, 1)], shape, matrix=matrix)  # type: ignore[return-value]

    def prox_value(self, h: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike) -> np.ndarray:
        """Proximal objective alone, P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T) -> (...) (line searches; r = 1)."""
        return self._prox("prox_value", h, w, V, T, sigma2)[0]

    def prox_value_grad_hess(
        self, h: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Proximal objective sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T): (value, grad, hess) in h (r = 1);
        h, w, V, sigma2 (..., L), T (..., L, L) -> (...), (..., L), (..., L, L)."""
        return self._prox("prox_value_grad_hess", h, w, V, T, sigma2)  # type: ignore[return-value]

    @cached_property
    def matrix_functions(self) -> dict[str, Callable[..., tuple[Any, ...]]]:
        """The generated matrix-form batched functions (at r >= 2 :attr:`functions` itself)."""
        if self.r != 1:
            return self.functions
        return vars(_module(self.L, self.r, self.cse, self.channel, matrix=True, scalar=False))

    @cached_property
    def scalar(self) -> ScalarKernels:
        """The one-point rendering of :attr:`functions` (:class:`ScalarKernels`: the fields form at r = 1, the
        matrix form at r >= 2), built on first use and kept."""
        return get_scalar_kernels(self.L, self.r, self.cse, self.channel)

    @cached_property
    def matrix_scalar(self) -> ScalarKernels:
        """The one-point rendering of :attr:`matrix_functions` (at r >= 2 :attr:`scalar` itself)."""
        if self.r != 1:
            return self.scalar
        module = _module(self.L, self.r, self.cse, self.channel, matrix=True, scalar=True)
        return ScalarKernels(self.L, self.r, self.cse, vars(module), module.__name__)

    def _fields(self, h: ArrayLike) -> tuple[np.ndarray, bool]:
        """(h, True) for h of trailing shape (L, r); (h, False) for the fields form (..., L) at r = 1."""
        h = np.asarray(h, dtype=float)
        L, r = self.L, self.r
        if r == 1 and h.ndim >= 1 and h.shape[-1] == L:
            return h, False
        if h.ndim < 2 or h.shape[-2:] != (L, r):
            if r == 1:
                raise ValueError(f"h must have trailing dimension L = {L} (or trailing shape (L, r) = ({L}, 1)), "
                                 f"got shape {h.shape}")
            raise ValueError(f"h must have trailing shape (L, r) = ({L}, {r}), got shape {h.shape}")
        return h, True

    def _prox(self, name: str, h: ArrayLike, w: ArrayLike, V: ArrayLike, T: ArrayLike, sigma2: ArrayLike
              ) -> tuple[np.ndarray, ...]:
        if self.r != 1:
            raise ValueError(f"the generated proximal objective has diagonal V (r = 1); at r = {self.r} it is "
                             f"sum_l 1/2 (h_l - w_l)^T V_l^{{-1}} (h_l - w_l) + loss, from loss_grad_hess")
        h, L = _vec(h, self.L, "h"), self.L
        w, V = _vec(w, L, "w"), _vec(V, L, "V")
        T, sigma2 = _mat(T, L, "T"), _vec(sigma2, L, "sigma2")
        shape = np.broadcast_shapes(h.shape[:-1], w.shape[:-1], V.shape[:-1], T.shape[:-2], sigma2.shape[:-1])
        return self._run(name, h, [(w, 1), (V, 1)], [(T, 2), (sigma2, 1)], shape)

    def _run(
        self, name: str, h: np.ndarray, pre: list[tuple[np.ndarray, int]], post: list[tuple[np.ndarray, int]],
        shape: tuple[int, ...], with_h: bool = True, matrix: bool = False,
    ) -> tuple[np.ndarray, ...]:
        """Evaluate the generated ``name`` as f([h,] *pre, S(h), *post) in blocks of CHUNK points of the
        flattened batch (each argument paired with its number of trailing axes): (value,) or (value, grad, hess)."""
        n = self.L * self.r
        N = int(np.prod(shape, dtype=np.int64))
        h_axes = 2 if matrix else 1
        flat = [_flatten(x, t, shape, N) for x, t in [(h, h_axes), *pre, *post]]
        fn = (self.matrix_functions if matrix else self.functions)[name]
        vgh = name.endswith("_grad_hess")
        value = np.empty(N)
        grad = np.empty((N, n)) if vgh else None
        hess = np.empty((N, n, n)) if vgh else None
        for start in range(0, max(N, 1), CHUNK):
            sl = slice(start, start + CHUNK)
            a = [x[sl] if batched else x for x, batched in flat]
            S = attention(a[0] if matrix else a[0][..., None])
            args = ([a[0]] if with_h else []) + a[1 : 1 + len(pre)] + [S] + a[1 + len(pre) :]
            out = fn(*args)
            value[sl] = out[0]
            if vgh:
                unpack_derivatives(out, grad[sl], hess[sl])  # type: ignore[index]
        if not vgh:
            return (value.reshape(shape),)
        return value.reshape(shape), grad.reshape(shape + (n,)), hess.reshape(shape + (n, n))  # type: ignore[union-attr]


def unpack_derivatives(out: tuple[Any, ...], grad: Any, hess: Any) -> None:
    """A generated (value, gradient, upper triangle of the Hessian row by row) into ``grad`` (..., n) and ``hess``
    (..., n, n), numpy arrays or torch tensors, the upper triangle mirrored."""
    n = grad.shape[-1]
    for j in range(n):
        grad[..., j] = out[1 + j]
    k = 1 + n
    for i in range(n):
        for j in range(i, n):
            hess[..., i, j] = out[k]
            hess[..., j, i] = out[k]
            k += 1


def _flatten(x: np.ndarray, trailing: int, shape: tuple[int, ...], N: int) -> tuple[np.ndarray, bool]:
    """(x broadcast to the batch ``shape`` and flattened to (N, ...), True), or (x, False) if x has no batch axes."""
    tail = x.shape[x.ndim - trailing :]
    if x.ndim == trailing:
        return x, False
    return np.broadcast_to(x, shape + tail).reshape((N,) + tail), True


def _build(L: int, r: int, channel: Any, matrix: bool, scalar: bool) -> Callable[[], list[Any]]:
    """The spec builder of one generated module (sympy is imported only when it is called)."""
    fields_form = scalar_field_specs if scalar else field_specs
    return lambda: matrix_specs(L, r, channel) if matrix else fields_form(L, channel)


def _module(L: int, r: int, cse: bool, channel: Any, matrix: bool, scalar: bool) -> Any:
    """The generated module of (L, r, cse, channel) in the matrix or the fields form (batched or one point)."""
    return load_module(_kind(channel, matrix), L, r, cse, _build(L, r, channel, matrix, scalar), scalar=scalar)


def _normalise(L: int, r: int, cse: bool, channel: Any) -> tuple[int, int, bool, Any]:
    if isinstance(L, bool) or int(L) != L or L < 2:
        raise ValueError(f"L must be an integer >= 2, got {L!r}")
    if isinstance(r, bool) or int(r) != r or r < 1:
        raise ValueError(f"r (student rank) must be an integer >= 1, got {r!r}")
    return int(L), int(r), bool(cse), default_channel(channel)


def get_kernels(L: int, r: int = 1, cse: bool = True, channel: Any = None) -> Kernels:
    """The numpy kernels of ``channel``'s loss (default: the square loss) for sequence length L >= 2 and
    rank r >= 1."""
    L, r, cse, channel = _normalise(L, r, cse, channel)
    return Kernels(L, r, cse, vars(_module(L, r, cse, channel, matrix=r != 1, scalar=False)), channel)


def get_scalar_kernels(L: int, r: int = 1, cse: bool = True, channel: Any = None) -> ScalarKernels:
    """The one-point kernels of ``channel``'s loss (default: square) for (L, r): the fields form at r = 1, the
    matrix form at r >= 2; see :class:`ScalarKernels`."""
    L, r, cse, channel = _normalise(L, r, cse, channel)
    module = _module(L, r, cse, channel, matrix=r != 1, scalar=True)
    return ScalarKernels(L, r, cse, vars(module), module.__name__)


def scalar_kernel_source(L: int, r: int = 1, cse: bool = True, channel: Any = None) -> str:
    """Python source of the one-point kernels of (L, r) (see :class:`ScalarKernels`), as cached on disk (for
    inspection: operation counts of the generated code)."""
    L, r, cse, channel = _normalise(L, r, cse, channel)
    return cached_source(_kind(channel, r != 1), L, r, cse, _build(L, r, channel, r != 1, True), scalar=True)[0]
