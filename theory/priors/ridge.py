"""The ridge prior: the matrix ridge update of docs/model.md section 7, for every rank (section 3 at r = 1).

    Lam = lambda I_r + sum_l sigma_l^2 Vhat_l,     Th = sum_l sigma_l^2 thhat_l  (r x r*),
    N   = sum_l sigma_l^2 qhat_l + sum_{k,l} P[k, l] mhat_k mhat_l^T + rho0 Th Th^T,
    V0 = Lam^{-1},   m_k = Lam^{-1} sum_l P[k, l] mhat_l,   th0 = rho0 Lam^{-1} Th,   q0 = Lam^{-1} N Lam^{-1},

and the prior's term of Phi is 1/2 Tr[Lam^{-1} N] (docs/derivation.md, "The prior side as a finite-d ridge
problem"). Lam must be positive definite. :func:`ridge_exprs` states the r = 1 update in sympy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

ArrayLike = Any


def _readonly(a: ArrayLike) -> np.ndarray:
    out = np.array(a, dtype=float)
    out.setflags(write=False)
    return out


@dataclass(frozen=True, eq=False)
class RidgePrior:
    """The ridge penalty (lambda / 2) |Q|_F^2 as the prior of the state evolution (module doc).

    With the positional Gram P (L, L), the per-token variances sigma2 (L,) and the teacher norm rho0."""

    lam: float
    P: np.ndarray
    sigma2: np.ndarray
    rho0: float

    def __post_init__(self) -> None:
        for name, cast in (("lam", float), ("rho0", float), ("sigma2", _readonly), ("P", _readonly)):
            object.__setattr__(self, name, cast(getattr(self, name)))
        if not (np.isfinite(self.lam) and self.lam >= 0):
            raise ValueError(f"lam (the ridge penalty) must be a finite number >= 0, got {self.lam!r}")
        if not (np.isfinite(self.rho0) and self.rho0 > 0):
            raise ValueError(f"rho0 (the teacher's norm) must be a finite number > 0, got {self.rho0!r}")
        L = self.sigma2.shape[0] if self.sigma2.ndim == 1 else -1
        if L < 1:
            raise ValueError(f"sigma2 must be a vector of per-token variances, got shape {self.sigma2.shape}")
        if self.P.shape != (L, L):
            raise ValueError(f"P must be L x L with L = {L}, got shape {self.P.shape}")

    @classmethod
    def of(cls, params: Any) -> "RidgePrior":
        """The prior of a :class:`~attnphase.theory.params.ModelParams` (its lambda, P, sigma^2, rho0)."""
        return cls(params.lam, params.P_array, params.sigma2, params.rho0)

    @property
    def L(self) -> int:
        return int(self.sigma2.shape[0])

    def _matrices(self, hats: Any) -> tuple[tuple[np.ndarray, ...], bool]:
        """The hats as matrices qhat (L, r, r), mhat (L, r), thhat (L, r, r*), Vhat (L, r, r), and whether
        they were given as their r = 1 scalar views (each (L,))."""
        parts = (hats.qhat, hats.mhat, hats.thhat, hats.Vhat) if hasattr(hats, "qhat") else tuple(hats)
        qh, mh, th, Vh = (np.asarray(x, dtype=float) for x in parts)
        L = self.L
        scalar = mh.ndim == 1
        if scalar:
            for name, v in zip(("qhat", "mhat", "thhat", "Vhat"), (qh, mh, th, Vh)):
                if v.shape != (L,):
                    raise ValueError(f"{name} must have shape (L,) = ({L},) as a scalar view, got {v.shape}")
            return (qh[:, None, None], mh[:, None], th[:, None, None], Vh[:, None, None]), True
        r = mh.shape[-1]
        for name, v, shape in (("qhat", qh, (L, r, r)), ("mhat", mh, (L, r)), ("Vhat", Vh, (L, r, r))):
            if v.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {v.shape}")
        if th.ndim != 3 or th.shape[:2] != (L, r):
            raise ValueError(f"thhat must have shape (L, r, r*) = ({L}, {r}, r*), got {th.shape}")
        return (qh, mh, th, Vh), False

    def terms(self, hats: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(Lam (r, r), N (r, r), Th (r, r*)) of the module doc, for hats in either form."""
        (qh, mh, th, Vh), _ = self._matrices(hats)
        s2 = self.sigma2
        r = mh.shape[1]
        Lam = self.lam * np.eye(r) + np.einsum("l,lab->ab", s2, Vh)
        Th = np.einsum("l,lab->ab", s2, th)
        N = np.einsum("l,lab->ab", s2, qh) + mh.T @ self.P @ mh + self.rho0 * (Th @ Th.T)
        return 0.5 * (Lam + Lam.T), 0.5 * (N + N.T), Th

    def _inverse(self, Lam: np.ndarray) -> np.ndarray:
        if Lam.shape == (1, 1):
            if not Lam[0, 0] > 0:
                raise ValueError(f"Lam = lambda + sum_l sigma_l^2 Vhat_l must be > 0, got {Lam[0, 0]}")
            return 1.0 / Lam
        ev = np.linalg.eigvalsh(Lam)
        if not ev.min() > 0:
            raise ValueError(f"Lam = lambda I + sum_l sigma_l^2 Vhat_l must be positive definite, eigenvalues {ev}")
        V0 = np.linalg.inv(Lam)
        return 0.5 * (V0 + V0.T)

    def update(self, hats: Any) -> tuple[Any, Any, np.ndarray, Any]:
        """(q0, V0, m, th0) from the hats (module doc): q0, V0 (r, r), m (L, r), th0 (r, r*); from the r = 1
        scalar views, q0, V0, th0 as floats and m (L,).  ``hats``: an object with the attributes qhat,
        mhat, thhat, Vhat, or those four arrays.  ValueError unless Lam is positive definite."""
        (qh, mh, th, Vh), scalar = self._matrices(hats)
        Lam, N, Th = self.terms((qh, mh, th, Vh))
        V0 = self._inverse(Lam)
        q0 = V0 @ N @ V0
        q0 = 0.5 * (q0 + q0.T)
        m = self.P @ mh @ V0  # row k: (Lam^{-1} sum_l P[k, l] mhat_l)^T (V0 symmetric)
        th0 = self.rho0 * (V0 @ Th)
        if scalar:
            return float(q0[0, 0]), float(V0[0, 0]), m[:, 0].copy(), float(th0[0, 0])
        return q0, V0, m, th0

    def free_entropy_term(self, hats: Any) -> float:
        """The prior's term of Phi, 1/2 Tr[Lam^{-1} N] (docs/model.md sections 4 and 7), for hats in either form."""
        Lam, N, _ = self.terms(hats)
        return 0.5 * float(np.trace(self._inverse(Lam) @ N))


