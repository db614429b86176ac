"""attnphase.numerics: quadrature, global proximal map, state evolution, continuation, phase diagram.

Imports :mod:`attnphase.theory`, never :mod:`attnphase.validation` and never torch.

    from attnphase.numerics import SolverConfig, solve, sweep, phase_boundaries
    fp = solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic", config=SolverConfig())
    fp.record        # alpha, omega, sigma, lam, branch, q, m, V, theta, eps_g, e_t, eps_lin, ...

The layout by role and the data flow: docs/architecture.md.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Public name -> the module that defines it, loaded on first access (PEP 562: a light submodule such as
#: ``attnphase.numerics.config`` imports no solver).
_EXPORTS = {
    "Boundaries": "phase.boundary_results", "phase_boundaries": "phase.boundaries", "phase_diagram": "phase.boundaries",
    "BranchEnd": "phase.branch_end", "locate_branch_end": "phase.branch_end", "trace_branch_end": "phase.branch_end",
    "SolverConfig": "config",
    "BranchSweep": "phase.continuation", "sweep": "phase.continuation",
    "eps_lin": "se.observables",
    "se_step": "se.se_map", "update": "se.updates", "update_hat": "se.updates",
    "branch_bifurcation": "phase.bifurcation",
    "FixedPoint": "se.results", "SolverStatus": "se.results", "solve": "se.state_evolution",
    "solve_at_order": "se.fixed_order_solve",
    "refined_training_objective": "se.training_objective",
    "fixed_point_error": "errors.quadrature_error", "point_errors": "errors.quadrature_error",
    "on_branch": "phase.branch_end", "census": "phase.census",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'attnphase.numerics' has no attribute {name!r}")
    return getattr(importlib.import_module(f"attnphase.numerics.{_EXPORTS[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
