"""The one predicate of a point on its branch (:func:`~attnphase.numerics.phase.branch_end.on_branch`), at every rank:
converged, labelled, each of the branch's order parameters at least its floor, measured by a gauge invariant."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.numerics.phase.branch_end import (POSITIONAL_M_FLOOR, SEMANTIC_THETA_FLOOR, below_floor, on_branch,
                                                 overlap_size)
from attnphase.numerics.phase.census import floor_label
from attnphase.numerics.se.overlaps import Overlaps


def _point(ov: Overlaps, branch: str, converged: bool = True) -> SimpleNamespace:
    return SimpleNamespace(overlaps=ov, branch=branch, status=SimpleNamespace(converged=converged))


def _matrix(th0: float, m: float) -> Overlaps:
    """A rank-2 student, rank-1 teacher: th0 along the first axis, m spread over both tokens of the second axis,
    so that |th0| = th0 and |m| = m (Frobenius norms) while no single entry reaches either."""
    return Overlaps(np.diag([0.3, 0.1]), np.diag([50.0, 40.0]), [[0.0, m / np.sqrt(2)], [0.0, m / np.sqrt(2)]],
                    [[th0], [0.0]])


def test_the_sizes_are_the_invariants_and_the_scalar_form_s_absolute_values() -> None:
    scalar = Overlaps(0.3, 50.0, [-0.03, 0.04], -0.5)
    assert overlap_size(_point(scalar, "mixed"), "th0") == 0.5 and overlap_size(_point(scalar, "mixed"), "m") == 0.05
    ov = _matrix(0.4, 0.05)
    assert overlap_size(_point(ov, "mixed"), "th0") == pytest.approx(0.4, rel=1e-15)
    assert overlap_size(_point(ov, "mixed"), "m") == pytest.approx(0.05, rel=1e-15)


@pytest.mark.parametrize("th0, m, on", [(0.4, 0.2, True), (0.4, POSITIONAL_M_FLOOR / 2, False),
                                        (SEMANTIC_THETA_FLOOR / 2, 0.2, False)])
def test_a_mixed_point_is_on_its_branch_where_both_order_parameters_reach_their_floors(th0, m, on) -> None:
    assert on_branch(_point(_matrix(th0, m), "mixed"), "mixed") is on
    assert not on_branch(_point(_matrix(th0, m), "mixed", converged=False), "mixed")
    assert not on_branch(_point(_matrix(th0, m), "mixed"), "semantic")  # the label is the solve's


def test_rank_two_floors_are_the_scalar_form_s() -> None:
    # the semantic floor on |th0|, the positional one on |m|, whatever the rank; the agnostic branch has none
    for size, on in ((1.5 * SEMANTIC_THETA_FLOOR, True), (0.5 * SEMANTIC_THETA_FLOOR, False)):
        assert on_branch(_point(_matrix(size, 0.0), "semantic"), "semantic") is on
        assert on_branch(_point(Overlaps(0.3, 50.0, [0.0, 0.0], size), "semantic"), "semantic") is on
    for size, on in ((1.2 * POSITIONAL_M_FLOOR, True), (0.5 * POSITIONAL_M_FLOOR, False)):  # entries 0.85 floor
        assert on_branch(_point(_matrix(0.0, size), "positional"), "positional") is on
        assert on_branch(_point(Overlaps(0.3, 50.0, [size, 0.0], 0.0), "positional"), "positional") is on
    assert on_branch(_point(_matrix(0.0, 0.0), "agnostic"), "agnostic")


@pytest.mark.parametrize("th0, m, below", [(0.4, 0.2, False), (0.4, POSITIONAL_M_FLOOR / 2, True),
                                           (SEMANTIC_THETA_FLOOR / 2, 0.2, True)])
def test_a_point_of_the_label_below_a_floor_is_next_to_the_agnostic_one(th0, m, below) -> None:
    assert below_floor(_point(_matrix(th0, m), "mixed"), "mixed") is below
    assert not below_floor(_point(_matrix(th0, m), "mixed", converged=False), "mixed")  # not converged: nothing
    assert not below_floor(_point(_matrix(th0, m), "mixed"), "semantic")  # another label


def test_a_branch_that_is_no_label_is_an_error_not_a_point_off_it() -> None:
    """``on_branch(fp, "foo")`` would be False for every point, so a misspelt label would pass as absence."""
    point = _point(_matrix(0.4, 0.2), "mixed")
    with pytest.raises(ValueError, match="branch must be one of"):
        on_branch(point, "foo")
    with pytest.raises(ValueError, match="branch must be one of"):
        below_floor(point, "Mixed")


@pytest.mark.parametrize("th0, m, label", [(0.786, 0.0188, "semantic"), (0.002, 0.2, "positional"),
                                           (0.002, 0.0188, "agnostic"), (0.4, 0.2, "mixed")])
def test_a_mixed_point_below_a_floor_is_named_by_the_order_parameters_it_keeps(th0, m, label) -> None:
    """census --L 3 --rank 2 --alpha 2: a mixed start's point with |m| = 0.019 (floor 0.02) and |th0| = 0.786 was said
    to be "the agnostic point at the rule's resolution", and merged into the semantic point."""
    assert floor_label(_point(_matrix(th0, m), "mixed")) == label
