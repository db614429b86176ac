"""The step rules of the safeguarded Newton descent on the proximal objective P, and their constants, written once.

A step: d = -(H + mu I)^{-1} grad P, mu from the direction rule (:func:`eigen_shift_direction` at rank 1,
:func:`cholesky_shift_direction` at rank r), scaled to at most :func:`max_step`, accepted by :func:`armijo` while
halving; a node has converged when H is positive definite and the step is :func:`near` zero, or when it has
:func:`stalled`.  ``xp`` is ``numpy`` or ``torch``.  The compiled template :mod:`attnphase.numerics.prox.rows`
compiles the constants in (this file's text is part of its cache key).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True, eq=False)
class ProxResult:
    """Minimisers of a batch of nodes: h (N, L) or (N, L, r), the value P(h) (the Moreau envelope M) and the converged
    flag (N,), and the most Newton iterations any node needed."""

    h: np.ndarray
    value: np.ndarray
    converged: np.ndarray
    iterations: int


#: The Hessian counts as positive definite where lambda_min(H) > PD_REL / V_min.
PD_REL = 1e-10
#: Elsewhere the Newton matrix is H + mu I with mu = -lambda_min(H) + SHIFT_REL / V_min.
SHIFT_REL = 1e-3
#: Armijo sufficient decrease: a step t d is accepted when P(h + t d) <= P(h) + ARMIJO * t grad.d.
ARMIJO = 1e-4
#: A predicted decrease |grad.d| <= FLAT_REL |P| is below the rounding of P.
FLAT_REL = 1e-13
#: A node where no step decreases P is stationary when max |grad| <= STALL_REL (1 + max_l |h_l - w_l| / V_l).
STALL_REL = 1e-8


def max_step(V: np.ndarray) -> float:
    """Cap on the Newton step's length, 4 sqrt(max V) + 1 (the quadratic term confines the minimiser to a ball of that order)."""
    return 4.0 * np.sqrt(float(np.max(V))) + 1.0


def eigen_shift_direction(H: Any, g: Any, v_min: Any, xp: Any = np) -> tuple[Any, Any]:
    """The rank-1 rule: (d, pd), d = -(H + mu I)^{-1} g with (pd, mu) = :func:`shift` (lambda_min(H), V_min);
    lambda_min and the solve in closed form for 2 x 2 (as the compiled twin ``row_algebra.eigen_shift_direction``)."""
    n = H.shape[-1]
    if n != 2:
        pd, mu = shift(xp.linalg.eigvalsh(H)[..., 0], v_min, xp)
        eye = np.eye(n) if xp is np else xp.eye(n, dtype=H.dtype, device=H.device)
        return -xp.linalg.solve(H + mu[:, None, None] * eye, g[..., None])[..., 0], pd
    a, b, c = H[..., 0, 0], H[..., 0, 1], H[..., 1, 1]
    pd, mu = shift(0.5 * (a + c) - xp.sqrt(0.25 * (a - c) ** 2 + b * b), v_min, xp)
    a, c = a + mu, c + mu
    det = a * c - b * b
    return -xp.stack([(c * g[..., 0] - b * g[..., 1]) / det, (a * g[..., 1] - b * g[..., 0]) / det], axis=-1), pd


def cholesky_shift_direction(H: np.ndarray, g: np.ndarray, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The rank-r rule (numpy): (d, pd), d = -(H + mu I)^{-1} g with mu = 0 where the Cholesky factorisation of H has
    pivots above ``delta`` (= SHIFT_REL lambda_min(V^{-1})), else the least of (Gershgorin shift + delta)
    (1, 2, 4, ...) + ... that makes it so (:func:`attnphase.numerics.prox.shifted_cholesky.direction_row`); pd where
    mu = 0.  Without numba: the eigen-decomposition, eigenvalues clipped at delta from below."""
    try:
        from attnphase.numerics.prox.shifted_cholesky import directions
    except ImportError:
        lam, U = np.linalg.eigh(H)
        ug = np.einsum("nji,nj->ni", U, g)
        return -np.einsum("nij,nj->ni", U, ug / np.maximum(lam, delta)), lam[:, 0] > delta
    return directions(np.ascontiguousarray(H), np.ascontiguousarray(g), float(delta))


def shift(lam_min: Any, v_min: Any, xp: Any = np) -> tuple[Any, Any]:
    """(pd, mu): whether H is positive definite (lambda_min > PD_REL / V_min), and the shift mu (0 where it is)."""
    diag_scale = 1.0 / v_min
    pd = lam_min > PD_REL * diag_scale
    return pd, xp.where(pd, 0.0, -lam_min + SHIFT_REL * diag_scale)


def step_scale(norm: Any, cap: float, xp: Any = np) -> Any:
    """Factor min(1, cap / |d|) that caps the step d at length ``cap``."""
    return xp.clip(cap / xp.clip(norm, 1e-300, None), None, 1.0)


def near(dn: Any, hmax: Any, slope: Any, f: Any, xtol: float) -> Any:
    """Newton step tiny (max |d| < xtol (1 + max |h|)) or its predicted decrease below the rounding of P."""
    return (dn < xtol * (1.0 + hmax)) | (abs(slope) <= FLAT_REL * abs(f))


def armijo(ft: Any, f: Any, t: Any, slope: Any) -> Any:
    """Armijo's test of the trial value ``ft`` of the step t d (slope = grad.d)."""
    return ft <= f + ARMIJO * t * slope


def stalled(accepted: Any, gmax: Any, scale: Any) -> Any:
    """No step accepted and the gradient at rounding level: max |grad| <= STALL_REL (1 + max |h - w| / V)."""
    return ~accepted & (gmax <= STALL_REL * (1.0 + (scale + 1e-300)))
