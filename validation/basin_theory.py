"""The aligned-prox theory of ``validate --suite general``: the basin gradient descent keeps from its start.

Gradient descent started on one branch can stay in a basin the global minimiser has left (docs/validation.md).
For independent tokens the ``aligned`` proximal map (docs/model.md section 3) models that basin: per sample the
lowest local minimiser h of the proximal problem with ``h . r > 0``, ``r_l = E[w_l | h*] = m_l + (th0 / rho0) h*_l``.
For each (alpha, start) of such a case the suite solves the state evolution with it from that start
(``attnphase solve --prox aligned --branch B``), one task per point, and compares the runs with it beside the
global-prox point.
"""

from __future__ import annotations

import math
import time
from typing import Any

from attnphase.execution import Task
from attnphase.numerics.config import SolverConfig
from attnphase.theory.params import ModelParams

from .invariant_points import INVARIANTS
from .rule_retry import SolveJob, job_task, solve_on_branch


def has_aligned_theory(params: ModelParams) -> bool:
    """The aligned map exists for the model: independent tokens (any L, r, r*)."""
    return params.C is None


def aligned_config(tol: float | None = None) -> SolverConfig:
    """The suite's aligned solves: the solver's defaults with ``prox="aligned"`` (and ``tol`` where given)."""
    cfg = SolverConfig(prox="aligned")
    return cfg if tol is None else cfg.replace(tol=tol)


def aligned_job(job: SolveJob, errors: bool = False) -> dict[str, Any]:
    """The fixed point of ``job`` as a plain record: branch reached, converged, residual and, where it
    converged, ``abs_theta = |th0|``, ``m_norm = |(m_l)_l|``, q, eps_g, e_t; ``exists``: converged on the
    requested branch; ``quadrature``: the rule of the outcome, ``tries``: what the rules before it gave.

    A solve that does not converge on the requested branch is tried again on the next independent scrambling of the
    rule (:func:`~attnphase.validation.rule_retry.solve_on_branch`).  ``errors``: also ``err_abs_theta``,
    ``err_m_norm``, ``err_eps_g``, the standard errors over the rule's scramblings
    (:func:`~attnphase.numerics.errors.quadrature_error.fixed_point_error`)."""
    from attnphase.numerics import solve

    t0 = time.perf_counter()
    fp, cfg, tries = solve_on_branch(lambda c: solve(job.params, job.alpha, job.branch, config=c), job.config,
                                     job.branch)
    rec = fp.record
    ok = bool(fp.status.converged)
    out: dict[str, Any] = {"alpha": float(job.alpha), "requested": job.branch, "prox": "aligned", "converged": ok,
                           "residual": float(fp.status.residual), "branch_reached": fp.branch if ok else None,
                           "exists": ok and fp.branch == job.branch, "seconds": time.perf_counter() - t0,
                           "quadrature": cfg.quadrature, "tries": tries}
    if ok:
        m_norm = math.sqrt(sum(float(x) ** 2 for x in fp.overlaps.m))
        out.update(abs_theta=abs(float(rec["theta"])), m_norm=m_norm, q=float(rec["q"]), eps_g=float(rec["eps_g"]),
                   e_t=float(rec["e_t"]))
        if errors:
            from attnphase.numerics.errors.quadrature_error import fixed_point_error

            err = fixed_point_error(fp, cfg)
            m1 = abs(float(rec["m"]))
            if err is not None:  # m_norm's bar: the record's m's, scaled to the norm
                out.update(err_abs_theta=err.std["theta"], err_eps_g=err.std["eps_g"],
                           err_m_norm=err.std["m"] * m_norm / m1 if m1 > 0 else 0.0)
    else:
        out.update({k: None for k in INVARIANTS})
    return out


def aligned_task(job: SolveJob, version: str) -> Task:
    """The task of one aligned solve (:func:`~attnphase.validation.rule_retry.job_task`)."""
    return job_task(aligned_job, job, version, f"aligned alpha={job.alpha:g} {job.branch}")


def rule_verdict(agrees: dict[str, bool | None] | None, missing: str = "no aligned point") -> str:
    """'agrees', 'disagrees (obs, ...)' or ``missing`` (no point to compare with) for the rule's per-observable
    outcome."""
    if not agrees or any(v is None for v in agrees.values()):
        return missing
    if all(agrees.values()):
        return "agrees"
    return "disagrees (" + ", ".join(o for o, v in agrees.items() if v is False) + ")"
