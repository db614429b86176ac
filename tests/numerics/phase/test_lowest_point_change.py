"""alpha_c at r = r* = 1 where the two branches never cross: the first change of the lowest-e_t point along alpha,
whatever branches exist where (numerics/phase/lowest_point_change.py); a solver failure outside the change's bracket
does not erase it, and stays a failure, not an absence, in the notes."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import lru_cache
from types import SimpleNamespace

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.boundaries import phase_boundaries
from attnphase.numerics.phase import grid_points
from attnphase.numerics.phase import lowest_point_change as lpc
from attnphase.numerics.phase.boundary_results import Boundaries
from attnphase.numerics.phase.branch_end import BranchEnd
from attnphase.numerics.phase.continuation import BranchSweep
from attnphase.numerics.phase.scalar_boundaries import ALPHA_L_BELOW_AT_START, ALPHA_L_WITHOUT_ALPHA_C
from attnphase.numerics.se import state_evolution as se
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)
L3 = ModelParams(L=3, omega=0.2)
#: The semantic branch born from the agnostic point at 0.3 by a bifurcation (L = 3, omega = 0.2: at 0.25 on the
#: default rules), located with a standard error of 1e-3.
BIRTH = BranchEnd(0.3, "bifurcation", "eigenvalue", err=1e-3)
GRID = (0.2, 1.0, 2.0)


@lru_cache(maxsize=None)
def solved(params: ModelParams, alpha: float, branch: str):
    return se.solve(params, alpha, branch, config=CFG)


def agnostic(params: ModelParams, alpha: float):
    fp = replace(solved(params, alpha, "agnostic"), requested="positional")
    assert fp.status.converged and fp.branch == "agnostic"
    return fp


def lifted(fp, shift: float):
    return replace(fp, observables=replace(fp.observables, e_t=fp.observables.e_t + shift))


def boundaries(params: ModelParams, sem_alphas, end: BranchEnd, shifts=None, pos_points=None) -> Boundaries:
    """The scalar form's boundaries as its sweeps leave them at L = 3, P = I: the semantic branch on ``sem_alphas``
    (its e_t raised by ``shifts[i]``) with ``end``, every positional start fallen to the agnostic point."""
    sem = [solved(params, a, "semantic") for a in sem_alphas]
    sem = [lifted(p, (shifts or {}).get(p.alpha, 0.0)) for p in sem]
    pos = pos_points if pos_points is not None else [agnostic(params, a) for a in sem_alphas]
    return Boundaries(omega=params.omega, alpha_c=math.nan, alpha_l=math.nan, semantic_end=end.alpha,
                      positional_end=math.nan, semantic=BranchSweep("semantic", sem, end, "below"),
                      positional=BranchSweep("positional", pos), notes=("alpha_c: the branches never coexist on the grid",))


def test_alpha_c_is_the_semantic_birth_where_it_leaves_the_agnostic_point_below_it():
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, GRID)
    assert (b.alpha_c, b.alpha_c_err, b.alpha_c_from, b.alpha_c_to) == (0.3, 1e-3, "agnostic", "semantic")
    assert b.alpha_c_method.startswith("birth of the semantic branch from the agnostic point")
    assert not any(n.startswith("alpha_c: the branches never coexist") for n in b.notes)
    assert not any("solver failure" in n for n in b.notes)


@pytest.mark.parametrize("scalar_alpha_l, scalar_note", [(math.nan, ALPHA_L_BELOW_AT_START), (0.25, "")])
def test_alpha_l_is_measured_from_the_alpha_c_located_here(scalar_alpha_l: float, scalar_note: str):
    # the scalar form, with no alpha_c, left alpha_l NaN because eps_g was below eps_lin at the semantic branch's lowest
    # point (sigma = 0.8, omega = 0.3: the branch's small-theta piece born at 0.648 lay between its end and its first
    # point, and eps_g was above eps_lin there), or an alpha_l below the alpha_c found here: both are the smallest alpha
    # >= alpha_c where the semantic eps_g drops below eps_lin, here between the points at 1 and 2
    b = boundaries(L3, (1.0, 2.0), BIRTH)
    b = replace(b, alpha_l=scalar_alpha_l, notes=b.notes + ((scalar_note,) if scalar_note else ()))
    out = lpc.lowest_point_alpha_c(L3, b, CFG, GRID)
    assert out.alpha_c == 0.3 and 1.0 < out.alpha_l < 2.0 and out.alpha_l_branch == "semantic"
    gap = [solved(L3, out.alpha_l + d, "semantic").observables for d in (-0.01, 0.01)]
    assert gap[0].eps_g > gap[0].eps_lin and gap[1].eps_g < gap[1].eps_lin
    assert not any(n.startswith("alpha_l") for n in out.notes)


def test_an_alpha_l_above_the_alpha_c_located_here_stands():
    b = boundaries(L3, (1.0, 2.0), BIRTH)
    b = replace(b, alpha_l=1.05, notes=b.notes + (f"{ALPHA_L_WITHOUT_ALPHA_C} (not measured from alpha_c)",))
    out = lpc.lowest_point_alpha_c(L3, b, CFG, GRID)
    assert (out.alpha_c, out.alpha_l) == (0.3, 1.05) and not any(n.startswith("alpha_l") for n in out.notes)


@pytest.mark.heavy
def test_alpha_c_is_the_root_of_delta_e_t_where_the_semantic_point_starts_above():
    # the semantic point at 1 lifted above the agnostic one: the lowest point is agnostic at 0.2 and 1, semantic
    # at 2; the solves between (unshifted) give the semantic point below, so the root is pinned just above 1
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH, {1.0: 1e-2}), CFG, GRID)
    assert 1.0 < b.alpha_c < 1.0 + 1e-3 and b.alpha_c_from == "agnostic" and b.alpha_c_method.startswith("Brent")


def test_no_change_of_the_lowest_point_says_which_point_and_why():
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH, {1.0: 1e-2, 2.0: 1e-2}), CFG, GRID)
    assert math.isnan(b.alpha_c) and b.alpha_c_from == ""
    assert b.notes[-1].startswith("alpha_c: no change of the lowest point to the semantic one on the grid "
                                  "(agnostic at 0.2, agnostic at 1, agnostic at 2)")
    assert "lies above it wherever both are on" in b.notes[-1]
    # the semantic point is on at the grid's end, still above: the note says where to look further
    assert b.notes[-1].endswith("a grid reaching beyond alpha = 2, --alpha, looks there)")


@pytest.mark.heavy
def test_the_simplex_p_gets_alpha_c_with_its_labels():
    # L = 3, simplex P (p_l . p_k = -1/2), small rule: the sweeps find the semantic branch (born near 0.29) and a
    # positional one above it at 0.4 and 0.6; with the crossing of the two left to this rule (the scalar form's
    # alpha_c removed, as on the default rules where it finds none), alpha_c is the first change of the lowest point
    # on [0.2, 0.4, 0.6], from the point lowest at 0.2 (solved here independently) to the semantic one
    simplex = ModelParams(L=3, omega=0.3, P=np.array([[1, -0.5, -0.5], [-0.5, 1, -0.5], [-0.5, -0.5, 1]]))
    cfg = CFG.replace(bifurcation_quadrature="sobol10:4", end_quadrature=None)
    b = phase_boundaries(simplex, [0.2, 0.4, 0.6], config=cfg)
    assert b.semantic.on_branch() and b.positional.on_branch()
    b = lpc.lowest_point_alpha_c(simplex, replace(b, alpha_c=math.nan, alpha_c_from="", alpha_c_to=""), cfg,
                                 [0.2, 0.4, 0.6])
    pos, agn = (se.solve(simplex, 0.2, br, config=cfg) for br in ("positional", "agnostic"))
    lowest = "positional" if pos.branch == "positional" and pos.observables.e_t < agn.observables.e_t else "agnostic"
    assert (b.alpha_c_from, b.alpha_c_to) == (lowest, "semantic")
    assert 0.2 < b.alpha_c < 0.4
    if lowest == "agnostic":
        assert b.alpha_c == b.semantic_end and b.alpha_c_method.startswith("birth of the semantic branch")


def _failing_at(alpha: float, branch: str, monkeypatch, from_agnostic: bool = False):
    """Every solve of ``branch`` at ``alpha`` in the search fails (not converged), whatever its start or rule -- but
    the positional start from the agnostic point where ``from_agnostic``."""
    real, real_past = grid_points.solve, grid_points.positional_past_agnostic

    def failed(fp):
        return replace(fp, status=replace(fp.status, converged=False, residual=3e-3))

    def solve(params, a, br, **kw):
        fp = real(params, a, br, **kw)
        return failed(fp) if a == alpha and br == branch else fp

    def past_agnostic(params, a, agnostic, cfg, rule):
        fp = real_past(params, a, agnostic, cfg, rule)
        return fp if fp is None or from_agnostic or a != alpha or branch != "positional" else failed(fp)
    monkeypatch.setattr(grid_points, "solve", solve)
    monkeypatch.setattr(grid_points, "positional_past_agnostic", past_agnostic)


@pytest.mark.heavy
def test_a_solver_failure_outside_the_bracket_leaves_alpha_c_and_is_named(monkeypatch):
    _failing_at(0.15, "positional", monkeypatch)
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, (0.15,) + GRID)
    assert (b.alpha_c, b.alpha_c_err, b.alpha_c_from) == (0.3, 1e-3, "agnostic")
    failure = [n for n in b.notes if n.startswith("solver failure at alpha = 0.15: positional (not converged")]
    assert len(failure) == 1 and "not absence" in failure[0]


@pytest.mark.heavy
def test_a_positional_point_its_starts_miss_is_decided_from_the_agnostic_point(monkeypatch):
    # the paper's second A at omega = 0.1, alpha = 0.3636: the default start falls to the agnostic point (mu = 1.01),
    # the coarser rule's does not converge; started from the agnostic point there, as a sweep does, the positional
    # solve decides the point (here: absent, falling to the agnostic point with mu < 1 at L = 3)
    _failing_at(0.25, "positional", monkeypatch, from_agnostic=True)
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, (0.2, 0.25, 1.0, 2.0))
    assert (b.alpha_c, b.alpha_c_from) == (0.3, "agnostic"), b.notes
    assert any(n.startswith("retried: positional at alpha = 0.25") and n.endswith("decided from the agnostic point")
               for n in b.notes), b.notes


@pytest.mark.heavy
def test_a_retry_with_no_agnostic_point_to_start_from_leaves_the_point_unknown(monkeypatch):
    # the agnostic solve at 0.15 fails too: the positional point there stays unknown (a solver failure outside the
    # bracket), and the search goes on to alpha_c
    _failing_at(0.15, "positional", monkeypatch)
    real = grid_points.solve_from

    def solve_from(params, alpha, branch, near, cfg, rule):
        fp = real(params, alpha, branch, near, cfg, rule)
        return replace(fp, status=replace(fp.status, converged=False)) if (alpha, branch) == (0.15, "agnostic") else fp
    monkeypatch.setattr(grid_points, "solve_from", solve_from)
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, (0.15,) + GRID)
    assert (b.alpha_c, b.alpha_c_from) == (0.3, "agnostic"), b.notes
    assert any(n.startswith("solver failure at alpha = 0.15: positional") for n in b.notes), b.notes


def test_a_failure_in_the_sweep_above_the_bracket_is_named_not_called_absence():
    # L = 3, omega = 0.3: the positional start at alpha = 3 does not converge; alpha_c is found all the same
    bad = agnostic(L3, 2.0)
    bad = replace(bad, status=replace(bad.status, converged=False, residual=5.9e-4))
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH, pos_points=[agnostic(L3, 1.0), bad]), CFG, GRID)
    assert (b.alpha_c, b.alpha_c_from, b.alpha_c_to) == (0.3, "agnostic", "semantic")
    assert any(n.startswith("solver failure at alpha = 2 (positional: not converged, residual 5.9e-04)") for n in b.notes)
    assert not any("absent" in n and "alpha = 2" in n for n in b.notes)


def test_a_failure_past_the_branchs_located_end_is_not_named_a_solver_failure():
    # phase-diagram --lam 0.001 --omega 0.3: the positional branch ends at 0.43 (a bifurcation, existing below it);
    # its starts at alpha 2.2-3 did not converge, where the branch is absent by its end (attnphase solve: mu = -3.4)
    bad = agnostic(L3, 2.0)
    bad = replace(bad, status=replace(bad.status, converged=False, residual=5.9e-4))
    b = boundaries(L3, (1.0, 2.0), BIRTH, pos_points=[agnostic(L3, 1.0), bad])
    b = replace(b, positional=replace(b.positional, end=BranchEnd(0.43, "bifurcation", "eigenvalue"), end_side="above"))
    b = lpc.lowest_point_alpha_c(L3, b, CFG, GRID)
    assert (b.alpha_c, b.alpha_c_from, b.alpha_c_to) == (0.3, "agnostic", "semantic")
    assert not any("solver failure" in n for n in b.notes), b.notes


@pytest.mark.heavy
def test_a_failure_inside_the_bracket_leaves_alpha_c_unlocated(monkeypatch):
    _failing_at(0.25, "positional", monkeypatch)
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, (0.2, 0.25, 1.0, 2.0))
    assert math.isnan(b.alpha_c)
    assert b.notes[-1] == "alpha_c (agnostic -> semantic): not located: solver failure inside its bracket [0.2, 1]"


def test_boundaries_with_an_alpha_c_are_kept():
    b = replace(boundaries(L3, (1.0,), BIRTH), alpha_c=0.7)
    assert lpc.lowest_point_alpha_c(L3, b, CFG, GRID) is b


@pytest.mark.heavy
def test_a_strong_ridge_diagram_follows_the_agnostic_point_off_q_zero():
    # lambda = 0.1, omega = 0.3: below alpha ~ 1 the agnostic point is Q = 0 (a fixed point at every alpha), at 6 a
    # non-zero one; warm from Q = 0 the agnostic solve at 6 failed and the search stopped ("the agnostic point was
    # lost").  Cold where the warm start fails, the lowest point is followed over the whole range
    b = phase_boundaries(ModelParams(omega=0.3, lam=0.1), [0.68, 1.26, 3.0], config=CFG)
    assert not any("was lost" in n for n in b.notes)
    assert math.isnan(b.alpha_c)
    # the change agnostic -> positional is the positional branch's birth, located where mu crosses 1 between the two
    # grid alphas (the positional end the sweeps, started above the semantic end, did not find)
    change = [n for n in b.notes if n.startswith("the lowest point changes agnostic -> positional at the positional "
                                                 "branch's birth from the agnostic point at alpha = ")]
    assert len(change) == 1, b.notes
    assert 0.68 < b.positional_end < 1.26 and (b.positional_end_kind, b.positional_end_method) == ("bifurcation",
                                                                                                  "eigenvalue")
    assert b.end("positional").exists == "above"
    # it is the birth: just above it the positional start reaches a point with small |m|, just below it falls to the
    # agnostic point
    above, below = (se.solve(ModelParams(omega=0.3, lam=0.1), b.positional_end + d, "positional", config=CFG)
                    for d in (0.05, -0.05))
    assert above.branch == "positional" and 0.02 < np.abs(above.overlaps.m).max() < 0.1
    assert below.branch == "agnostic"
    # the semantic branch's own crossing of eps_lin lies where the positional point is lower (it is lower wherever
    # the two were compared): not the global minimum's, so no alpha_l, and the notes say where and why
    assert math.isnan(b.alpha_l) and b.alpha_l_branch == "", b.notes
    why = [n for n in b.notes if n.startswith("alpha_l: none: the semantic eps_g meets eps_lin at alpha = ")]
    assert len(why) == 1 and "where the positional point lies lower" in why[0] and "above eps_lin" in why[0], b.notes
    assert not any(n.startswith("alpha_l: with no alpha_c") for n in b.notes)


@pytest.mark.parametrize("crossing, slope, found, why", [
    (1.05, 1.1, True, ""),
    (0.95, 1.1, False, "below alpha = 1 where the agnostic point is stable in m"),
    (1.05, -1.1, False, "the eigenvalue crosses 1 the wrong way at 1.0501"),
    (1.30, 1.1, False, "is not beyond the branch's last grid point (1.2000)"),
])
def test_the_positional_birth_is_a_crossing_of_mu_between_its_point_and_the_fallen_start(monkeypatch, crossing, slope,
                                                                                       found, why):
    # the positional point at 1.2, its start fallen to the agnostic point at 1: the birth is mu rising through 1
    # between them on the solve rule; a crossing below 1 (where the start fell), falling, or above 1.2 is not it, and
    # the reason says why
    from attnphase.numerics.phase import branch_end
    from attnphase.numerics.phase.bifurcation import Bifurcation

    def bifurcation_from(params, good, direction, cfg, guess=None):
        assert direction == "m" and good.alpha == 1.2
        return Bifurcation(crossing + 1e-4, True, "converged", slope, (), 0, err=2e-3, solve_rule_alpha=crossing)
    monkeypatch.setattr(branch_end, "bifurcation_from", bifurcation_from)
    good = SimpleNamespace(alpha=1.2)
    end, reason = branch_end.positional_birth(ModelParams(omega=0.3, lam=0.1), good, 1.0, CFG)
    if found:
        assert (end.alpha, end.err, end.kind, end.method, end.on_solve_rule) == (1.0501, 2e-3, "bifurcation",
                                                                                  "eigenvalue", 1.05)
        assert reason.startswith("the positional branch's birth from the agnostic point at alpha = 1.0501 +- 0.002")
    else:
        assert end is None and why in reason


class _Points:
    """A stand-in for the search at one omega: the semantic point's e_t is ``delta(alpha)`` (Delta e_t), every other
    point's 0, all on at the grid alphas; the semantic branch born by a bifurcation at ``birth``; the positional
    point falls to the agnostic one from ``positional_end`` on."""

    def __init__(self, delta, birth: float, positional_end: float = math.inf):
        end = BranchEnd(birth, "bifurcation", "eigenvalue", err=2e-3)
        self.sweeps = {"semantic": BranchSweep("semantic", [], end, "below")}
        self.delta, self.cfg, self.positional_end = delta, CFG, positional_end
        semantic = SimpleNamespace(overlaps=SimpleNamespace(th0=0.5))  # one branch: no jump of |th0| between
        self.on = {"semantic": {1.0: semantic, 2.0: semantic}, "agnostic": {1.0: "A", 2.0: "A"},
                   "positional": {1.0: "P"}}
        self.absent = {"semantic": {}, "positional": {}}

    def point(self, branch: str, alpha: float):
        e_t = self.delta(alpha) if branch == "semantic" else 0.0
        label = "agnostic" if branch == "positional" and alpha >= self.positional_end else branch
        return SimpleNamespace(observables=SimpleNamespace(e_t=e_t), status=SimpleNamespace(converged=True),
                               branch=label)


@pytest.mark.parametrize("root_err, expected", [(0.5, "birth"), (1e-3, "root")])
def test_a_root_of_delta_e_t_within_its_noise_of_the_birth_below_is_the_birth(monkeypatch, root_err, expected):
    # the semantic branch born from the agnostic point at 0.6, its point at the grid alpha 1 on the agnostic one's e_t
    # up to the rule's noise (Delta e_t +1e-8 there, a root at 1.05, -1e-4 at 2): the root's error 0.5 does not tell
    # it apart from the birth, so alpha_c is the birth; with an error of 1e-3 the root stands
    monkeypatch.setattr(lpc, "coarse_alpha_c_error", lambda *a: root_err)
    s = _Points(lambda a: 1e-8 - 2e-7 * (a - 1.0), birth=0.6)
    alpha_c, err, method, since = lpc._locate(s, "agnostic", 1.0, 2.0)
    assert since == "agnostic"
    if expected == "birth":
        assert (alpha_c, err) == (0.6, 2e-3)
        assert method.startswith("birth of the semantic branch from the agnostic point") and "1.05 +- 0.5" in method
    else:
        assert abs(alpha_c - 1.05) < 1e-3 and err == 1e-3 and method.startswith("Brent's root")


def test_a_change_past_the_end_of_the_lower_branch_is_the_semantic_birth_from_the_agnostic_point():
    # lam = 0.003, omega = 0.2: positional lowest at the grid alpha 0.36, semantic at 0.63; the positional branch
    # falls to the agnostic point at 0.53 and the semantic one is born from it at 0.5945, so Delta e_t is 0 on
    # [0.53, 0.5945] (both points the agnostic one) and Brent's method returned 0.5304 +- nan, below the birth.
    # Here: positional lowest at 1, its point agnostic from 1.2 on, the semantic branch born at 1.5
    s = _Points(lambda a: -1e-4 * max(a - 1.5, 0.0) + 1e-4 * max(1.2 - a, 0.0), birth=1.5, positional_end=1.2)
    alpha_c, err, method, since = lpc._locate(s, "positional", 1.0, 2.0)
    assert (alpha_c, err, since) == (1.5, 2e-3, "agnostic")
    assert method.startswith("birth of the semantic branch from the agnostic point")
    assert "the positional point" in method
    # while the positional point is still there at the birth, the change is located on Delta e_t as before
    s = _Points(lambda a: 1e-4 * (1.6 - a), birth=1.5)
    alpha_c, err, method, since = lpc._locate(s, "positional", 1.0, 2.0)
    assert abs(alpha_c - 1.6) < 1e-3 and since == "positional" and method.startswith("Brent's root")


def test_a_lower_point_whose_solve_fails_at_the_birth_is_not_taken_as_fallen():
    from attnphase.numerics.phase.brackets import BranchLost

    s = _Points(lambda a: 0.0, birth=1.5, positional_end=1.2)
    assert lpc._fallen(s, "positional", 1.5) and not lpc._fallen(s, "positional", 1.1)

    def lost(branch, alpha):
        raise BranchLost(f"the {branch} point was lost at alpha = {alpha}")

    s.point = lost
    assert lpc._fallen(s, "positional", 1.5) is False


def test_a_semantic_point_below_its_floor_past_its_birth_is_the_agnostic_one_and_alpha_c_the_birth():
    """lam = 0.002, omega = 0.35: the semantic branch is born at 0.8388 and at the grid alpha 0.8909 its point has
    |th0| = 0.019, below the floor: the lowest point there was unknown ("solver failure") and alpha_c not located.
    Such a point is the agnostic one at the rule's resolution (past the birth; before it, below the floor, it is
    no evidence of anything), and the change agnostic -> semantic above it is the birth, not a root at 0.8909."""
    b = boundaries(L3, (1.0, 2.0), BIRTH)
    s = grid_points.GridPoints(L3, b, CFG, lpc.model_rule(L3, CFG))
    on = solved(L3, 1.0, "semantic")
    low = replace(on, overlaps=replace(on.overlaps, th0=0.01))
    assert s._beside_agnostic("semantic", on) == ""  # on the branch
    assert s._beside_agnostic("semantic", replace(low, alpha=0.2)) == ""  # below the birth: past the branch's end
    assert s._classify("semantic", low) and 1.0 in s.absent["semantic"]
    assert s.absent["semantic"][1.0].startswith("converged next to the agnostic point (|th0| = 0.01, below the "
                                                "branch's floor 0.02, 0.7 from its bifurcation at 0.3)")
    # Delta e_t = 0 at the grid alpha 1 (the semantic point is the agnostic one there), -1e-4 at 2: the birth
    p = _Points(lambda a: 0.0 if a == 1.0 else -1e-4 * (a - 1.0), birth=0.6)
    p.absent["semantic"][1.0] = "converged next to the agnostic point"
    alpha_c, err, method, since = lpc._locate(p, "agnostic", 1.0, 2.0)
    assert (alpha_c, err, since) == (0.6, 2e-3, "agnostic")
    assert "where its point is the agnostic one (converged next to the agnostic point)" in method


def test_a_root_below_the_semantic_birth_is_where_the_lower_point_gives_way_to_the_agnostic_one():
    """A = [[0.3, 0.7], [0.7, 0.3]], omega = 0.1: the positional point, lowest at 0.364, gives way to the agnostic
    one at 0.383 and the semantic branch is born from it at 0.456; Brent's root of e_t(semantic~) - e_t(positional)
    was that 0.383 (the semantic point the agnostic one there), printed as alpha_c +- nan.  Here: positional lowest
    at 1, above the agnostic point from 1.2 on, the semantic branch born at 1.5: alpha_c is the birth, from A."""

    class Crossing(_Points):
        def point(self, branch: str, alpha: float):
            if branch == "semantic" and alpha < 1.5:  # past its end: its point is the agnostic one
                branch = "agnostic"
            e_t = {"semantic": -1e-4 * (alpha - 1.5), "positional": 1e-4 * (alpha - 1.2), "agnostic": 0.0}[branch]
            return SimpleNamespace(observables=SimpleNamespace(e_t=e_t), status=SimpleNamespace(converged=True),
                                   branch=branch)

    s = Crossing(lambda a: 0.0, birth=1.5)
    alpha_c, err, method, since = lpc._locate(s, "positional", 1.0, 2.0)
    assert (alpha_c, err, since) == (1.5, 2e-3, "agnostic")
    assert method.startswith("the positional point, lowest at the grid alpha 1, gives way to the agnostic one at 1.2")
    assert "from the agnostic point: birth of the semantic branch" in method


@pytest.mark.heavy
def test_the_second_a_at_omega_0_1_has_alpha_c_at_the_semantic_birth():
    # A = [[0.3, 0.7], [0.8, 0.2]], omega = 0.1: no positional branch on the sweep's grid (mu <= 0.854); at 0.3636
    # the positional point is decided only from the agnostic point; alpha_c is the semantic birth (0.4463 +- 6e-4)
    b = phase_boundaries(ModelParams(A=((0.3, 0.7), (0.8, 0.2)), omega=0.1), None, config=SolverConfig())
    assert abs(b.alpha_c - b.semantic_end) < 1e-12 and 0.44 < b.alpha_c < 0.45 and 0 < b.alpha_c_err < 2e-3, b.notes
    assert b.alpha_c_from == "agnostic" and not any("not located" in n for n in b.notes), b.notes


class _Jumping(_Points):
    """The semantic solves warm from the nearest known point of the label: below the grid alpha 1 a small-|th0| point
    on the agnostic one's e_t (+1e-8, the rule's own point beside it), at 2 the branch proper, e_t ``upper(alpha)``;
    Brent's method on Delta e_t converges to where the warm starts switch between them (1.5)."""

    def __init__(self, upper, birth: float):
        super().__init__(lambda a: 0.0, birth)
        self.upper, self.params, self.rule = upper, None, None
        self.on["semantic"] = {1.0: self.make(1.0, 0.05, 1e-8), 2.0: self.make(2.0, 0.5, upper(2.0))}

    @staticmethod
    def make(alpha: float, th0: float, e_t: float):
        return SimpleNamespace(alpha=alpha, overlaps=SimpleNamespace(th0=th0), observables=SimpleNamespace(e_t=e_t),
                               status=SimpleNamespace(converged=True), branch="semantic")

    def point(self, branch: str, alpha: float):
        on = self.on["semantic"]
        if branch != "semantic":
            return super().point(branch, alpha)
        if alpha not in on:
            near = on[min(on, key=lambda a: abs(a - alpha))]
            on[alpha] = self.make(alpha, near.overlaps.th0, 1e-8 if near.overlaps.th0 < 0.1 else self.upper(alpha))
        return on[alpha]


