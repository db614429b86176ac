"""Torch backend of :mod:`attnphase.numerics.prox.global_prox` (r = 1): the Newton descent on a torch device.

:func:`newton_minimize` runs :func:`attnphase.numerics.prox.descent.descend` on float64 tensors, P and its
derivatives the generated kernels (``Kernels.functions``, arithmetic and indexing only) on :func:`outer_softmax`;
the starts and the selection stay :func:`~attnphase.numerics.prox.global_prox.global_prox`'s, on the results
copied back to numpy (docs/method.md section 3).  Importing this module imports torch.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.config import TORCH_DEVICE_ENV
from attnphase.numerics.prox.descent import descend, rowmax, rowsum
from attnphase.numerics.prox.newton_steps import ProxResult
from attnphase.numerics.prox.objective import FieldObjective
from attnphase.theory.kernels import unpack_derivatives

try:
    import torch
except ImportError:  # pragma: no cover - torch is a dependency; resolve_backend reports its absence
    torch = None  # type: ignore[assignment]


def available() -> bool:
    """Whether torch can be imported (the torch backend can be used)."""
    return torch is not None


def torch_device(device: str | None = None) -> "torch.device":
    """The device the solver runs on: ``device``, else ``$ATTNPHASE_TORCH_DEVICE``, else cuda when available, else cpu;
    a one-line ValueError for a name torch does not know, or a GPU torch cannot see."""
    name = device or os.environ.get(TORCH_DEVICE_ENV, "").strip() or ("cuda" if torch.cuda.is_available() else "cpu")
    where = "device" if device else f"${TORCH_DEVICE_ENV}"
    try:
        dev = torch.device(name)
    except RuntimeError:
        raise ValueError(f"{where} must name a torch device (cpu, cuda, cuda:1), got {name!r}") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"{where} is {name!r}, but torch sees no GPU (use cpu)")
    return dev


def outer_softmax(h: "torch.Tensor") -> "torch.Tensor":
    """S(h)[..., l, k] = softmax_k(h_l h_k), max-shifted, in the operations and order of
    :func:`attnphase.theory.softmax.attention`."""
    a = h[..., :, None] * h[..., None, :]
    a = torch.exp(a - rowmax(a, torch)[..., None])
    return a / rowsum(a)[..., None]


def prox_value(kernels: Any, h: Any, w: Any, V: Any, T: Any, sigma2: Any) -> "torch.Tensor":
    """P(h) on rows of tensors (the generated ``prox_value``), shape (n,)."""
    return _as_rows(kernels.functions["prox_value"](h, w, V, outer_softmax(h), T, sigma2)[0], h)


def prox_value_grad_hess(kernels: Any, h: Any, w: Any, V: Any, T: Any, sigma2: Any) -> tuple[Any, Any, Any]:
    """(P, grad P, Hessian of P) on rows of tensors (the generated ``prox_value_grad_hess``): (n,), (n, L), (n, L, L)."""
    out = kernels.functions["prox_value_grad_hess"](h, w, V, outer_softmax(h), T, sigma2)
    grad = torch.empty(h.shape, dtype=h.dtype, device=h.device)
    hess = torch.empty(h.shape + h.shape[-1:], dtype=h.dtype, device=h.device)
    unpack_derivatives(out, grad, hess)
    return _as_rows(out[0], h), grad, hess


def _as_rows(x: Any, h: "torch.Tensor") -> "torch.Tensor":
    """A generated output (a tensor, or a number where the expression is constant) as a tensor of shape (n,)."""
    return torch.as_tensor(x, dtype=h.dtype, device=h.device).expand(h.shape[:-1])


def newton_minimize(kernels: Any, h0: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray, *,
                    xtol: float, max_iter: int, max_halvings: int) -> ProxResult:
    """:func:`attnphase.numerics.prox.global_prox.newton_minimize` on :func:`torch_device`, numpy in and out: the
    descent on a :class:`~attnphase.numerics.prox.objective.FieldObjective` of tensors."""
    dev = torch_device()

    def tensor(x: np.ndarray) -> "torch.Tensor":
        return torch.as_tensor(np.ascontiguousarray(x, dtype=float), device=dev)

    h0t = tensor(h0)
    N, L = h0t.shape
    objective = FieldObjective(torch, functools.partial(prox_value_grad_hess, kernels), functools.partial(prox_value, kernels),
                               tensor(w), tensor(np.broadcast_to(V, (N, L))), tensor(T), tensor(sigma2))
    h, value, converged, it = descend(torch, objective, h0t, cap=steps.max_step(V), xtol=xtol, max_iter=max_iter,
                                      max_halvings=max_halvings)
    return ProxResult(h.cpu().numpy(), value.cpu().numpy(), converged.cpu().numpy(), it)
