"""Overlaps and conjugate (hat) overlaps of the r = 1 state evolution (docs/model.md sections 2-3).

Units: ``q0 = |Q|^2 / d``, ``V0`` the global variance, ``m_l = p_l . Q / sqrt(d)``,
``th0 = Q . Q* / d``. Per-token overlaps are ``q_l = sigma_l^2 q0``,
``theta_l = sigma_l^2 th0``, ``V_l = sigma_l^2 V0`` (the paper's per-token theta
is ``sigma^2 * th0``). Hat overlaps are per token, arrays of shape (L,).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def _vec(x) -> np.ndarray:
    a = np.array(x, dtype=float).reshape(-1)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Overlaps:
    """Order parameters of the student (prior side of the state evolution).

    Attributes:
        q0: self-overlap |Q|^2 / d.
        V0: variance of the student's estimator, V0 = 1 / (lambda + sum_l sigma_l^2 Vhat_l).
        m: positional overlaps m_l = p_l . Q / sqrt(d), shape (L,).
        th0: semantic overlap Q . Q* / d.
    """

    q0: float
    V0: float
    m: np.ndarray
    th0: float

    def __post_init__(self) -> None:
        object.__setattr__(self, "q0", float(self.q0))
        object.__setattr__(self, "V0", float(self.V0))
        object.__setattr__(self, "th0", float(self.th0))
        object.__setattr__(self, "m", _vec(self.m))

    @property
    def L(self) -> int:
        return self.m.size

    def to_vector(self) -> np.ndarray:
        """Pack as (q0, V0, m_1..m_L, th0) for the fixed-point solver."""
        return np.concatenate([[self.q0, self.V0], self.m, [self.th0]])

    @classmethod
    def from_vector(cls, x: np.ndarray) -> "Overlaps":
        """Inverse of :meth:`to_vector`."""
        x = np.asarray(x, dtype=float)
        return cls(q0=x[0], V0=x[1], m=x[2:-1], th0=x[-1])

    def as_dict(self) -> dict:
        return {"q0": self.q0, "V0": self.V0, "m": self.m.tolist(), "th0": self.th0}


def on_branch_subspace(ov: Overlaps, branch: str) -> Overlaps:
    """``ov`` with the order parameters its branch has none of set to exactly zero: th0 = 0 for
    "positional", m = 0 for "semantic", both for "agnostic" ("mixed" unchanged).

    A fixed point is labelled by its order parameters up to a tolerance (``observables.LABEL_TOL``);
    a re-solve warm-started from it (its error bar on other rules) starts on the labelled branch's
    symmetric subspace, where the symmetry keeps it, instead of near that subspace, where a creeping
    order parameter (an agnostic point with th0 = 2e-14, q0 = 3e-27) stalls the solve.
    """
    m = np.zeros_like(ov.m) if branch in ("semantic", "agnostic") else ov.m
    th0 = 0.0 if branch in ("positional", "agnostic") else ov.th0
    return Overlaps(q0=ov.q0, V0=ov.V0, m=m, th0=th0)


@dataclass(frozen=True, eq=False)
class HatOverlaps:
    """Conjugate overlaps (channel side), one entry per token, each of shape (L,).

    qhat_l = alpha E[g_l^2], mhat_l = alpha E[g_l],
    thhat_l = alpha E[g_l eta_l] / sqrt(rho_l - theta_l^2 / q_l),
    Vhat_l = -alpha E[g_l xi_l] / sqrt(q_l) + thhat_l theta_l / q_l.
    """

    qhat: np.ndarray
    mhat: np.ndarray
    thhat: np.ndarray
    Vhat: np.ndarray

    def __post_init__(self) -> None:
        for name in ("qhat", "mhat", "thhat", "Vhat"):
            object.__setattr__(self, name, _vec(getattr(self, name)))

    def as_dict(self) -> dict:
        return {k: getattr(self, k).tolist() for k in ("qhat", "mhat", "thhat", "Vhat")}
