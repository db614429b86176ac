"""``attnphase validate``: a grid of finite-d gradient-descent runs against the state evolution, written into
``--out DIR`` (all files or none; docs/reference/outputs.md).  Exit code 1 if a gradient-descent run did not converge.  torch and
the numerics are imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import options as opt
from attnphase import execution_options
from attnphase import outputs, work, workload
from attnphase.validation.commands.finite_d_options import (
    add_torch_options, add_training_options, check_device, check_dimension, check_dtype, check_memory,
    check_plan_samples, check_threads, check_threads_apply, check_training, train_config, warn_rounded_alphas,
)
from attnphase.validation.output_names import summary_for_output

NAME = "validate"
HELP = "grid of finite-d simulations against the state evolution: report, summary and figures"
DESCRIPTION = ("Gradient descent at finite d against the theory (numerics): Fig. 2 curves, Fig. 3 heat map, "
               "finite-size scaling, and on every row of the alpha sweep the map GD follows (the global- or the "
               "aligned-prox state evolution) and why. Exit code 1 if a gradient-descent run did not converge (the "
               "Bayes-optimal section's AMP runs are counted in its table).")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The suite and its size, the stopping rule, the model group, the torch group, the outputs and the workers."""
    p.add_argument("--suite", default="default", choices=("default", "general"),
                   help="default: the paper's model at the model options below (Fig. 2, Fig. 3, finite size); "
                   "general: GD vs theory for the general model (any L, sigma_l, A, P, ranks; its cases fix their "
                   "own models, docs/validation.md) (default: default)")
    p.add_argument("--cases", default=None, metavar="KEYS",
                   help="--suite general only: run these of its cases, comma-separated (e.g. d,e; default all)")
    p.add_argument("--quick", action="store_true",
                   help="d = 200 and a smaller grid (its estimate is announced; docs/validation.md, Cost)")
    p.add_argument("--d", type=int, default=None,
                   help="override the main dimension (default 1000, quick 200); another one joins the finite-size "
                   "series and the Bayes-optimal section's AMP series (e.g. --d 2000: docs/validation.md, "
                   "'At d >= 2000')")
    p.add_argument("--seeds", type=int, default=None,
                   help="seeds per point (default 4, quick 2; general suite 4, quick 3); the finite-size series runs "
                   "at least 6 (quick 4), the Bayes-optimal section's AMP at least 8 (quick 4)")
    add_training_options(p)
    opt.add_model_options(p, omega_help="the omega of the alpha sweeps (the heat map scans its own omegas)",
                          command="validate")
    add_torch_options(p, threads="torch threads of the simulations with --workers 1 (default 1, as Dask workers use: "
                      "the runs are small, and a second thread multiplied their CPU time 20-40x on a busy machine)")
    outputs.add_out_option(p, "results/validation", "report.md, summary.json, validation.nc and the figures (--suite "
                           "general: report.md, summary.json and general_suite.png)")
    execution_options.add_job_options(p, workload.MAX_SIMULATIONS, "simulations")


def warn_unconverged(runs: list[dict]) -> int:
    """One warning line on stderr when some runs stopped without reaching the gradient tolerance (their
    rows are not counted as agreement); returns how many.  ``runs``: the summary's run dicts."""
    bad = [r for r in runs if not r["converged"]]
    if idle := [r for r in runs if r["converged"] and r.get("steps") == 0]:  # a tolerance above the start's gradient
        print(f"attnphase: warning: {len(idle)} of {len(runs)} runs met the gradient tolerance at their start and took "
              f"no step (--grad-tol {idle[0]['grad_tol']:.1e}): their rows compare the starts, not trained students",
              file=sys.stderr)
    if bad:
        counts = ", ".join(f"{sum(r['status'] == s for r in bad)} {s}" for s in sorted({r["status"] for r in bad}))
        worst = max(bad, key=lambda r: r["grad_norm"])
        print(f"attnphase: warning: {len(bad)} of {len(runs)} runs stopped without reaching the gradient tolerance "
              f"({counts}; largest |grad R|/sqrt(d) {worst['grad_norm']:.2e} after {worst['steps']} steps, d = "
              f"{worst['d']}, alpha = {worst['alpha']:g}, {worst['init']} start): their rows are not counted as "
              f"agreement (report.md, 'Convergence of gradient descent')", file=sys.stderr)
    return len(bad)


