"""Finite-d gradient descent against the state evolution (uses the numerics API: attnphase.numerics).

Seeded runs at d = 300, alpha = 2, omega = 0.3 (three seeds, means compared).
Tolerances are stated per observable; the measured gaps (2026-11, d = 300) are
in the comments, and the finite-size study of ``attnphase validate`` shows them
shrinking with d.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
import attnphase.numerics as numerics  # noqa: E402

from attnphase.theory.params import ModelParams  # noqa: E402
from attnphase.validation.experiments import SimSpec, run_simulation  # noqa: E402

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("one_torch_thread")]

PARAMS = ModelParams(omega=0.3)
D, ALPHA, SEEDS = 300, 2.0, (0, 1, 2)



def _runs(init: str, n_test: int = 6000):
    return [run_simulation(SimSpec(d=D, alpha=ALPHA, init=init, seed=s, params=PARAMS, n_test=n_test)) for s in SEEDS]


@pytest.fixture(scope="module")
def semantic_runs():
    return _runs("semantic")


@pytest.fixture(scope="module")
def positional_runs():
    return _runs("positional")


@pytest.fixture(scope="module")
def theory():
    out = {}
    for branch in ("semantic", "positional"):
        rec = numerics.solve(PARAMS, ALPHA, branch).record
        assert rec["converged"] and rec["branch"] == branch, f"numerics did not reach the {branch} fixed point: {rec}"
        out[branch] = rec
    return out


def test_gd_semantic_init_matches_semantic_branch(semantic_runs, theory):
    th = theory["semantic"]
    assert all(r.converged for r in semantic_runs)
    theta = np.mean([r.theta for r in semantic_runs])
    eps_g = np.mean([r.eps_g for r in semantic_runs])
    assert theta == pytest.approx(th["theta"], abs=0.04)  # measured 0.632 vs 0.633
    assert eps_g == pytest.approx(th["eps_g"], rel=0.15)  # measured +3 %
    assert abs(np.mean([r.m for r in semantic_runs])) < 0.05  # m = 0 on the semantic branch


def test_gd_positional_init_matches_positional_branch(positional_runs, theory):
    th = theory["positional"]
    assert all(r.converged for r in positional_runs)
    m = np.mean([abs(r.m) for r in positional_runs])
    eps_g = np.mean([r.eps_g for r in positional_runs])
    assert m == pytest.approx(abs(th["m"]), abs=0.025)  # measured 0.256 vs 0.260
    assert eps_g == pytest.approx(th["eps_g"], rel=0.15)  # measured +2 %
    assert abs(np.mean([r.theta for r in positional_runs])) < 0.1  # theta = 0 on the positional branch


def test_trained_linear_baseline_approaches_eps_lin(semantic_runs):
    """Least-squares B on the training set, tested on fresh samples: docs/model.md section 5's eps_lin."""
    target = numerics.eps_lin(PARAMS)
    sim = np.mean([r.eps_lin for r in semantic_runs])
    assert sim == pytest.approx(target, rel=0.06)  # measured +1.5 % (the finite-n fit of B adds O(1/n))


def test_delta_e_t_sign_at_alpha_2(semantic_runs, positional_runs, theory):
    """Above alpha_c the semantic minimum has the lower training objective, in theory and in GD (paired seeds)."""
    th_s, th_p = theory["semantic"], theory["positional"]
    assert th_s["e_t"] < th_p["e_t"]
    deltas = [s.e_t - p.e_t for s, p in zip(semantic_runs, positional_runs)]
    assert np.mean(deltas) < 0
    assert np.mean(deltas) == pytest.approx(th_s["e_t"] - th_p["e_t"], abs=0.5 * abs(th_s["e_t"] - th_p["e_t"]))
