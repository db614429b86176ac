"""``attnphase phase-diagram``: alpha_c, alpha_l and the branch ends over omega (docs/model.md section 6), every rank:
the job :mod:`attnphase.numerics.jobs.report` (its files: docs/reference/outputs.md), ``--census``
(:func:`~attnphase.numerics.commands.census.phase_diagram_census`) and ``--estimator bayes-optimal``
(:mod:`attnphase.numerics.commands.bayes_phase_diagram`).  Exit code 1 if a task failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import options as opt
from attnphase import continuation_options, execution_options, outputs, solver_options, work, workload
from attnphase.numerics.capabilities import check, is_scalar_form
from attnphase.numerics.commands.common import (announce_matrix_tasks, check_semantic_signal, command_line,
                                                error_note, model_and_config, ranks_from_args, staged_job, task_store)

NAME = "phase-diagram"
HELP = "alpha_c, alpha_l and the branch ends over omega (the main job)"
DESCRIPTION = ("The phase diagram (docs/model.md section 6): at every omega, both branches over the alpha grid, "
               "alpha_c, alpha_l and where each branch ends; writes phase_diagram.csv/.json/.png and the branch curves at the "
               "run's omega nearest 0.3, curves_omega<omega>.png. "
               "With --rank R --teacher-rank R* (r or r* >= 2): the rank-r state evolution's branches (and mixed at r >= 2), "
               "their ends by bisection, alpha_c and alpha_l by bracketing, each with its bracket width (docs/method.md "
               "section 11, rank r >= 2); phase_diagram.csv/.json/.nc/.png.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``phase-diagram``'s options (docs/reference/commands.md)."""
    opt.add_alpha_grid_option(p)
    opt.add_model_options(p, omega_range=True, omega_default="0:0.45:10")
    opt.add_estimator_option(p, "at every omega its thresholds alpha_weak_recovery, alpha_it, alpha_amp with error "
                             "bars and its eps_g over the alpha grid, into DIR/phase_diagram_bayes-optimal.csv, .json, "
                             ".nc, .png (the solver options do not apply; each omega is one task, --workers)")
    solver_options.add_solver_options(p, "phase-diagram")
    solver_options.add_error_estimate_option(p, "every boundary (err_<boundary> columns, error bars in the figure)")
    p.add_argument("--census", action="store_true",
                   help="at every omega, search every fixed point at alpha_c (as attnphase census; error bars from "
                   "--error-estimate K, else 4 rules) and say whether any beats the semantic and positional ones: "
                   f"phase_diagram_census.csv (opt-in; a census per omega, about {workload.CENSUS_SECONDS:.0f} CPU s "
                   "each at the defaults, announced before it starts)")
    continuation_options.add_continuation_option(p)
    outputs.add_out_option(p, "results", "phase_diagram.csv, .json, .nc, .png and curves_omega<omega>.png "
                           "(phase_diagram_census.csv with --census)")
    execution_options.add_job_options(p, workload.MAX_DIAGRAM_POINTS)


