"""Torch backend of the proximal solvers of :mod:`attnphase.numerics.prox.global_prox`: the Newton descent on a device.

    h_hat(w, T) = argmin_h  P(h) = sum_l (h_l - w_l)^2 / (2 V_l) + loss(h, T)      (docs/model.md section 3)

:func:`newton_minimize` is :func:`attnphase.numerics.prox.global_prox.newton_minimize` (same regularisation,
step cap, Armijo constants, convergence tests and active set; the step rules are those of
:mod:`~attnphase.numerics.prox.newton_steps`, evaluated on torch tensors) batched over all rows in
float64 torch tensors on one device.  P, its gradient and Hessian are the same generated kernels
(``Kernels.functions``: the sympy derivations rendered as arithmetic and indexing only, which run
on tensors as written) on the softmax of :func:`outer_softmax`, the torch twin of the kernels'
batched softmax.  The starts, the refinement pass and the selection of the global minimiser and
of the candidates stay those of :func:`attnphase.numerics.prox.global_prox.global_prox`, on the results
copied back to numpy: both backends pick the same winners by construction.

Device: ``device`` argument, else ``$ATTNPHASE_TORCH_DEVICE`` (any torch device string: ``cpu``,
``cuda``, ``cuda:1``), else ``cuda`` when torch sees a GPU, else ``cpu`` (:func:`torch_device`).

Importing this module imports torch; :func:`available` says whether it can be imported.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from attnphase.numerics.prox import newton_steps as steps
from attnphase.numerics.config import TORCH_DEVICE_ENV
from attnphase.numerics.prox.newton_steps import ProxResult

try:
    import torch
except ImportError:  # pragma: no cover - torch is a dependency; resolve_backend reports its absence
    torch = None  # type: ignore[assignment]


def available() -> bool:
    """Whether torch can be imported (the torch backend can be used)."""
    return torch is not None


def torch_device(device: str | None = None) -> "torch.device":
    """The device the solver runs on: ``device``, else ``$ATTNPHASE_TORCH_DEVICE``, else cuda when available, else cpu.

    ValueError (one line) for a name torch does not know, or a GPU torch cannot see.
    """
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
    """S(h)[..., l, k] = softmax_k(h_l h_k), max-shifted: the torch twin of the kernels' batched softmax.

    The same operations in the same order as :func:`attnphase.theory.kernels._outer_softmax`:
    the scores a_lk = h_l h_k, the row max and the sum over k = 1..L in order, then the division.
    """
    a = h[..., :, None] * h[..., None, :]
    L = a.shape[-1]
    m = a[..., 0]
    for k in range(1, L):
        m = torch.maximum(m, a[..., k])
    a = torch.exp(a - m[..., None])
    tot = a[..., 0]
    for k in range(1, L):
        tot = tot + a[..., k]
    return a / tot[..., None]


def _rowsum(a: "torch.Tensor") -> "torch.Tensor":
    """sum over the short last axis in the order k = 1..L (as the numpy backend adds)."""
    out = a[..., 0]
    for k in range(1, a.shape[-1]):
        out = out + a[..., k]
    return out


def _rowmax(a: "torch.Tensor") -> "torch.Tensor":
    return a.amax(dim=-1)


def prox_value(kernels: Any, h: Any, w: Any, V: Any, T: Any, sigma2: Any) -> "torch.Tensor":
    """P(h) on rows of tensors (the generated ``prox_value``), shape (n,)."""
    return _as_rows(kernels.functions["prox_value"](h, w, V, outer_softmax(h), T, sigma2)[0], h)


def prox_value_grad_hess(kernels: Any, h: Any, w: Any, V: Any, T: Any, sigma2: Any) -> tuple[Any, Any, Any]:
    """(P, grad P, Hessian of P) on rows of tensors (the generated ``prox_value_grad_hess``): (n,), (n, L), (n, L, L)."""
    L = h.shape[-1]
    out = kernels.functions["prox_value_grad_hess"](h, w, V, outer_softmax(h), T, sigma2)
    grad = torch.empty(h.shape, dtype=h.dtype, device=h.device)
    hess = torch.empty(h.shape + (L,), dtype=h.dtype, device=h.device)
    for j in range(L):
        grad[:, j] = out[1 + j]
    n = 1 + L
    for i in range(L):
        for j in range(i, L):
            hess[:, i, j] = out[n]
            hess[:, j, i] = out[n]
            n += 1
    return _as_rows(out[0], h), grad, hess


def _as_rows(x: Any, h: "torch.Tensor") -> "torch.Tensor":
    """A generated output (a tensor, or a number where the expression is constant) as a tensor of shape (n,)."""
    return torch.as_tensor(x, dtype=h.dtype, device=h.device).expand(h.shape[:-1])


def newton_minimize(
    kernels: Any, h0: np.ndarray, w: np.ndarray, V: np.ndarray, T: np.ndarray, sigma2: np.ndarray,
    *, xtol: float = 1e-10, max_iter: int = 60, max_halvings: int = 30, device: str | None = None,
) -> ProxResult:
    """:func:`attnphase.numerics.prox.global_prox.newton_minimize` on ``device`` (:func:`torch_device`); numpy in and out.

    Direction d = -(H + mu I)^{-1} grad (mu from :func:`~attnphase.numerics.prox.newton_steps.shift`), capped at
    ``max_step(V)``, Armijo backtracking by halving; a node converges on a tiny or flat Newton step in a convex
    region (``near``) or when it stalls at rounding level (``stalled``).  Only the
    unconverged rows are iterated.
    """
    dev = torch_device(device)

    def tensor(x: np.ndarray) -> "torch.Tensor":
        return torch.as_tensor(np.ascontiguousarray(x, dtype=float), device=dev)

    h = tensor(h0).clone()
    N, L = h.shape
    Vb, wt, Tt, s2 = tensor(np.broadcast_to(V, (N, L))), tensor(w), tensor(T), tensor(sigma2)
    cap = steps.max_step(V)
    converged = torch.zeros(N, dtype=torch.bool, device=dev)
    active = torch.arange(N, device=dev)
    eye = torch.eye(L, dtype=h.dtype, device=dev)
    value, g, H = prox_value_grad_hess(kernels, h, wt, Vb, Tt, s2)
    value = value.clone()
    it = 0
    while active.numel() and it < max_iter:
        it += 1
        ha, wa, Va, Ta, fa = h[active], wt[active], Vb[active], Tt[active], value[active]
        pd, mu = steps.shift(steps.sym_min_eig(H, torch), Va.amin(dim=-1), torch)
        d = -steps.solve(H + mu[:, None, None] * eye, g, torch)
        dn = _rowmax(d.abs())
        d = d * steps.step_scale(torch.sqrt(_rowsum(d * d)), cap, torch)[:, None]
        slope = _rowsum(g * d)
        tiny = pd & steps.near(dn, _rowmax(ha.abs()), slope, fa, xtol)
        t = torch.ones(active.numel(), dtype=h.dtype, device=dev)
        new_h = ha + d
        accepted = tiny.clone()
        pending = torch.nonzero(~tiny).flatten()
        for _ in range(max_halvings):
            if not pending.numel():
                break
            trial = ha[pending] + t[pending, None] * d[pending]
            ft = prox_value(kernels, trial, wa[pending], Va[pending], Ta[pending], s2)
            ok = steps.armijo(ft, fa[pending], t[pending], slope[pending])
            new_h[pending[ok]] = trial[ok]
            accepted[pending[ok]] = True
            pending = pending[~ok]
            t[pending] *= 0.5
        new_h[~accepted] = ha[~accepted]
        h[active] = new_h
        f, g, H = prox_value_grad_hess(kernels, new_h, wa, Va, Ta, s2)
        value[active] = f
        stalled = steps.stalled(accepted, _rowmax(g.abs()), _rowmax((new_h - wa).abs() / Va))
        done = tiny | stalled
        converged[active[done]] = True
        keep = ~(done | ~accepted)
        active, g, H = active[keep], g[keep], H[keep]
    return ProxResult(h.cpu().numpy(), value.cpu().numpy(), converged.cpu().numpy(), it)
