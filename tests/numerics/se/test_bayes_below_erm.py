"""The Bayes-optimal test error is a lower bound: eps_g(BO) <= eps_g of ERM's global minimum (the lowest-e_t
fixed point among the semantic and positional solves), at random (alpha, omega, A) on a small rule."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from attnphase.numerics.config import SolverConfig
from attnphase.numerics.se.bayes import BayesModel, bayes_eps_g, solve_bayes
from attnphase.numerics.se.state_evolution import solve
from attnphase.theory.params import ModelParams

SMALL = SolverConfig(quadrature="sobol9:1", error_bars=False)
SECOND_A = ((0.3, 0.7), (0.8, 0.2))


def erm_global_minimum_eps_g(params: ModelParams, alpha: float) -> float:
    fps = [solve(params, alpha, br, config=SMALL) for br in ("semantic", "positional")]
    fps = [fp for fp in fps if fp.status.converged]
    assert fps
    return min(fps, key=lambda fp: fp.record["e_t"]).record["eps_g"]


@settings(max_examples=2, deadline=None, derandomize=True)
@given(alpha=st.floats(0.2, 1.5), omega=st.floats(0.0, 0.45), second_a=st.booleans())
@example(alpha=0.3, omega=0.3, second_a=False)  # between alpha_WR and 1/L: BO eps_g > 0
@example(alpha=1.4, omega=0.1, second_a=True)  # ERM semantic, 0.52 eps_lin: a BO stuck at q0 = 0 (eps_lin) fails
def test_bayes_optimal_eps_g_is_below_erm(alpha, omega, second_a):
    params = ModelParams(omega=omega, A=SECOND_A) if second_a else ModelParams(omega=omega)
    model = BayesModel.of(params)
    bo = bayes_eps_g(model, omega, solve_bayes(model, alpha, "informative").q0)
    assert bo <= erm_global_minimum_eps_g(params, alpha)
