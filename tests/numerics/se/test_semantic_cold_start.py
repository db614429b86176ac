"""A cold semantic solve near the branch's end reaches the branch the phase diagram continues to.

At omega = 0 (L = 2, r = 1) the phase diagram's semantic branch ends at alpha = 0.51 (bifurcation);
on the default rule the cold start at alpha = 0.58 falls to the agnostic point, and the solve
retries by a continuation from larger alpha (docs/method.md section 4).
"""

from __future__ import annotations

import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se import state_evolution as se
from attnphase.theory.params import ModelParams

OMEGA0 = ModelParams(omega=0.0)


def config(rule: str) -> SolverConfig:
    return SolverConfig(quadrature=rule, error_bars=False, alpha_c_quadrature=None, alpha_l_quadrature=None)


def test_cold_semantic_solve_near_the_end_finds_the_branch_not_the_agnostic_point(monkeypatch):
    cfg = config("sobol10:4")  # the default rule, where the cold start misses the branch
    fp = se.solve(OMEGA0, 0.58, "semantic", config=cfg)
    assert fp.status.converged and fp.branch == "semantic"
    assert "continuation from alpha = 0.725" in fp.status.message
    # the branch continued down from above: theta = 0.225 there (omega = 0 sweep), far from 0
    assert 0.15 < abs(fp.overlaps.th0) < 0.3
    # without the retry the same cold start ends on the agnostic point: the case the retry is for
    monkeypatch.setattr(se, "SEMANTIC_RETRY_TRIES", 0)
    bare = se.solve(OMEGA0, 0.58, "semantic", config=cfg)
    assert bare.branch == "agnostic"


def test_below_the_end_the_semantic_solve_still_reports_the_agnostic_point():
    fp = se.solve(OMEGA0, 0.3, "semantic", config=config("sobol9:4"))
    assert fp.status.converged and fp.branch == "agnostic" and fp.requested == "semantic"


@pytest.mark.parametrize("alpha", [2.0])
def test_a_cold_semantic_solve_that_reaches_the_branch_is_unchanged(alpha):
    fp = se.solve(OMEGA0, alpha, "semantic", config=config("sobol9:4"))
    assert fp.status.converged and fp.branch == "semantic" and fp.status.message == "converged"


@pytest.mark.heavy  # about 10 s: kept out of the default run's 10-minute budget
def test_a_continuation_that_falls_onto_the_agnostic_point_above_alpha_lands_there():
    """With A = I on sobol8:4 the cold semantic start at alpha = 2 diverges (residual 80); the branch followed down
    from 3.125 thins out (theta 0.09 at 2.22) and falls onto the agnostic point at 2.14.  The solve ended "not
    converged" (exit 1) where the default rule says the branch is absent; it now lands on the agnostic point at 2,
    requested semantic, which the command judges absent (the agnostic point is stable in theta there)."""
    model = ModelParams(A=((1.0, 0.0), (0.0, 1.0)))
    fp = se.solve(model, 2.0, "semantic", config=config("sobol8:4"))
    assert fp.status.converged and fp.branch == "agnostic" and fp.requested == "semantic" and fp.alpha == 2.0
    assert "fell onto the agnostic point at alpha = 2.1" in fp.status.message
    assert abs(fp.overlaps.th0) < 1e-8


@pytest.mark.heavy  # about 12 s
def test_the_cli_judges_that_landing_as_the_default_rule_does(capsys):
    """``solve --A "1,0;0,1" --alpha 2 --precision fast``: exit 1 (not converged) before, exit 3 (absent) on the
    default rule; now both absent."""
    from attnphase.cli import main

    assert main(["solve", "--alpha", "2", "--A", "1,0;0,1", "--precision", "fast", "--error-estimate", "0"]) == 3
    err = capsys.readouterr().err
    assert "no semantic fixed point found at alpha = 2" in err and "absent" in err and "lambda = " in err
