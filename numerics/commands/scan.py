"""``attnphase scan``: the phase diagram over (a second model parameter) x omega, one task per cell, every rank (the
job :mod:`attnphase.numerics.jobs.scan_report`; its files: docs/reference/outputs.md).  Exit code 1 when a task
failed.
"""

from __future__ import annotations

import argparse
import json
import sys

from attnphase import options as opt
from attnphase import execution_options, outputs, solver_options, work, workload
from attnphase.numerics.capabilities import check, is_scalar_form
from attnphase.numerics.commands.common import (announce_matrix_tasks, check_semantic_signal, command_line, config_of,
                                                error_note, ranks_from_args, scan_models, staged_job, task_store)

NAME = "scan"
HELP = "the phase diagram over a second model parameter and omega, as tasks, into one dataset"
DESCRIPTION = ("The phase diagram (as phase-diagram) at every value of one more model parameter: give a list "
               "to exactly one of --lam, --rho0, --L (a,b,c or START:STOP:NUM) or --sigma (values separated by \";\", "
               "each one number or L numbers). Writes scan.nc (dimensions <parameter>, omega, branch, alpha), scan.csv "
               "and one figure per value, phase_diagram_<parameter><value>.png.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``scan``'s options (docs/reference/commands.md)."""
    opt.add_alpha_grid_option(p)
    opt.add_model_options(p, omega_range=True, omega_default="0:0.45:10", scan=True)
    solver_options.add_solver_options(p, "scan")
    solver_options.add_error_estimate_option(p, "every boundary (err_<boundary> variables)")
    outputs.add_out_option(p, "results/scan", "scan.nc, scan.csv, scan.json and a phase diagram figure per value")
    execution_options.add_job_options(p, workload.MAX_DIAGRAM_POINTS)


def run(args: argparse.Namespace) -> int:
    """Every option checked first, then the scan of the module doc; exit code 1 when a task failed."""
    r, r_star = ranks_from_args(args)
    scalar = is_scalar_form(r, r_star)
    error_estimate = solver_options.error_estimate_from_args(args)
    if not scalar and error_estimate is not None:
        check("diagram_error_estimate", r, r_star, args.error_estimate)
    alphas = opt.alpha_grid(args)
    field, values, models, omegas = scan_models(args)
    check_semantic_signal(omegas)
    cfg = None
    for m in models:
        cfg = config_of(args, m)
        if scalar:
            opt.check_branch_possible(m, "positional", "the scan's boundaries")
    from attnphase.numerics.errors.quadrature_error import error_bars_note, independent_rules
    from attnphase.numerics.quadrature.rules import rule_blocks

    if not scalar and not rule_blocks(cfg.quadrature):
        check("diagram_one_block_rule", r, r_star, cfg.quadrature)
    n_rules = independent_rules(cfg, error_estimate) if scalar else 0
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(models) * len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS,
                        f"(--{field.replace('_', '-')}, omega, alpha) points", "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    for m in {m.L: m for m in models}.values():  # once per L (a scan over --L: each L's defaults)
        opt.announce_defaults(args, m)
    if scalar:
        costs = [workload.boundaries_task_seconds(len(alphas), m.L, cfg) for m in models for _ in omegas
                 for _ in range(max(1, n_rules))]
        workload.announce_tasks(f"scan over {len(values)} {field} x {len(omegas)} omega x {len(alphas)} alpha values",
                                costs, executor.workers, f"~{max(costs):.0f} CPU s per (value, omega)", quiet=args.quiet,
                                own=workload.JOB_COMMAND_SECONDS)
    else:
        costs = [workload.matrix_boundaries_task_seconds(len(alphas), m.L, cfg) for m in models for _ in omegas]
        announce_matrix_tasks(f"rank-{r} scan over {len(values)} {field} x {len(omegas)} omega", costs,
                              "(value, omega)", executor, args.quiet)
    work.begin("scanning the boundaries")

    from attnphase.numerics.jobs.scan_report import run_scan

    store = task_store(out_dir)
    job_model = models[0].to_dict() | {field: [str(v) for v in values], "omega": list(omegas), "alpha": list(alphas),
                                       "rank": [r, r_star], "solver": cfg.as_dict(), "independent_rules": n_rules}
    from attnphase.numerics.commands.bayes_phase_diagram import threshold_keys
    from attnphase.numerics.jobs.boundary_table import with_unbarred_note

    def amend(summary: dict) -> dict:
        """scan.json as --json prints it: the error note and each value's Bayes-optimal thresholds (its figure's
        lines)."""
        summary = with_unbarred_note(summary | error_note(error_bars_note(cfg, n_rules)), models[0].r,
                                     f"{field},omega")
        # as JSON values (a NaN as null), as the file held them when the command wrote it itself
        return summary | {"bayes_optimal": outputs.json_value({str(v): threshold_keys(m)
                                                               for v, m in zip(summary["values"], models)})}

    with staged_job(out_dir, "scan", job_model, args.json) as stage:
        summary = run_scan(field, values, models, omegas, alphas, out_dir=stage, config=cfg,
                           error_estimate=n_rules, executor=executor, store=store, fresh=args.fresh,
                           quiet=args.quiet, command=command_line(), amend=amend)
    t = summary["tasks"]
    if args.json:
        print(json.dumps(outputs.json_value(summary | {"out": str(out_dir)})))
    else:
        from attnphase.numerics.jobs.boundary_table import boundary_cell

        width = max(len(str(v)) for v in summary["values"]) + 1
        barred = summary["error_bars"] != "none"
        cell = 18 if barred else 9
        heads = " ".join(f"{h:>{cell}}" for h in ("alpha_c", "alpha_l", "sem_end", "pos_end"))
        print(f"{field:>{width}}   omega {heads}")
        for row in summary["rows"]:
            cells = " ".join(f"{boundary_cell(row, k, barred):>{cell}}"
                             for k in ("alpha_c", "alpha_l", "semantic_end", "positional_end"))
            print(f"{str(row[field]):>{width}} {row['omega']:7.3f} {cells}")
    from attnphase.numerics.jobs.boundary_table import births_note, unbarred_note, unlocated_note

    # the notes go to stderr with --json too (its stdout is the JSON alone)
    at, rows, r = f"{field},omega", summary["rows"], models[0].r
    notes = [births_note(rows, r, at=at), unlocated_note(rows, r, at=at)]
    notes += [unbarred_note(rows, r, at=at)] if summary["error_bars"] != "none" else []
    for note in filter(None, notes):
        print(f"attnphase: note: {note}", file=sys.stderr)
    from attnphase.execution.progress import job_summary

    return job_summary(f"wrote {out_dir}/scan.nc, scan.csv, scan.json and {len(values)} figures", summary["seconds"], t,
                       t["failures"])
