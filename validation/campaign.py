"""The ``attnphase validate`` campaign (docs/validation.md, "``validate``"): the simulations and theory of the
plan (:mod:`attnphase.validation.campaign_plan`: alpha sweep, heat map, finite-size scaling), each one task of the
execution layer (:mod:`attnphase.validation.jobs`), aggregated over seeds beside the theory
(:mod:`attnphase.validation.reference`), and the summary.

The overlaps change sign with ``Q -> -Q``, so rows compare ``|m|`` and ``|theta|`` with the theory's absolute
values: a semantic-init run with the semantic branch, a positional-init run with the positional one, a random-init
run with the branch most of its seeds landed on (:func:`landed_branch`).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from .agreement import all_runs_converged, mean_std
from .campaign_plan import ValidationPlan, _theory_jobs
from .experiments import SimResult
from .finite_size import chosen_fit
from .reference import TheoryAtOmega

OBSERVABLES = ("abs_m", "abs_theta", "q", "eps_g", "e_t", "eps_lin")
"""Aggregated per (d, alpha, omega, init): means and standard deviations over seeds."""


def seed_means(rs: Sequence[SimResult], observables: Sequence[str]) -> dict[str, float]:
    """``<obs>_mean`` and ``<obs>_std`` over the runs ``rs`` (ddof 1; NaN for one run) of each of ``observables``
    (``abs_<x>``: ``|x|``)."""
    out = {}
    for obs in observables:
        vals = [abs(getattr(r, obs[4:])) if obs.startswith("abs_") else float(getattr(r, obs)) for r in rs]
        out[f"{obs}_mean"], out[f"{obs}_std"] = mean_std(vals)
    return out


def landed_branch(r: SimResult) -> str:
    """``"positional"`` if ``|m| > |theta|`` else ``"semantic"`` (a coarse label of a finite-d endpoint)."""
    return "positional" if abs(r.m) > abs(r.theta) else "semantic"


def _theory_values(theory: TheoryAtOmega | None, branch: str, prox: str, alpha: float) -> dict[str, Any] | None:
    """The ``prox`` theory's point on ``branch`` at ``alpha`` (:meth:`BranchCurve.point`), None without one."""
    if theory is None or (branch, prox) not in theory.curves:
        return None
    return theory.curve(branch, prox).point(alpha, lambda rec: {
        "abs_m": abs(rec["m"]), "abs_theta": abs(rec["theta"]), "q": rec["q"], "eps_g": rec["eps_g"], "e_t": rec["e_t"],
        "eps_lin": rec["eps_lin"], "rule": rec.get("rule")})


def group_rows(results: Sequence[SimResult], theory: dict[float, TheoryAtOmega]) -> list[dict[str, Any]]:
    """Mean and std over seeds of :data:`OBSERVABLES` per (d, alpha, omega, init): ``n_runs``, ``n_converged``, the
    theory ``branch`` compared with, the largest final ``|grad R|/sqrt(d)`` and step count (``grad_norm_max``,
    ``steps_max``), ``<obs>_mean``, ``<obs>_std`` and ``theory`` = ``{prox: {obs: value, branch_reached,
    converged}}`` for the global, local and aligned maps (``None`` where the theory has no such curve)."""
    groups: dict[tuple, list[SimResult]] = {}
    for r in results:
        groups.setdefault((r.d, r.alpha, r.omega, r.init), []).append(r)
    rows = []
    for (d, alpha, omega, init), rs in sorted(groups.items()):
        labels = [landed_branch(r) for r in rs]
        branch = max(set(labels), key=labels.count) if init == "random" else init
        row: dict[str, Any] = {"d": d, "alpha": alpha, "omega": omega, "init": init, "n_runs": len(rs),
                               "n_converged": sum(r.converged for r in rs), "branch": branch,
                               "grad_norm_max": max(r.grad_norm for r in rs), "steps_max": max(r.steps for r in rs)}
        row.update(seed_means(rs, OBSERVABLES))
        th = theory.get(round(omega, 12))
        row["theory"] = {prox: _theory_values(th, branch, prox, alpha) for prox in ("global", "local", "aligned")}
        rows.append(row)
    return rows


