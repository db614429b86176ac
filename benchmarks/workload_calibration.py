"""Re-measure the per-task CPU costs of ``attnphase/workload.py`` (the constants its estimates are made from).

    nice -n 10 .venv/bin/python benchmarks/workload_calibration.py            # simulations, histogram, one solve
    nice -n 10 .venv/bin/python benchmarks/workload_calibration.py --only sim --json

Every time is CPU seconds of this process (``time.process_time``: every thread of it, so a busy machine hardly
moves it), with one torch thread (``--threads``), as a ``validate``/``histogram`` task runs on one worker.  It prints each
measurement and the fitted constants:

* a gradient-descent simulation (``attnphase.validation.experiments.run_simulation``) at a few (d, alpha), three
  starts each: least squares of ``cpu = SIMULATION_FIXED_SECONDS + SIMULATION_SECONDS_D1000_ALPHA2 * (alpha / 2)
  * (d / 1000)^2`` (the same law as :func:`attnphase.workload.simulation_seconds`);
* a histogram experiment (``run_experiment``) at the quick configuration's model with fewer samples and epochs, at
  three epoch counts after a warm-up run (torch's first calls cost about a second: timed in the first run they
  halved the slope): least squares, the slope is ``HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH`` (per sample and epoch), the
  intercept over the trainings ``HISTOGRAM_FIXED_SECONDS`` (data, scores, attention maps);
* one state-evolution solve at L = 2 on the default rules (``SECONDS_PER_SOLVE``);
* ``--only boundaries``: the scalar form's boundaries task (``phase-diagram``'s and ``scan``'s, one omega, the default
  grid and rules) at omega 0, 0.15, 0.3, 0.45 (``BOUNDARIES_TASK_SECONDS``, their mean) and at 0.3 with the whole
  positional branch the curves' figure takes (``CURVES_BRANCH_SECONDS``, the difference);
* ``--only workers``: a local Dask cluster of 2 workers importing a task's modules and running nothing else
  (``WORKER_START_SECONDS``, per worker), then idle 1 s and 25 s (``CLUSTER_SECONDS_PER_WALL_SECOND``, per worker);
* ``--only rank2``: the rank-2 boundaries at one omega (``phase-diagram --rank 2``'s task,
  :func:`~attnphase.numerics.phase.lowest_branch.lowest_branch_boundaries`), its censuses and its solves counted and
  timed: ``RANK2_CENSUS_SECONDS`` (one census of the continuation), ``RANK2_SOLVE_SECONDS`` (one solve along a branch, with its share of the block
  re-solves of the error bars and separations), ``RANK2_SOLVES_PER_ALPHA`` (solves at the grid's points per grid point: the branches followed) and
  ``RANK2_SOLVES_OFF_GRID`` (the ends' bisections and the boundaries' root searches), the terms of
  :func:`attnphase.workload.matrix_boundaries_task_seconds`.  Default: omega 0.3, the default alpha grid and rule
  (~15 CPU min); ``--quadrature sobol8:4`` for a cheap look (its counts, not its seconds, carry over);
* ``--only bayes``: the Bayes-optimal tasks (``sweep --estimator bayes-optimal``: one branch at one omega;
  ``phase-diagram --estimator bayes-optimal``: one omega) at L = 2, 3, 4 on 1 and 21 alphas (after a warm-up task):
  per task a fixed part (the two rules' curves alpha*(q0), eps_lin: ``BAYES_TASK_SECONDS``) and a part per alpha
  (``BAYES_POINT_SECONDS``), both branches' mean; and the command's own CPU besides its tasks (``BAYES_COMMAND_SECONDS``:
  ``attnphase sweep --estimator bayes-optimal --alpha 0.5 --branch informative --workers 1`` in a child process,
  less its one task; ``BAYES_DIAGRAM_COMMAND_SECONDS``: ``phase-diagram ... --omega 0.3 --alpha 0.4,0.6`` the same,
  its figure included), the terms of :func:`attnphase.workload.bayes_task_seconds`; and this machine's ratio to the
  stated estimate (the tests compare the law's shape only, not a machine's speed).  About 1 CPU min.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _cpu(fn):
    c0 = time.process_time()
    out = fn()
    return time.process_time() - c0, out


def simulations(ds=(100, 200, 300), alphas=(0.5, 2.0), inits=("semantic", "positional", "random")) -> dict:
    from attnphase.validation.experiments import SimSpec, run_simulation

    run_simulation(SimSpec(d=40, alpha=0.5, init="semantic", device="cpu"))  # warm-up: imports, first kernels
    rows = []
    for d in ds:
        for a in alphas:
            for init in inits:
                cpu, r = _cpu(lambda: run_simulation(SimSpec(d=d, alpha=a, init=init, device="cpu")))
                rows.append({"d": d, "alpha": a, "init": init, "cpu": cpu, "steps": r.steps})
                print(f"simulation d={d} alpha={a} {init:10s}: {cpu:6.2f} CPU s, {r.steps} steps", flush=True)
    x = np.array([r["alpha"] / 2 * (r["d"] / 1000) ** 2 for r in rows])
    y = np.array([r["cpu"] for r in rows])
    (fixed, per), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y, rcond=None)
    print(f"fit: SIMULATION_FIXED_SECONDS = {fixed:.3g}, SIMULATION_SECONDS_D1000_ALPHA2 = {per:.3g}", flush=True)
    return {"rows": rows, "SIMULATION_FIXED_SECONDS": fixed, "SIMULATION_SECONDS_D1000_ALPHA2": per}


def histogram(n_samples=2000, epochs=(2, 4, 6)) -> dict:
    import dataclasses

    import torch

    from attnphase.validation.histogram.experiment import HistogramConfig, run_experiment

    base = dataclasses.replace(HistogramConfig.quick(), n_samples=n_samples, reparam_epochs=1)
    run_experiment(dataclasses.replace(base, epochs=1), 0, torch.device("cpu"))  # warm-up: torch's first calls
    rows = []
    for e in epochs:
        cfg = dataclasses.replace(base, epochs=e)
        cpu, _ = _cpu(lambda: run_experiment(cfg, 0, torch.device("cpu")))
        n_restricted = sum(v != "both" for v in cfg.variants)
        sample_epochs = n_samples * (e * len(cfg.variants) + cfg.reparam_epochs * n_restricted)
        rows.append({"n_samples": n_samples, "epochs": e, "sample_epochs": sample_epochs, "cpu": cpu})
        print(f"histogram {n_samples} samples x {e} epochs: {cpu:6.2f} CPU s ({sample_epochs} sample-epochs)", flush=True)
    x = np.array([r["sample_epochs"] for r in rows], float)
    y = np.array([r["cpu"] for r in rows])
    (fixed, per), *_ = np.linalg.lstsq(np.stack([np.ones_like(x), x], 1), y, rcond=None)
    trainings = len(base.variants) + sum(v != "both" for v in base.variants)
    print(f"fit: HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH = {per:.3g}, HISTOGRAM_FIXED_SECONDS = {fixed / trainings:.3g} "
          f"(the experiment's fixed part {fixed:.3g} CPU s over its {trainings} trainings)", flush=True)
    return {"rows": rows, "HISTOGRAM_SECONDS_PER_SAMPLE_EPOCH": per, "HISTOGRAM_FIXED_SECONDS": fixed / trainings}


def solve_once(alphas=(1.0, 1.5, 2.0)) -> dict:
    from attnphase.numerics import solve
    from attnphase.theory import ModelParams

    solve(ModelParams(omega=0.3), alpha=2.0, branch="semantic")  # warm-up: kernels
    cpus = []
    for a in alphas:
        for branch in ("semantic", "positional"):
            cpu, _ = _cpu(lambda: solve(ModelParams(omega=0.3), alpha=a, branch=branch))
            cpus.append(cpu)
            print(f"solve alpha={a} {branch:10s}: {cpu:6.2f} CPU s", flush=True)
    print(f"fit: SECONDS_PER_SOLVE = {np.mean(cpus):.3g}", flush=True)
    return {"cpu": cpus, "SECONDS_PER_SOLVE": float(np.mean(cpus))}


def rank2(omega: float = 0.3, alphas: str = "0.1:3:12", quadrature: str | None = None) -> dict:
    """The rank-2 boundaries at one omega with every census and solve of the search counted and timed (CPU)."""
    import attnphase.numerics.phase.census_continuation as cc
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.grids import even_grid
    from attnphase.numerics.phase.lowest_branch import lowest_branch_boundaries
    from attnphase.theory import ModelParams

    start, stop, num = alphas.split(":")
    grid = even_grid(start, stop, int(num))  # the command's grid, float for float
    on_grid = set(grid)
    params = ModelParams(omega=omega, r=2, r_star=1)
    cfg = SolverConfig() if quadrature is None else SolverConfig(quadrature=quadrature)
    tally = {"census": [0, 0.0], "solve_grid": [0, 0.0], "solve_off": [0, 0.0]}

    def counted(fn, kind):
        def wrapped(*a, **k):
            c0 = time.process_time()
            try:
                return fn(*a, **k)
            finally:
                alpha = float(a[1]) if len(a) > 1 else float(k.get("alpha", np.nan))
                which = kind if kind == "census" else ("solve_grid" if alpha in on_grid else "solve_off")
                tally[which][0] += 1
                tally[which][1] += time.process_time() - c0
        return wrapped

    saved = (cc.search, cc.solve)
    cc.search, cc.solve = counted(cc.search, "census"), counted(cc.solve, "solve")
    try:
        cpu, b = _cpu(lambda: lowest_branch_boundaries(params, grid, cfg))
    finally:
        cc.search, cc.solve = saved
    (nc, tc), (ng, tg), (no, to) = tally["census"], tally["solve_grid"], tally["solve_off"]
    ns = ng + no
    out = {"omega": omega, "alphas": alphas, "quadrature": cfg.quadrature, "cpu": cpu, "censuses": nc,
           "census_cpu": tc, "solves_on_grid": ng, "solves_off_grid": no, "solve_cpu": tg + to,
           "other_cpu": cpu - tc - tg - to, "alpha_c": b.alpha_c, "alpha_l": b.alpha_l,
           "RANK2_CENSUS_SECONDS": tc / max(nc, 1),
           # the block re-solves (error bars, separations; not counted one by one here) ride on the solves' term
           "RANK2_SOLVE_SECONDS": (cpu - tc) / max(ns, 1),
           "RANK2_SOLVES_PER_ALPHA": ng / len(grid), "RANK2_SOLVES_OFF_GRID": no}
    print(f"rank-2 boundaries omega={omega} alphas={alphas} {cfg.quadrature}: {cpu:.1f} CPU s; {nc} censuses "
          f"{tc:.1f} s, {ng} solves at grid points and {no} off the grid {tg + to:.1f} s, the rest {out['other_cpu']:.1f} s "
          f"(alpha_c {b.alpha_c:.4g}, alpha_l {b.alpha_l:.4g})", flush=True)
    print("fit: " + ", ".join(f"{k} = {out[k]:.3g}" for k in ("RANK2_CENSUS_SECONDS", "RANK2_SOLVE_SECONDS",
                                                             "RANK2_SOLVES_PER_ALPHA", "RANK2_SOLVES_OFF_GRID")), flush=True)
    return out


def boundaries(omegas: str = "0,0.15,0.3,0.45") -> dict:
    """The scalar form's boundaries task at a few omegas on the default grid and rules (``phase-diagram``'s and
    ``scan``'s task), and at omega 0.3 again with the whole positional branch that the curves' omega follows."""
    from attnphase.numerics.config import SolverConfig
    from attnphase.numerics.jobs.tasks import prepare_kernels
    from attnphase.numerics.grids import even_grid
    from attnphase.numerics.phase.boundaries import BoundariesSpec, boundaries_job
    from attnphase.theory import ModelParams

    grid, cfg = tuple(even_grid("0.1", "3", 12)), SolverConfig()
    prepare_kernels(ModelParams(omega=0.3), cfg)  # the kernels, as a job makes them before its tasks
    cpus = {}
    for w in (float(x) for x in omegas.split(",")):
        cpus[w], _ = _cpu(lambda: boundaries_job(BoundariesSpec(ModelParams(omega=w), grid, cfg, False)))
        print(f"boundaries omega={w:g}: {cpus[w]:.1f} CPU s", flush=True)
    whole, _ = _cpu(lambda: boundaries_job(BoundariesSpec(ModelParams(omega=0.3), grid, cfg, True)))
    print(f"boundaries omega=0.3 with the whole positional branch: {whole:.1f} CPU s", flush=True)
    mean = float(np.mean(list(cpus.values())))
    extra = whole - cpus.get(0.3, mean)
    print(f"fit: BOUNDARIES_TASK_SECONDS = {mean:.3g} (the mean), CURVES_BRANCH_SECONDS = {extra:.3g}", flush=True)
    return {"cpu": cpus, "whole": whole, "BOUNDARIES_TASK_SECONDS": mean, "CURVES_BRANCH_SECONDS": extra}


def bayes(Ls=(2, 3, 4), n_alphas: int = 21) -> dict:
    """The Bayes-optimal tasks' CPU: fixed per task and per alpha, by L (sweep: both branches' mean; diagram: one
    omega), and the command's own part (a child process's CPU less its one task's)."""
    import resource
    import subprocess
    import sys
    import tempfile
    import warnings

    from attnphase import workload
    from attnphase.numerics.jobs.tasks import bayes_diagram_job, bayes_sweep_job
    from attnphase.theory import ModelParams

    out: dict = {"BAYES_TASK_SECONDS": {}, "BAYES_POINT_SECONDS": {}}
    for L in Ls:
        p = ModelParams(omega=0.3, L=L)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eps_lin's note at L = 4
            bayes_sweep_job((p, [1.0], "informative"))  # warm-up: imports, the rules' nodes
            cpus = {}
            for n in (1, n_alphas):
                alphas = [float(a) for a in np.linspace(0.05, 1.5, n)]
                sweep = [_cpu(lambda: bayes_sweep_job((p, alphas, br)))[0] for br in ("informative", "uninformative")]
                cpus[n] = (float(np.mean(sweep)), _cpu(lambda: bayes_diagram_job((p, alphas)))[0])
        per = [(cpus[n_alphas][k] - cpus[1][k]) / (n_alphas - 1) for k in (0, 1)]
        fixed = [cpus[1][k] - per[k] for k in (0, 1)]
        print(f"bayes L={L}: sweep task {cpus[1][0]:.3f} / {cpus[n_alphas][0]:.3f} CPU s at 1 / {n_alphas} alphas, "
              f"diagram task {cpus[1][1]:.3f} / {cpus[n_alphas][1]:.3f}: fixed {fixed[0]:.3g} / {fixed[1]:.3g}, per alpha "
              f"{per[0]:.3g} / {per[1]:.3g}", flush=True)
        out["BAYES_TASK_SECONDS"][L] = max(fixed)
        out["BAYES_POINT_SECONDS"][L] = max(per)
    for key, argv, n in (("BAYES_COMMAND_SECONDS", ["sweep", "--branch", "informative", "--alpha", "0.5"], 1),
                         ("BAYES_DIAGRAM_COMMAND_SECONDS", ["phase-diagram", "--omega", "0.3", "--alpha", "0.4,0.6"], 2)):
        with tempfile.TemporaryDirectory() as tmp:
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([sys.executable, "-m", "attnphase", *argv, "--estimator", "bayes-optimal",
                            "--workers", "1", "--quiet", "--out", tmp], check=True, capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
        child = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
        out[key] = child - out["BAYES_TASK_SECONDS"][2] - n * out["BAYES_POINT_SECONDS"][2]
        print(f"bayes {argv[0]}: {child:.2f} CPU s for one task of {n} alpha(s) at L = 2 (user + system), its own part "
              f"{out[key]:.2f}", flush=True)
    print("fit: " + ", ".join(f"{k} = {out[k]}" for k in ("BAYES_TASK_SECONDS", "BAYES_POINT_SECONDS",
                                                         "BAYES_COMMAND_SECONDS", "BAYES_DIAGRAM_COMMAND_SECONDS")),
          flush=True)
    for L in Ls:  # this machine against the stated constants (the reference machine's): what its users should expect
        ratio = (out["BAYES_TASK_SECONDS"][L] + n_alphas * out["BAYES_POINT_SECONDS"][L]) / workload.bayes_task_seconds(
            n_alphas, L)
        print(f"bayes L={L}: a task of {n_alphas} alphas takes {ratio:.2f}x the stated estimate on this machine",
              flush=True)
    return out


def workers(n: int = 2) -> dict:
    """CPU seconds of a local Dask cluster of ``n`` workers that each import what a job's task imports (the numerics
    of a phase-diagram task; torch and the histogram for a histogram or validate task) and run nothing else: this
    process and its reaped children (``resource.getrusage``), per worker."""
    import functools
    import resource

    from attnphase.execution import map_tasks

    def cpu_all() -> float:
        me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime

    out = {}
    for what, code in (("numerics", "import attnphase.numerics.phase.boundaries, attnphase.numerics.jobs.tasks"),
                       ("torch", "import torch, attnphase.validation.histogram.jobs, attnphase.validation.experiments")):
        c0 = cpu_all()
        map_tasks(functools.partial(exec, code), [{}] * n, n)
        cpu = cpu_all() - c0
        out[what] = cpu / n
        print(f"a local cluster of {n} workers importing {what}: {cpu:.1f} CPU s, {cpu / n:.2g} per worker", flush=True)
    walls = {}
    for sleep in (1, 25):  # the cluster's own CPU while it runs: the same cluster idle for longer
        c0, w0 = cpu_all(), time.perf_counter()
        map_tasks(functools.partial(exec, f"import time; time.sleep({sleep})"), [{}] * n, n)
        walls[sleep] = (cpu_all() - c0, time.perf_counter() - w0)
        print(f"a local cluster of {n} workers sleeping {sleep} s: {walls[sleep][0]:.2f} CPU s in "
              f"{walls[sleep][1]:.1f} s wall", flush=True)
    rate = (walls[25][0] - walls[1][0]) / (walls[25][1] - walls[1][1]) / n
    print(f"fit: WORKER_START_SECONDS = {max(out.values()):.2g} (the larger), CLUSTER_SECONDS_PER_WALL_SECOND = "
          f"{rate:.2g}", flush=True)
    return {"per_worker": out, "WORKER_START_SECONDS": max(out.values()), "CLUSTER_SECONDS_PER_WALL_SECOND": rate}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", choices=("sim", "histogram", "solve", "rank2", "workers", "boundaries", "bayes"), action="append")
    ap.add_argument("--omega", type=float, default=0.3, help="rank2: the omega (default 0.3)")
    ap.add_argument("--alpha", default="0.1:3:12", help="rank2: the alpha grid START:STOP:NUM (default 0.1:3:12)")
    ap.add_argument("--quadrature", default=None, help="rank2: the solve rule (default: the default rule)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as validate's and histogram's tasks)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    import torch

    torch.set_num_threads(args.threads)
    parts = {"sim": simulations, "histogram": histogram, "solve": solve_once,
             "rank2": lambda: rank2(args.omega, args.alpha, args.quadrature), "workers": workers,
             "boundaries": boundaries, "bayes": bayes}
    # rank2, boundaries (minutes of CPU) and bayes only when asked for
    out = {k: f() for k, f in parts.items()
           if (k in args.only if args.only else k not in ("rank2", "boundaries", "bayes"))}
    if args.json:
        print(json.dumps(out, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
