"""docs/howto/add-a-loss.md: its worked example runs, and the plug-in is wired through the whole state evolution.

The example channel (theory/channels/scaled_square.py) is the square loss times c = SCALE.  With the ridge
penalty also times c the empirical risk is c times the old one and its minimiser is the same, so the SE fixed
point has the same q0, m, th0, V0' = V0 / c, e_t' = c e_t and eps_g' = c eps_g.  Had any part of the solver
(kernels, compiled proximal map, channel moments, observables) kept the square loss, the scaled model would be
the square loss with a doubled ridge penalty, whose fixed point is another one: the tests check that too.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from attnphase.numerics import SolverConfig, solve
from attnphase.numerics.se.starts import with_ranks
from attnphase.theory.channels.scaled_square import SCALE
from attnphase.theory.params import ModelParams

HOWTO = Path(__file__).resolve().parents[1] / "docs" / "howto" / "add-a-loss.md"

#: Two converged solves of one fixed point agree to this (the solver's tol 1e-10 on the residual,
#: over the map's contraction gap; tests/numerics/test_golden.py's RTOL_FIXED_POINT).
RTOL_RANK1 = 1e-8
#: The rank-r solve's (a quasi-Newton across the gauge orbits): the scaled and the plain solve differed by
#: 3e-8 relative at most in the invariants (L = 2, r = 2, r* = 1, alpha = 2, sobol10:4).
RTOL_RANK2 = 1e-6
#: A loss wired wrong (the square loss with the doubled penalty) moves q0 by more than this, relative.
MISWIRED = 1e-3


def _close(a: float, b: float, rtol: float) -> bool:
    return abs(a - b) <= rtol * max(abs(a), abs(b)) + 1e-14


def test_the_howto_example_runs_and_the_fixed_point_scales_at_rank_1() -> None:
    text = HOWTO.read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    assert len(blocks) == 1
    ns: dict = {}
    exec(compile(blocks[0], str(HOWTO), "exec"), ns)  # noqa: S102 - the documentation's own program
    a, b, plain, config = ns["a"], ns["b"], ns["plain"], ns["config"]
    assert a.status.converged and b.status.converged and a.branch == b.branch == "semantic"
    assert b.params.loss == "scaled_square" and b.params.lam == SCALE * a.params.lam
    assert _close(b.overlaps.q0, a.overlaps.q0, RTOL_RANK1)
    assert _close(b.overlaps.th0, a.overlaps.th0, RTOL_RANK1)
    np.testing.assert_allclose(b.overlaps.m, a.overlaps.m, rtol=RTOL_RANK1, atol=1e-14)
    assert _close(SCALE * b.overlaps.V0, a.overlaps.V0, RTOL_RANK1)
    assert _close(b.record["e_t"], SCALE * a.record["e_t"], RTOL_RANK1)
    assert _close(b.record["eps_g"], SCALE * a.record["eps_g"], RTOL_RANK1)
    wrong = solve(plain.replace(lam=SCALE * plain.lam), 2.0, "semantic", config=config)
    assert abs(wrong.overlaps.q0 - a.overlaps.q0) > MISWIRED * a.overlaps.q0


@pytest.mark.parametrize("branch", ["semantic"])
def test_the_scaled_loss_at_rank_2(branch: str) -> None:
    cfg = SolverConfig(quadrature="sobol10:4")
    plain = with_ranks(ModelParams(omega=0.3), 2, 1)
    scaled = plain.replace(loss="scaled_square", lam=SCALE * plain.lam)
    a, b = (solve(p, 2.0, branch, config=cfg).record for p in (plain, scaled))
    assert a["converged"] and b["converged"] and a["branch"] == b["branch"] == branch
    for key in ("q0_eigenvalues", "th0_singular_values", "m_norms"):
        np.testing.assert_allclose(b[key], a[key], rtol=RTOL_RANK2, atol=1e-12, err_msg=key)
    np.testing.assert_allclose(SCALE * np.array(b["V0_eigenvalues"]), a["V0_eigenvalues"], rtol=RTOL_RANK2)
    for key in ("e_t", "eps_g"):
        assert _close(b[key], SCALE * a[key], RTOL_RANK2), key
    wrong = solve(plain.replace(lam=SCALE * plain.lam), 2.0, branch, config=cfg).record
    assert abs(wrong["q0_eigenvalues"][0] - a["q0_eigenvalues"][0]) > MISWIRED * a["q0_eigenvalues"][0]
