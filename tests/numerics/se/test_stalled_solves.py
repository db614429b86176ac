"""Cold solves that stall: at the rule's jump scale, or creeping to the symmetric subspace.

All at L = 3 on small rules (seconds each): suite case (a) (docs/validation.md: non-symmetric A,
simplex P) and the L = 3 defaults (P = I).  The criteria: docs/method.md section 4, the fixed-point solver.
"""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.se import stalls
from attnphase.numerics.se import state_evolution as se
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.se_map import SEMap, FixedAlpha, model_rule
from attnphase.theory.params import ModelParams

FORWARD_A3 = ((0.6, 0.3, 0.1), (0.1, 0.6, 0.3), (0.3, 0.1, 0.6))
SIMPLEX_P3 = ((1.0, -0.5, -0.5), (-0.5, 1.0, -0.5), (-0.5, -0.5, 1.0))
CASE_A = ModelParams(L=3, A=FORWARD_A3, P=SIMPLEX_P3, omega=0.3)


def config(rule: str) -> SolverConfig:
    return SolverConfig(quadrature=rule, error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)


def exact_evaluation(fp: se.FixedPoint, cfg: SolverConfig):
    """The SE map at the point, with a full proximal search on the solve's rule: (map, evaluation)."""
    smap = SEMap(fp.params, FixedAlpha(fp.alpha), model_rule(fp.params, cfg), cfg)
    return smap, smap.evaluate(fp.overlaps.to_vector(), exact=True)


def test_l3_positional_solve_converges_to_a_true_fixed_point_on_a_small_rule():
    cfg = config("sobol7:2")
    fp = se.solve(CASE_A, 0.5, "positional", config=cfg)
    assert fp.status.converged and fp.branch == "positional" and fp.status.message == "converged"
    _, ev = exact_evaluation(fp, cfg)
    assert ev.residual <= cfg.tol
    assert np.linalg.norm(fp.overlaps.m) > 0.05


def test_a_stall_on_a_jump_of_the_map_is_accepted_at_the_jump_scale():
    # sobol6:2, alpha = 0.8: the iterates straddle a node's basin switch; the residual falls to 7.1e-5
    # on one side and is 4.6e-3 on the other, 1e-5 away (without the criterion: not converged)
    cfg = config("sobol6:2")
    fp = se.solve(CASE_A, 0.8, "positional", config=cfg)
    assert fp.status.converged and fp.branch == "positional"
    assert "jump scale" in fp.status.message
    assert cfg.tol < fp.status.residual <= fp.status.jump
    smap, ev = exact_evaluation(fp, cfg)
    assert ev.residual == pytest.approx(fp.status.residual, rel=1e-9)  # the reported residual is the map's
    # the jump is a property of the map at the point: measured again from a fresh map, it is the same
    jump, _ = stalls.jump_at(smap, ev)
    assert jump == pytest.approx(fp.status.jump, rel=1e-9) and jump >= ev.residual


def test_a_creep_to_the_agnostic_point_is_finished_there():
    # alpha = 0.3, sobol6:2: |m| decays by a few per cent per step and the solve stalls; finished on
    # m = 0 it is the agnostic fixed point, reported as such (requested positional)
    cfg = config("sobol6:2")
    fp = se.solve(CASE_A, 0.3, "positional", config=cfg)
    assert fp.status.converged and fp.branch == "agnostic" and fp.requested == "positional"
    assert "symmetric subspace" in fp.status.message
    _, ev = exact_evaluation(fp, cfg)
    assert ev.residual <= cfg.tol and np.all(fp.overlaps.m == 0)


def test_a_positional_path_broken_on_the_agnostic_branch_restarts_with_m():
    # L = 3, P = I: at alpha = 0.3 the positional start converges to the agnostic point (mu < 1 in m);
    # warm-starting alpha = 2 from it left the admissible region at the first step (Lam <= 0); now the
    # agnostic branch is followed to alpha = 2 and the positional start's m put on it
    cfg = config("sobol7:2")
    fp = se.solve(ModelParams(L=3, omega=0.3), 2.0, "positional", config=cfg)
    assert fp.status.converged, fp.status.message
    _, ev = exact_evaluation(fp, cfg)
    assert ev.residual <= cfg.tol


