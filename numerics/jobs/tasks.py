"""The numerics' long jobs as tasks of the execution layer (:mod:`attnphase.execution`), one independent
continuation each: a task's key hashes its whole input and the code version of the theory and numerics layers
(:func:`numerics_version`), so a stored result answers exactly the computation asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from attnphase.execution import Outcome, Task, code_version, task_key
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.phase.absence import finer_rule_rows
from attnphase.numerics.phase.boundaries import BoundariesSpec, boundaries_job
from attnphase.numerics.phase.boundary_results import Boundaries, failed_boundaries
from attnphase.numerics.phase.census import census_check
from attnphase.numerics.phase.omega_continuation import boundaries_chain
from attnphase.numerics.phase.positional_birth import sweep_birth
from attnphase.numerics.phase.scalar_boundaries import _portable
from attnphase.numerics.errors.quadrature_error import point_errors
from attnphase.numerics.config import SolverConfig
from attnphase.numerics.phase.continuation import BranchSweep, cold_points_off_branch, judged_sweep, sweep
from attnphase.numerics.prox.global_prox import compile_global_prox
from attnphase.numerics.se.observables import eps_lin
from attnphase.theory.correlated_kernels import model_kernels
from attnphase.theory.params import ModelParams
from attnphase.theory.whitening import se_params

#: The layers a numerics task runs (their source is hashed into every key) ...
NUMERICS_CODE = ("attnphase.theory", "attnphase.numerics")
#: ... but for the modules that only present results (tables, figures, datasets, the commands):
#: an edit there keeps a job's stored tasks valid.
PRESENTATION = ("commands/", "jobs/report.py", "jobs/boundary_table.py", "jobs/scan_report.py", "jobs/plots.py", "jobs/dataset.py", "jobs/bayes_dataset.py",
                "jobs/bayes_plots.py", "jobs/variables.py", "latex.py", "notes.py")


def numerics_version() -> str:
    return code_version(*NUMERICS_CODE, exclude=PRESENTATION)


def prepare_kernels(params: ModelParams, config: SolverConfig) -> None:
    """The kernels of ``params``' model and, at r = r* = 1 with the global proximal map, its compiled loops, loaded or
    made here: a job calls it before its workers start, so that they load both."""
    p = se_params(params)
    kernels = model_kernels(p)
    if p.r == 1 and p.r_star == 1 and config.prox == "global":
        compile_global_prox(kernels, p.sigma2, config.backend)


def boundaries_task(params: ModelParams, alphas: Sequence[float], config: SolverConfig, replicate: int = 0,
                    tag: str = "", version: str | None = None, whole: bool = False) -> Task:
    """phase_boundaries at ``params`` on the grid ``alphas`` with ``config.variant(replicate)``, labelled after ``tag``;
    ``whole`` (r = r* = 1): the positional branch also over the whole grid, for the curves' figure."""
    cfg = config.variant(replicate)
    r, r_star = params.r, params.r_star
    scalar = is_scalar_form(r, r_star)
    whole = whole and scalar  # the curves' figure is the scalar form's
    identity = {"params": params.to_dict(), "alphas": list(alphas), "config": cfg.as_dict()} | (
        {"whole_positional_branch": True} if whole else {}) | ({} if scalar else {"r": r, "r_star": r_star})
    label = tag + f"omega={params.omega:g}" + ("" if scalar else f" rank {r}x{r_star}") + (
        f" rule {replicate}" if replicate else "")
    spec = BoundariesSpec(params, tuple(float(a) for a in alphas), cfg, whole)
    return Task(task_key(boundaries_job, identity, version or numerics_version()), label, boundaries_job, spec)


def omega_chains(omegas: Sequence[float], n_chains: int,
                 anchor_at: float | None = None) -> list[tuple[float, list[float], list[float]]]:
    """The sorted ``omegas`` in ``n_chains`` contiguous blocks of near-equal size, each as (anchor, the omegas above it
    ascending, those below descending), the anchor the block's first omega or ``anchor_at`` where it holds it."""
    w = sorted(float(x) for x in omegas)
    out = []
    for block in np.array_split(np.array(w), max(1, min(n_chains, len(w)))):
        blk = [float(x) for x in block]
        i = next((j for j, x in enumerate(blk) if anchor_at is not None and abs(x - anchor_at) < 1e-12), 0)
        out.append((blk[i], blk[i + 1:], blk[:i][::-1]))
    return out