def _followed(monkeypatch, s: _Jumping, bottom: float):
    """follow_down stood in for: the upper branch on a tenth's steps from ``bottom`` to the point above the jump."""
    seen = {}

    def follow_down(params, branch, top, lower, min_step, cfg, rule):
        seen.update(top=top.alpha, lower=lower)
        n = int(round((top.alpha - bottom) / 0.1))
        return [s.make(bottom + 0.1 * i, 0.5, s.upper(bottom + 0.1 * i)) for i in range(n)] + [top]

    monkeypatch.setattr(lpc, "follow_down", follow_down)
    monkeypatch.setattr(lpc, "coarse_alpha_c_error", lambda *a: 1e-3)
    return seen


def test_a_root_of_delta_e_t_at_a_jump_between_two_points_is_located_on_the_upper_branch(monkeypatch):
    # sigma = 0.8, omega = 0.2: Brent's root 0.6818 +- nan was where the warm starts switched from a point of |th0|
    # 0.048 next to the agnostic one to the semantic branch (|th0| 0.54). Here the branch crosses the agnostic
    # point at 1.2, where the solves between the grid alphas reach the other point: followed down from the jump,
    # the root is located on it
    s = _Jumping(lambda a: -1e-4 * (a - 1.2), birth=0.6)
    seen = _followed(monkeypatch, s, bottom=1.0)
    alpha_c, err, method, since = lpc._locate(s, "agnostic", 1.0, 2.0)
    assert 1.2 < seen["top"] < 2.0 and seen["lower"] == 0.6  # from above the jump down to the birth below
    assert abs(alpha_c - 1.2) < 1e-3 and err == 1e-3 and since == "agnostic"
    assert method.startswith("the semantic solves beside the root ")
    assert "of Delta e_t between the grid alphas 1 and 2 reached two points of the label (|th0| 0.05 at" in method
    assert "a jump, not a crossing" in method and "; on it Brent's root of Delta e_t" in method
    assert all(p.overlaps.th0 == 0.5 for a, p in s.on["semantic"].items() if a >= 1.0)  # the other point's dropped


