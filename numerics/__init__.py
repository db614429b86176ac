"""attnphase.numerics: quadrature, global proximal map, state evolution, continuation, phase diagram.

Imports :mod:`attnphase.theory`, never :mod:`attnphase.validation` and never torch.

    from attnphase.numerics import SolverConfig, solve, sweep, phase_boundaries
    fp = solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic", config=SolverConfig())
    fp.record        # alpha, omega, sigma, lam, branch, q, m, V, theta, eps_g, e_t, eps_lin, ...

The layout by role and the data flow (docs/architecture.md): ``SolverConfig`` (config) -> ``SEMap``
(se.se_map: channel moments -> ``update_hat`` -> ``update``; the proximal map of prox/ on the rules
of quadrature/) -> ``FixedPointSolver`` (se.fixed_point) -> ``solve`` (se.state_evolution) ->
``sweep`` (phase.continuation) with ``locate_branch_end`` (phase.branch_end) -> ``phase_boundaries``
(phase.boundaries), with error bars from errors/; the tasks and files of jobs/; the commands/.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it.  Loaded on first access (PEP 562), so importing a
#: light submodule (``attnphase.numerics.config``, for the command line's options) does not import
#: the solvers, scipy or the generated kernels.
_EXPORTS = {
    "Boundaries": "phase.boundary_results", "phase_boundaries": "phase.boundaries", "phase_diagram": "phase.boundaries",
    "BranchEnd": "phase.branch_end", "locate_branch_end": "phase.branch_end", "trace_branch_end": "phase.branch_end",
    "SolverConfig": "config",
    "BranchSweep": "phase.continuation", "sweep": "phase.continuation",
    "eps_lin": "se.observables",
    "se_step": "se.se_map", "update": "se.updates", "update_hat": "se.updates",
    "positional_bifurcation": "phase.bifurcation", "semantic_bifurcation": "phase.bifurcation",
    "FixedPoint": "se.results", "SolverStatus": "se.results", "solve": "se.state_evolution",
    "solve_at_order": "se.fixed_order_solve",
    "refined_training_objective": "se.training_objective",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnphase.numerics' has no attribute {name!r}")
    return getattr(importlib.import_module(f"attnphase.numerics.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
