"""The gauge of the matrix overlaps (docs/model.md section 7) and their invariants.

State: q0 (r x r), V0 (r x r), m (L x r, row l is m_l), th0 (r x r*).  The risk is invariant under
Q -> Q O (O in O(r)) and Q* -> Q* O* (O* in O(r*)):

    q0 -> O^T q0 O,  V0 -> O^T V0 O,  m_l -> O^T m_l,  th0 -> O^T th0 O*.

:func:`canonical` picks one point per orbit: the teacher frame of the right singular vectors of th0
(decreasing singular values), the student frame of the eigenvectors of q0 (decreasing eigenvalues), then signs:
a student axis oriented by sum_l c_l m_la (c_l = 1 + l / 7), else (no positional overlap) by the row sum of th0;
a teacher axis by the largest entry of its column of th0.  On the scalar form (r = r* = 1) the gauge functions
leave the overlaps as they are (:func:`invariants` reads them as 1 x 1 matrices).
"""

from __future__ import annotations

import numpy as np

from attnphase.numerics.quadrature.symmetry import SymmetryElement
from attnphase.numerics.se.overlaps import LABEL_TOL, Overlaps, upper_indices


def rotate(ov: Overlaps, O: np.ndarray, O_star: np.ndarray | None = None) -> Overlaps:
    """The gauge action: q0 -> O^T q0 O, V0 -> O^T V0 O, m_l -> O^T m_l, th0 -> O^T th0 O* (on the scalar form: on
    its 1 x 1 matrices, the result in scalar form)."""
    if not ov.is_matrix:
        return rotate(ov.matrix(), np.asarray(O, dtype=float).reshape(1, 1),
                      None if O_star is None else np.asarray(O_star, dtype=float).reshape(1, 1)).scalar()
    Os = np.eye(ov.r_star) if O_star is None else O_star
    return Overlaps(O.T @ ov.q0 @ O, O.T @ ov.V0 @ O, ov.m @ O, O.T @ ov.th0 @ Os)


def canonical(ov: Overlaps) -> Overlaps:
    """The representative of the gauge orbit of ``ov`` described in the module doc (the scalar form as it is)."""
    if not ov.is_matrix:
        return ov
    r, rs, L = ov.r, ov.r_star, ov.L
    _, _, Wt = np.linalg.svd(ov.th0)
    ov = rotate(ov, np.eye(r), Wt.T)
    lam, U = np.linalg.eigh(0.5 * (ov.q0 + ov.q0.T))
    ov = rotate(ov, U[:, ::-1])
    c = 1.0 + np.arange(L) / 7.0
    f = c @ ov.m  # (r,)
    scale = max(1.0, float(np.abs(ov.m).max()))
    fixed = np.abs(f) > LABEL_TOL * 1e-3 * scale
    s = np.where(fixed & (f < 0), -1.0, 1.0)
    ov = rotate(ov, np.diag(s))
    th = ov.th0[fixed] if fixed.any() else ov.th0
    lead = th[np.argmax(np.abs(th), axis=0), np.arange(rs)]  # each teacher column's largest entry
    ov = rotate(ov, np.eye(r), np.diag(np.where(lead < 0, -1.0, 1.0)))
    if not fixed.all():
        ov = rotate(ov, np.diag(np.where(~fixed & (ov.th0.sum(axis=1) < 0), -1.0, 1.0)))
    return ov


def invariants(ov: Overlaps) -> dict[str, list[float]]:
    """Gauge invariants: eigenvalues of q0 and V0 (decreasing), singular values of th0, |m_l| (the scalar form as
    its 1 x 1 matrices: q0, V0, |th0|, |m_l|)."""
    ov = ov.matrix()
    return {
        "q0_eigenvalues": sorted(np.linalg.eigvalsh(0.5 * (ov.q0 + ov.q0.T)).tolist(), reverse=True),
        "V0_eigenvalues": sorted(np.linalg.eigvalsh(0.5 * (ov.V0 + ov.V0.T)).tolist(), reverse=True),
        "th0_singular_values": np.linalg.svd(ov.th0, compute_uv=False).tolist(),
        "m_norms": np.linalg.norm(ov.m, axis=1).tolist(),
    }