@pytest.mark.parametrize("birth, located", [(0.9, True), (0.6, False)])
def test_an_upper_branch_below_the_agnostic_point_to_where_it_stops_is_born_at_the_birth_near_it(monkeypatch, birth,
                                                                                                  located):
    # the branch below the agnostic point everywhere it was followed (down to 1.0, its solves failing below): the
    # birth 0.1 below (within a quarter of the bracket) is alpha_c with the gap in its error; 0.4 below is not located
    s = _Jumping(lambda a: -1e-4, birth=birth)
    _followed(monkeypatch, s, bottom=1.0)
    if not located:
        with pytest.raises(lpc.BranchLost, match="below the agnostic point all the way .* the change lies lower"):
            lpc._locate(s, "agnostic", 1.0, 2.0)
        return
    alpha_c, err, method, since = lpc._locate(s, "agnostic", 1.0, 2.0)
    assert alpha_c == 0.9 and err == pytest.approx(math.hypot(2e-3, 0.1)) and since == "agnostic"
    assert method.startswith("birth of the semantic branch from the agnostic point (bifurcation, lambda = 1, by "
                             "eigenvalue): the semantic solves beside the root ")
    assert "0.1 above the birth, no solve between converging" in method


@pytest.mark.heavy
def test_sigma_0_8_at_omega_0_2_has_alpha_c_at_the_semantic_birth_not_at_a_jump():
    # the semantic sweep's warm step down to the grid point 0.6273 reached a point of |th0| 0.04 next to the agnostic
    # one (the agnostic point nearly marginal in theta, lambda 1.03-1.06, where the rule's jumps make a point of their
    # own), and Brent's root of Delta e_t was the switch of the warm starts to the branch proper, 0.6818 +- nan, with
    # alpha_l (0.601) below it.  The birth lies below 0.6273, so the sweep solves that point again with the full
    # budget: the branch proper (theta 0.46), below the agnostic point; alpha_c is the birth
    b = phase_boundaries(ModelParams(sigma=0.8, omega=0.2), None, config=SolverConfig())
    assert abs(b.alpha_c - b.semantic_end) < 1e-12 and 0.56 < b.alpha_c < 0.58, b.notes
    assert 0.0013 < b.alpha_c_err < 0.05 and b.alpha_c_from == "agnostic", b.notes
    assert b.alpha_c_method.startswith("birth of the semantic branch from the agnostic point")
    assert b.alpha_c < b.alpha_l < 0.7 and b.alpha_l_branch == "semantic", b.notes
    (first,) = [p for p in b.semantic.points if abs(p.alpha - 0.6273) < 1e-4]
    assert first.branch == "semantic" and abs(first.overlaps.th0) > 0.4