def announce_campaign(plan, executor, args: argparse.Namespace) -> None:
    """The default campaign's task count and time (theory tasks and simulations, attnphase.workload), said
    before any work; past workload.MAX_SIMULATIONS simulations ``--large`` is needed."""
    from attnphase.validation.campaign_plan import _theory_jobs

    specs = dict.fromkeys(plan.sweep_specs() + plan.heat_specs() + plan.fss_specs())  # each simulation once, as run
    sims = [workload.simulation_seconds(s.d, s.alpha, s.init) for s in specs]
    theory = workload.validate_theory_seconds(plan.quick, len(_theory_jobs(plan)[0]), plan.params.omega)
    workers = executor.workers
    t = workload.wall_seconds(theory + sims, workers)
    workload.check_simulations(len(sims), t, workers, "--seeds/--d", getattr(args, "large", False))
    workload.announce_tasks(f"validation campaign at d = {plan.d}: {len(theory)} theory tasks and {len(sims)} "
                            f"simulations", theory + sims, workers,
                            f"~{theory[0]:.0f} CPU s for the main theory task, "
                            f"{workload.simulation_seconds(plan.d, 1.0):.2g} s per simulation at alpha = 1",
                            quiet=args.quiet)
    from attnphase.validation.amp_run import amp_unsupported
    from attnphase.validation.amp_validation import amp_run_seconds, validation_amp_plan  # the report's AMP section

    if why := amp_unsupported(plan.params):
        print(f"attnphase: note: the report's Bayes-optimal section (AMP against its state evolution) is left out: "
              f"{why}", file=sys.stderr)
        return
    workload.announce_tasks("then the Bayes-optimal section's AMP runs (in this process)",
                            amp_run_seconds(validation_amp_plan(plan)), 1,
                            "validation/amp_validation.py's cost model of one AMP run", quiet=args.quiet)


def _checked_out_dir(args: argparse.Namespace) -> str:
    """``--out``, then ``--d``, ``--seeds``, the stopping rule, ``--threads`` and ``--dtype`` checked."""
    out_dir = outputs.out_dir_from_args(args)
    if args.d is not None:
        check_dimension(args.d)
    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"--seeds must be >= 1, got {args.seeds}")
    check_training(args)
    check_threads(args.threads)
    check_dtype(args.dtype)
    return out_dir


