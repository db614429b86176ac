"""A matrix solve that does not converge from its start on the rule is retried from the fixed point of a coarser
rule (numerics/se/matrix_solve.py): the L = 3 mixed point (P = I, r = 2, r* = 1, alpha = 2), whose staged solve from
the matrix cold start does not converge on the default rule (docs/general.md, "Holes")."""

from __future__ import annotations

import numpy as np
import pytest

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se import state_evolution as se
from attnphase.numerics.se.matrix_solve import _from_coarser_rule, coarser_spec, matrix_config
from attnphase.numerics.se.se_map import model_rule
from attnphase.theory.params import ModelParams


def test_the_coarser_rule_halves_the_points_per_block_and_keeps_seed_and_block():
    assert coarser_spec("sobol10:4") == "sobol9:4:0"
    assert coarser_spec("sobol12:1:3@0") == "sobol11:1:3@0"
    assert coarser_spec("sobol9:4") is None  # no coarser than 2^9 points per block
    assert coarser_spec("gh6") is None


@pytest.mark.heavy
@pytest.mark.slow
def test_the_l3_mixed_point_converges_on_the_default_rule_and_from_the_coarser_rules_point():
    """The default rule's solve from the start reaches the mixed point, and so does the retry from the coarser rule's
    fixed point (the path of a solve that stalls), both the same point."""
    params = ModelParams(L=3, r=2, r_star=1, omega=0.3)
    fp = se.solve(params, 2.0, "mixed", config=SolverConfig(error_bars=False))
    cfg = matrix_config(params, 2.0, "mixed", SolverConfig(error_bars=False), "embedded")
    retried = _from_coarser_rule(params, 2.0, "mixed", cfg, model_rule(params, cfg),
                                 se.embedded_start(params, 2.0, "mixed", cfg), warm=True)
    assert retried is not None and "warm from the fixed point on sobol9:4:0" in retried.status.message
    for p in (fp, retried):
        assert p.status.converged and p.branch == "mixed" and p.status.residual < 1e-8
        m = np.sort(np.linalg.norm(p.overlaps.m, axis=0))
        assert m[-1] > 0.3 and m[0] < 0.01  # one positional axis, |m| = 0.313 (sobol9:4: 0.314)
        assert np.linalg.svd(p.overlaps.th0, compute_uv=False)[0] > 0.75  # and the semantic one, th0 sv 0.787
    assert retried.observables.e_t == pytest.approx(fp.observables.e_t, rel=1e-6)