def run(args: argparse.Namespace) -> int:
    """The phase diagram of the module doc into ``--out DIR`` (all files or none); exit code 1 if a task failed."""
    if getattr(args, "estimator", "erm") == "bayes-optimal":
        from attnphase.numerics.commands.bayes_phase_diagram import phase_diagram_bayes_optimal

        return phase_diagram_bayes_optimal(args)

    r, r_star = ranks_from_args(args)
    scalar = is_scalar_form(r, r_star)
    census = bool(getattr(args, "census", False))
    if census:
        check("diagram_census", r, r_star)
    error_estimate = solver_options.error_estimate_from_args(args)
    if not scalar and error_estimate is not None:
        check("diagram_error_estimate", r, r_star, args.error_estimate)
    if getattr(args, "continuation", "auto") == "on":
        check("omega_continuation", r, r_star)
    alphas = opt.alpha_grid(args)
    omegas = opt.parse_values(args.omega, "--omega")
    check_semantic_signal(omegas)
    params, cfg = model_and_config(args, omegas)
    opt.check_branch_possible(params, "positional", "the phase diagram's boundaries")
    from attnphase.numerics.errors.quadrature_error import error_bars_note, independent_rules
    from attnphase.numerics.quadrature.rules import rule_blocks

    if not scalar and not rule_blocks(cfg.quadrature):
        check("diagram_one_block_rule", r, r_star, cfg.quadrature)

    n_rules = independent_rules(cfg, error_estimate) if scalar else 0
    executor = execution_options.executor_from_args(args)
    chains = continuation_options.chains_from_args(args, omegas) if scalar else 0
    workload.check_grid(len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS, "(omega, alpha) points (omegas x alphas)",
                        "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    if scalar:
        _announce(args, params, cfg, omegas, alphas, n_rules, executor, chains, census)
    else:
        _announce_matrix(args, params, cfg, omegas, alphas, executor)

    work.begin("computing the phase diagram")
    store = task_store(out_dir)
    # the job's record: a rerun of another model, grid or solver removes the files it does not write again (the
    # census CSV of another map)
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas), "rank": [r, r_star],
                                    "solver": cfg.as_dict(), "independent_rules": n_rules, "census": census}
    # --json: the table the job prints goes to stderr; stdout gets phase_diagram.json alone
    with staged_job(out_dir, "phase_diagram", job_model, args.json) as stage:
        from attnphase.numerics.jobs.report import run_phase_diagram

        census_failed = False

        def amend(meta: dict) -> dict:
            """phase_diagram.json's content with the census rows (``--census``), the error note and the
            Bayes-optimal thresholds (r = r* = 1), as --json prints it."""
            nonlocal census_failed
            if census:
                from attnphase.numerics.commands.census import phase_diagram_census

                table, census_failed = phase_diagram_census(params, meta["rows"], cfg, n_rules, stage,
                                                            executor=executor, store=store, fresh=args.fresh,
                                                            quiet=args.quiet)
                meta = meta | {"census": table}
            if scalar:
                from attnphase.numerics.commands.bayes_phase_diagram import threshold_keys
                from attnphase.numerics.jobs.boundary_table import with_unbarred_note

                meta = with_unbarred_note(meta | error_note(error_bars_note(cfg, n_rules)), r) | threshold_keys(params)
            return meta

        code, meta = run_phase_diagram(params, omegas, alphas, out_dir=stage, config=cfg, quiet=args.quiet,
                                       error_estimate=n_rules, executor=executor, store=store, fresh=args.fresh,
                                       command=command_line(), existing=out_dir, chains=chains, amend=amend,
                                       shaping={"census": census})
        code = max(int(code or 0), 1 if census_failed else 0)
    if args.json:
        print(json.dumps(outputs.json_value(meta | {"out": str(out_dir)})))
    return int(code or 0)


def _announce(args, params, cfg, omegas, alphas, n_rules: int, executor, chains: int, census: bool) -> None:
    """The scalar form's tasks and their time (attnphase.workload), said before any work."""
    workload.announce_rules(params.L, cfg)
    from attnphase.numerics.jobs.report import curves_omega

    per_omega = workload.boundaries_task_seconds(len(alphas), params.L, cfg)
    tasks = workload.diagram_task_seconds(len(omegas), len(alphas), params.L, cfg, n_rules,
                                          curves=curves_omega(omegas) is not None)
    workload.announce_tasks(f"phase diagram over {len(omegas)} omega x {len(alphas)} alpha values, both branches",
                            tasks, min(executor.workers, chains) if chains else executor.workers,
                            f"~{per_omega:.0f} CPU s per omega" + (f" and rule ({n_rules} rules)" if n_rules else "")
                            + f", the curves' whole positional branch ~{tasks[0] - per_omega:.0f} more",
                            quiet=args.quiet, own=workload.JOB_COMMAND_SECONDS)
    if chains and not args.quiet:
        print(f"attnphase: --continuation: the boundaries continued in omega along {chains} chain(s) of contiguous omegas, "
              f"one task each (docs/method.md section 13, continuation in omega)", file=sys.stderr, flush=True)
    if census and not args.quiet:
        each = workload.census_seconds(params.L, cfg)
        print(f"attnphase: --census: a census at alpha_c at each of the {len(omegas)} omegas, one task each, about "
              f"{workload.format_duration(workload.wall_seconds([each] * len(omegas), executor.workers))} more "
              f"(~{each:.0f} CPU s each; stored and resumed like the boundaries)", file=sys.stderr, flush=True)


def _announce_matrix(args, params, cfg, omegas, alphas, executor) -> None:
    """The matrix form's branches, tasks and their time, said before any work."""
    from attnphase.numerics.phase.boundary_results import model_branches

    r = params.r
    if not args.quiet:
        print(f"attnphase: rank r = {r}, r* = {params.r_star}: every fixed point the census finds ({', '.join(model_branches(r))}, "
              f"agnostic) followed over {len(alphas)} alpha values at {len(omegas)} omega(s) on {cfg.quadrature}, "
              "re-censused where their order changes, then bisections and root searches", file=sys.stderr)
    per_omega = workload.matrix_boundaries_task_seconds(len(alphas), params.L, cfg)
    announce_matrix_tasks(f"rank-{r} phase diagram", [per_omega] * len(omegas), "omega", executor, args.quiet)
