"""The positional branch's birth from the agnostic point below the range its sweep follows it over, where the two
branches cross (numerics/phase/positional_birth.py): located where the agnostic point at the grid's lowest alpha is
stable in m, left alone where it is not."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.continuation import BranchSweep
from attnphase.numerics.phase.positional_birth import positional_birth_below
from attnphase.numerics.se import state_evolution as se
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)


def crossing_boundaries(params: ModelParams, first: float) -> Boundaries:
    """Boundaries as the scalar form leaves them where the branches cross (alpha_c 3, no positional end): the
    semantic sweep's start fallen to the agnostic point at the grid's lowest alpha 0.1, the positional branch
    followed up from ``first``."""
    low = se.solve(params, 0.1, "semantic", config=CFG)
    pos = se.solve(params, first, "positional", config=CFG)
    assert low.branch == "agnostic" and pos.branch == "positional"
    return Boundaries(omega=params.omega, alpha_c=3.0, alpha_l=math.nan, semantic_end=0.6, positional_end=math.nan,
                      semantic=BranchSweep("semantic", [low]), positional=BranchSweep("positional", [pos]))


def test_a_positional_branch_born_above_the_grid_start_gets_its_birth():
    # lam = 0.05, omega = 0.1: the agnostic point is stable in m at alpha = 0.1 (its positional start falls to it),
    # the positional branch is on at 0.6; its birth between them is where mu rises through 1
    params = ModelParams(omega=0.1, lam=0.05)
    b = positional_birth_below(params, crossing_boundaries(params, 0.6), CFG, (0.1, 0.6, 3.0))
    assert 0.1 < b.positional_end < 0.6
    assert (b.positional_end_kind, b.positional_end_method) == ("bifurcation", "eigenvalue")
    assert b.end("positional").exists == "above"
    assert any(n.startswith("the positional branch's birth from the agnostic point at alpha = ") for n in b.notes)
    # it is the birth: a little above it the positional start reaches a point with small |m| (growing as the square
    # root of the distance), a little below it falls to the agnostic point
    above, below = (se.solve(params, b.positional_end + d, "positional", config=CFG) for d in (0.1, -0.05))
    assert above.branch == "positional" and 0.02 < np.abs(above.overlaps.m).max() < 0.12
    assert below.branch == "agnostic"


def test_the_birth_note_names_the_sweeps_points_below_the_branch_absent_or_solver_failure():
    # the sweep's points between the grid's start and the branch's first point: one whose start fell to the agnostic
    # point stable in m (absent, below the birth ~0.29), one that did not converge (solver failure)
    params = ModelParams(omega=0.1, lam=0.05)
    b = crossing_boundaries(params, 0.6)
    fallen = se.solve(params, 0.2, "positional", config=CFG)
    stalled = se.solve(params, 0.45, "positional", config=CFG).with_status(converged=False, residual=1e-3)
    assert fallen.branch == "agnostic"
    b = replace(b, positional=BranchSweep("positional", [fallen, stalled, *b.positional.points]))
    out = positional_birth_below(params, b, CFG, (0.1, 0.2, 0.45, 0.6, 3.0))
    note = next(n for n in out.notes if n.startswith("the positional branch's birth from the agnostic point"))
    assert "; absent at alpha = 0.2 (the start fell to the agnostic point, mu <= 0." in note
    assert "; solver failure at alpha = 0.45 (not converged, residual 1.0e-03)" in note
    assert 0.2 < out.positional_end < 0.45


def test_no_birth_is_sought_where_the_agnostic_point_is_unstable_in_m_at_the_grid_start():
    # the paper's model at omega = 0.3: mu > 1 at alpha = 0.1 (the positional branch exists there)
    params = ModelParams(omega=0.3)
    b = crossing_boundaries(params, 0.9)
    assert positional_birth_below(params, b, CFG, (0.1, 0.9, 3.0)) is b


def test_a_positional_sweep_gets_the_birth_between_its_last_agnostic_point_and_its_first_on_the_branch(monkeypatch):
    """``sweep --branch positional`` (:func:`sweep_birth`): the birth is sought between the sweep's point just below
    the branch, where its start fell to an agnostic point stable in m, and its first point on the branch; nowhere
    else (another branch, a sweep on the branch from its first point, a point below it unstable in m)."""
    from attnphase.numerics.phase import positional_birth as pb
    from attnphase.numerics.phase.branch_end import BranchEnd

    params = ModelParams(omega=0.1, lam=0.05)
    fallen = se.solve(params, 0.1, "positional", config=CFG)
    on = se.solve(params, 0.6, "positional", config=CFG)
    assert (fallen.branch, on.branch) == ("agnostic", "positional")
    asked, mu = [], {"value": 0.5}
    found = BranchEnd(0.29, "bifurcation", "eigenvalue", err=1e-3)
    monkeypatch.setattr(pb, "agnostic_eigenvalue", lambda fp, *a: mu["value"] if fp is fallen else math.nan)
    monkeypatch.setattr(pb, "positional_birth", lambda p, good, low, cfg: asked.append((good, low)) or (found, "born"))
    sw = pb.sweep_birth(params, BranchSweep("positional", [fallen, on]), CFG)
    assert asked == [(on, 0.1)] and sw.birth is found and sw.birth_note == "born"
    for unchanged in (BranchSweep("semantic", [fallen, on]), BranchSweep("positional", [on])):
        assert pb.sweep_birth(params, unchanged, CFG) is unchanged
    mu["value"] = 1.2
    unstable = BranchSweep("positional", [fallen, on])
    assert pb.sweep_birth(params, unstable, CFG) is unstable and len(asked) == 1
    # not located: NaN alpha, the reason in the note
    monkeypatch.setattr(pb, "positional_birth", lambda *a: (None, "not located: why"))
    mu["value"] = 0.5
    sw = pb.sweep_birth(params, BranchSweep("positional", [fallen, on]), CFG)
    assert math.isnan(sw.birth.alpha) and sw.birth_note == "not located: why"