@dataclass(frozen=True)
class ChainSpec:
    """One chain of omegas continued from its ``anchor`` (``phase-diagram --continuation``, r = r* = 1), ``up``
    ascending and ``down`` descending; ``whole``: the anchor's whole positional branch."""

    params: ModelParams
    alphas: tuple[float, ...]
    config: SolverConfig
    anchor: float
    up: tuple[float, ...]
    down: tuple[float, ...]
    whole: bool = False


def chain_job(spec: ChainSpec) -> list[Boundaries]:
    """:func:`~attnphase.numerics.phase.omega_continuation.boundaries_chain` for one :class:`ChainSpec`."""
    return boundaries_chain(spec.params, list(spec.alphas), spec.anchor, list(spec.up), list(spec.down), spec.config,
                            spec.whole)


def chain_task(params: ModelParams, alphas: Sequence[float], config: SolverConfig, chain: tuple[float, list, list],
               replicate: int = 0, whole: bool = False, version: str | None = None) -> Task:
    """The boundaries at the omegas of ``chain`` (:func:`omega_chains`), phase_boundaries at the anchor continued from
    it, with ``config.variant(replicate)``; ``whole``: the anchor's whole positional branch."""
    cfg = config.variant(replicate)
    anchor, up, down = chain
    identity = {"params": params.to_dict(), "alphas": list(alphas), "config": cfg.as_dict(), "anchor": float(anchor),
                "up": [float(w) for w in up], "down": [float(w) for w in down]} | (
        {"whole_positional_branch": True} if whole else {})
    omegas = sorted([anchor, *up, *down])
    label = f"omega={omegas[0]:g}..{omegas[-1]:g} from {anchor:g}" + (f" rule {replicate}" if replicate else "")
    spec = ChainSpec(params, tuple(float(a) for a in alphas), cfg, float(anchor), tuple(float(w) for w in up),
                     tuple(float(w) for w in down), whole)
    return Task(task_key(chain_job, identity, version or numerics_version()), label, chain_job, spec)


def sweep_job(job: tuple[ModelParams, list[float], str, SolverConfig, int], progress=None) -> BranchSweep:
    """One branch over the grid (``sweep``), its fixed points without solver memory, with their error bars; at r >= 2
    or r* >= 2 each point judged as ``attnphase solve`` judges its solve
    (:func:`~attnphase.numerics.phase.continuation.judged_sweep`) and the point of its label a cold solve reaches at
    each point off the branch (:func:`~attnphase.numerics.phase.continuation.cold_points_off_branch`); at r = r* = 1
    the positional branch's birth below its first point
    (:func:`~attnphase.numerics.phase.positional_birth.sweep_birth`) and its points on the branch that a finer rule
    does not reproduce (:func:`~attnphase.numerics.phase.absence.finer_rule_rows`, as ``attnphase solve`` judges
    its point); ``progress`` is called after each point (in-process runs)."""
    params, alphas, branch, cfg, n_rules = job
    sw = sweep(params, alphas, branch, config=cfg, progress=progress)
    if not is_scalar_form(params.r, params.r_star):
        return _portable(cold_points_off_branch(params, judged_sweep(sw, cfg, n_rules), cfg, n_rules))
    sw = finer_rule_rows(sweep_birth(params, sw, cfg), cfg)
    if cfg.error_bars:
        sw = replace(sw, errors=point_errors(sw.points, cfg, n_rules))
    return _portable(sw)


def sweep_task(params: ModelParams, alphas: Sequence[float], branch: str, config: SolverConfig,
               version: str | None = None, n_rules: int = 0) -> Task:
    """One sweep as a stored task; ``n_rules`` >= 2: its points' error bars from that many independent
    rules (a solve rule of one block, :func:`~attnphase.numerics.errors.quadrature_error.independent_rules`)."""
    identity = {"params": params.to_dict(), "alphas": list(alphas), "branch": branch, "config": config.as_dict(),
                "n_rules": int(n_rules)}
    return Task(task_key(sweep_job, identity, version or numerics_version()), f"omega={params.omega:g}", sweep_job,
                (params, sorted(alphas), branch, config, int(n_rules)))


