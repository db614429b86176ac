"""Overlaps of the state evolution and their conjugate (hat) overlaps, at every rank (docs/model.md
sections 2-3, 7).

Units: ``q0 = Q^T Q / d``, ``V0`` the global variance, ``m_l = Q^T p_l / sqrt(d)``, ``th0 = Q^T Q* / d``;
per token ``q_l = sigma_l^2 q0``, ``theta_l = sigma_l^2 th0``, ``V_l = sigma_l^2 V0``.  Two forms of one type:
the scalar form at r = r* = 1, the matrix form otherwise, packed to one vector layout (:meth:`Overlaps.to_vector`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


#: |m| or |th0| above this counts as non-zero (the branch label, the gauge's orientation).
LABEL_TOL = 1e-6

#: An overlap this small is zero at round-off; a student whose q = Tr q0 is not above it is Q = 0 (the point a
#: strong ridge penalty holds it at, q ~ 1e-30 and below, every overlap 0).
ZERO_OVERLAP = 1e-12


def upper_indices(r: int, k: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """np.triu_indices(r, k): the rows and columns (a, b) with b >= a + k, row by row, made without numpy's general
    machinery (the packing of every SE evaluation uses them; np.triu_indices is several times slower at small r)."""
    pairs = [(a, b) for a in range(r) for b in range(a + k, r)]
    return np.array([a for a, _ in pairs], dtype=np.intp), np.array([b for _, b in pairs], dtype=np.intp)


def _frozen(x, flat: bool = False) -> np.ndarray:
    """A read-only float copy of ``x`` (flattened with ``flat``)."""
    a = np.array(np.ravel(x) if flat else x, dtype=float)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Overlaps:
    """Order parameters of the student (prior side of the state evolution), at every rank: q0 = Q^T Q / d,
    V0 = (lambda I + sum_l sigma_l^2 Vhat_l)^-1, m_l = Q^T p_l / sqrt(d), th0 = Q^T Q* / d.  Scalar q0 and th0
    (m of shape (L,)) make the scalar form, arrays (r, r), (r, r), (L, r), (r, r*) the matrix form (read-only).
    """

    q0: float | np.ndarray
    V0: float | np.ndarray
    m: np.ndarray
    th0: float | np.ndarray

    def __post_init__(self) -> None:
        scalar = np.ndim(self.q0) == 0 and np.ndim(self.th0) == 0
        for name in ("q0", "V0", "m", "th0"):
            v = getattr(self, name)
            object.__setattr__(self, name, float(v) if scalar and name != "m" else _frozen(v, flat=scalar))

    @property
    def is_matrix(self) -> bool:
        """Whether this is the matrix form."""
        return self.m.ndim == 2

    @property
    def r(self) -> int:
        return self.q0.shape[0] if self.is_matrix else 1

    @property
    def r_star(self) -> int:
        return self.th0.shape[1] if self.is_matrix else 1

    @property
    def L(self) -> int:
        return self.m.shape[0]

    @property
    def q(self) -> float:
        """q = Tr q0 = |Q|_F^2 / d."""
        return float(np.trace(self.q0)) if self.is_matrix else self.q0

    @property
    def zero_student(self) -> bool:
        """Q = 0 at round-off: q = Tr q0 not above :data:`ZERO_OVERLAP`."""
        return self.q <= ZERO_OVERLAP

    def isotropic_zero(self, floor: float = ZERO_OVERLAP ** 8) -> "Overlaps":
        """The state at Q = 0 made isotropic: q0 = max(q / r, ``floor``) I, V0 = (Tr V0 / r) I, m = th0 = 0 (in the
        scalar form q0 = max(q0, ``floor``), V0 kept).  At Q = 0 the model is invariant under rotations of the
        student's r directions (the loss depends on h h^T alone), so the map's fixed point there is isotropic; where
        q0 has shrunk to round-off its eigen-directions are noise, its condition number grows without bound (the
        fields along its smallest direction lose every digit), and the rule's small anisotropy leaves V0's
        orientation a gauge direction the solver cannot settle."""
        if not self.is_matrix:
            return Overlaps(max(self.q0, floor), self.V0, np.zeros_like(self.m), 0.0)
        eye = np.eye(self.r)
        return Overlaps(max(self.q / self.r, floor) * eye, float(np.trace(self.V0)) / self.r * eye,
                        np.zeros_like(self.m), np.zeros_like(self.th0))

    def matrix(self) -> "Overlaps":
        """The matrix form (1 x 1 matrices from the scalar form)."""
        return self if self.is_matrix else Overlaps([[self.q0]], [[self.V0]], self.m.reshape(-1, 1), [[self.th0]])

    def scalar(self) -> "Overlaps":
        """The scalar form of r = r* = 1 overlaps (ValueError at r >= 2 or r* >= 2)."""
        if not self.is_matrix:
            return self
        if (self.r, self.r_star) != (1, 1):
            raise ValueError(f"overlaps of rank r = {self.r}, r* = {self.r_star} have no scalar form")
        return Overlaps(self.q0[0, 0], self.V0[0, 0], self.m[:, 0], self.th0[0, 0])

    def to_vector(self) -> np.ndarray:
        """Pack for the fixed-point solver: (q0 upper triangle, V0 upper triangle, m row-major, th0 row-major),
        which is (q0, V0, m_1..m_L, th0) in the scalar form."""
        if not self.is_matrix:
            return np.concatenate([[self.q0, self.V0], self.m, [self.th0]])
        iu = upper_indices(self.r)
        return np.concatenate([self.q0[iu], self.V0[iu], self.m.ravel(), self.th0.ravel()])

    @classmethod
    def from_vector(cls, x: np.ndarray, L: int | None = None, r: int | None = None,
                    r_star: int | None = None) -> "Overlaps":
        """Inverse of :meth:`to_vector`: the scalar form without ranks, the matrix form with L, r and r*."""
        x = np.asarray(x, dtype=float)
        if r is None:
            return cls(q0=x[0], V0=x[1], m=x[2:-1], th0=x[-1])
        iu = upper_indices(r)
        k = iu[0].size

        def sym(v: np.ndarray) -> np.ndarray:
            a = np.zeros((r, r))
            a[iu] = v
            return a + np.triu(a, 1).T

        q0, V0 = sym(x[:k]), sym(x[k:2 * k])
        m = x[2 * k:2 * k + L * r].reshape(L, r)
        th0 = x[2 * k + L * r:].reshape(r, r_star)
        return cls(q0, V0, m, th0)

    def as_dict(self) -> dict:
        return {k: np.asarray(v).tolist() for k, v in vars(self).items()}


def branch_label(ov: Overlaps, tol: float = LABEL_TOL) -> str:
    """positional (m != 0, th0 = 0), semantic (th0 != 0, m = 0), agnostic (both 0), mixed (both != 0), at every rank."""
    pos = float(np.abs(ov.m).max()) > tol
    sem = float(np.abs(ov.th0).max()) > tol
    return "mixed" if pos and sem else "positional" if pos else "semantic" if sem else "agnostic"


def on_branch_subspace(ov: Overlaps, branch: str) -> Overlaps:
    """``ov`` with the order parameters its branch has none of set to exactly zero: th0 = 0 for
    "positional", m = 0 for "semantic", both for "agnostic" ("mixed" unchanged); a warm start from it stays on
    the branch's symmetric subspace."""
    m = np.zeros_like(ov.m) if branch in ("semantic", "agnostic") else ov.m
    th0 = np.zeros_like(ov.th0) if branch in ("positional", "agnostic") else ov.th0
    return Overlaps(q0=ov.q0, V0=ov.V0, m=m, th0=th0)


