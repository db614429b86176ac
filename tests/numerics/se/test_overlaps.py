"""One overlaps type for every rank: its scalar form at r = r* = 1 is the 1 x 1 case of the matrix form (same
vector layout, same invariants, same label), and the gauge acts on it as the sign part of O(1) x O(1)."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.se.gauge import canonical, invariants, rotate
from attnphase.numerics.se.overlaps import Overlaps, branch_label, on_branch_subspace


def _scalar() -> Overlaps:
    return Overlaps(q0=0.4, V0=2.5, m=[0.1, -0.3], th0=0.2)


def test_the_scalar_form_packs_as_its_1_x_1_matrix_form() -> None:
    ov = _scalar()
    mat = ov.matrix()
    assert not ov.is_matrix and mat.is_matrix and (mat.r, mat.r_star, mat.L) == (1, 1, 2) == (ov.r, ov.r_star, ov.L)
    np.testing.assert_array_equal(ov.to_vector(), mat.to_vector())
    back = Overlaps.from_vector(mat.to_vector(), 2, 1, 1)
    assert back.is_matrix and back.scalar().as_dict() == ov.as_dict()
    assert Overlaps.from_vector(ov.to_vector()).as_dict() == ov.as_dict()
    with pytest.raises(ValueError, match="no scalar form"):
        Overlaps(np.eye(2), np.eye(2), np.zeros((2, 2)), np.zeros((2, 1))).scalar()


def test_the_matrix_form_round_trips_through_its_vector() -> None:
    rng = np.random.default_rng(1)
    a = rng.normal(size=(2, 2))
    ov = Overlaps(a @ a.T, np.eye(2) * 3.0, rng.normal(size=(3, 2)), rng.normal(size=(2, 2)))
    back = Overlaps.from_vector(ov.to_vector(), 3, 2, 2)
    for k in ("q0", "V0", "m", "th0"):
        np.testing.assert_array_equal(getattr(back, k), getattr(ov, k))


def test_the_gauge_on_the_scalar_form() -> None:
    ov = _scalar()
    assert canonical(ov) is ov
    flipped = rotate(ov, -1.0)  # O = -1: q0, V0 kept, m and th0 change sign
    assert not flipped.is_matrix
    assert (flipped.q0, flipped.V0, flipped.th0) == (ov.q0, ov.V0, -ov.th0)
    np.testing.assert_array_equal(flipped.m, -ov.m)
    assert invariants(ov) == {"q0_eigenvalues": [0.4], "V0_eigenvalues": [2.5], "th0_singular_values": [0.2],
                              "m_norms": [0.1, 0.3]}
    assert invariants(flipped) == invariants(ov)


def test_one_branch_label_for_both_forms() -> None:
    ov = _scalar()
    for branch in ("semantic", "positional", "agnostic"):
        sub = on_branch_subspace(ov, branch)
        assert branch_label(sub) == branch_label(sub.matrix()) == branch
        assert on_branch_subspace(ov.matrix(), branch).to_vector().tolist() == sub.to_vector().tolist()
    assert branch_label(ov) == branch_label(ov.matrix()) == "mixed"
