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
