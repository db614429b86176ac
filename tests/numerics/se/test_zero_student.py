"""The student Q = 0 at every rank: the fixed point a strong ridge penalty (lambda = 1) holds every branch at.

At Q = 0 the fields are w = 0 and the loss depends on h h^T alone, so the rank-r map decouples into r copies of the
rank-1 one: the rank-2 point is V0 = v I with v the rank-1 V, and the two have one leading eigenvalue.  Evaluated
at q0 as it shrinks, the matrix map loses every digit along q0's smallest (noise) direction and the mixed solve stalls
at residual ~1e-7; finite differences of 0.1 in m swamp the fields' spread and leave the admissible region.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.census import census
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.phase.boundaries import phase_boundaries
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.stability import m_stability_at, stability_eigenvalue, theta_stability_at
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol9:4")
STRONG_RIDGE = dict(omega=0.3, lam=1.0)


@pytest.fixture(scope="module")
def rank1() -> object:
    fp = solve(ModelParams(**STRONG_RIDGE), 1.0, "positional", config=CFG)
    assert fp.status.converged and fp.branch == "agnostic" and fp.overlaps.zero_student
    return fp


@pytest.mark.parametrize("branch", ["mixed", "positional"])
def test_rank2_solve_converges_to_the_isotropic_zero_student(rank1, branch: str) -> None:
    fp = solve(ModelParams(r=2, **STRONG_RIDGE), 1.0, branch, config=CFG)
    ov = fp.overlaps
    assert fp.status.converged and fp.status.residual <= 1e-10
    assert fp.branch == "agnostic" and ov.zero_student
    # V0 = v I: isotropic, and v is the rank-1 V within 3 of the two rules' error bars (about 1.2e-4 each here)
    assert abs(ov.V0[0, 1]) <= 1e-12 and ov.V0[0, 0] == pytest.approx(ov.V0[1, 1], abs=1e-12)
    assert abs(ov.V0[0, 0] - rank1.overlaps.V0) <= 5e-4


def test_zero_student_finite_differences_take_its_scale(rank1) -> None:
    """At Q = 0 a step of 0.1 in m swamps the fields' spread (q / r)^{1/2} and the SE step leaves the admissible
    region; steps at the student's scale give the eigenvalue, the same at rank 1 and rank 2 (the map decouples)."""
    lead1 = stability_eigenvalue(ModelParams(**STRONG_RIDGE), 1.0, rank1.overlaps, CFG)
    assert 0.0 < lead1 < 1.0
    q, v = rank1.overlaps.q0, rank1.overlaps.V0
    ov2 = Overlaps(q / 2 * np.eye(2), v * np.eye(2), np.zeros((2, 2)), np.zeros((2, 1)))
    lead2 = stability_eigenvalue(ModelParams(r=2, **STRONG_RIDGE), 1.0, ov2, CFG)
    assert lead2 == pytest.approx(lead1, abs=0.02)


@pytest.mark.heavy
def test_census_lists_the_stable_zero_student_at_rank_1() -> None:
    res = census(ModelParams(**STRONG_RIDGE), 1.0, config=CFG)
    [entry] = res.entries
    assert entry.point.branch == "agnostic" and entry.point.overlaps.zero_student
    assert entry.stable and np.isfinite(entry.leading_eigenvalue)
    assert res.n_rules == 0  # bars from the rule's blocks, as documented (it reported the unused default, 4)