def delta_et_rows(results: Sequence[SimResult], theory: dict[float, TheoryAtOmega]) -> list[dict[str, Any]]:
    """Paired ``Delta e_t = e_t(semantic) - e_t(positional)`` (same seed, hence same data) per (d, alpha, omega);
    the theory's where both branches exist (:func:`attnphase.validation.branch_segments.exists_at`)."""
    runs: dict[tuple, dict[str, float]] = {}
    for r in results:
        if r.init in ("semantic", "positional"):
            runs.setdefault((r.d, r.alpha, r.omega, r.seed), {})[r.init] = r.e_t
    groups: dict[tuple, list[float]] = {}
    for (d, alpha, omega, _), v in runs.items():
        if len(v) == 2:
            groups.setdefault((d, alpha, omega), []).append(v["semantic"] - v["positional"])
    rows = []
    for (d, alpha, omega), vals in sorted(groups.items()):
        mean, std = mean_std(vals)
        th = theory.get(round(omega, 12))
        theo = {}
        for prox in ("global", "local"):
            s, p = _theory_values(th, "semantic", prox, alpha), _theory_values(th, "positional", prox, alpha)
            ok = s is not None and p is not None and s["exists"] and p["exists"]
            theo[prox] = (s["e_t"] - p["e_t"]) if ok else None
        rows.append({"d": d, "alpha": alpha, "omega": omega, "n_pairs": len(vals),
                     "delta_e_t_mean": mean, "delta_e_t_std": std, "theory": theo})
    return rows


def run_campaign(plan: ValidationPlan, out_dir: str | Path, progress: bool = True, *,
                 executor: Any = None, store: Any = None, fresh: bool = False) -> dict[str, Any]:
    """Run the plan's theory (first: the longest) and simulations as tasks (:mod:`attnphase.validation.jobs`) on
    ``executor`` (default: this process), kept in ``store``; return the summary dict.  A failed simulation is
    recorded (``tasks``) and left out of the tables; a failed theory task raises (the report needs the theory)."""
    from attnphase.execution import ExecutorSpec, run_tasks
    from attnphase.execution.progress import TaskBar, failure_summary, task_counts

    from .jobs import simulation_task, simulation_version, theory_task, validation_version

    t0 = time.perf_counter()
    specs = list(dict.fromkeys(plan.sweep_specs() + plan.heat_specs() + plan.fss_specs()))  # each simulation once
    jobs, other_omegas = _theory_jobs(plan)
    version, sim_version = validation_version(), simulation_version()  # a numerics edit keeps the stored runs
    tasks = [theory_task(j, version) for j in jobs] + [simulation_task(s, sim_version) for s in specs]
    with TaskBar("validate (theory + simulations)", quiet=not progress) as bar:
        outs = run_tasks(tasks, executor=executor or ExecutorSpec(), store=store, fresh=fresh,
                         version=f"theory {version}, simulations {sim_version}", progress=bar)
    theory_outs, sim_outs = outs[:len(jobs)], outs[len(jobs):]
    failed_theory = [o for o in theory_outs if not o.ok]
    if failed_theory:
        raise RuntimeError(f"theory task failed: {failed_theory[0].label}: {failed_theory[0].reason}")
    theories = [o.value for o in theory_outs]
    results: list[SimResult] = [o.value for o in sim_outs if o.ok]
    counts = {**task_counts(outs), "failures": failure_summary(outs)}
    cached_before = [o.status == "stored" for o in theory_outs]

    theory_main = theories[0]
    theory_heat = {plan.params.omega: theory_main, **dict(zip(other_omegas, theories[1:]))}
    theory_by_omega = {round(plan.params.omega, 12): theory_main}
    sweep_runs = [r for r in results if r.d == plan.d and r.omega == plan.params.omega and r.alpha in plan.alphas
                  and r.seed in plan.seeds]
    heat_runs = [r for r in results if r.d == plan.d and r.alpha in plan.heat_alphas and r.omega in plan.heat_omegas
                 and r.init != "random" and r.seed in plan.heat_seeds]
    fss_runs = [r for r in results if r.d in plan.fss_ds and (r.alpha, r.init) in plan.fss_cases
                and r.omega == plan.params.omega and r.seed in plan.fss_seeds]
    fss_rows = group_rows(fss_runs, theory_by_omega)
    return {
        "plan": plan.to_dict(),
        "wall_seconds": time.perf_counter() - t0,
        "simulation_seconds": sum(o.seconds for o in sim_outs if o.ok),
        # measured in each task (its process's CPU time): a task's wall time is longer on a busy machine
        "simulation_cpu_seconds": sum(r.cpu_seconds for r in results),
        "theory_seconds": sum(t.seconds for t, cached in zip(theories, cached_before) if not cached),
        "theory_cpu_seconds": sum(t.cpu_seconds for t, cached in zip(theories, cached_before) if not cached),
        "theory_jobs_cached": sum(cached_before),
        "tasks": counts,
        "code_version": version,
        "all_converged": all(r.converged for r in results) and not counts["failed"],
        "n_simulations": len(results),
        "theory": theory_main.to_dict(),
        "heat_theory": [theory_heat[w].to_dict() for w in sorted(theory_heat) if w in plan.heat_omegas],
        "alpha_c_curve": [alpha_c_point(theory_heat[w]) for w in sorted(theory_heat)],
        "sweep": group_rows(sweep_runs, theory_by_omega),
        "delta_e_t": delta_et_rows(sweep_runs, theory_by_omega),
        "heat": delta_et_rows(heat_runs, {}),
        "finite_size": fss_rows,
        "finite_size_fits": _fss_fits(plan, fss_rows),
        "runs": [r.to_dict() for r in results],
    }


