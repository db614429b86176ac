"""A converged point next to an agnostic point that is stable in its order parameter's direction is that agnostic point.

At L = 3, P = I, omega = 0.3, alpha = 1 the default rule's map has a fixed point with |m| = 2.3e-4 (residual
3e-11), which `solve --L 3 --branch positional` reported as the positional point; the agnostic point there is
stable in m (mu = 0.59), so no positional branch leaves it (docs/general.md, the L = 3 phase diagram).  The same
situation on a cheap rule: the agnostic point with m displaced by 1e-4 along the sum-zero direction.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se import state_evolution as se
from attnphase.numerics.se.se_map import model_rule
from attnphase.numerics.se.stalls import judge_agnostic_image
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)


def displaced(params: ModelParams, alpha: float, size: float):
    """The agnostic fixed point with m moved by ``size`` along P's first column minus its mean, labelled positional
    and converged, as a solve on a rule with a jump there returns it."""
    ag = se.solve(params, alpha, "agnostic", config=CFG)
    assert ag.status.converged and ag.branch == "agnostic"
    d = np.eye(params.L)[0] - 1.0 / params.L
    ov = replace(ag.overlaps, m=size * d / np.linalg.norm(d))
    return replace(ag, overlaps=ov, branch="positional", requested="positional")


def test_a_positional_point_within_the_rules_jumps_of_a_stable_agnostic_point_is_reported_absent():
    params = ModelParams(L=3, omega=0.3)
    fp = displaced(params, 2.0, 2e-4)
    judged = judge_agnostic_image(fp, CFG, model_rule(params, CFG), se.solve)
    assert judged.branch == "agnostic" and judged.requested == "positional" and judged.status.converged
    assert np.all(judged.overlaps.m == 0)
    assert judged.status.message.startswith("absent: the positional start converged to |m| = 0.0002")
    assert "eigenvalue in m is below 1 here (mu = " in judged.status.message


def test_where_the_agnostic_point_is_unstable_in_m_a_small_positional_point_stands():
    # L = 2, omega = 0.3, alpha = 1: the positional branch exists (mu > 1 at the agnostic point)
    params = ModelParams(omega=0.3)
    fp = displaced(params, 1.0, 2e-4)
    judged = judge_agnostic_image(fp, CFG, model_rule(params, CFG), se.solve)
    assert judged is fp


def test_a_point_far_from_the_symmetric_subspace_is_not_judged(monkeypatch):
    params = ModelParams(L=3, omega=0.3)
    fp = displaced(params, 2.0, 0.05)  # above IMAGE_FRACTION of the cold start's |m| = 0.2

    def never(*args, **kwargs):
        raise AssertionError("no solve for a point far from the agnostic one")

    assert judge_agnostic_image(fp, CFG, model_rule(params, CFG), never) is fp


def test_the_reason_a_solve_prints_carries_the_evidence():
    from attnphase.numerics.commands.point_record import solve_record

    params = ModelParams(L=3, omega=0.3)
    judged = judge_agnostic_image(displaced(params, 2.0, 2e-4), CFG, model_rule(params, CFG), se.solve)
    _, reason = solve_record(judged, "positional")
    assert reason.startswith("no positional fixed point found at alpha = 2, omega = 0.3: the solve from the positional "
                             "start converged to the agnostic one (absent: ")
    assert "(mu = " in reason


def test_the_judged_eigenvalue_is_kept_and_the_absence_evidence_reads_it(monkeypatch):
    from attnphase.numerics.phase import absence
    from attnphase.numerics.se.stability import m_stability_at
    from attnphase.numerics.se.overlaps import on_branch_subspace
    from attnphase.numerics.se.stalls import AGNOSTIC_EIGENVALUE

    params = ModelParams(L=3, omega=0.3)
    rule = model_rule(params, CFG)
    judged = judge_agnostic_image(displaced(params, 2.0, 2e-4), CFG, rule, se.solve)
    name, mu = judged.extra[AGNOSTIC_EIGENVALUE]["mu"]
    assert name == rule.name
    assert mu == m_stability_at(params, 2.0, on_branch_subspace(judged.overlaps, "agnostic"), rule, CFG)[0]
    assert f"mu = {mu:.3g}" in judged.status.message

    def never(*args, **kwargs):
        raise AssertionError("the kept eigenvalue is not computed again")

    monkeypatch.setitem(absence.EIGENVALUE, "positional", (never, "mu", "m"))
    assert absence.agnostic_eigenvalue(judged, "positional", rule, CFG) == mu
    other = model_rule(params, replace(CFG, quadrature="sobol7:4"))  # another rule: computed there
    with pytest.raises(AssertionError, match="not computed again"):
        absence.agnostic_eigenvalue(judged, "positional", other, CFG)


@pytest.mark.heavy
def test_a_positional_start_past_the_agnostic_point_is_the_cold_solve(monkeypatch):
    # L = 3, P = I: the positional start falls to the agnostic point (absent); the next grid point's cold solve,
    # taken from that point, reaches the same fixed point as the whole cold path from alpha = 0.3, for fewer
    # SE evaluations
    from attnphase.numerics.se.se_map import SEMap

    params = ModelParams(L=3, omega=0.2)
    rule = model_rule(params, CFG)
    at1 = se.solve(params, 1.0, "positional", config=CFG, rule=rule)
    assert at1.status.converged and at1.branch == "agnostic" and at1.requested == "positional"
    calls, evaluate = [], SEMap.evaluate

    def counted(self, x, exact=False):
        calls.append(1)
        return evaluate(self, x, exact)

    monkeypatch.setattr(SEMap, "evaluate", counted)
    cold = se.solve(params, 1.5, "positional", config=CFG, rule=rule)
    n_cold = len(calls)
    past = se.positional_past_agnostic(params, 1.5, at1, CFG, rule)
    n_past = len(calls) - n_cold
    assert (past.branch, past.requested, past.status.converged) == (cold.branch, cold.requested, cold.status.converged)
    assert past.status.message.split("(")[0] == cold.status.message.split("(")[0]
    np.testing.assert_allclose(past.overlaps.to_vector(), cold.overlaps.to_vector(), rtol=1e-8, atol=1e-12)
    assert n_past < n_cold / 2


def test_a_cold_positional_solve_is_not_seeded_by_a_student_the_ridge_holds_at_zero():
    # lambda = 0.1, omega = 0.3: the cold positional path from alpha = 0.3 falls to Q = 0 (q ~ 1e-20, a fixed point at
    # every alpha) below the branch's birth near 1; seeded from it the solve at alpha = 3 stayed at Q = 0 (q ~ 1e-77,
    # "no positional fixed point"), and so did the phase diagram's positional sweep, which starts there.  The branch
    # is there: the cold start reaches it, as continuation from alpha = 1.26 does
    params = ModelParams(omega=0.3, lam=0.1)
    rule = model_rule(params, CFG)
    low = se.solve(params, 0.5, "positional", config=CFG, rule=rule)
    assert low.status.converged and low.branch == "agnostic" and low.overlaps.zero_student
    assert se.positional_past_agnostic(params, 3.0, low, CFG, rule) is None
    fp = se.solve(params, 3.0, "positional", config=CFG, rule=rule)
    assert fp.status.converged and fp.branch == "positional" and not fp.overlaps.zero_student
    assert abs(fp.overlaps.m[0]) > 0.1
