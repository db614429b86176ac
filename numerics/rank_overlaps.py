"""Matrix overlaps of the rank-r state evolution, their gauge and their invariants (docs/model.md section 7).

State: q0 (r x r), V0 (r x r), m (L x r, row l is m_l), th0 (r x r*).  The risk is invariant under
Q -> Q O (O in O(r)) and, the teacher being Gaussian with rho0 I, under Q* -> Q* O* (O* in O(r*)):

    q0 -> O^T q0 O,  V0 -> O^T V0 O,  m_l -> O^T m_l,  th0 -> O^T th0 O*.

Fixed points therefore come in orbits.  :func:`canonical` picks one point per orbit (the gauge the
solver iterates in): the teacher frame of the right singular vectors of th0 (decreasing singular
values), the student frame of the eigenvectors of q0 (decreasing eigenvalues), then signs: a student
axis is oriented by a fixed generic functional of its positional overlaps sum_l c_l m_la (c_l =
1 + l / 7), else (no positional overlap) by the row sum of th0; a teacher axis by the largest entry
of its column of th0.  In that gauge q0 is diagonal and th0^T th0 is diagonal.
:func:`invariants` are the gauge-invariant summaries reported for every fixed point.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Below this an overlap counts as zero for orientation and for the branch label.
ZERO_TOL = 1e-6


@dataclass(frozen=True, eq=False)
class RankOverlaps:
    """q0 (r, r), V0 (r, r), m (L, r), th0 (r, r*) as float arrays."""

    q0: np.ndarray
    V0: np.ndarray
    m: np.ndarray
    th0: np.ndarray

    def __post_init__(self) -> None:
        for name in ("q0", "V0", "m", "th0"):
            a = np.array(getattr(self, name), dtype=float)
            a.setflags(write=False)
            object.__setattr__(self, name, a)

    @property
    def r(self) -> int:
        return self.q0.shape[0]

    @property
    def r_star(self) -> int:
        return self.th0.shape[1]

    @property
    def L(self) -> int:
        return self.m.shape[0]

    def to_vector(self) -> np.ndarray:
        """(q0 upper triangle, V0 upper triangle, m row-major, th0 row-major)."""
        iu = np.triu_indices(self.r)
        return np.concatenate([self.q0[iu], self.V0[iu], self.m.ravel(), self.th0.ravel()])

    @classmethod
    def from_vector(cls, x: np.ndarray, L: int, r: int, r_star: int) -> "RankOverlaps":
        """Inverse of :meth:`to_vector`."""
        x = np.asarray(x, dtype=float)
        iu = np.triu_indices(r)
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
        return {"q0": self.q0.tolist(), "V0": self.V0.tolist(), "m": self.m.tolist(), "th0": self.th0.tolist()}


def rotate(ov: RankOverlaps, O: np.ndarray, O_star: np.ndarray | None = None) -> RankOverlaps:
    """The gauge action: q0 -> O^T q0 O, V0 -> O^T V0 O, m_l -> O^T m_l, th0 -> O^T th0 O*."""
    Os = np.eye(ov.r_star) if O_star is None else O_star
    return RankOverlaps(O.T @ ov.q0 @ O, O.T @ ov.V0 @ O, ov.m @ O, O.T @ ov.th0 @ Os)


def canonical(ov: RankOverlaps) -> RankOverlaps:
    """The representative of the gauge orbit of ``ov`` described in the module doc."""
    r, rs, L = ov.r, ov.r_star, ov.L
    _, _, Wt = np.linalg.svd(ov.th0)
    ov = rotate(ov, np.eye(r), Wt.T)
    lam, U = np.linalg.eigh(0.5 * (ov.q0 + ov.q0.T))
    ov = rotate(ov, U[:, ::-1])
    c = 1.0 + np.arange(L) / 7.0
    f = c @ ov.m  # (r,)
    scale = max(1.0, float(np.abs(ov.m).max()))
    fixed = np.abs(f) > ZERO_TOL * 1e-3 * scale
    s = np.where(fixed & (f < 0), -1.0, 1.0)
    ov = rotate(ov, np.diag(s))
    th = ov.th0
    rows = fixed if fixed.any() else np.ones(r, dtype=bool)
    t = np.ones(rs)
    for b in range(rs):
        col = th[rows, b]
        if col.size and np.abs(col).max() > 0:
            t[b] = 1.0 if col[np.argmax(np.abs(col))] >= 0 else -1.0
    ov = rotate(ov, np.eye(r), np.diag(t))
    if not fixed.all():
        rs_sum = ov.th0.sum(axis=1)
        s2 = np.where(~fixed & (rs_sum < 0), -1.0, 1.0)
        ov = rotate(ov, np.diag(s2))
    return ov


def invariants(ov: RankOverlaps) -> dict[str, list[float]]:
    """Gauge invariants: eigenvalues of q0 and V0 (decreasing), singular values of th0, |m_l|."""
    return {
        "q0_eigenvalues": sorted(np.linalg.eigvalsh(0.5 * (ov.q0 + ov.q0.T)).tolist(), reverse=True),
        "V0_eigenvalues": sorted(np.linalg.eigvalsh(0.5 * (ov.V0 + ov.V0.T)).tolist(), reverse=True),
        "th0_singular_values": np.linalg.svd(ov.th0, compute_uv=False).tolist(),
        "m_norms": np.linalg.norm(ov.m, axis=1).tolist(),
    }


def branch_label(ov: RankOverlaps, tol: float = ZERO_TOL) -> str:
    """positional (m != 0, th0 = 0), semantic (th0 != 0, m = 0), agnostic (both 0), mixed (both != 0)."""
    pos = float(np.abs(ov.m).max()) > tol
    sem = float(np.abs(ov.th0).max()) > tol
    return "mixed" if pos and sem else "positional" if pos else "semantic" if sem else "agnostic"


#: A direction carries an overlap when its share is above this fraction of the largest one (the
#: quadrature's breaking of the rotation symmetry leaves ~1e-3 crosstalk between directions).
DIRECTION_SHARE = 0.05


def direction_labels(ov: RankOverlaps, tol: float = ZERO_TOL) -> list[str]:
    """Per student direction of the canonical gauge (the eigenvectors of q0): which overlaps it carries.

    A direction is 'positional' (its m entries above tol and above DIRECTION_SHARE of the largest |m|
    entry, its th0 row not), 'semantic' (the converse), 'both', or 'none'."""
    ov = canonical(ov)
    m_max, t_max = float(np.abs(ov.m).max()), float(np.abs(ov.th0).max())
    out = []
    for a in range(ov.r):
        pos = float(np.abs(ov.m[:, a]).max()) > max(tol, DIRECTION_SHARE * m_max)
        sem = float(np.abs(ov.th0[a]).max()) > max(tol, DIRECTION_SHARE * t_max)
        out.append("both" if pos and sem else "positional" if pos else "semantic" if sem else "none")
    return out
