"""The ``validate`` campaign as tasks of the execution layer, and its dataset ``validation.nc``.

One task per simulation (a :class:`~attnphase.validation.experiments.SimSpec`) and one per theory omega
(:func:`~attnphase.validation.reference.theory_at_omega`); keys hash the spec (or the theory job) and the code of
the theory, numerics and validation layers.  The dataset: :func:`validation_dataset`.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict
from typing import Any, Sequence

import numpy as np

from attnphase.execution import Task, code_version, task_key
from attnphase.execution.dataset import Variable, annotate
from attnphase.numerics.jobs.tasks import PRESENTATION  # the theory's and numerics' modules no task runs

from .experiments import SimResult, SimSpec, run_simulation
from .reference import TheoryAtOmega, theory_at_omega

#: The layers a validation task runs: a theory task the theory, the numerics and, of validation, the modules its
#: function runs (:data:`THEORY_TASK_MODULES` and what they import: :func:`~attnphase.execution.tasks.import_closure`);
#: a simulation the theory and the modules :func:`run_simulation` runs: it imports nothing of the numerics.  Neither
#: imports the suites that plan and report the runs, so a change there leaves the stored tasks valid.
VALIDATION_CODE = ("attnphase.theory", "attnphase.numerics")
SIMULATION_CODE = ("attnphase.theory",)
#: The modules of the theory tasks' functions (:func:`theory_job`, the rank-r and aligned solves of the general suite).
THEORY_TASK_MODULES = ("attnphase.validation.jobs", "attnphase.validation.invariant_points",
                       "attnphase.validation.basin_theory")
RUN_OBSERVABLES = ("m", "theta", "q", "eps_g", "e_t", "eps_lin")


def validation_version() -> str:
    """The code version of the theory tasks' keys (:data:`VALIDATION_CODE`, :data:`THEORY_TASK_MODULES`)."""
    return code_version(*VALIDATION_CODE, exclude=PRESENTATION, closure=(THEORY_TASK_MODULES, "attnphase.validation"))


def simulation_version() -> str:
    """The code version of the simulation tasks' keys (:data:`SIMULATION_CODE`)."""
    return code_version(*SIMULATION_CODE, exclude=PRESENTATION, closure=(run_simulation.__module__,
                                                                         "attnphase.validation"))


def simulation_task(spec: SimSpec, version: str) -> Task:
    """One gradient-descent run, keyed by its spec and ``version`` (:func:`simulation_version`)."""
    identity = asdict(spec) | {"params": spec.params.to_dict()}
    label = f"d={spec.d} alpha={spec.alpha:g} omega={spec.params.omega:g} {spec.init} seed {spec.seed}"
    return Task(task_key(run_simulation, identity, version), label, run_simulation, spec)


def theory_job(job: tuple[Any, ...]) -> TheoryAtOmega:
    """theory_at_omega(params, alphas, boundaries, extra_curves, settings)."""
    return theory_at_omega(*job)


def theory_task(job: tuple[Any, ...], version: str) -> Task:
    params, alphas, boundaries, extra, settings = job
    identity = {"params": params.to_dict(), "alphas": list(alphas), "boundaries": list(boundaries),
                "extra_curves": [list(c) for c in extra], "settings": asdict(settings)}
    return Task(task_key(theory_job, identity, version), f"theory omega={params.omega:g}", theory_job, tuple(job))