def symbols(L: int) -> dict[str, Any]:
    """Sympy symbols of the r = 1 prior side for L tokens."""
    import sympy as sp

    from attnphase.theory.symbols import pair_symbols, token_scalars

    return {
        "qhat": token_scalars("qhat", L, nonnegative=True), "mhat": token_scalars("mhat", L, real=True),
        "thhat": token_scalars("thetahat", L, real=True), "Vhat": token_scalars("Vhat", L, real=True),
        "sigma2": token_scalars("sigma", L, power="2", positive=True), "P": pair_symbols("P", L, real=True),
        "lam": sp.Symbol("lambda", nonnegative=True), "rho0": sp.Symbol("rho_0", positive=True),
    }


def ridge_exprs(L: int) -> dict[str, Any]:
    """The r = 1 update in sympy: Lam, the numerator N (= Lam^2 q0), q0, V0, m (list), th0 in :func:`symbols`."""
    s = symbols(L)
    s2, qh, mh, th, Vh, P = s["sigma2"], s["qhat"], s["mhat"], s["thhat"], s["Vhat"], s["P"]
    Lam = s["lam"] + sum(s2[l] * Vh[l] for l in range(L))
    sum_th = sum(s2[l] * th[l] for l in range(L))
    mPm = sum(mh[k] * P[k, l] * mh[l] for k in range(L) for l in range(L))
    N = sum(s2[l] * qh[l] for l in range(L)) + mPm + s["rho0"] * sum_th**2
    return {"Lam": Lam, "N": N, "q0": N / Lam**2, "V0": 1 / Lam,
            "m": [sum(P[k, l] * mh[l] for l in range(L)) / Lam for k in range(L)], "th0": s["rho0"] * sum_th / Lam}