def bayes_sweep_job(job: tuple[ModelParams, list[float], str]) -> list[dict]:
    """One Bayes-optimal branch over the alpha grid at one model (``sweep --estimator bayes-optimal``): the rows of
    :data:`~attnphase.numerics.se.bayes_curve.BAYES_SWEEP_COLUMNS`, each point with its error bars."""
    from attnphase.numerics.se.bayes import BayesModel
    from attnphase.numerics.se.bayes_curve import bayes_curve, sweep_row

    params, alphas, branch = job
    model, lin = BayesModel.of(params), eps_lin(params)
    return [sweep_row(p, model.rho0, lin) for p in bayes_curve(model, params.omega, alphas, (branch,))]


def bayes_sweep_task(params: ModelParams, alphas: Sequence[float], branch: str, version: str | None = None) -> Task:
    """One Bayes-optimal branch over ``alphas`` at ``params``' omega as a stored task (:func:`bayes_sweep_job`)."""
    identity = {"params": params.to_dict(), "alphas": [float(a) for a in alphas], "branch": branch,
                "estimator": "bayes-optimal"}
    return Task(task_key(bayes_sweep_job, identity, version or numerics_version()),
                f"{branch} omega={params.omega:g}", bayes_sweep_job, (params, [float(a) for a in alphas], branch))


def bayes_diagram_job(job: tuple[ModelParams, list[float]]) -> tuple[dict, dict, str]:
    """One omega of ``phase-diagram --estimator bayes-optimal``: the thresholds, the estimator's points over the alpha
    grid (:func:`~attnphase.numerics.se.bayes_curve.estimator_point`) and the rule's name."""
    from attnphase.numerics.phase.bayes_thresholds import bayes_thresholds
    from attnphase.numerics.se.bayes import BayesModel
    from attnphase.numerics.se.bayes_curve import bayes_rules, estimator_point

    params, alphas = job
    model = BayesModel.of(params)
    rules = bayes_rules(model)
    row = {"omega": float(params.omega), "estimator": "bayes-optimal", "eps_lin": eps_lin(params)}
    curve = [estimator_point(model, params.omega, a, rules) for a in alphas]
    points = [{"alpha": p.alpha, "branch": p.branch, "q": p.q0, "err_q": p.err_q0, "eps_g": p.eps_g,
               "err_eps_g": p.err_eps_g, "perfect_recovery": int(p.perfect)} for p in curve]
    return row | bayes_thresholds(model).as_dict(), {"points": points}, f"sign{rules.fine.order}"


def bayes_diagram_task(params: ModelParams, alphas: Sequence[float], version: str | None = None) -> Task:
    """One omega of the Bayes-optimal phase diagram as a stored task (:func:`bayes_diagram_job`)."""
    identity = {"params": params.to_dict(), "alphas": [float(a) for a in alphas], "estimator": "bayes-optimal",
                "job": "phase-diagram"}
    return Task(task_key(bayes_diagram_job, identity, version or numerics_version()), f"omega={params.omega:g}",
                bayes_diagram_job, (params, [float(a) for a in alphas]))


def census_check_job(job: tuple[ModelParams, float, SolverConfig, int]) -> dict:
    """:func:`~attnphase.numerics.phase.census.census_check` at (params, alpha) with ``n_rules`` rules: one row."""
    params, alpha, cfg, n_rules = job
    return census_check(params, alpha, config=cfg, n_rules=n_rules)


def census_task(params: ModelParams, alpha: float, config: SolverConfig, n_rules: int,
                version: str | None = None) -> Task:
    """The census at (params, alpha) -- ``phase-diagram --census`` at each omega's alpha_c."""
    identity = {"params": params.to_dict(), "alpha": float(alpha), "config": config.as_dict(), "n_rules": int(n_rules)}
    return Task(task_key(census_check_job, identity, version or numerics_version()), f"census omega={params.omega:g}",
                census_check_job, (params, float(alpha), config, int(n_rules)))


def boundaries_or_failure(outcome: Outcome, omega: float, r: int = 1, r_star: int = 1) -> Boundaries:
    """The task's Boundaries; for a failed task, NaN boundaries whose note is the task's error."""
    return outcome.value if outcome.ok else failed_boundaries(omega, outcome.reason, r, r_star)
