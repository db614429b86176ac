"""One public solve and one FixedPoint for every rank: the choice of path, the requests each path refuses, and
the record and invariants of a rank-1 point read as the r = r* = 1 case of the matrix ones."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.quadrature.rules import make_rule
from attnphase.numerics.se.overlaps import Overlaps
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams


def test_a_rank_1_solve_refuses_the_matrix_requests_before_any_work() -> None:
    p = ModelParams(omega=0.3)
    with pytest.raises(ValueError, match="branch must be one of"):
        solve(p, 2.0, "mixed")
    with pytest.raises(ValueError, match="start 'embedded' needs rank r >= 2"):
        solve(p, 2.0, "semantic", start="embedded")


def test_a_solve_refuses_what_it_would_ignore_or_misread_before_any_work() -> None:
    """From a user's script: correlated tokens at rank 2 were ignored (the numbers of C = diag, no word), the torch
    backend at rank 2 ran numba's map, a start 'foo' at rank 1 was said to need rank 2, and a str config or a dict of
    parameters ended in an AttributeError."""
    with pytest.raises(ValueError, match="--token-cov: the rank-r state evolution implements independent tokens"):
        solve(ModelParams(r=2, C=((0.25, 0.075), (0.075, 0.25))), 2.0, "semantic")
    with pytest.raises(ValueError, match="--backend torch: the rank-r state evolution runs its proximal map on"):
        solve(ModelParams(r=2), 2.0, "mixed", config=SolverConfig(backend="torch"))
    with pytest.raises(ValueError, match="start must be 'embedded' or 'cold' \\(or None\\), got 'foo'"):
        solve(ModelParams(), 2.0, start="foo")
    with pytest.raises(TypeError, match="config must be a SolverConfig or None, got str"):
        solve(ModelParams(), 2.0, config="fast")
    with pytest.raises(TypeError, match="params must be ModelParams, got dict"):
        solve({"omega": 0.3}, 2.0)


def test_fixed_point_error_bars_the_invariants_at_rank_2_and_nothing_for_a_point_that_did_not_converge() -> None:
    """fixed_point_error(fp, cfg) of a rank-2 point raised KeyError 'q' (it asked the scalar keys of every point), and
    of a point that did not converge it gave finite bars where point_errors gives NaN."""
    from attnphase.numerics import fixed_point_error
    from attnphase.numerics.errors.replicates import error_keys

    cfg = SolverConfig(quadrature="sobol7:4")
    fp = solve(ModelParams(r=2), 2.0, "semantic", config=cfg)
    assert fp.status.converged
    err = fixed_point_error(fp, cfg)
    assert tuple(err.std) == error_keys(fp) and "q0_eigenvalues" in err.std and err.converged >= 2
    assert len(err.std["q0_eigenvalues"]) == 2 and np.all(np.isfinite(err.std["q0_eigenvalues"]))
    failed = fp.with_status(converged=False)
    none = fixed_point_error(failed, cfg)
    assert none.converged == 0 and all(np.all(np.isnan(v)) for v in none.std.values())


def test_alpha_is_one_number_of_any_numeric_type() -> None:
    """solve(ModelParams(), np.array(2.0)) was refused as "alpha must be a finite number > 0, got 2.0"."""
    p = ModelParams(omega=0.3)
    cfg = SolverConfig(quadrature="sobol6:2", error_bars=False)
    fp = solve(p, np.array(2.0), "semantic", config=cfg)
    assert fp.alpha == 2.0 and fp.record == solve(p, 2.0, "semantic", config=cfg).record
    for bad in (np.array([2.0]), True, "2", None, np.array(-1.0)):
        with pytest.raises(ValueError, match="alpha must be a finite number > 0"):
            solve(p, bad, "semantic", config=cfg)


def test_a_matrix_solve_refuses_what_only_the_scalar_path_has_before_any_work() -> None:
    p = ModelParams(omega=0.3, r=2)
    with pytest.raises(ValueError, match="rule= is for r = r\\* = 1"):
        solve(p, 2.0, "semantic", rule=make_rule(2, "sobol6"))
    with pytest.raises(ValueError, match="not the local one"):
        solve(p, 2.0, "semantic", config=SolverConfig(prox="local"))
    with pytest.raises(ValueError, match="start must be"):
        solve(p, 2.0, "semantic", start="warm")
    with pytest.raises(ValueError, match="branch must be one of"):
        solve(p, 2.0, "spinodal")


def test_a_rank_1_point_has_the_invariants_of_its_1_x_1_matrix_overlaps() -> None:
    fp = solve(ModelParams(omega=0.3), 2.0, "semantic", config=SolverConfig(quadrature="sobol9"))
    assert fp.status.converged and not fp.is_matrix
    ov = fp.overlaps
    inv = fp.invariants
    assert inv["q0_eigenvalues"] == pytest.approx([ov.q0], rel=1e-14)
    assert inv["V0_eigenvalues"] == pytest.approx([ov.V0], rel=1e-14)
    assert inv["th0_singular_values"] == pytest.approx([abs(ov.th0)], rel=1e-14)
    assert inv["m_norms"] == pytest.approx(list(np.abs(ov.m)), abs=1e-300)
    rec = fp.record  # the rank-1 record keeps its scalar keys
    assert rec["q"] == ov.q0 and rec["theta"] == ov.th0 and rec["converged"] is True
    assert "q0_eigenvalues" not in rec


def test_a_matrix_point_records_its_invariants_and_ranks() -> None:
    from attnphase.numerics.se import matrix_solve as ms

    p = ModelParams(omega=0.3, r=2)
    cfg = ms.matrix_config(p, 2.0, "semantic", SolverConfig(quadrature="sobol6", max_iter=3), "cold")
    ov = Overlaps(np.diag([1.0, 0.1]), np.diag([1.0, 1.0]), np.zeros((2, 2)), np.array([[0.5], [0.0]]))
    fp = ms.solve_matrix(p, 2.0, "semantic", cfg, ov, warm=True, staged=False)
    rec = fp.record
    assert fp.is_matrix and (rec["r"], rec["r_star"]) == (2, 1)
    assert {k: rec[k] for k in fp.invariants} == fp.invariants
    assert len(rec["q0_eigenvalues"]) == 2 and rec["q0_eigenvalues"][0] >= rec["q0_eigenvalues"][1]
    assert rec["iterations"] == fp.status.iterations >= 1 and "e_t_direct" in rec


def test_the_library_tells_a_point_below_the_branchs_floor_as_the_command_does():
    """solve(omega = 0.3, alpha = 0.70, semantic) converges with the semantic label at |theta| = 0.004, the rule's
    noise beside the agnostic point, which `attnphase solve` rejects (exit 1); the library's answer is on_branch,
    and the point's bars (fixed_point_error) say that no block reproduces it."""
    from attnphase.numerics import SolverConfig, fixed_point_error, on_branch, solve
    from attnphase.theory import ModelParams

    fp = solve(ModelParams(omega=0.3), 0.70, "semantic")
    assert fp.status.converged and fp.branch == "semantic" and abs(fp.overlaps.th0) < 0.02
    assert not on_branch(fp, "semantic")
    assert fixed_point_error(fp, SolverConfig()).converged < 2
    assert on_branch(solve(ModelParams(omega=0.3), 2.0, "semantic"), "semantic")


def test_fixed_point_error_refuses_a_negative_count_of_rules() -> None:
    """fixed_point_error(fp, config, n_rules=-2) returned None, as for a point without error bars."""
    from attnphase.numerics import fixed_point_error

    cfg = SolverConfig(quadrature="sobol6:2", error_bars=False)
    fp = solve(ModelParams(omega=0.3), 2.0, "semantic", config=cfg)
    for bad in (-2, 1.5, True):
        with pytest.raises(ValueError, match="n_rules must be an integer >= 0"):
            fixed_point_error(fp, cfg, n_rules=bad)
