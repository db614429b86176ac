"""What ``attnphase solve``, ``sweep`` and ``phase-diagram`` do (numerics layer; never imports torch).

Their options are defined in :mod:`attnphase.cli` with the shared groups of
:mod:`attnphase.options`; the model and the solver configuration are built there
(:func:`~attnphase.options.params_from_args`, :func:`~attnphase.solver_options.config_from_args`).
Every option is checked before any work; the solvers are imported inside the functions.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys

from attnphase import options as opt
from attnphase import solver_options
from attnphase import execution_options
from attnphase import outputs, work, workload
from attnphase.numerics.commands.common import TASKS_FOLDER, command_line, point_setup, ranks_from_args, sweep_exit_code
from attnphase.numerics.commands.point_record import (EXIT_NO_BRANCH, RECORD_KEYS, RESULT_KEYS, max_relative_error, model_echo,
                                             precision_note, print_record, solve_record, unresolved_order_warning)

def add_model_arguments(p: argparse.ArgumentParser) -> None:
    """The shared model group (:func:`attnphase.options.add_model_options`, one omega); kept for
    commands that register their own parser (``check``)."""
    opt.add_model_options(p)


def params_from_args(args: argparse.Namespace):
    """The ModelParams of the shared model group at its one omega (:func:`attnphase.options.params_from_args`)."""
    return opt.params_from_args(args, omega=opt.single_omega(args, getattr(args, "command", None) or ""))


def cmd_solve(args: argparse.Namespace) -> int:
    """``attnphase solve``: one fixed point; exit code 1 if it did not converge, 3 if the requested
    branch was not found (the solve reached another one)."""
    alpha = opt.parse_value(args.alpha, "--alpha", positive=True, hint="sweep follows a branch over a range of alpha")
    from attnphase.numerics.commands.bayes_cli import check_estimator_branch, cmd_solve_bayes

    estimator = getattr(args, "estimator", "erm")
    if estimator == "bayes-optimal":
        return cmd_solve_bayes(args, alpha)
    args.branch = check_estimator_branch(estimator, args.branch)

    r, r_star = ranks_from_args(args)
    if (r, r_star) != (1, 1) or args.branch == "mixed":
        from attnphase.numerics.commands.rank_cli import cmd_solve_rank

        return cmd_solve_rank(args, alpha, r, r_star)
    params, cfg, n_rules = point_setup(args, "solve")
    opt.check_branch_possible(params, args.branch)
    if params.L >= 3:
        print(f"attnphase: note: at L = {params.L} one solve takes from seconds to a minute or more "
              f"(measured at L = 3 on 2 cores: up to ~50 s)", file=sys.stderr, flush=True)

    from attnphase.numerics.se.state_evolution import solve

    work.begin("solving the state evolution")
    fp = solve(params, alpha, args.branch, config=cfg)
    rec, reason = solve_record(fp, args.branch)
    if fp.status.converged:
        from attnphase.numerics.errors.quadrature_error import error_bars_note, fixed_point_error

        err = fixed_point_error(fp, cfg, n_rules)
        if err is not None:
            from attnphase.numerics.se.stalls import confirm_jump_acceptance

            confirmed = confirm_jump_acceptance(fp, err.converged, len(err.rules))
            if not confirmed.status.converged:
                rec, reason = solve_record(confirmed, args.branch)
                return print_record(rec, reason, False, args.json)
        if fp.status.message != "converged":
            # accepted at the rule's jump scale, or finished on the symmetric subspace (docs/method.md section 4, the fixed-point solver)
            print(f"attnphase: note: {fp.status.message}", file=sys.stderr)
        if err is not None:
            rec.update({f"err_{k}": v for k, v in err.std.items()})
            rec["max_relative_error"] = max_relative_error(rec)
            note = missing_bars_note(err)
            if note:
                rec["error_note"] = note
                print(f"attnphase: note: {note}", file=sys.stderr)
            else:
                precision_note(rec["max_relative_error"], getattr(args, "precision", None) or "default")
            unresolved_order_warning(fp, err)
        else:
            rec.update({f"err_{k}": None for k in RESULT_KEYS}, max_relative_error=None,
                       error_note=error_bars_note(cfg, n_rules))
            print(f"attnphase: note: {rec['error_note']}", file=sys.stderr)
    return print_record(rec, reason, fp.status.converged, args.json)


def missing_bars_note(err) -> str:
    """Why some err_<key> of an error estimate are null ("" when none is): fewer than two of its rules (or
    blocks) reproduced the fixed point's branch, so they have no spread."""
    if err.converged >= 2 and all(math.isfinite(v) for v in err.std.values()):
        return ""
    return (f"no error bars: only {err.converged} of the {len(err.rules)} rules of the error estimate reproduced this "
            f"fixed point's branch (a spread needs two); the point may be an artefact of the rule")


