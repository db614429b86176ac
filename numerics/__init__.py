"""attnphase.numerics: quadrature, global proximal map, state evolution, continuation, phase diagram.

Imports :mod:`attnphase.theory`, never :mod:`attnphase.validation` and never torch.

    from attnphase.numerics import SolverConfig, solve, sweep, phase_boundaries
    fp = solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic", config=SolverConfig())
    fp.record        # alpha, omega, sigma, lam, branch, q, m, V, theta, eps_g, e_t, eps_lin, ...

The data flow (docs/architecture.md): ``SolverConfig`` (config) -> ``SEMap`` (se_map: channel
moments -> ``update_hat`` -> ``update``) -> ``FixedPointSolver`` (fixed_point) -> ``solve``
(state_evolution) -> ``sweep`` (continuation) with ``locate_branch_end`` (branch_end) ->
``phase_boundaries`` (boundaries).
"""

from attnphase.numerics.boundaries import Boundaries, phase_boundaries, phase_diagram
from attnphase.numerics.branch_end import BranchEnd, locate_branch_end, trace_branch_end
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.continuation import BranchSweep, sweep
from attnphase.numerics.observables import eps_lin
from attnphase.numerics.se_map import se_step, update, update_hat
from attnphase.numerics.stability import positional_bifurcation, semantic_bifurcation
from attnphase.numerics.state_evolution import FixedPoint, SolverStatus, solve, solve_at_order
from attnphase.numerics.training_objective import refined_training_objective

__all__ = [
    "BranchEnd", "BranchSweep", "Boundaries", "FixedPoint", "SolverConfig", "SolverStatus",
    "eps_lin", "locate_branch_end", "phase_boundaries", "phase_diagram", "positional_bifurcation",
    "refined_training_objective", "se_step", "semantic_bifurcation", "solve", "solve_at_order",
    "sweep", "trace_branch_end", "update", "update_hat",
]
