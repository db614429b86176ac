"""The curvature of the training risk at a point: is a gradient-descent end a minimum or a saddle?

The risk is that of docs/model.md section 1 (``students.risk``)::

    R(Q) = sum_mu (1 / 2d) |y^mu - f(X^mu)|^2 + (lambda / 2) |Q|_F^2 ,

and its Hessian ``H = d^2 R / dQ^2`` is a ``(d r) x (d r)`` matrix, O(1) in the normalised weights.  A
point where ``|grad R|`` vanishes is a strict local minimum when the lowest eigenvalue of ``H`` is
positive, a saddle when it is negative.  :func:`lowest_hessian_eigs` finds the lowest eigenvalues by
Lanczos (``scipy.sparse.linalg.eigsh``, ``which = "SA"``) on autograd Hessian-vector products
``H v = d/dQ (grad R . v)``, never forming ``H`` (each product costs about two gradients);
:func:`full_hessian_min` forms ``H`` column by column (``d r`` products), a check on Lanczos at small d.  The helper
of ``studies/second_a_state.py`` and ``studies/random_start_states.py`` (docs/validation.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import torch

from attnphase.validation.students import GramData, risk


@dataclass(frozen=True)
class HessianEigs:
    """The lowest eigenpairs of ``H`` at one point.

    Attributes:
        values: the ``k`` lowest eigenvalues of ``H``, ascending.
        vectors: ``(d r, k)`` their unit eigenvectors (columns, ``Q``'s entries flattened row-major).
        products: Hessian-vector products Lanczos used (the cost of the check).
        seconds: wall time.
    """

    values: np.ndarray
    vectors: np.ndarray
    products: int
    seconds: float


def _gradient_graph(Q: torch.Tensor, g: GramData, lam: float) -> tuple[torch.Tensor, torch.Tensor]:
    Qv = Q.detach().clone().requires_grad_(True)
    (G,) = torch.autograd.grad(risk(Qv, g, lam), Qv, create_graph=True)
    return Qv, G


def lowest_hessian_eigs(Q: torch.Tensor, g: GramData, lam: float, k: int = 3, tol: float = 1e-10,
                        seed: int = 0) -> HessianEigs:
    """The ``k`` lowest eigenvalues of ``H = d^2 R / dQ^2`` at ``Q`` (``(d, r)``, CPU or CUDA) by Lanczos on
    autograd Hessian-vector products, from the start vector ``N(0, 1)`` of ``numpy`` seed ``seed``."""
    from scipy.sparse.linalg import LinearOperator, eigsh

    n = Q.numel()
    if not 0 < k < n:
        raise ValueError(f"k must lie in [1, d r - 1] = [1, {n - 1}], got {k}")
    t0 = time.perf_counter()
    Qv, G = _gradient_graph(Q, g, lam)
    count = [0]

    def hvp(v: np.ndarray) -> np.ndarray:
        count[0] += 1
        vt = torch.as_tensor(np.ascontiguousarray(v, dtype=np.float64).reshape(Q.shape)).to(Q.device, Q.dtype)
        (Hv,) = torch.autograd.grad(G, Qv, grad_outputs=vt, retain_graph=True)
        return Hv.detach().reshape(-1).double().cpu().numpy()

    op = LinearOperator((n, n), matvec=hvp, dtype=np.float64)
    v0 = np.random.default_rng(seed).standard_normal(n)
    vals, vecs = eigsh(op, k=k, which="SA", tol=tol, v0=v0)
    order = np.argsort(vals)
    return HessianEigs(vals[order], vecs[:, order], count[0], time.perf_counter() - t0)


def full_hessian_min(Q: torch.Tensor, g: GramData, lam: float) -> float:
    """The lowest eigenvalue of the full ``(d r) x (d r)`` Hessian of ``R`` at ``Q`` (``d r`` products)."""
    Qv, G = _gradient_graph(Q, g, lam)
    eye = torch.eye(Q.numel(), dtype=Q.dtype, device=Q.device)
    H = torch.stack([torch.autograd.grad(G, Qv, grad_outputs=e.reshape(Q.shape), retain_graph=True)[0].reshape(-1)
                     for e in eye])
    return float(torch.linalg.eigvalsh(0.5 * (H + H.T))[0])