def test_alpha_c_located_below_the_grid_alphas_of_the_change_says_so(monkeypatch):
    # sigma = 0.8, omega = 0.2 (before its sweep solved the point at 0.6273 again): the change of the lowest point
    # between the grid alphas 0.6273 and 0.8909 was located at the birth 0.570, below them; the note said "between"
    monkeypatch.setattr(lpc, "_locate", lambda s, l0, a0, a1: (0.15, 1e-3, "the birth", "agnostic"))
    b = lpc.lowest_point_alpha_c(L3, boundaries(L3, (1.0, 2.0), BIRTH), CFG, GRID)
    assert b.alpha_c == 0.15
    assert any("to the semantic point below the grid alphas 0.2 and 1 where the grid's lowest points change" in n
               for n in b.notes), b.notes


@pytest.mark.parametrize("birth, failed_too, expected", [(0.6, (), "root"), (1.199, (), "birth"),
                                                          (0.6, ("positional",), None)])
def test_a_semantic_failure_inside_the_bracket_is_passed_by_following_the_branch_down(monkeypatch, birth, failed_too,
                                                                                     expected):
    # sigma = 0.7, omega = 0.2: the semantic solve at the grid alpha 0.6273 does not converge (residual 2.2e-4),
    # between the agnostic point lowest at 0.3636 and the semantic one at 0.8909, and alpha_c was "not located".
    # Followed down from 0.8909 the branch crosses the agnostic point at 0.5712 +- 0.0086, within 2 errors of its
    # birth at 0.5675: alpha_c is the birth.  Here: the branch crosses at 1.2; born at 0.6 the root stands, born at
    # 1.199 it is the birth; where the positional solve failed there too the change stays unlocated
    s = _Jumping(lambda a: -1e-4 * (a - 1.2), birth=birth)
    s.failed = {"semantic": {1.5: "not converged"}, "positional": {1.5: "not converged"} if failed_too else {}}
    _followed(monkeypatch, s, bottom=1.0)
    out = lpc._past_failures(s, "agnostic", 1.0, 2.0, [1.5])
    if expected is None:
        assert out is None
        return
    alpha_c, err, method, since = out
    assert since == "agnostic" and "the semantic solves failed at alpha = 1.5 inside the bracket [1, 2]; its point " \
                                   "at 2 followed down by warm steps to alpha = 1" in method
    if expected == "root":
        assert abs(alpha_c - 1.2) < 1e-3 and err == 1e-3 and "; on it Brent's root of Delta e_t" in method
    else:
        assert (alpha_c, err) == (1.199, 2e-3) and method.startswith("birth of the semantic branch")
        assert "lies within 2 of its standard errors of the birth" in method


