"""``attnphase sweep``: one branch followed over the alpha grid by continuation, one row per alpha, at every rank.

At r = r* = 1 each omega of ``--omega`` is one task (:mod:`attnphase.numerics.jobs.tasks`), written to
``DIR/sweep_<branch>_omega<omega>.csv`` (the columns of :data:`~attnphase.numerics.jobs.variables.SWEEP_COLUMNS`,
``err_<key>`` and ``reason``) and all of them to ``DIR/sweep_<branch>.nc``; where the branch ends is said.
At r or r* >= 2 the branch is followed by warm starts at one omega into
``DIR/sweep_<branch>_omega<omega>_rank<r>x<r*>.csv`` (alpha, branch, e_t, eps_g, the invariants, gauge_angle,
converged, iterations, residual, reason).  ``--json`` prints the sweep(s) with their rows.  Exit code 0 when
every point on the branch converged (points where the branch does not exist say so in ``reason``), 1 if a
point or a task failed, 3 if the branch exists at no alpha of the grid.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any

from attnphase import options as opt
from attnphase import execution_options, outputs, solver_options, work, workload
from attnphase.numerics.capabilities import is_scalar_form
from attnphase.numerics.commands.common import (command_line, model_and_config, ranks_from_args,
                                                staged_job, sweep_exit_code, task_store)
from attnphase.numerics.commands.point_record import RECORD_KEYS, RESULT_KEYS, exact_zero_rows_note, model_echo

NAME = "sweep"
HELP = "follow a branch over a range of alpha (continuation), write a CSV table"
DESCRIPTION = ("Follow one branch of fixed points over alpha by continuation and write one row per alpha to "
               "DIR/sweep_<branch>_omega<omega>.csv; where the branch ends is reported. Several omegas: one sweep per "
               "omega, each a task (--workers, --scheduler), all in DIR/sweep_<branch>.nc.")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--alpha`` (a range), ``--branch``, ``--estimator``, the model group (``--omega`` a range), the solver group,
    ``--error-estimate``, ``--out DIR``, ``--large``, the execution group, ``--quiet``, ``--json``."""
    p.add_argument("--alpha", required=True, metavar="RANGE", help=f"alpha values > 0: {opt.RANGE_SYNTAX}")
    solver_options.add_branch_option(p, mixed=True, bayes=True)
    opt.add_estimator_option(p, "both of its branches (or --branch's) into DIR/sweep_bayes-optimal_omega<omega>.csv "
                             "and DIR/sweep_bayes-optimal.nc, with its thresholds")
    opt.add_model_options(p, omega_range=True, omega_default="0.3")
    solver_options.add_solver_options(p)
    solver_options.add_error_estimate_option(p, "every point's observables (err_<key> columns)")
    outputs.add_out_option(p, "results", "sweep_<branch>_omega<omega>.csv per omega (rank r >= 2: ..._rank<r>x<r*>.csv) "
                           "and sweep_<branch>.nc")
    execution_options.add_job_options(p, workload.MAX_SWEEP_POINTS)


def run(args: argparse.Namespace) -> int:
    """The sweep of the module doc, every option checked first; its exit code."""
    from attnphase.numerics.commands.bayes_optimal import sweep_by_estimator

    if (code := sweep_by_estimator(args)) is not None:
        return code
    r, r_star = ranks_from_args(args)
    scalar = is_scalar_form(r, r_star)
    alphas = opt.parse_values(args.alpha, "--alpha", positive=True)
    omegas = opt.parse_values(args.omega, "--omega") if scalar else [opt.single_omega(args, NAME)]
    params, cfg = model_and_config(args, omegas[0], args.branch)
    with opt.model_errors():
        for w in omegas:
            params.replace(omega=w)
    opt.check_branch_possible(params, args.branch)
    from attnphase.numerics.errors.quadrature_error import independent_rules

    n_rules = independent_rules(cfg, solver_options.error_estimate_from_args(args)) if scalar else 0
    executor = execution_options.executor_from_args(args)
    workload.check_grid(len(alphas) * len(omegas), workload.MAX_SWEEP_POINTS, "alpha values (x omegas)", "--alpha",
                        args.large)
    out_dir = outputs.out_dir_from_args(args)
    if alphas != sorted(alphas):
        print("attnphase: note: --alpha values sorted ascending (the branch is followed by continuation in alpha)",
              file=sys.stderr)
    opt.announce_defaults(args, params)
    if scalar:
        return _scalar_sweeps(args, params, cfg, n_rules, omegas, alphas, executor, out_dir)
    return _matrix_sweep(args, params, cfg, sorted(alphas), out_dir)


