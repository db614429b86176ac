"""Fixed points summarised by their rotation invariants: the theory of ``validate --suite general``'s rank-r cases.

For a case with r >= 2 or r* >= 2 a run is compared with the rank-r fixed point
:func:`~attnphase.numerics.se.state_evolution.solve` reaches from the start's branch at the run's alpha
(``attnphase solve --rank R --teacher-rank R* --branch B``) and with the *mixed* fixed point; one task per
(model, alpha, branch), tried once more on the next scrambling of the rule where it misses the branch
(:func:`~attnphase.validation.rule_retry.solve_on_branch`).  A point carries the invariants (docs/model.md
section 7)::

    abs_theta = |Q^T Q*|_F / d = (sum_a s_a(th0)^2)^(1/2),   m_norm = (sum_l |m_l|^2)^(1/2),   q = Tr q0,

eps_g, e_t, ``converged`` with its ``residual`` and ``branch_reached``, and each invariant's error bar ``err_<name>``
(the standard error over the point re-solved on each scrambling block of the rule it converged on); one that did
not converge carries no observables (``None``), one below the rank-1 sweeps' floor of its branch's order parameter
is not the branch (``exists`` False).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

from attnphase.execution import Task
from attnphase.numerics.config import SolverConfig

from .branch_segments import above_floor
from .rule_retry import SolveJob, job_task, solve_on_branch

#: The rank-r branches the suite solves at each alpha: the two starts' own, and the mixed one.
POINT_BRANCHES = ("semantic", "positional", "mixed")
#: The invariants a rank-r theory point carries (None where the solve did not converge).
INVARIANTS = ("abs_theta", "m_norm", "q", "eps_g", "e_t")


def invariant_point(fp: Any, requested: str, seconds: float = math.nan) -> dict[str, Any]:
    """The plain record of a :class:`~attnphase.numerics.se.results.FixedPoint` (module docstring)."""
    rec = fp.record
    out: dict[str, Any] = {"alpha": float(fp.alpha), "requested": requested, "converged": bool(fp.status.converged),
                           "residual": float(fp.status.residual), "message": fp.status.message, "quadrature": fp.quadrature,
                           "seconds": seconds, "branch_reached": rec["branch"] if fp.status.converged else None,
                           "exists": bool(fp.status.converged and rec["branch"] == requested), "tries": []}
    if fp.status.converged:
        out.update(abs_theta=math.sqrt(sum(s * s for s in rec["th0_singular_values"])),
                   m_norm=math.sqrt(sum(x * x for x in rec["m_norms"])), q=float(sum(rec["q0_eigenvalues"])),
                   eps_g=float(fp.observables.eps_g), e_t=float(fp.observables.e_t), th0_singular_values=list(rec["th0_singular_values"]),
                   m_norms=list(rec["m_norms"]), directions=list(rec["directions"]))
        out["exists"] = out["exists"] and above_floor(out["abs_theta"], out["m_norm"], requested)
    else:
        out.update({k: None for k in INVARIANTS})
    return out


def point_job(job: SolveJob) -> dict[str, Any]:
    """The rank-r fixed point of ``job`` as :func:`invariant_point` (the task's function): on ``job.config``'s rule,
    and where that does not converge on the branch, on its next independent scrambling (module docstring)."""
    from attnphase.numerics.se.state_evolution import solve

    from attnphase.numerics.errors.replicates import derived_errors, replicate_configs, replicate_points

    t0 = time.perf_counter()
    fp, cfg, tries = solve_on_branch(lambda c: solve(job.params, job.alpha, job.branch, config=c), job.config,
                                     job.branch)
    out = invariant_point(fp, job.branch, time.perf_counter() - t0) | {"tries": tries}
    if fp.status.converged and replicate_configs(cfg, 0)[0]:
        def values(p: Any) -> dict[str, float]:
            return {k: invariant_point(p, job.branch)[k] for k in INVARIANTS}
        out |= derived_errors(fp, *replicate_points(fp, cfg, 0), values)
    return out


def point_task(job: SolveJob, version: str) -> Task:
    """The task of one rank-r solve (:func:`~attnphase.validation.rule_retry.job_task`)."""
    p = job.params
    prox = "" if job.config.prox == "global" else f" {job.config.prox}"
    return job_task(point_job, job, version, f"rank {p.r}x{p.r_star} alpha={job.alpha:g} {job.branch}{prox}")


def point_config(quadrature: str) -> SolverConfig:
    """The SolverConfig of the suite's rank-r solves: global prox, the Sobol rule ``quadrature``; every other
    setting the solver's default."""
    return SolverConfig(prox="global", quadrature=quadrature)


@dataclass(frozen=True)
class InvariantPoints:
    """The rank-r theory of one case: ``points[(alpha, branch)]`` (:func:`invariant_point`), eps_lin, seconds."""

    points: dict[tuple[float, str], dict[str, Any]]
    eps_lin: float
    quadrature: str
    seconds: float

    def point(self, alpha: float, branch: str) -> dict[str, Any] | None:
        return next((rec for (a, b), rec in self.points.items() if b == branch and abs(a - alpha) < 1e-9), None)

    def to_dict(self) -> dict[str, Any]:
        return {"kind": "rank", "quadrature": self.quadrature, "eps_lin": self.eps_lin, "seconds": self.seconds,
                "points": [dict(rec, requested=b) for (_, b), rec in sorted(self.points.items())]}
