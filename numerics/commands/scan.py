"""``attnphase scan``: the phase diagram over (a second model parameter) x omega, one task per cell
(the job: :func:`~attnphase.numerics.jobs.scan_report.run_scan`, every rank).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from attnphase import options as opt
from attnphase import solver_options
from attnphase import execution_options
from attnphase import outputs, work, workload
from attnphase.execution.progress import job_summary
from attnphase.numerics.commands.common import TASKS_FOLDER, check_distinct_models, command_line, ranks_from_args


def cmd_scan(args: argparse.Namespace) -> int:
    """``attnphase scan``: every option checked first; exit code 1 when a task failed.  ``--rank R
    --teacher-rank R*`` with r or r* >= 2: the rank-r boundaries (numerics.commands.rank_cli.cmd_scan_rank)."""

    r, r_star = ranks_from_args(args)
    if (r, r_star) != (1, 1):
        from attnphase.numerics.commands.rank_cli import cmd_scan_rank

        return cmd_scan_rank(args, r, r_star)
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    field, values, models, omegas = opt.scan_from_args(args)
    check_distinct_models(field, values, models)
    from attnphase.numerics.jobs.report import check_semantic_signal

    check_semantic_signal(omegas)
    cfg = solver_options.config_from_args(args)
    for m in models:
        opt.check_branch_possible(m, "positional", "the scan's boundaries")
        solver_options.check_supported(m, cfg)
    from attnphase.numerics.errors.quadrature_error import independent_rules

    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args))
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(models) * len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS,
                        f"(--{field.replace('_', '-')}, omega, alpha) points", "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    costs = [workload.boundaries_task_seconds(len(alphas), m.L, cfg) for m in models for _ in omegas
             for _ in range(max(1, n_rules))]
    workload.announce_tasks(f"scan over {len(values)} {field} x {len(omegas)} omega x {len(alphas)} alpha values",
                            costs, executor.workers, f"~{max(costs):.0f} CPU s per (value, omega)", quiet=args.quiet)
    work.begin("scanning the boundaries")

    from attnphase.execution import ResultStore
    from attnphase.numerics.jobs.scan_report import run_scan

    store = ResultStore(out_dir / TASKS_FOLDER)
    job_model = models[0].to_dict() | {field: [str(v) for v in values], "omega": list(omegas), "alpha": list(alphas)}
    with outputs.staged_output(out_dir, job="scan", model=job_model) as stage:
        shown = {str(stage): str(out_dir)}
        with contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            summary = run_scan(field, values, models, omegas, alphas, out_dir=stage, config=cfg,
                               error_estimate=n_rules, executor=executor, store=store, fresh=args.fresh,
                               quiet=args.quiet, command=command_line())
    from attnphase.numerics.errors.quadrature_error import error_bars_note

    bars_note = error_bars_note(cfg, n_rules)
    if bars_note:
        print(f"attnphase: note: {bars_note}", file=sys.stderr)
        summary = summary | {"error_note": bars_note}
    t = summary["tasks"]
    if args.json:
        print(json.dumps(outputs.json_value(summary | {"out": str(out_dir)})))
    else:
        width = max(len(str(v)) for v in summary["values"]) + 1
        from attnphase.display import with_error

        print(f"{field:>{width}}   omega {'alpha_c':>18} {'alpha_l':>18} {'sem_end':>18} {'pos_end':>18}")
        for r in summary["rows"]:
            cells = " ".join(f"{'nan' if r[k] is None else with_error(r[k], r.get(k + '_err')):>18}"
                             for k in ("alpha_c", "alpha_l", "semantic_end", "positional_end"))
            print(f"{str(r[field]):>{width}} {r['omega']:7.3f} {cells}")
    return job_summary(f"wrote {out_dir}/scan.nc, scan.csv, scan.json and {len(values)} figures", summary["seconds"], t,
                       t["failures"])
