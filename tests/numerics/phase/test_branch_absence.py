"""A sweep that finds no point of a branch says whether the branch is absent (its starts fell to an agnostic point
of eigenvalue below 1 in its direction) or the solver failed; the phase diagram's notes carry that (L = 3, P = I: no
positional branch, docs/general.md).  alpha_c where the branches never cross: tests/numerics/phase/test_lowest_point_change.py."""

from __future__ import annotations

from dataclasses import replace

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.absence import absence_note, finer_rule_note, landing_note, projected_agnostic_eigenvalue
from attnphase.numerics.phase.branch_end import POSITIONAL_M_FLOOR
from attnphase.numerics.se import state_evolution as se
from attnphase.numerics.se.se_map import model_rule
from attnphase.theory.params import ModelParams

CFG = SolverConfig(quadrature="sobol8:4", error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)
L3 = ModelParams(L=3, omega=0.3)


def agnostic(params: ModelParams, alpha: float):
    fp = replace(se.solve(params, alpha, "agnostic", config=CFG), requested="positional")
    assert fp.status.converged and fp.branch == "agnostic"
    return fp


def test_starts_that_fall_to_a_stable_agnostic_point_are_the_branch_absent():
    points = [agnostic(L3, a) for a in (1.0, 2.0)]
    note = absence_note(points, "positional", model_rule(L3, CFG), CFG)
    assert note.startswith("positional branch absent at every alpha of the grid solved (1, 2)")
    mu = float(note.split("mu <= ")[1].split(")")[0])
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


def test_one_solve_that_fell_to_the_agnostic_point_says_absence_or_solver_failure_by_the_eigenvalue():
    is_absent, absent = landing_note(agnostic(L3, 2.0), "positional", model_rule(L3, CFG), CFG)
    assert is_absent and absent.startswith("absent: the agnostic point's eigenvalue in m is below 1 here (mu = ")
    assert float(absent.split("mu = ")[1].split(")")[0]) < 1
    params = ModelParams(omega=0.3)  # L = 2, alpha = 1: the positional branch leaves the agnostic point (mu > 1)
    is_absent, failure = landing_note(agnostic(params, 1.0), "positional", model_rule(params, CFG), CFG)
    assert not is_absent and failure.startswith("solver failure, not absence: the agnostic point's eigenvalue in m "
                                                "is mu = ")
    assert float(failure.split("mu = ")[1].split(" ")[0]) >= 1
    assert landing_note(se.solve(L3, 2.0, "semantic", config=CFG), "positional", model_rule(L3, CFG), CFG) == (
        False, "")


def test_a_point_labelled_on_the_branch_but_below_its_floor_says_which_order_parameter_is_too_small():
    # a converged positional-labelled point whose |m| lies under the branch's floor is not on the branch: the note
    # names |m| and the floor instead of saying "converged to the positional point" as if it were
    params = ModelParams(omega=0.3)
    fp = se.solve(params, 2.0, "positional", config=CFG)
    assert fp.status.converged and fp.branch == "positional"
    small = replace(fp, overlaps=replace(fp.overlaps, m=fp.overlaps.m * 1e-4))
    note = absence_note([small], "positional", model_rule(params, CFG), CFG)
    assert "solver failure at alpha = 2 (converged to the positional point, below the branch's floor: |m| = " in note
    size = float(note.split("|m| = ")[1].split(" ")[0])
    assert 0 < size < 1e-3 and note.endswith(f"< {POSITIONAL_M_FLOOR:g})")