def run(args: argparse.Namespace) -> int:
    """``attnphase validate``: runs the grid, writes the report; returns 0 (1 if a run did not converge)."""
    if getattr(args, "suite", "default") == "general":
        return _run_general(args)
    if getattr(args, "cases", None) is not None:
        raise ValueError("--cases: only with --suite general (it names the general suite's cases)")
    params = opt.params_from_args(args, omega=opt.single_omega(args, NAME))
    if params.omega >= 1:
        raise ValueError(f"--omega {args.omega}: at omega = 1 the target attention is A alone (no semantic signal): "
                         "there is no semantic branch or alpha_c to compare gradient descent with; take omega < 1 "
                         "(attnphase simulate --omega 1 --init positional trains one student there)")
    opt.check_branch_possible(params, "positional", "validate's positional runs")
    if not params.P[0][0] > 0:
        raise ValueError(f"--P: validate's positional runs start the student along p_1, and P[0,0] = |p_1|^2 = "
                         f"{params.P[0][0]:g} leaves no such direction; give a --P with P[0,0] > 0")
    out_dir = _checked_out_dir(args)
    d = args.d if args.d is not None else (200 if args.quick else 1000)
    if params.L > d:
        raise ValueError(f"--d (embedding dimension) must be >= L = {params.L}, got {d}")
    check_memory(d, 2.5, params.L, 10000, args.dtype)  # 2.5: the largest alpha of the plans' grids
    check_device(args.device)
    executor = execution_options.executor_from_args(args)
    check_threads_apply(args, executor, None)
    opt.announce_defaults(args, params)

    import torch

    from attnphase.numerics.commands.common import command_line, staged_job, task_store
    from attnphase.validation.campaign import run_validation
    from attnphase.validation.campaign_plan import validation_plan

    # one thread by default, as Dask workers use and the cost model is measured on (--threads' help)
    torch.set_num_threads(args.threads if args.threads is not None else 1)
    plan = validation_plan(quick=args.quick, d=args.d, seeds=args.seeds, params=params, device=args.device,
                           dtype=args.dtype, train=train_config(args))
    check_plan_samples(min((*plan.alphas, *plan.heat_alphas)), plan.d)
    warn_rounded_alphas([(s.alpha, s.d) for s in (*plan.sweep_specs(), *plan.heat_specs(), *plan.fss_specs())])
    announce_campaign(plan, executor, args)
    work.begin("running the validation")
    # every file goes to a staging folder first, moved into --out DIR at the end: all files or none
    with staged_job(out_dir, "validate", plan.to_dict() | {"suite": "default"}, args.json) as stage:
        summary = run_validation(plan, stage, progress=not args.quiet, executor=executor, store=task_store(out_dir),
                                 fresh=args.fresh, command=command_line())
        summary = json.loads(json.dumps(outputs.json_value(summary)).replace(str(stage), str(out_dir)))
    if args.json:  # as summary.json holds it: the outputs' names (validation/output_names.py)
        print(json.dumps(outputs.json_value(summary_for_output(summary))))
    t = summary["tasks"]
    print(f"wrote {out_dir}/report.md, summary.json, validation.nc and figures ({summary['wall_seconds']:.0f} s; tasks: "
          f"{t['computed']} computed, {t['stored']} from the store, {t['failed']} failed)", file=sys.stderr)
    if t["failures"]:
        print(f"attnphase: {t['failures']}", file=sys.stderr)
    warn_unconverged(summary.get("runs", []))
    return 0 if summary["all_converged"] else 1