def alpha_c_point(theory: TheoryAtOmega) -> dict[str, Any]:
    """One point of the alpha_c(omega) curve: ``{omega, alpha_c, prox, notes}`` (global prox where computed)."""
    prox = "global" if "global" in theory.alpha_c else next(iter(theory.alpha_c))
    ac = theory.alpha_c[prox]
    return {"omega": theory.omega, "alpha_c": ac if math.isfinite(ac) else None, "prox": prox,
            "notes": list(theory.notes.get(prox, ()))}


def _fss_fits(plan: ValidationPlan, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Extrapolation to d -> inf of each (alpha, init, observable) of the finite-size runs (the form the data choose,
    :func:`attnphase.validation.finite_size.chosen_fit`), over the dimensions whose every run reached the gradient
    tolerance (the others: ``dropped_d``)."""
    fits = []
    for alpha, init in plan.fss_cases:
        case = sorted((r for r in rows if r["alpha"] == alpha and r["init"] == init), key=lambda r: r["d"])
        sel = [r for r in case if all_runs_converged(r)]
        if len(sel) < 3:
            continue
        dropped = [r["d"] for r in case if not all_runs_converged(r)]
        for obs in ("abs_m", "abs_theta", "eps_g", "e_t"):
            fit = chosen_fit([r["d"] for r in sel], [r[f"{obs}_mean"] for r in sel],
                             [r[f"{obs}_std"] for r in sel], [r["n_runs"] for r in sel])
            points = {prox: sel[-1]["theory"].get(prox) or {} for prox in ("global", "local", "aligned")}
            theo = {prox: pt.get(obs) if pt.get("converged") else None for prox, pt in points.items()}
            theo_se = {prox: pt.get(f"err_{obs}") if pt.get("converged") else None for prox, pt in points.items()}
            fits.append({"alpha": alpha, "init": init, "observable": obs, **fit, "theory": theo,
                         "theory_se": theo_se, "dropped_d": dropped})
    return fits


def run_validation(plan: ValidationPlan, out_dir: str | Path, progress: bool = True, *,
                   executor: Any = None, store: Any = None, fresh: bool = False, command: str = "") -> dict[str, Any]:
    """Run the campaign and write ``report.md``, ``summary.json``, ``validation.nc`` and the figures into ``out_dir``;
    returns the summary with its ``headline``, as ``summary.json`` holds it."""
    from attnphase.execution.dataset import job_attrs, write_netcdf
    from attnphase.numerics.config import SolverConfig

    from .jobs import validation_dataset
    from .report import write_report

    out = Path(out_dir)
    summary = run_campaign(plan, out, progress=progress, executor=executor, store=store, fresh=fresh)
    summary["bayes_optimal"] = bayes_optimal_section(plan, summary["theory"], progress)
    summary["command"] = command  # the report names the command that made it
    summary = write_report(summary, out)  # with its headline (the verdicts, the map GD follows), as in summary.json
    results = [SimResult(**r) for r in summary["runs"]]
    theories = [TheoryAtOmega.from_dict(t) for t in [summary["theory"]] + [
        h for h in summary["heat_theory"] if h["omega"] != summary["theory"]["omega"]]]
    attrs = job_attrs("validate", version=summary["code_version"], model=plan.params.to_dict(),
                      solver=asdict(plan.theory), rule=SolverConfig().quadrature, command=command,
                      plan=plan.to_dict(),
                      title=f"Gradient descent at finite d against the state evolution (d = {plan.d})")
    write_netcdf(validation_dataset(results, theories, attrs), out / "validation.nc")
    return summary


def bayes_optimal_section(plan: ValidationPlan, theory: dict[str, Any], progress: bool = True) -> dict[str, Any]:
    """AMP at finite d against the Bayes-optimal state evolution and ERM against the BO error (the report's
    section, :mod:`attnphase.validation.amp_validation`); AMP on the plan's device, with its d and seeds
    (:func:`~attnphase.validation.amp_validation.validation_amp_plan`).  ``{"skipped":
    reason}`` where the model is one AMP does not run on
    (:func:`~attnphase.validation.amp_run.amp_unsupported`)."""
    from .amp_run import amp_unsupported
    from .amp_validation import erm_against_bayes, run_amp_plan, validation_amp_plan

    if why := amp_unsupported(plan.params):
        return {"skipped": why}
    say = (lambda line: print(f"  {line}", file=sys.stderr, flush=True)) if progress else None
    device = "cpu" if plan.device == "auto" else plan.device
    amp = run_amp_plan(validation_amp_plan(plan, device), say)
    return {"amp": amp, "erm": erm_against_bayes(theory, plan.params)}
