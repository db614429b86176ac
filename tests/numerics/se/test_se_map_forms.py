"""The one SE map in its two forms: hats, admissibility and the full-search schedule of the matrix form."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import matrix_rule
from attnphase.numerics.se.overlaps import HatOverlaps, Overlaps
from attnphase.numerics.se.se_map import MATRIX_FULL_SEARCH_EVERY, FixedAlpha, FixedOrder, SEMap, admissible
from attnphase.numerics.se.starts import initial_overlaps, with_ranks
from attnphase.numerics.se.updates import update
from attnphase.theory.params import ModelParams


def test_hats_in_both_forms_give_the_same_prior_update() -> None:
    params = ModelParams(omega=0.3)
    hat = HatOverlaps(qhat=[0.3, 0.2], mhat=[0.05, -0.04], thhat=[0.4, 0.35], Vhat=[0.02, 0.03])
    as_matrix = hat.matrix()
    assert as_matrix.is_matrix and not hat.is_matrix and as_matrix.qhat.shape == (2, 1, 1)
    back = as_matrix.scalar()
    for name in ("qhat", "mhat", "thhat", "Vhat"):
        assert np.array_equal(getattr(back, name), getattr(hat, name))
    scalar, matrix = update(params, hat), update(params, as_matrix).scalar()
    np.testing.assert_allclose(matrix.to_vector(), scalar.to_vector(), rtol=1e-12, atol=1e-15)
    with pytest.raises(ValueError, match="no scalar form"):
        HatOverlaps(np.ones((2, 2, 2)), np.ones((2, 2)), np.ones((2, 2, 1)), np.ones((2, 2, 2))).scalar()


@pytest.mark.parametrize("th0, q0, V0, ok", [(0.5, 0.45, 40.0, True), (0.7, 0.45, 40.0, False),
                                              (0.0, -0.1, 40.0, False), (0.1, 0.45, -1.0, False),
                                              (np.nan, 0.45, 40.0, False),
                                              # aligned with the teacher to round-off: rho0 - th0 (th0 / q0) = 0
                                              (0.9999999999999973, 0.9999999999999948, 40.0, False)])
def test_admissible_is_the_same_check_in_both_forms(th0, q0, V0, ok) -> None:
    ov = Overlaps(q0=q0, V0=V0, m=np.array([0.1, -0.1]), th0=th0)
    assert admissible(ov, 1.0) is ok
    assert admissible(ov.matrix(), 1.0) is ok


def test_the_matrix_form_takes_its_branch_and_a_fixed_alpha() -> None:
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    rule = matrix_rule(2, 2, 1, "sobol6")
    with pytest.raises(ValueError, match="r = r\\* = 1 only"):
        SEMap(params, FixedOrder("th0", 0.5), rule, SolverConfig(), branch="semantic")
    with pytest.raises(ValueError, match="branch must be one of"):
        SEMap(params, FixedAlpha(2.0), rule, SolverConfig(), branch="sideways")


@pytest.mark.parametrize("every, want", [(2, 2), (16, MATRIX_FULL_SEARCH_EVERY)])
def test_the_matrix_form_polishes_at_most_its_cap_between_full_searches(every, want) -> None:
    """config.full_search_every polishes between full searches, capped at MATRIX_FULL_SEARCH_EVERY."""
    params = with_ranks(ModelParams(omega=0.3), 2, 1)
    smap = SEMap(params, FixedAlpha(2.0), matrix_rule(2, 2, 1, "sobol6"), SolverConfig(full_search_every=every),
                 branch="semantic")
    x = initial_overlaps(params, "semantic").to_vector()
    full = [smap.evaluate(x).exact for _ in range(2 * want + 3)]
    assert [i for i, f in enumerate(full) if f] == [0, want + 1, 2 * want + 2]


def test_holding_an_order_parameter_survives_a_secant_it_cannot_take(monkeypatch: pytest.MonkeyPatch) -> None:
    """The secant in 1 / alpha needs 1 / th0 - 1 / target to differ at its two alphas.  Tracing a branch end at
    lam = 0, omega = 0 (``phase-diagram --lam 0 --omega 0``) held a th0 so small that both rounded to -1 / target
    although th0 itself differed: a ZeroDivisionError failed the task.  Here th0 = 0.5 + 1e-15 alpha, target 1e-17:
    no secant, and the bracket search says that no alpha in its range holds th0 there (None)."""
    from types import SimpleNamespace

    from attnphase.numerics.se import se_map

    monkeypatch.setattr(se_map, "update_hat", lambda params, alpha, ov, mom, group: alpha)
    monkeypatch.setattr(se_map, "update", lambda params, hat: SimpleNamespace(th0=0.5 + 1e-15 * hat))
    t1, t2, target = 0.5 + 1e-15, 0.5 + 1.25e-15, 1e-17
    assert t1 != t2 and 1 / t1 - 1 / target == 1 / t2 - 1 / target  # the case itself
    assert FixedOrder("th0", target).alpha_for(None, None, None, []) is None