def _run_general(args: argparse.Namespace) -> int:
    """``attnphase validate --suite general``: the general model's cases (their own models) against the theory."""
    given = opt.model_options_given(args)
    if given:
        raise ValueError(f"{given[0]}: --suite general runs its own models (docs/validation.md); drop the model "
                         f"options or use --suite default")
    from attnphase.validation.general_cases import general_plan, select_cases
    from attnphase.validation.general_suite import run_general_validation

    cases = select_cases(getattr(args, "cases", None))
    out_dir = _checked_out_dir(args)
    check_device(args.device)
    executor = execution_options.executor_from_args(args)
    check_threads_apply(args, executor, None)

    import torch

    from attnphase.numerics.commands.common import command_line, staged_job, task_store
    plan = general_plan(quick=args.quick, d=args.d, seeds=args.seeds, device=args.device, dtype=args.dtype,
                        cases=cases, train=train_config(args))
    check_plan_samples(min((*plan.grid, *(a for c in plan.cases for a in c.alphas))), plan.d)
    for case in plan.cases:
        need = max(case.params.L, case.params.r, case.params.r_star)
        if plan.d < need:
            raise ValueError(f"--d {plan.d}: the general suite's case ({case.key}) {case.title} needs d >= {need}")
    check_memory(plan.d, max(plan.grid), max(c.params.L for c in plan.cases), plan.n_test, args.dtype)
    # said once every refusal is past (a refused run prints its one-line error alone)
    warn_rounded_alphas([(a, plan.d) for a in (*plan.grid, *(a for c in plan.cases for a in c.alphas))])
    if not args.quiet:
        n, seeds = len(plan.cases), len(plan.seeds)
        if plan.quick and plan.d == 200:
            t = workload.GENERAL_QUICK_SUITE_SECONDS * n / 5 * seeds / 3
            said = (f"about {workload.format_duration(t)} (the quick suite of all 5 cases, 3 seeds measured "
                    f"{workload.GENERAL_QUICK_SUITE_SECONDS:.0f} s wall on 2 cores, scaled by cases and seeds)")
        elif {c.key for c in plan.cases} <= {"d", "e"} and plan.d <= 1000:
            t = workload.GENERAL_FULL_DE_SECONDS * n / 2 * seeds / 4 * (plan.d / 1000) ** 2
            said = (f"about {workload.format_duration(t)} (the full suite's cases (d), (e) at d = 1000, 4 seeds "
                    f"measured {workload.GENERAL_FULL_DE_SECONDS:.0f} s wall on 2 cores, scaled by cases, seeds and "
                    f"d^2)")
        elif plan.d > 1000:
            de = sum(c.key in ("d", "e") for c in plan.cases) / 2
            abc = sum(c.key in ("a", "b", "c") for c in plan.cases) / 3
            theory = workload.GENERAL_D2000_DE_THEORY_SECONDS * de + workload.GENERAL_D2000_ABC_THEORY_SECONDS * abc
            sims = (workload.GENERAL_D2000_DE_SIMULATION_SECONDS * de + workload.GENERAL_D2000_ABC_SIMULATION_SECONDS
                    * abc) * seeds / 4 * (plan.d / 2000) ** 2
            said = (f"about {workload.format_duration(theory + sims)} (measured at d = 2000, 4 seeds, on 2 cores: the "
                    f"cases (d), (e) {workload.GENERAL_D2000_DE_THEORY_SECONDS:.0f} s of theory and "
                    f"{workload.GENERAL_D2000_DE_SIMULATION_SECONDS:.0f} s of simulations wall, (a)-(c) "
                    f"{workload.GENERAL_D2000_ABC_THEORY_SECONDS:.0f} s and "
                    f"{workload.GENERAL_D2000_ABC_SIMULATION_SECONDS:.0f} s; the theory scaled by cases, the "
                    f"simulations by cases, seeds and d^2; the runs near a plateau take longest)")
        else:
            said = (f"no measured estimate for d = {plan.d}: its simulations grow at least as d^2 (the full suite's "
                    f"cases (d), (e) at d = 1000 took {workload.GENERAL_FULL_DE_SECONDS:.0f} s wall on 2 cores)")
        print(f"attnphase: general suite: {n} case{'s' if n != 1 else ''} at d = {plan.d}, {seeds} seeds: {said}; a busy "
              f"or slower machine takes longer", file=sys.stderr, flush=True)
    # one thread by default, as Dask workers use (--threads' help)
    torch.set_num_threads(args.threads if args.threads is not None else 1)
    work.begin("running the general validation suite")
    with staged_job(out_dir, "validate", {"suite": "general", "cases": [c.key for c in plan.cases], "d": plan.d},
                    args.json) as stage:
        summary = run_general_validation(plan, stage, progress=not args.quiet, store=task_store(out_dir),
                                         executor=executor, fresh=args.fresh, command=command_line())
        summary = json.loads(json.dumps(outputs.json_value(summary)).replace(str(stage), str(out_dir)))
    if args.json:  # as summary.json holds it: the outputs' names (validation/output_names.py)
        print(json.dumps(outputs.json_value(summary_for_output(summary))))
    print(f"wrote {out_dir}/report.md, summary.json and general_suite.png ({summary['wall_seconds']:.0f} s)",
          file=sys.stderr)
    warn_unconverged(summary.get("runs", []))
    return 0 if summary["all_converged"] else 1