@pytest.mark.parametrize("lam, q0", [(0.5, (3.1e-24, 7.7e-25)), (1.0, (3.2e-35, 2.3e-35))])
def test_the_eigenvalue_at_a_zero_student_with_round_off_directions_is_the_isotropic_ones(lam, q0) -> None:
    """``census --rank 2 --alpha 1 --omega 0.3 --lam 0.5`` lists the zero student with q0 = diag(3.1e-24, 7.7e-25),
    m ~ 4e-16 and V0's diagonal 1.4e-13 apart (on sobol9:4; ``--lam 1``: q0's eigenvalues 3.2e-35 and 2.3e-35): q0's
    directions are round-off, and the map evaluated there divides that round-off by the steps (the leading eigenvalue
    came out 1.8e6 and 619, "unstable").  The Jacobian is the map the solver iterates at Q = 0, q0 and V0 made
    isotropic, at a scale where the differences keep their digits: the rank-1 eigenvalue again."""
    ridge = dict(omega=0.3, lam=lam)
    one = solve(ModelParams(**ridge), 1.0, "agnostic", config=CFG)
    assert one.status.converged and one.overlaps.zero_student
    lead1 = stability_eigenvalue(ModelParams(**ridge), 1.0, one.overlaps, CFG)
    v = one.overlaps.V0
    ov2 = Overlaps(np.diag(q0), np.diag([v, v + 1.4e-13]), np.array([[4.1e-16, 0.0], [-4.1e-16, 0.0]]),
                   np.zeros((2, 1)))  # V0's diagonal as the census's point has it, 1.4e-13 apart
    lead2 = stability_eigenvalue(ModelParams(r=2, **ridge), 1.0, ov2, CFG)
    assert 0.0 < lead1 < 1.0 and lead2 == pytest.approx(lead1, abs=0.02)


def test_the_rank_1_eigenvalue_at_a_zero_student_does_not_hang_on_its_round_off() -> None:
    """``census --alpha 1 --omega 0.3 --lam 0.5`` polishes the zero student to q = 1.9e-20, th0 = -1.7e-19: th0 not
    exactly 0 left out mu, and the differences at that q lost the m direction (leading eigenvalue 0.029).  At every
    such state the eigenvalue is the agnostic state's, mu = 0.147 here, as at q = 7.5e-15, th0 = 0."""
    params = ModelParams(omega=0.3, lam=0.5)
    leads = [stability_eigenvalue(params, 1.0, Overlaps(q, 2.03683, np.zeros(2), th), CFG)
             for q, th in ((7.5e-15, 0.0), (1.9e-20, -1.7e-19), (5e-45, 2.5e-23))]
    assert 0.1 < leads[0] < 0.2 and leads[1] == pytest.approx(leads[0], abs=1e-3) == leads[2]


@pytest.mark.heavy  # 6-12 s: kept out of the default run's 10-minute budget
def test_the_eigenvalues_in_m_and_theta_at_a_zero_student_do_not_hang_on_its_round_off() -> None:
    """``phase-diagram --lam 0.1 --omega 0.1``: the agnostic point is the zero student, its solves landing at q0
    between 1e-60 and 1e-30; mu taken there was round-off over sqrt(q0) (59 at alpha = 1.47, 5e5 at 1.67), and the
    positional birth came out 1.6721 +- 6.4e-11, where mu is 1.63.  mu and lambda are the agnostic state's at q0 =
    1e-14, where mu rises smoothly through 1 near alpha = 1.13 (0.87 at 1, 1.38 at 1.47 as at q0 = 1e-13)."""
    params = ModelParams(omega=0.1, lam=0.1)
    rule = model_rule(params, CFG)
    mus = [m_stability_at(params, 1.4727, Overlaps(q, 11.766, np.zeros(2), 0.0), rule, CFG)[0]
           for q in (1e-13, 6e-50, 1.3e-57)]
    assert 1.3 < mus[0] < 1.45 and mus[1] == pytest.approx(mus[0], abs=2e-3) and mus[2] == mus[1]
    lams = [theta_stability_at(params, 1.4727, Overlaps(q, 11.766, np.zeros(2), 0.0), rule, CFG)[0]
            for q in (1e-13, 6e-50)]
    assert np.isfinite(lams[0]) and lams[1] == pytest.approx(lams[0], abs=2e-3)
    birth = phase_boundaries(params, None, config=CFG.replace(error_bars=False))
    assert 1.0 < birth.positional_end < 1.3, birth.notes