#: A direction carries an overlap when its share is above this fraction of the largest one (the
#: quadrature's breaking of the rotation symmetry leaves ~1e-3 crosstalk between directions).
DIRECTION_SHARE = 0.05


def direction_labels(ov: Overlaps, tol: float = LABEL_TOL) -> list[str]:
    """Per student direction of the canonical gauge: 'positional' (its m entries above tol and DIRECTION_SHARE of
    the largest |m| entry, its th0 row not), 'semantic' (the converse), 'both', or 'none'."""
    ov = canonical(ov)
    m_max, t_max = float(np.abs(ov.m).max()), float(np.abs(ov.th0).max())
    out = []
    for a in range(ov.r):
        pos = float(np.abs(ov.m[:, a]).max()) > max(tol, DIRECTION_SHARE * m_max)
        sem = float(np.abs(ov.th0[a]).max()) > max(tol, DIRECTION_SHARE * t_max)
        out.append("both" if pos and sem else "positional" if pos else "semantic" if sem else "none")
    return out


def _rotation(theta: np.ndarray, n: int) -> np.ndarray:
    """exp(E) for the antisymmetric E with upper-triangle entries theta (the so(n) coordinates of gauge_tangents),
    by scaling and squaring of the Taylor series (20 terms at |E / 2^s| <= 1/2): matrix products only, no LAPACK."""
    E = np.zeros((n, n))
    E[upper_indices(n, 1)] = theta
    A = E - E.T
    s = max(0, int(np.ceil(np.log2(max(float(np.abs(A).sum(axis=1).max()), 1e-300) / 0.5))))
    A = A / 2.0 ** s
    out, term = np.eye(n), np.eye(n)
    for j in range(1, 21):
        term = term @ A / j
        out = out + term
    for _ in range(s):
        out = out @ out
    return out


def align_gauge(new: Overlaps, ref: Overlaps, sweeps: int = 3) -> tuple[Overlaps, float]:
    """The rotation of ``new`` in SO(r) x SO(r*) closest to ``ref`` (Gauss-Newton on the rotation angles),
    and the angle (Euclidean norm of the so(r) x so(r*) coordinates) it took: the solver iterates
    G(x) = align_gauge(F(x), x), whose residual is orthogonal to the orbit (docs/method.md section 11).
    """
    r, rs = new.r, new.r_star
    k1, k2 = r * (r - 1) // 2, rs * (rs - 1) // 2
    if k1 + k2 == 0:
        return new, 0.0
    total = np.zeros(k1 + k2)
    cur = new
    x = ref.to_vector()
    for _ in range(sweeps):
        step = -np.linalg.lstsq(gauge_tangents(cur), cur.to_vector() - x, rcond=1e-12)[0]
        if not np.all(np.isfinite(step)) or np.linalg.norm(step) < 1e-15:
            break
        total += step
        cur = rotate(new, _rotation(total[:k1], r), _rotation(total[k1:], rs) if rs > 1 else None)
    return cur, float(np.linalg.norm(total))


def gauge_tangents(ov: Overlaps) -> np.ndarray:
    """Columns: d/dt of the gauge action at t = 0 for each generator E_ab of so(r) and F_ab of so(r*)
    (q0 -> q0 E - E q0, V0 -> V0 E - E V0, m -> m E, th0 -> -E th0 + th0 F), as overlap vectors."""
    r, rs = ov.r, ov.r_star
    cols = [Overlaps(ov.q0 @ E - E @ ov.q0, ov.V0 @ E - E @ ov.V0, ov.m @ E, -E @ ov.th0).to_vector()
            for E in _generators(r)]
    cols += [Overlaps(np.zeros((r, r)), np.zeros((r, r)), np.zeros_like(ov.m), ov.th0 @ F).to_vector()
             for F in _generators(rs)]
    return np.array(cols).T if cols else np.zeros((ov.to_vector().size, 0))


def _generators(n: int) -> list[np.ndarray]:
    """The generators E_ab = e_a e_b^T - e_b e_a^T (a < b, in the order of the upper triangle) of so(n)."""
    out = []
    for a, b in zip(*upper_indices(n, 1)):
        E = np.zeros((n, n))
        E[a, b], E[b, a] = 1.0, -1.0
        out.append(E)
    return out