def test_a_start_whose_iterates_ran_away_without_a_ridge_is_no_fixed_point_not_solver_failure():
    # lam = 0, omega = 0.3, alpha = 0.5: the SE map grows q by orders of magnitude per step from the positional start
    # (its best point is the start itself, q ~ 0.1); q where the iterates went farthest tells the runaway
    params = ModelParams(omega=0.3, lam=0.0)
    ran = se.solve(params, 0.5, "positional", config=CFG)
    assert not ran.status.converged and ran.overlaps.q < 1 and ran.status.farthest_q > 1e6
    good = agnostic(L3, 2.0)
    failed = replace(good, alpha=1.5, status=replace(good.status, converged=False, residual=3e-3))
    note = absence_note([ran, failed], "positional", model_rule(params, CFG), CFG)
    assert note.startswith("no converged positional point in range; no fixed point at alpha = 0.5 (lam = 0: the "
                           "iterates' q ran away, up to ")
    assert note.endswith("solver failure at alpha = 1.5 (not converged, residual 3.0e-03)")
    only = absence_note([ran], "positional", model_rule(params, CFG), CFG)
    assert only.startswith("no positional fixed point at any alpha of the grid; no fixed point at alpha = 0.5")
    # with a ridge the same start is a fixed point or a plain failure, never a runaway
    ridge = se.solve(params.replace(lam=0.01), 0.5, "positional", config=CFG)
    assert ridge.status.farthest_q < 1e3


def test_a_point_below_its_floor_next_to_a_stable_agnostic_point_is_the_branch_absent():
    # L = 3, P = I (no positional branch: mu < 1 at the agnostic point): a start that converged to a point labelled
    # positional with |m| = 2.5e-4 (sigma = 0.8 at L = 2 met one) was "solver failure"; it is the agnostic point
    # within the rule's noise, where no positional branch leaves it: absent
    fp = agnostic(L3, 2.0)
    small = replace(fp, branch="positional", overlaps=replace(fp.overlaps, m=fp.overlaps.m + 2.5e-4))
    note = absence_note([small], "positional", model_rule(L3, CFG), CFG)
    assert note.startswith("no positional fixed point at any alpha of the grid; absent at alpha = 2 (the start "
                           "converged next to the agnostic point, |m| below the branch's floor, and mu <= ")
    assert "solver failure" not in note
    mu = float(note.split("mu <= ")[1].split(" ")[0])
    assert mu < 1


def test_a_diagram_with_no_semantic_point_says_why_alpha_l_is_missing():
    """``phase-diagram --lam 0.5 --omega 0.3``: the ridge holds every start at the agnostic point, so there is no
    semantic eps_g to meet eps_lin; alpha_l is NaN and the notes say why, beside each branch's absence."""
    from attnphase.numerics.phase.boundaries import phase_boundaries
    from attnphase.numerics.phase.scalar_boundaries import ALPHA_L_NO_SEMANTIC

    b = phase_boundaries(ModelParams(omega=0.3, lam=0.5), [1.0, 2.0], config=CFG)
    assert b.alpha_l != b.alpha_l and b.alpha_c != b.alpha_c
    assert ALPHA_L_NO_SEMANTIC in b.notes
    assert any(n.startswith("semantic branch absent at every alpha of the grid solved (1, 2)") for n in b.notes)


SIMPLEX_L3 = ModelParams(L=3, omega=0.3, P=((1.0, -1.0, 0.0), (-1.0, 1.0, 0.0), (0.0, 0.0, 0.0)))


def test_a_point_beside_a_stable_agnostic_point_that_a_finer_rule_loses_is_the_rules_not_the_branch():
    # sobol8:4 (the fast tier's rule) has a positional fixed point at L = 3, simplex P, alpha = 2, |m| ~ 0.1, its blocks
    # reproducing it; mu < 1 at the agnostic point beside it, and on sobol10:4 the solve from it falls to that point
    cfg = replace(CFG, end_quadrature="sobol10:4")
    fp = se.solve(SIMPLEX_L3, 2.0, "positional", config=cfg)
    assert fp.status.converged and fp.branch == "positional" and float(abs(fp.overlaps.m).max()) > POSITIONAL_M_FLOOR
    is_absent, note = finer_rule_note(fp, "positional", model_rule(SIMPLEX_L3, cfg), cfg)
    assert is_absent and note.startswith("absent: the solve converged to |m| = ")
    assert float(note.split("mu = ")[1].split(" ")[0]) < 1
    assert "and on sobol10:4, a finer rule, the solve from that point reaches the agnostic point" in note
    # without a finer rule nothing is shown
    assert finer_rule_note(fp, "positional", model_rule(SIMPLEX_L3, cfg), replace(cfg, end_quadrature="sobol8:4")) == (
        False, "")
    # a sweep's row there is judged alike: not on the branch, its reason the note (sweep --precision fast, as solve)
    from attnphase.numerics.commands.row_reasons import row_reasons
    from attnphase.numerics.phase.absence import finer_rule_rows
    from attnphase.numerics.phase.continuation import BranchSweep

    judged = finer_rule_rows(BranchSweep("positional", [fp]), cfg)
    assert judged.rule_points == (note,) and judged.on_branch() == []
    assert row_reasons(judged, "positional") == [f"no positional fixed point here: {note}"]


