"""A sweep that finds no point of a branch says whether the branch is absent (its starts fell to an agnostic point
that is stable in its direction) or the solver failed; the phase diagram's notes carry that (L = 3, P = I: no
positional branch, docs/general.md)."""

from __future__ import annotations

import math
from dataclasses import replace

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import absence_note
from attnphase.numerics.phase.agnostic_boundary import agnostic_alpha_c
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.branch_end import BranchEnd
from attnphase.numerics.phase.continuation import BranchSweep
from attnphase.numerics.se import state_evolution as se
from attnphase.numerics.se.se_map import model_rule
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)
L3 = ModelParams(L=3, omega=0.3)
L3_02 = ModelParams(L=3, omega=0.2)


def agnostic(params: ModelParams, alpha: float):
    fp = replace(se.solve(params, alpha, "agnostic", config=CFG), requested="positional")
    assert fp.status.converged and fp.branch == "agnostic"
    return fp


def test_starts_that_fall_to_a_stable_agnostic_point_are_the_branch_absent():
    points = [agnostic(L3, a) for a in (1.0, 2.0)]
    note = absence_note(points, "positional", model_rule(L3, CFG), CFG)
    assert note.startswith("positional branch absent at every alpha of the grid (1, 2)")
    mu = float(note.split("mu <= ")[1].split(" ")[0])
    assert 0 < mu < 1


def test_a_start_that_did_not_converge_is_solver_failure_not_absence():
    good = agnostic(L3, 2.0)
    failed = replace(good, alpha=1.5, status=replace(good.status, converged=False, residual=3e-3))
    note = absence_note([failed, good], "positional", model_rule(L3, CFG), CFG)
    assert note.startswith("no converged positional point in range; absent at alpha = 2 ")
    assert note.endswith("solver failure at alpha = 1.5 (not converged, residual 3.0e-03)")


def test_an_agnostic_point_unstable_in_m_is_no_evidence_of_absence():
    # L = 2, omega = 0.3, alpha = 1: the positional branch exists there (mu > 1 at the agnostic point)
    params = ModelParams(omega=0.3)
    note = absence_note([agnostic(params, 1.0)], "positional", model_rule(params, CFG), CFG)
    assert "absent" not in note and "fell to the agnostic point, unstable in m: mu = " in note


# -- alpha_c where the positional branch is absent: the global minimum leaves the agnostic point --------------------

def _boundaries(params: ModelParams, alphas, end: BranchEnd, e_t_shift: float = 0.0) -> Boundaries:
    """The scalar form's boundaries as the sweeps leave them at L = 3, P = I: the semantic branch on ``alphas`` (its
    first point's e_t raised by ``e_t_shift``) with ``end``, every positional start fallen to the agnostic point."""
    sem = [se.solve(params, a, "semantic", config=CFG) for a in alphas]
    sem[0] = replace(sem[0], observables=replace(sem[0].observables, e_t=sem[0].observables.e_t + e_t_shift))
    pos = [agnostic(params, a) for a in alphas]
    return Boundaries(omega=params.omega, alpha_c=math.nan, alpha_l=math.nan, semantic_end=end.alpha,
                      positional_end=math.nan, semantic=BranchSweep("semantic", sem, end, "below"),
                      positional=BranchSweep("positional", pos), notes=("alpha_c: the branches never coexist on the grid",))


BIRTH = BranchEnd(0.3, "bifurcation", "eigenvalue", err=1e-3)


def test_alpha_c_is_the_semantic_birth_where_it_lies_below_the_agnostic_point():
    b = agnostic_alpha_c(L3_02, _boundaries(L3_02, (1.0, 2.0), BIRTH), CFG)
    assert (b.alpha_c, b.alpha_c_err, b.alpha_c_from, b.alpha_c_to) == (0.3, 1e-3, "agnostic", "semantic")
    assert b.alpha_c_method.startswith("birth of the semantic branch from the agnostic point")
    assert not any(n.startswith("alpha_c: the branches never coexist") for n in b.notes)


def test_no_alpha_c_without_a_change_of_the_lowest_point():
    # an end that is no bifurcation of the agnostic point: the change is a root of Delta e_t, and with the semantic
    # point below the agnostic one at every grid point there is none on the grid
    fold = BranchEnd(0.3, "fold", "trace")
    b = agnostic_alpha_c(L3_02, _boundaries(L3_02, (1.0, 2.0), fold), CFG)
    assert math.isnan(b.alpha_c) and b.alpha_c_from == ""
    assert "semantic lower wherever both are on" in b.notes[-1]


def test_alpha_c_is_the_root_of_delta_e_t_where_the_semantic_point_starts_above():
    # the first semantic point lifted above the agnostic one: Delta e_t changes sign in (1, 2), where the solves
    # (unshifted) give the semantic point below, so the root is pinned just above 1
    b = agnostic_alpha_c(L3_02, _boundaries(L3_02, (1.0, 2.0), BIRTH, e_t_shift=1e-2), CFG)
    assert 1.0 < b.alpha_c < 1.0 + 1e-3 and b.alpha_c_from == "agnostic" and b.alpha_c_method.startswith("Brent")


def test_boundaries_with_a_positional_branch_keep_the_scalar_form_s_alpha_c():
    params = ModelParams(omega=0.3)  # L = 2: the agnostic point is unstable in m, no evidence of absence
    fp = agnostic(params, 1.0)
    b = Boundaries(omega=0.3, alpha_c=math.nan, alpha_l=math.nan, semantic_end=math.nan, positional_end=math.nan,
                   semantic=BranchSweep("semantic", [se.solve(params, 1.0, "semantic", config=CFG)], BIRTH, "below"),
                   positional=BranchSweep("positional", [fp]))
    assert agnostic_alpha_c(params, b, CFG) is b