def reflection_pattern(ov: Overlaps) -> np.ndarray:
    """Mask over :meth:`Overlaps.to_vector`: the coordinates left fixed by every axis reflection that fixes ``ov``.

    A reflection (s, s*) in {+-1}^r x {+-1}^{r*} acts by

        q0_ab -> s_a s_b q0_ab,  V0_ab -> s_a s_b V0_ab,  m_la -> s_a m_la,  th0_ab -> s_a s*_b th0_ab;

    the generators tried are one student axis a with m_a = 0 flipped with the teacher axes it overlaps, and one
    teacher axis without overlaps.  The SE map of an exactly symmetric rule maps the mask's subspace into itself.
    """
    r, rs, L = ov.r, ov.r_star, ov.L
    m_on = np.abs(ov.m).max(axis=0) > 0 if L else np.zeros(r, dtype=bool)
    overlap = np.abs(ov.th0) > 0  # the teacher axes each student axis overlaps
    gens = [(1.0 - 2.0 * np.eye(r)[a], np.where(overlap[a], -1.0, 1.0)) for a in range(r) if not m_on[a]]
    gens += [(np.ones(r), 1.0 - 2.0 * np.eye(rs)[b]) for b in range(rs) if not overlap[:, b].any()]
    x = ov.to_vector()
    iu = upper_indices(r)
    keep = np.ones(x.size, dtype=bool)
    for s, t in gens:
        sign = np.concatenate([s[iu[0]] * s[iu[1]], s[iu[0]] * s[iu[1]], np.tile(s, L), np.outer(s, t).ravel()])
        if np.all(sign[x != 0] > 0):  # g fixes ov
            keep &= sign > 0
    return keep


def invariant_basis(group: list[SymmetryElement], L: int) -> np.ndarray:
    """Orthonormal basis (columns) of the scalar-form overlap vectors (q0, V0, m, th0) fixed by ``group``: the
    range of the group average of the actions m -> s m[pi], th0 -> s t th0 (q0, V0 invariant)."""
    n = L + 3
    avg = np.zeros((n, n))
    avg[0, 0] = avg[1, 1] = len(group)
    for e in group:
        avg[2 + np.arange(L), 2 + np.array(e.perm)] += e.s
        avg[-1, -1] += e.s * e.t
    avg /= max(len(group), 1)
    U, sv, _ = np.linalg.svd(avg)
    return U[:, sv > 0.5]


def branch_coordinates(ov: Overlaps, branch: str) -> list[int]:
    """The indices of the packed matrix overlaps (:meth:`Overlaps.to_vector`) that ``branch`` leaves free:
    q0 and V0 always, m on ``positional`` and ``mixed``, th0 on ``semantic`` and ``mixed``."""
    r, L = ov.r, ov.L
    k = r * (r + 1) // 2
    free = list(range(2 * k))
    if branch in ("positional", "mixed"):
        free += list(range(2 * k, 2 * k + L * r))
    if branch in ("semantic", "mixed"):
        free += list(range(2 * k + L * r, 2 * k + L * r + r * ov.r_star))
    return free


def transversal_basis(ov: Overlaps, branch: str, pattern: np.ndarray | None = None) -> np.ndarray:
    """Orthonormal basis of the branch's free coordinates (:func:`branch_coordinates`, within ``pattern`` where
    given) orthogonal to the gauge orbit's tangents at ``ov`` (none on a pattern: it has no continuous gauge)."""
    x = ov.to_vector()
    free = branch_coordinates(ov, branch)
    if pattern is not None:
        free = [i for i in free if pattern[i]]
    C = np.zeros((x.size, len(free)))
    C[free, np.arange(len(free))] = 1.0
    if pattern is None and (tang := gauge_tangents(ov)).shape[1]:
        tang = C @ (C.T @ tang)
        U, sv, _ = np.linalg.svd(tang, full_matrices=False)
        U = U[:, sv > 1e-8 * max(1.0, float(np.abs(x).max()))]
        C = C - U @ (U.T @ C)
        Uc, svc, _ = np.linalg.svd(C, full_matrices=False)
        C = Uc[:, svc > 0.5]
    return C