def sweep_file_name(branch: str, omega: float) -> str:
    """The table ``sweep`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}.csv"


def matrix_sweep_file_name(branch: str, omega: float, r: int, r_star: int) -> str:
    """The table ``sweep --rank`` writes into ``--out DIR``."""
    return f"sweep_{branch}_omega{omega:g}_rank{r}x{r_star}.csv"


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


def _scalar_sweeps(args: argparse.Namespace, params: Any, cfg: Any, n_rules: int, omegas: list[float],
                   alphas: list[float], executor: Any, out_dir: Any) -> int:
    """r = r* = 1: one branch over alpha into DIR/sweep_<branch>_omega<omega>.csv, at each omega of ``--omega``
    (one task each), and DIR/sweep_<branch>.nc."""
    from dataclasses import replace
    from functools import partial

    from attnphase.numerics.errors.quadrature_error import error_bars_note

    workload.announce_rules(params.L, cfg)
    per_omega = workload.estimate_seconds(len(alphas) * max(1, n_rules), params.L, cfg)
    workload.announce_tasks(f"sweep of {len(alphas)} alpha values" + (f" at {len(omegas)} omegas" if len(omegas) > 1 else ""),
                            [per_omega] * len(omegas), executor.workers if len(omegas) > 1 else 1,
                            f"~{workload.SECONDS_PER_SOLVE * workload.rule_factor(params.L, cfg) ** 2:.2g} CPU s per "
                            f"point", quiet=args.quiet, own=workload.JOB_COMMAND_SECONDS)

    work.begin("sweeping the branch")
    from tqdm import tqdm

    from attnphase.execution import run_tasks
    from attnphase.execution.dataset import csv_text, job_attrs, write_netcdf
    from attnphase.execution.progress import TaskBar, failure_summary
    from attnphase.numerics.jobs.dataset import sweeps_dataset
    from attnphase.numerics.jobs.tasks import numerics_version, sweep_job, sweep_task
    from attnphase.numerics.jobs.variables import SWEEP_COLUMNS, described

    store = task_store(out_dir)
    version = numerics_version()
    tasks = [sweep_task(params.replace(omega=float(w)), alphas, args.branch, cfg, version, n_rules) for w in omegas]
    if len(tasks) == 1 and executor.scheduler is None:
        # one sweep in this process: a bar over its points (the task and its key are the same)
        with tqdm(total=len(alphas), desc=f"{args.branch} sweep", unit="pt", file=sys.stderr,
                  disable=args.quiet) as bar:
            # the same key: the same result, computed with a progress hook
            tasks = [replace(tasks[0], fn=partial(sweep_job, progress=lambda _: bar.update()))]
            outs = run_tasks(tasks, store=store, fresh=args.fresh, version=version)
    else:
        with TaskBar(f"{args.branch} sweeps", quiet=args.quiet) as tbar:
            outs = run_tasks(tasks, executor=executor, store=store, fresh=args.fresh, version=version,
                             progress=tbar)
    objs, n_on, n_failed, n_absent, cells, n_unbarred = [], 0, 0, 0, [], 0
    job_model = params.to_dict() | {"omega": list(omegas), "alpha": list(alphas)}
    wrote: list[str] = []  # said once the files are in place
    with staged_job(out_dir, f"sweep_{args.branch}", job_model, args.json) as stage:
        for w, o in zip(omegas, outs):
            path = out_dir / sweep_file_name(args.branch, params.replace(omega=w).omega)
            if not o.ok:
                cells.append((float(w), None, "failed", o.error, []))
                continue
            res = o.value
            rows, reasons = _sweep_rows(res, args.branch)
            cells.append((float(w), res, "done", o.error, rows))
            outputs.write_text_atomic(stage / path.name, csv_text(rows, SWEEP_COLUMNS))
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
    exact = exact_zero_rows_note([row for cell in cells for row in cell[4]])
    if exact:  # a bar of 0 is never silent (as solve's error_note): the symmetry that holds the value at 0
        bars_note = "; ".join(n for n in (bars_note, exact) if n)
    if bars_note:
        print(f"attnphase: note: {bars_note}", file=sys.stderr)
    failures = failure_summary(outs)
    counts = {"total": len(outs), "computed": sum(o.status == "done" for o in outs),
              "stored": sum(o.status == "stored" for o in outs), "failed": sum(not o.ok for o in outs),
              "failures": failures}
    if args.json:
        obj = objs[0] if len(omegas) == 1 and objs else {"branch": args.branch, "omegas": list(omegas), "sweeps": objs}
        print(json.dumps(outputs.json_value(obj | {"tasks": counts, "dataset": str(out_dir / f"sweep_{args.branch}.nc"),
                                                   "variables": described(SWEEP_COLUMNS)}
                                            | ({"error_note": bars_note} if bars_note else {}))))
    if failures:
        print(f"attnphase: {failures}", file=sys.stderr)
    return sweep_exit_code(args.branch, n_failed + bool(failures), n_on)


def _matrix_sweep(args: argparse.Namespace, params: Any, cfg: Any, alphas: list[float], out_dir: Any) -> int:
    """r or r* >= 2: the branch followed over the alpha grid by warm starts
    (:func:`~attnphase.numerics.phase.lowest_branch.follow_branch`; the first point from the rank-1 fixed
    points), one row per alpha into DIR/sweep_<branch>_omega<omega>_rank<r>x<r*>.csv: alpha, branch, e_t, eps_g,
    the invariants (one column per eigenvalue / singular value / token), gauge_angle, converged, iterations,
    residual, reason.  A point that does not converge onto the branch is retried from the embedded start before
    it is reported.  Branch ends are located by ``phase-diagram --rank``, not here."""
    from attnphase.execution.dataset import csv_text
    from attnphase.numerics.phase.lowest_branch import follow_branch

    r, r_star = params.r, params.r_star
    work.begin("sweeping the rank-r branch")
    L = params.L
    cols = (["alpha", "omega", "branch", "e_t", "eps_g"] + [f"q0_eig_{i + 1}" for i in range(r)]
            + [f"V0_eig_{i + 1}" for i in range(r)] + [f"th0_sv_{i + 1}" for i in range(min(r, r_star))]
            + [f"m_norm_{l + 1}" for l in range(L)] + ["gauge_angle", "converged", "iterations", "residual", "reason"])
    rows = []

    def said(fp: Any) -> None:
        if not args.quiet:
            on = fp.branch if fp.status.converged else "not converged"
            print(f"attnphase: alpha = {fp.alpha:g}: {on}, e_t = {fp.observables.e_t:.6g}", file=sys.stderr, flush=True)

    for fp in follow_branch(params, alphas, args.branch, cfg, progress=said):
        alpha = fp.alpha
        rec = fp.record
        row: dict[str, Any] = {"alpha": alpha, "omega": params.omega, "branch": rec["branch"] if fp.status.converged else "",
                               "converged": fp.status.converged, "iterations": fp.status.iterations, "residual": fp.status.residual}
        vals = {"e_t": [rec["e_t"]], "eps_g": [rec["eps_g"]], "q0_eig": rec["q0_eigenvalues"],
                "V0_eig": rec["V0_eigenvalues"], "th0_sv": rec["th0_singular_values"], "m_norm": rec["m_norms"],
                "gauge_angle": [rec["gauge_angle"]]}
        for name, v in vals.items():
            for i, x in enumerate(v):
                key = name if len(v) == 1 and name in ("e_t", "eps_g", "gauge_angle") else f"{name}_{i + 1}"
                row[key] = x if fp.status.converged else float("nan")
        if not fp.status.converged:
            row["reason"] = f"{fp.status.message}; residual {fp.status.residual:.2e}: no overlaps"
        elif fp.branch != args.branch:
            row["reason"] = f"no {args.branch} fixed point here: the solve converged to the {fp.branch} one"
        else:
            row["reason"] = ""
        rows.append(row)
    path = out_dir / matrix_sweep_file_name(args.branch, params.omega, r, r_star)
    with staged_job(out_dir, f"sweep_{args.branch}_rank{r}x{r_star}_omega{params.omega:g}",
                    params.to_dict() | {"alpha": list(alphas)}, args.json) as stage:
        outputs.write_text_atomic(stage / path.name, csv_text(rows, cols))
    n_failed = sum(not r_["converged"] for r_ in rows)
    n_on = sum(not r_["reason"] for r_ in rows)
    if args.json:
        print(json.dumps(outputs.json_value({"branch": args.branch, "requested_branch": args.branch, "rank": r,
                                             "teacher_rank": r_star, "params": params.to_dict(), "solver": cfg.as_dict(),
                                             "file": str(path), "end": None, "on_branch": n_on,
                                             "not_converged": n_failed, "rows": rows})))
    print(f"wrote {len(rows)} rows to {path}" + (f" ({n_failed} not converged)" if n_failed else ""), file=sys.stderr)
    return sweep_exit_code(args.branch, n_failed, n_on)