def sweep_file_name(branch: str, omega: float) -> str:
    """The table ``sweep`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}.csv"


def row_reasons(res, branch: str) -> list[str]:
    """For every point of a sweep: "" when it is on ``branch``, else why not (the branch ends, or the
    solve failed).  A point past the branch's located end is "no <branch> fixed point here"."""
    from attnphase.numerics.phase.branch_end import on_branch

    end = res.end.alpha
    ends = math.isfinite(end)
    where = f"the branch ends at alpha = {end:.4g} ({res.end.kind}) and exists {'above' if res.end_side == 'below' else 'below'} it" if ends else ""
    reasons = []
    for fp in res.points:
        if on_branch(fp, branch):
            reasons.append("")
            continue
        past = ends and (fp.alpha < end if res.end_side == "below" else fp.alpha > end)
        if fp.status.converged:
            got = f"the solve converged to the {fp.branch} one" if fp.branch != branch else \
                f"the solve reached a point whose {branch} order parameter is below the branch's floor"
            reasons.append(f"no {branch} fixed point here: {got}" + (f"; {where}" if where else ""))
        elif past:
            reasons.append(f"no {branch} fixed point here ({where}); the solve did not converge, no overlaps")
        else:
            msg = fp.status.message if fp.status.message.startswith("not converged") else f"not converged: {fp.status.message}"
            reasons.append(f"{msg}; residual {fp.status.residual:.2e}: no overlaps")
    return reasons


def _sweep_rows(res, branch: str) -> tuple[list[dict], list[str]]:
    """The CSV rows of one sweep and each row's reason (:func:`row_reasons`)."""
    reasons = row_reasons(res, branch)
    rows = []
    errors = res.errors or ({f"err_{k}": math.nan for k in RESULT_KEYS},) * len(res.points)
    for fp, reason, err in zip(res.points, reasons, errors):
        rec = {k: fp.record[k] for k in RECORD_KEYS}
        if not fp.status.converged:
            rec.update({k: math.nan for k in RESULT_KEYS}, branch="")
        rows.append(rec | err | {"reason": reason})
    return rows, reasons