def test_a_point_beside_an_agnostic_point_unstable_in_its_direction_is_not_re_solved():
    # L = 2, omega = 0.3, alpha = 2: mu > 1 at the agnostic point, the positional branch leaves it
    params = ModelParams(omega=0.3)
    fp = se.solve(params, 2.0, "positional", config=CFG)
    assert fp.status.converged and fp.branch == "positional"
    assert projected_agnostic_eigenvalue(fp, "positional", model_rule(params, CFG), CFG) > 1
    assert finer_rule_note(fp, "positional", model_rule(params, CFG), CFG) == (False, "")
    from attnphase.numerics.phase.absence import finer_rule_rows
    from attnphase.numerics.phase.continuation import BranchSweep

    sw = BranchSweep("positional", [fp])
    assert finer_rule_rows(sw, CFG) is sw and sw.on_branch() == [fp]  # a sweep's row there stays on the branch


def test_a_sweep_s_rows_are_judged_from_each_end_inwards_each_once(monkeypatch):
    """``finer_rule_rows`` judges the rows on the branch from the first inwards and from the last inwards, each side
    stopping at the first row the check keeps, and never judges a row twice (one row on the branch: one judgement)."""
    from types import SimpleNamespace

    import attnphase.numerics.phase.absence as absence
    from attnphase.numerics.phase.continuation import BranchSweep

    rule = {0.5: False, 1.0: False, 1.5: True, 2.0: False, 2.5: True, 3.0: True}  # the finer rule loses 2.5 and 3
    judged = []

    def note(fp, branch, rule_, config):
        judged.append(fp.alpha)
        return (True, f"absent at {fp.alpha:g}") if rule[fp.alpha] else (False, "")

    monkeypatch.setattr(absence, "finer_rule_note", note)
    monkeypatch.setattr(absence, "model_rule", lambda params, config: None)
    monkeypatch.setattr(absence, "on_branch", lambda fp, branch: fp.alpha != 0.5)
    points = [SimpleNamespace(alpha=a, params=None) for a in rule]
    out = absence.finer_rule_rows(BranchSweep("positional", points), CFG)
    assert judged == [1.0, 3.0, 2.5, 2.0]  # 1.5 lies inside, between two kept rows: not judged
    assert out.rule_points == ("", "", "", "", "absent at 2.5", "absent at 3")
    judged.clear()
    absence.finer_rule_rows(BranchSweep("positional", points[:2]), CFG)
    assert judged == [1.0]


def test_a_size_in_a_message_says_which_norm_it_is() -> None:
    """``solve --alpha 2 --omega 0 --branch positional --precision fast`` printed m 0.0432 and a reason with |m| =
    0.0612: the norm over the tokens, (m, -m), which the message did not say."""
    from types import SimpleNamespace

    import numpy as np

    from attnphase.numerics.phase.branch_end import size_text

    fp = SimpleNamespace(overlaps=SimpleNamespace(m=np.array([0.0432, -0.0432]), th0=-0.25))
    assert size_text(fp, "m") == "|m| = 0.0611 (norm of m_1..m_2)"
    assert size_text(fp, "th0", label="theta") == "|theta| = 0.25"
    fp2 = SimpleNamespace(overlaps=SimpleNamespace(th0=np.array([[0.3, 0.0], [0.0, 0.4]])))
    assert size_text(fp2, "th0", ".2g") == "|th0| = 0.5 (Frobenius norm)"
    fp3 = SimpleNamespace(overlaps=SimpleNamespace(m=np.array([[0.3, 0.0], [0.0, 0.4]])))  # rank 2: L x r
    assert size_text(fp3, "m", ".2g") == "|m| = 0.5 (Frobenius norm)"