def test_shrinking_order_reads_the_order_parameter_of_the_branch():
    x = np.array([0.3, 100.0, 0.1, -0.05, -0.05, 0.0])
    fx = x.copy()
    fx[2:5] *= 0.99
    assert stalls.shrinking_order(x, fx, "positional", 3)
    assert not stalls.shrinking_order(x, fx, "semantic", 3)  # th0 = 0: nothing to shrink
    fx[2:5] = x[2:5] * 1.01
    assert not stalls.shrinking_order(x, fx, "positional", 3)


def test_a_budget_failure_at_l2_stays_a_failure():
    # a real failure (4 evaluations from the cold start) is neither at a jump nor a creep
    cfg = config("sobol8:2").replace(max_iter=4)
    fp = se.solve(ModelParams(omega=0.3), 1.0, "positional", config=cfg)
    assert not fp.status.converged and fp.status.message.startswith("not converged after 4")
    assert fp.status.iterations == 4


def test_an_order_parameter_within_its_error_bar_is_flagged(capsys):
    from types import SimpleNamespace

    from attnphase.numerics.commands.point_record import unresolved_order_warning

    def point(branch, m):
        return SimpleNamespace(branch=branch, record={"m": m, "theta": 0.0})

    def err(err_m, converged):
        return SimpleNamespace(std={"m": err_m, "theta": float("nan")}, converged=converged, rules=("a", "b", "c", "d"))

    unresolved_order_warning(point("positional", -1.9e-4), err(float("nan"), 1))  # L = 3, P = I, alpha = 1
    assert "not resolved from 0" in capsys.readouterr().err
    unresolved_order_warning(point("positional", 1e-3), err(6e-4, 4))
    assert "not resolved from 0" in capsys.readouterr().err
    unresolved_order_warning(point("positional", 0.26), err(1e-3, 4))
    unresolved_order_warning(point("agnostic", 0.0), err(float("nan"), 0))
    assert capsys.readouterr().err == ""


@pytest.mark.heavy
def test_a_cold_start_that_wanders_undamped_settles_damped():
    """L = 2 with P = I at alpha = 2: the positional branch ended at alpha = 1.39, the undamped iteration from the
    positional start wanders (residual 5.5e-2, |m| above the start's: no creep); the damped retry settles on the
    agnostic point, saying so and counting both solves.  A solve already damped that much is not retried."""
    params = ModelParams(omega=0.3, P=((1.0, 0.0), (0.0, 1.0)))
    fp = se.solve(params, 2.0, "positional", config=SolverConfig())
    assert fp.status.converged and fp.branch == "agnostic" and fp.requested == "positional"
    assert f"(damping {stalls.RETRY_DAMPING:g}: the undamped start stalled at residual" in fp.status.message
    failed = fp.with_status(converged=False)
    cfg = SolverConfig(damping=stalls.RETRY_DAMPING)
    assert stalls.damped_retry(failed, cfg, model_rule(params, cfg), se.solve) is failed


def test_a_residual_above_the_approximate_maps_limit_is_never_accepted_at_the_jump_scale():
    """rho0 = 1e-6, alpha = 2, omega = 0.3 on the default rule: the semantic start stalls at residual 0.44 next to a
    jump of 1.26 (V0 ~ 2300); accepting it reported q = 0.002 +- 0.046 as converged.  Above JUMP_ACCEPT_MAX the stall
    is judged on: it creeps to the symmetric subspace, and the agnostic point it finishes on is a fixed point to tol."""
    fp = se.solve(ModelParams(omega=0.3, rho0=1e-6), 2.0, "semantic", config=SolverConfig(error_bars=False))
    assert stalls.JUMP_ACCEPT_MAX < 0.44
    assert fp.status.converged and fp.status.residual <= 1e-10 and np.isnan(fp.status.jump)
    assert fp.branch == "agnostic" and "converged on the symmetric subspace" in fp.status.message
    assert fp.overlaps.q == pytest.approx(0.04726, rel=1e-3)