def _csv_text(rows: list[dict]) -> str:
    import csv

    buf = io.StringIO()
    from attnphase.numerics.jobs.variables import SWEEP_COLUMNS

    w = csv.DictWriter(buf, fieldnames=SWEEP_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return buf.getvalue()


def cmd_sweep(args: argparse.Namespace) -> int:
    """``attnphase sweep``: one branch over alpha into DIR/sweep_<branch>_omega<omega>.csv, at each
    omega of ``--omega`` (one task each, :mod:`attnphase.numerics.jobs.tasks`), and DIR/sweep_<branch>.nc.

    Exit code 0 when every point on the branch converged (points where the branch does not exist
    say so in ``reason``), 1 if a point or a task failed, 3 if the branch exists at no alpha of the grid.
    """
    from functools import partial

    from attnphase.numerics.commands.bayes_cli import sweep_by_estimator

    if (code := sweep_by_estimator(args)) is not None:
        return code
    r, r_star = ranks_from_args(args)
    if (r, r_star) != (1, 1) or args.branch == "mixed":
        from attnphase.numerics.commands.rank_cli import cmd_sweep_rank

        return cmd_sweep_rank(args, r, r_star)
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    params, omegas = opt.omegas_from_args(args)
    opt.check_branch_possible(params, args.branch)
    cfg = solver_options.config_from_args(args)
    solver_options.check_supported(params, cfg)
    from attnphase.numerics.errors.quadrature_error import error_bars_note, independent_rules

    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args))
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(alphas) * len(omegas), workload.MAX_SWEEP_POINTS, "alpha values (x omegas)", "--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    if alphas != sorted(alphas):
        print("attnphase: note: --alpha values sorted ascending (the branch is followed by continuation in alpha)",
              file=sys.stderr)
    opt.announce_defaults(args, params)
    workload.announce_rules(params.L, cfg)
    per_omega = workload.estimate_seconds(len(alphas) * max(1, n_rules), params.L, cfg)
    workload.announce_tasks(f"sweep of {len(alphas)} alpha values" + (f" at {len(omegas)} omegas" if len(omegas) > 1 else ""),
                            [per_omega] * len(omegas), executor.workers if len(omegas) > 1 else 1,
                            f"~{workload.SECONDS_PER_SOLVE * workload.rule_factor(params.L, cfg) ** 2:.2g} CPU s per "
                            f"point", quiet=args.quiet)

    work.begin("sweeping the branch")
    from tqdm import tqdm

    from attnphase.execution import ResultStore, run_tasks
    from attnphase.execution.dataset import job_attrs, write_netcdf
    from attnphase.execution.progress import TaskBar, failure_summary
    from attnphase.numerics.jobs.dataset import sweeps_dataset
    from attnphase.numerics.jobs.tasks import numerics_version, sweep_job, sweep_task

    store = ResultStore(out_dir / TASKS_FOLDER)
    version = numerics_version()
    tasks = [sweep_task(params.replace(omega=float(w)), alphas, args.branch, cfg, version, n_rules) for w in omegas]
    if len(tasks) == 1 and executor.scheduler is None:
        # one sweep in this process: a bar over its points (the task and its key are the same)
        with tqdm(total=len(alphas), desc=f"{args.branch} sweep", unit="pt", file=sys.stderr,
                  disable=args.quiet) as bar:
            tasks = [replace_fn(tasks[0], partial(sweep_job, progress=lambda _: bar.update()))]
            outs = run_tasks(tasks, store=store, fresh=args.fresh, version=version)
    else:
        with TaskBar(f"{args.branch} sweeps", quiet=args.quiet) as tbar:
            outs = run_tasks(tasks, executor=executor, store=store, fresh=args.fresh, version=version,
                             progress=tbar)
    objs, n_on, n_failed, n_absent, cells, n_unbarred = [], 0, 0, 0, [], 0
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas)}
    wrote: list[str] = []  # said once the files are in place
    with outputs.staged_output(out_dir, job=f"sweep_{args.branch}", model=job_model) as stage:
        for w, o in zip(omegas, outs):
            path = out_dir / sweep_file_name(args.branch, params.replace(omega=w).omega)
            if not o.ok:
                cells.append((float(w), None, "failed", o.error, []))
                continue
            res = o.value
            rows, reasons = _sweep_rows(res, args.branch)
            cells.append((float(w), res, "done", o.error, rows))
            outputs.write_text_atomic(stage / path.name, _csv_text(rows))
            on = sum(not r for r in reasons)
            n_unbarred += sum(not r and not all(math.isfinite(row[f"err_{k}"]) for k in RESULT_KEYS)
                              for row, r in zip(rows, reasons))
            failed = sum(bool(r) and r.startswith("not converged") for r in reasons)
            n_on, n_failed, n_absent = n_on + on, n_failed + failed, n_absent + len(rows) - on - failed
            ends = not math.isnan(res.end.alpha)
            if ends:
                where = "above" if res.end_side == "below" else "below"
                print(f"{args.branch} branch ends at alpha = {res.end.alpha:.4f} (it exists {where} that; "
                      f"{res.end.kind}, located by {res.end.method})" + (f" at omega = {w:g}" if len(omegas) > 1 else ""),
                      file=sys.stderr)
            objs.append({
                "branch": args.branch, "requested_branch": args.branch, "params": params.replace(omega=w).to_dict(),
                "model": model_echo(params), "solver": cfg.as_dict(), "file": str(path),
                "end": {"alpha": res.end.alpha, "side": res.end_side, "kind": res.end.kind, "method": res.end.method}
                if ends else None,
                "on_branch": on, "not_converged": failed, "branch_absent": len(rows) - on - failed, "rows": rows,
            })
            notes = [f"{failed} not converged"] if failed else []
            if len(rows) - on - failed:
                notes.append(f"{len(rows) - on - failed} where no {args.branch} fixed point exists (see the reason column)")
            wrote.append(f"wrote {len(rows)} rows to {path}" + (f" ({'; '.join(notes)})" if notes else ""))
        attrs = job_attrs("sweep", version=version, model=params.to_dict() | {"omega": "scanned"},
                          solver=cfg.as_dict(), rule=cfg.quadrature, command=command_line(), branch=args.branch,
                          title=f"The {args.branch} branch of dot-product attention's state evolution over alpha")
        write_netcdf(sweeps_dataset(cells, alphas, attrs), stage / f"sweep_{args.branch}.nc")
    for line in wrote:
        print(line, file=sys.stderr)
    bars_note = error_bars_note(cfg, n_rules)
    if not bars_note and n_unbarred:
        bars_note = (f"{n_unbarred} point(s) on the branch have no error bar (NaN err_*): fewer than two of their "
                     f"rules reproduced the branch there (a spread needs two); such a point may be an artefact of the rule")
    if bars_note:
        print(f"attnphase: note: {bars_note}", file=sys.stderr)
    failures = failure_summary(outs)
    counts = {"total": len(outs), "computed": sum(o.status == "done" for o in outs),
              "stored": sum(o.status == "stored" for o in outs), "failed": sum(not o.ok for o in outs),
              "failures": failures}
    if args.json:
        obj = objs[0] if len(omegas) == 1 and objs else {"branch": args.branch, "omegas": list(omegas), "sweeps": objs}
        from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, described

        print(json.dumps(outputs.json_value(obj | {"tasks": counts, "dataset": str(out_dir / f"sweep_{args.branch}.nc"),
                                                   "variables": described(SWEEP_COLUMNS)}
                                            | ({"error_note": bars_note} if bars_note else {}))))
    if failures:
        print(f"attnphase: {failures}", file=sys.stderr)
    return sweep_exit_code(args.branch, n_failed + bool(failures), n_on)