@dataclass(frozen=True, eq=False)
class HatOverlaps:
    """Conjugate overlaps (channel side), one entry per token, in the two forms of :class:`Overlaps`: the formulas
    of :func:`~attnphase.numerics.se.updates.update_hat`.  The scalar form (mhat of shape (L,)) holds arrays of
    shape (L,); the matrix form qhat (L, r, r), mhat (L, r), thhat (L, r, r*), Vhat (L, r, r) (read-only).
    """

    qhat: np.ndarray
    mhat: np.ndarray
    thhat: np.ndarray
    Vhat: np.ndarray

    def __post_init__(self) -> None:
        for name in ("qhat", "mhat", "thhat", "Vhat"):
            object.__setattr__(self, name, _frozen(getattr(self, name), flat=np.ndim(self.mhat) == 1))

    @property
    def is_matrix(self) -> bool:
        """Whether this is the matrix form."""
        return self.mhat.ndim == 2

    def matrix(self) -> "HatOverlaps":
        """The matrix form (1 x 1 blocks per token from the scalar form)."""
        if self.is_matrix:
            return self
        return HatOverlaps(self.qhat.reshape(-1, 1, 1), self.mhat.reshape(-1, 1), self.thhat.reshape(-1, 1, 1),
                           self.Vhat.reshape(-1, 1, 1))

    def scalar(self) -> "HatOverlaps":
        """The scalar form of r = r* = 1 hats (ValueError at r >= 2 or r* >= 2)."""
        if not self.is_matrix:
            return self
        if self.qhat.shape[1:] != (1, 1) or self.thhat.shape[1:] != (1, 1):
            raise ValueError(f"hat overlaps of shapes {self.qhat.shape}, {self.thhat.shape} have no scalar form")
        return HatOverlaps(self.qhat[:, 0, 0], self.mhat[:, 0], self.thhat[:, 0, 0], self.Vhat[:, 0, 0])

    def as_dict(self) -> dict:
        return {k: v.tolist() for k, v in vars(self).items()}
