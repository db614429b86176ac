"""A theory point of the validation suites: on the rule, or where that misses the branch, on its next scrambling.

The proximal maps jump where a node's minimiser changes basin, and one rule can stall on such a jump where an
independent scrambling of it converges (docs/validation.md).  :class:`SolveJob` is one such solve (the rank-r
points of :mod:`attnphase.validation.invariant_points`, the aligned-prox points of
:mod:`attnphase.validation.basin_theory`) and :func:`job_task` its task.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable

from attnphase.execution import Task, task_key
from attnphase.numerics.config import SolverConfig
from attnphase.theory.params import ModelParams

if TYPE_CHECKING:
    from attnphase.numerics.se.results import FixedPoint

#: Independent rules a theory point is tried on before its outcome is taken (the rule, then its next scrambling).
TRIES = 2


def solve_on_branch(solve: Callable[[SolverConfig], FixedPoint], config: SolverConfig, branch: str,
                    tries: int = TRIES) -> tuple[FixedPoint, SolverConfig, list[str]]:
    """Solve on ``config.variant(0)``, ``variant(1)``, ... until one converges on ``branch`` (up to ``tries`` rules;
    else the last outcome): (fixed point, its config, ``"<rule>: <what it gave>"`` for each rule before it).

    ``solve(config)`` returns a fixed point of any rank (its status and label say what it gave)."""
    missed: list[str] = []
    for k in range(tries):
        cfg = config.variant(k)
        fp = solve(cfg)
        converged, label, residual = fp.status.converged, fp.branch, fp.status.residual
        if (converged and label == branch) or k + 1 == tries:
            return fp, cfg, missed
        missed.append(f"{cfg.quadrature}: " + (f"{label}" if converged else f"not converged (residual {residual:.1e})"))
    raise ValueError(f"tries must be >= 1, got {tries}")


@dataclass(frozen=True)
class SolveJob:
    """One state-evolution solve of a suite: ``solve(params, alpha, branch, config=config)``."""

    params: ModelParams
    alpha: float
    branch: str
    config: SolverConfig


def job_task(fn: Callable[[SolveJob], Any], job: SolveJob, version: str, label: str) -> Task:
    """The task of ``fn(job)``, keyed by the model (ranks included), alpha, branch and the whole config."""
    identity = {"params": job.params.to_dict(), "alpha": job.alpha, "branch": job.branch,
                "config": job.config.as_dict()}
    return Task(task_key(fn, identity, version), label, fn, job)