def replace_fn(task, fn):
    """``task`` run by ``fn`` (same key: ``fn`` computes the same result, e.g. with a progress hook)."""
    from dataclasses import replace

    return replace(task, fn=fn)


def cmd_phase_diagram(args: argparse.Namespace) -> int:
    """``attnphase phase-diagram``: the boundaries over omega into ``--out DIR`` (all files or none);
    ``--rank R --teacher-rank R*`` with r or r* >= 2: the rank-r boundaries (numerics.commands.rank_cli)."""

    r, r_star = ranks_from_args(args)
    census = bool(getattr(args, "census", False))
    if census:
        from attnphase.numerics.capabilities import check

        check("diagram_census", r, r_star)
    if (r, r_star) != (1, 1):
        from attnphase.numerics.commands.rank_cli import cmd_phase_diagram_rank

        return cmd_phase_diagram_rank(args, r, r_star)
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    params, omegas = opt.omegas_from_args(args)
    from attnphase.numerics.jobs.report import check_semantic_signal

    check_semantic_signal(omegas)
    opt.check_branch_possible(params, "positional", "the phase diagram's boundaries")
    cfg = solver_options.config_from_args(args)
    solver_options.check_supported(params, cfg)
    from attnphase.numerics.errors.quadrature_error import error_bars_note, independent_rules

    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args))
    executor = execution_options.executor_from_args(args)
    chains = opt.chains_from_args(args, omegas, executor.workers)
    workload.check_grid(len(omegas) * len(alphas), workload.MAX_DIAGRAM_POINTS, "(omega, alpha) points (omegas x alphas)",
                        "--omega/--alpha", args.large)
    out_dir = outputs.out_dir_from_args(args)
    opt.announce_defaults(args, params)
    workload.announce_rules(params.L, cfg)
    per_omega = workload.boundaries_task_seconds(len(alphas), params.L, cfg)
    workload.announce_tasks(f"phase diagram over {len(omegas)} omega x {len(alphas)} alpha values, both branches",
                            [per_omega] * (len(omegas) * max(1, n_rules)),
                            min(executor.workers, chains) if chains else executor.workers,
                            f"~{per_omega:.0f} CPU s per omega" + (f" and rule ({n_rules} rules)" if n_rules else ""),
                            quiet=args.quiet)
    if chains and not args.quiet:
        print(f"attnphase: --continuation: the boundaries continued in omega along {chains} chain(s) of contiguous omegas, "
              f"one task each (docs/method.md section 13, continuation in omega)", file=sys.stderr, flush=True)
    if census:
        each = workload.census_seconds(params.L, cfg)
        print(f"attnphase: --census: a census at alpha_c at each of the {len(omegas)} omegas, one task each, about "
              f"{workload.format_duration(workload.wall_seconds([each] * len(omegas), executor.workers))} more "
              f"(~{each:.0f} CPU s each; stored and resumed like the boundaries)", file=sys.stderr, flush=True)

    work.begin("computing the phase diagram")
    from attnphase.execution import ResultStore
    from attnphase.numerics.jobs.report import run_phase_diagram

    store = ResultStore(out_dir / TASKS_FOLDER)

    # --json: the table run_phase_diagram prints goes to stderr; stdout gets phase_diagram.json alone
    # the files are written into a staging folder and moved into --out DIR at the end (all or none);
    # what the job prints names DIR, never the staging folder
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas), "rank": [1, 1]}
    with outputs.staged_output(out_dir, job="phase_diagram", model=job_model) as stage:
        shown = {str(stage): str(out_dir)}
        stdout = outputs.Rewriting(sys.stderr if args.json else sys.stdout, shown)
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(outputs.Rewriting(sys.stderr, shown)):
            code, meta = run_phase_diagram(params, omegas, alphas, out_dir=stage, config=cfg, quiet=args.quiet,
                                     error_estimate=n_rules, executor=executor, store=store, fresh=args.fresh,
                                     command=command_line(), existing=out_dir, chains=chains)
            if census:
                from attnphase.numerics.commands.census_cli import phase_diagram_census

                table, failed = phase_diagram_census(params, meta["rows"], cfg, n_rules, stage, executor=executor,
                                                     store=store, fresh=args.fresh, quiet=args.quiet)
                meta = meta | {"census": table}
                code = max(int(code or 0), 1 if failed else 0)
    bars_note = error_bars_note(cfg, n_rules)
    if bars_note:
        print(f"attnphase: note: {bars_note}", file=sys.stderr)
        meta = meta | {"error_note": bars_note}
    if args.json:
        from attnphase.numerics.commands.bayes_cli import threshold_keys

        print(json.dumps(outputs.json_value(meta | {"out": str(out_dir)} | threshold_keys(params))))
    return int(code or 0)