@pytest.mark.heavy
def test_sigma_0_7_at_omega_0_2_has_alpha_c_at_the_semantic_birth():
    # the semantic sweep's warm step to the grid alpha 0.6273 failed (residual 2.2e-4) between the agnostic point at
    # 0.3636 and the semantic one at 0.8909, the birth located below it at 0.5675; solved again with the full budget
    # the point is on the branch (theta 0.39), and alpha_c is the birth
    b = phase_boundaries(ModelParams(sigma=0.7, omega=0.2), None, config=SolverConfig())
    assert abs(b.alpha_c - b.semantic_end) < 1e-12 and 0.56 < b.alpha_c < 0.575 and b.alpha_c_err < 2e-3, b.notes
    assert b.alpha_c_method.startswith("birth of the semantic branch from the agnostic point")
    assert not any(n.startswith("solver failure") for n in b.notes), b.notes
    assert b.alpha_c < b.alpha_l < 0.75, b.notes


def test_alpha_l_whose_root_search_loses_the_branch_is_the_interval_its_solves_allow():
    # sigma = 0.8, omega = 0.05: Brent's root of eps_g - eps_lin between alpha_c = 0.505 and 0.6273 lost the semantic
    # point at 0.5597 (its solves stall), and alpha_l was NaN; the converged semantic points at 0.5543 (above eps_lin)
    # and 0.5652 (below) bound it: 0.5597 +- 0.0054.  Points past the bracket's top or below alpha_c do not count
    from attnphase.numerics.phase.boundary_refinement import alpha_l_interval

    def pt(alpha, gap):
        return SimpleNamespace(alpha=alpha, observables=SimpleNamespace(eps_g=0.01 + gap))

    on = [pt(0.40, -1.0), pt(0.52, 2e-4), pt(0.5543, 1e-5), pt(0.5652, -2e-5), pt(0.6273, -1e-3), pt(0.9, -2e-3)]
    lost = lpc.BranchLost("the semantic point was lost at alpha = 0.55972")
    alpha_l, err, note = alpha_l_interval(on, 0.01, 0.505, 0.6273, lost)
    assert (alpha_l, err) == pytest.approx((0.55975, 0.00545))
    assert note.startswith("alpha_l: the interval [0.5543, 0.5652] between the semantic points solved last on either "
                           "side of eps_lin (the root search between them lost the branch: the semantic point was lost")
    # no converged point past alpha_c above eps_lin, none at all: the interval runs from alpha_c (eps_g above eps_lin)
    assert alpha_l_interval([pt(0.6273, -1e-3)], 0.01, 0.505, 0.6273, lost)[:2] == pytest.approx((0.56615, 0.06115))
    assert alpha_l_interval([], 0.01, 0.505, 0.6273, lost)[:2] == pytest.approx((0.56615, 0.06115))
