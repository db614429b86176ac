"""attnphase.numerics: quadrature, global proximal map, state evolution, continuation, phase diagram.

Imports :mod:`attnphase.theory`, never :mod:`attnphase.validation` and never torch.

    from attnphase.numerics import solve, sweep, phase_boundaries, eps_lin
    fp = solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic")
    fp.record        # alpha, omega, sigma, lam, branch, q, m, V, theta, eps_g, e_t, eps_lin, ...
"""

from attnphase.numerics.continuation import (
    BranchSweep,
    positional_branch_end,
    semantic_branch_end,
    sweep,
    sweep_omega,
)
from attnphase.numerics.observables import eps_lin
from attnphase.numerics.phase_diagram import Boundaries, phase_boundaries, phase_diagram
from attnphase.numerics.stability import positional_bifurcation, semantic_bifurcation
from attnphase.numerics.state_evolution import FixedPoint, SolverConfig, SolverStatus, solve, solve_at_m, solve_at_theta
from attnphase.numerics.training_objective import refined_training_objective

__all__ = [
    "BranchSweep", "Boundaries", "FixedPoint", "SolverConfig", "SolverStatus",
    "eps_lin", "phase_boundaries", "phase_diagram", "positional_bifurcation", "positional_branch_end",
    "refined_training_objective", "semantic_bifurcation", "semantic_branch_end", "solve",
    "solve_at_m", "solve_at_theta", "sweep", "sweep_omega",
]