def validation_dataset(results: Sequence[SimResult], theories: Sequence[TheoryAtOmega], attrs: dict[str, Any]):
    """The runs on ``(d, omega, alpha, init, seed)`` (m, theta, q, eps_g with its test-set standard error, e_t,
    eps_lin, converged, steps), their seed means with the standard errors ``err_<obs>``, and the theory on
    ``(omega, alpha, branch, prox)`` with its error bars ``err_theory_<obs>`` where computed (NaN elsewhere)."""
    import xarray as xr

    axes = {k: sorted({getattr(r, k) for r in results}) for k in ("d", "omega", "alpha", "init", "seed")}
    pos = {k: {v: i for i, v in enumerate(vals)} for k, vals in axes.items()}
    shape = tuple(len(v) for v in axes.values())
    runs = {k: np.full(shape, np.nan) for k in RUN_OBSERVABLES + ("eps_g_se", "steps")}
    conv = np.full(shape, np.nan)  # NaN: no run in the cell (the axes are the union of the runs' coordinates)
    for r in results:
        at = tuple(pos[k][getattr(r, k)] for k in axes)
        for k in runs:
            runs[k][at] = getattr(r, k)
        conv[at] = float(r.converged)
    dims = tuple(axes)
    dv: dict[str, Any] = {f"run_{k}": (dims, v) for k, v in runs.items() if k != "eps_g_se"}
    dv["err_run_eps_g"] = (dims, runs["eps_g_se"])  # the one form of an error bar: err_<name>
    dv["run_converged"] = (dims, conv)
    n = np.isfinite(runs["eps_g"]).sum(axis=-1)
    for k in RUN_OBSERVABLES:
        v = np.abs(runs[k]) if k in ("m", "theta") else runs[k]
        with np.errstate(invalid="ignore", divide="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a cell without runs: NaN, as meant
            mean = np.nanmean(np.where(np.isfinite(v), v, np.nan), axis=-1) if v.size else v
            std = np.nanstd(v, axis=-1, ddof=1) if v.size else v
            err = np.where(n > 1, std / np.sqrt(np.maximum(n, 1)), np.nan)
        name = f"abs_{k}" if k in ("m", "theta") else k
        dv[name] = (dims[:-1], mean)
        dv[f"err_{name}"] = (dims[:-1], err)
    dv["n_runs"] = (dims[:-1], n.astype(np.int32))
    th_om = sorted({t.omega for t in theories})
    th_alpha = sorted({rec["alpha"] for t in theories for c in t.curves.values() for rec in c.records})
    branches, proxes = ["semantic", "positional"], ["global", "local", "aligned"]
    names = ("m", "theta", "q", "eps_g", "e_t")
    th = {k: np.full((len(th_om), len(th_alpha), len(branches), len(proxes)), np.nan)
          for k in names + tuple(f"err_{k}" for k in names)}
    ai = {a: i for i, a in enumerate(th_alpha)}
    alpha_c, err_alpha_c = np.full((len(th_om), len(proxes)), np.nan), np.full((len(th_om), len(proxes)), np.nan)
    for t in theories:
        i = th_om.index(t.omega)
        alpha_c[i] = [t.alpha_c.get(prox, np.nan) for prox in proxes]
        err_alpha_c[i] = [t.err_alpha_c.get(prox, np.nan) for prox in proxes]
        for (branch, prox), c in t.curves.items():
            if branch not in branches or prox not in proxes:
                continue
            for rec in c.records:
                if rec.get("converged") and rec.get("branch") == branch:
                    for k in th:
                        th[k][i, ai[rec["alpha"]], branches.index(branch), proxes.index(prox)] = rec.get(k, np.nan)
    coords = axes | {"theory_omega": th_om, "theory_alpha": th_alpha, "branch": branches, "prox": proxes}
    dv.update({f"err_theory_{k[4:]}" if k.startswith("err_") else f"theory_{k}":
               (("theory_omega", "theory_alpha", "branch", "prox"), v) for k, v in th.items()})
    dv["theory_alpha_c"] = (("theory_omega", "prox"), alpha_c)
    dv["err_theory_alpha_c"] = (("theory_omega", "prox"), err_alpha_c)
    coords["init"] = np.array(coords["init"], dtype=object)
    return annotate(xr.Dataset(dv, coords=coords, attrs=attrs), validation_variable)


def validation_variable(name: str) -> Variable | None:
    """The variables of ``validation.nc``: each run's measurement (``run_X``), the seed means (``X``,
    ``abs_m``, ``abs_theta``) with their standard errors (``err_X``), the theory (``theory_X``); long
    names and units from :mod:`attnphase.numerics.jobs.variables`."""
    from attnphase.numerics.jobs.variables import lookup

    fixed = {
        "d": Variable("d", "dimension d of the simulated model"),
        "init": Variable("init", "initialisation of gradient descent", None),
        "seed": Variable("seed", "random seed of the run"),
        "theory_omega": Variable("theory_omega", "omega of the theory curves"),
        "theory_alpha": Variable("theory_alpha", "alpha of the theory curves"),
        "branch": Variable("branch", "branch of the state evolution", None),
        "prox": Variable("prox", "proximal map of the state evolution (global minimiser; local from h = 0; aligned: lowest minimiser on the side of the mean field)", None),
        "err_run_eps_g": Variable("err_run_eps_g", "standard error of the run's test error from its finite test set",
                                  comment="from the run's finite test set"),
        "run_steps": Variable("run_steps", "gradient-descent steps of the run"),
        "run_converged": Variable("run_converged", "1 where the run's gradient descent converged, 0 where it did "
                                  "not; NaN where no run was made"),
        "n_runs": Variable("n_runs", "number of runs (seeds) with a finite test error",
                           comment="every run at the cell: the sweep's and the finite-size study's seeds"),
        "theory_alpha_c": Variable("theory_alpha_c", "state-evolution alpha_c"),
        "err_theory_alpha_c": Variable("err_theory_alpha_c", "standard error of state-evolution alpha_c",
                                       comment="over the scrambling blocks of the rules (docs/method.md section 7); "
                                       "NaN where none was made"),
    }
    if name in fixed:
        return fixed[name]
    if name.startswith("err_theory_"):
        of = validation_variable(name[4:])
        return Variable(name, f"standard error of {of.long_name}", of.units,
                        "over the scrambling blocks of the rule; NaN where not computed (only at the finite-size "
                        "alphas)") if of else None
    if name.startswith("err_"):
        of = validation_variable(name[4:])
        return Variable(name, f"standard error of {of.long_name}", of.units, "over the seeds") if of else None
    for prefix, what in (("run_", "{} of the run"), ("theory_", "state-evolution {}"), ("abs_", "|{}|, mean over seeds")):
        if name.startswith(prefix):
            base = lookup(name[len(prefix):])
            if base is not None:
                comment = ("NaN: no fixed point on that branch" if prefix == "theory_" else
                           SEED_MEANS if prefix == "abs_" else "")
                return Variable(name, what.format(base.long_name), base.units, comment)
    base = lookup(name)
    if base is not None and name in RUN_OBSERVABLES:
        return Variable(name, f"{base.long_name}, mean over seeds", base.units, SEED_MEANS)
    return base


#: What the dataset's seed means are over, against report.md's and summary.json's tables.
SEED_MEANS = ("over every run at the cell (n_runs): the sweep's seeds and, where the finite-size study runs the same "
              "(d, alpha, start), its seeds too; report.md's and summary.json's sweep rows are over the sweep's "
              "--seeds alone, its finite-size rows over the study's")
