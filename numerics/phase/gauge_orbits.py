"""When two fixed points of the state evolution are one: the same orbit of the model's symmetry group
(docs/model.md section 7; docs/method.md section 12, "Duplicates"): the SE map commutes with the gauge group
O(r) x O(r*) (:mod:`attnphase.numerics.se.gauge`) and with the model's own symmetries
(:func:`~attnphase.numerics.quadrature.symmetry.model_symmetry_group`).  An orbit is named by a key
(:func:`orbit_key`); two keys within :data:`SAME_POINT_RTOL` are one point (:func:`same_point`); after the error
bars, two points whose invariants agree within :data:`SAME_WITHIN_ERRORS` combined error bars are one
(:func:`within_errors`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from attnphase.numerics.quadrature.symmetry import model_symmetry_group
from attnphase.numerics.se.fixed_point import scaled_residual
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.results import FixedPoint
from attnphase.theory.params import ModelParams

#: Two orbit keys closer than this (max |a - b| / max(1, |a|)) are one fixed point.
SAME_POINT_RTOL = 1e-3

#: Points whose invariants (and at r >= 2, e_t) agree within this many combined error bars are one fixed point.
SAME_WITHIN_ERRORS = 4.0

#: The gauge invariants of a record at r = r* = 1 (each taken in absolute value) and at r >= 2 or r* >= 2.
SCALAR_INVARIANTS = ("q", "V", "m", "theta")
MATRIX_INVARIANTS = ("q0_eigenvalues", "V0_eigenvalues", "th0_singular_values", "m_norms")


@dataclass(frozen=True, eq=False)
class Replicas:
    """A fixed point, its re-solves on the rule's blocks or on independent rules (``blocks`` False; None where one
    left its branch) and its error bars (``err_<key>``): what :func:`paired_difference` and :func:`within_errors`
    compare."""

    point: FixedPoint
    replicates: tuple[FixedPoint | None, ...]
    blocks: bool = True
    errors: dict = field(default_factory=dict)

    def err(self, key: str) -> Any:
        """The error bar of ``key`` (NaN without error bars)."""
        return self.errors.get(f"err_{key}", math.nan)

    @property
    def reproduced(self) -> int:
        """How many re-solves stayed on the point's branch."""
        return sum(r is not None for r in self.replicates)

    @property
    def unreproduced(self) -> bool:
        """Re-solved (two or more tries) but fewer than two stayed on its branch: no spread, so no error bars."""
        return len(self.replicates) >= 2 and self.reproduced < 2


def canonical(params: ModelParams, ov: Overlaps) -> np.ndarray:
    """The image of the scalar overlaps ``ov`` under the model's symmetry group with the lexicographically largest
    (th0, m_1, .., m_L) (element (pi, s, t): m -> s m[pi], th0 -> s t th0), as (q0, V0, m, th0)."""
    images = ((e.s * ov.m[list(e.perm)], e.s * e.t * ov.th0) for e in model_symmetry_group(params))
    m, th = max(images, key=lambda image: (round(image[1], 9), *np.round(image[0], 9)), default=(ov.m, ov.th0))
    return np.concatenate([[ov.q0, ov.V0], m, [th]])


def orbit_key(params: ModelParams, fp: FixedPoint) -> np.ndarray:
    """The key of ``fp``'s orbit (module doc): :func:`canonical` at r = r* = 1, otherwise its gauge invariants, the
    orbit's coordinates (eigenvalues of q0, of V0, singular values of th0, |m_l|: :data:`MATRIX_INVARIANTS`);
    ``params``: the state evolution's model, the one ``fp`` was solved in."""
    if fp.overlaps.is_matrix:
        return np.concatenate([fp.invariants[k] for k in MATRIX_INVARIANTS])
    return canonical(params, fp.overlaps)


#: max_i |a_i - b_i| / max(1, |a_i|) between two orbit keys a and b: the fixed-point solver's scaled residual.
orbit_distance = scaled_residual


def same_point(a: np.ndarray, b: np.ndarray, rtol: float = SAME_POINT_RTOL) -> bool:
    """:func:`orbit_distance` (a, b) <= rtol."""
    return orbit_distance(a, b) <= rtol


def paired_difference(a: Replicas, b: Replicas) -> tuple[float, float, int]:
    """(Delta, err(Delta), pairs): Delta = e_t(b) - e_t(a) on the solve rule, err(Delta) the spread of the per-replicate
    differences e_t(b)_j - e_t(a)_j over the replicates j where both converged (std / sqrt(n) for blocks, std for
    independent rules; NaN below two pairs).  Both points are solved on the same blocks, whose common quadrature
    error cancels in the difference."""
    delta = b.point.observables.e_t - a.point.observables.e_t
    d = [pb.observables.e_t - pa.observables.e_t for pa, pb in zip(a.replicates, b.replicates)
         if pa is not None and pb is not None]
    if len(d) < 2:
        return delta, math.nan, len(d)
    sd = float(np.std(d, ddof=1))
    return delta, sd / math.sqrt(len(d)) if a.blocks else sd, len(d)


def within_errors(a: Replicas, b: Replicas, k: float = SAME_WITHIN_ERRORS) -> bool:
    """One fixed point: every invariant of the two records within ``k`` combined error bars (False without bars; the
    labels may differ).  At r >= 2 or r* >= 2 also e_t(b) - e_t(a) within ``k`` paired errors
    (:func:`paired_difference`; the combined bar where fewer than two replicates pair): the halves of a point the
    rule's jumps split differ differently on each block, two distinct points keep their difference on every block."""
    ra, rb = a.point.record, b.point.record
    matrix = MATRIX_INVARIANTS[0] in ra
    for key in MATRIX_INVARIANTS if matrix else SCALAR_INVARIANTS:
        va, vb = (np.abs(np.atleast_1d(np.asarray(r[key], float))) for r in (ra, rb))
        bar = np.hypot(np.atleast_1d(np.asarray(a.err(key), float)), np.atleast_1d(np.asarray(b.err(key), float)))
        diff = np.abs(va - vb)
        if not np.all((diff == 0) | (diff <= k * bar)):
            return False
    if not matrix:
        return True
    delta, err, _ = paired_difference(a, b)
    if not math.isfinite(err):
        err = math.hypot(a.err("e_t"), b.err("e_t"))
    return bool(delta == 0 or abs(delta) <= k * err)
